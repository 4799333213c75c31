"""What a finished run becomes in an answer: the "diffusion" summary every answer carries, and a
streamed answer as server-sent events, chat.completion.chunk (or text_completion) objects, block by
block as each block's text becomes final ("drafts": each step's draft of the current block in an
extra field). Text that could still start a stop string is held back, and the stream ends at the
stop (the run is stopped there); a client that goes away stops the run at its next step."""
from __future__ import annotations

import asyncio
import json
import time
import uuid

from fastapi.responses import StreamingResponse

from .answers import answer, find_stop, held_back, tokens_for
from .config import ServeConfig
from .scheduler import Result, Ticket


def diffusion_summary(lm, job, result: Result) -> dict:
    """The run's summary for this request's rows: NFE (the most forward passes any of its rows took
    part in) and TPF (the decided canvas positions of its rows per forward pass each row saw)."""
    k = job.knobs
    tokens = sum(t != lm.mask_id for row in result.rows for t in row.ids)
    row_nfe = sum(row.nfe for row in result.rows)
    return {"sampler": k.sampler, "steps": k.steps, "block_length": k.block_length, "gen_length": k.gen_length,
            "nfe": max(row.nfe for row in result.rows), "tpf": round(tokens / max(1, row_nfe), 4),
            "batch": result.batch_requests,
            "batch_rows": result.batch_rows, "seconds": round(result.seconds, 4)}


def _sse(data) -> str:
    return f"data: {json.dumps(data)}\n\n"


async def stream(lm, cfg: ServeConfig, ticket: Ticket) -> StreamingResponse:
    """Wait until the run starts (504 / 4xx as plain JSON until then), then stream its blocks."""
    try:
        kind, payload = await asyncio.wait_for(ticket.events.get(), max(0.0, ticket.deadline - time.monotonic()))
    except asyncio.TimeoutError:
        ticket.cancelled = True
        raise cfg.timeout_error() from None
    except asyncio.CancelledError:
        ticket.cancelled = True
        raise
    if kind == "error":
        raise payload
    return StreamingResponse(_events(lm, cfg, ticket), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache"})


class _Chunks:
    """The chunk objects of one streamed answer, chat or text completion shape."""

    def __init__(self, cfg: ServeConfig, job):
        self.chat, self.model = job.kind == "chat", cfg.model_id
        self.id = f"{'chatcmpl' if self.chat else 'cmpl'}-{uuid.uuid4().hex[:24]}"
        self.created = int(time.time())

    def make(self, content: str | None = None, reason: str | None = None, role: bool = False, **extra) -> dict:
        if self.chat:
            delta = {"role": "assistant", "content": ""} if role else ({} if content is None else {"content": content})
            choice = {"index": 0, "delta": delta, "finish_reason": reason, "logprobs": None}
        else:
            choice = {"index": 0, "text": content or "", "finish_reason": reason, "logprobs": None}
        return {"id": self.id, "object": "chat.completion.chunk" if self.chat else "text_completion",
                "created": self.created, "model": self.model, "choices": [choice], **extra}


class _Sent:
    """The text a stream has sent so far. A block may end inside a character (its bytes are held
    back) or with the start of a stop string (held back until the next block says); once a stop
    string is complete the text ends before it and `stopped` is set."""

    def __init__(self, lm, job):
        self.lm, self.stop, self.text, self.stopped = lm, job.stop, "", False
        self.tokens, self.reason = 0, "length"

    def feed(self, ids: list[int], reason: str, complete: bool) -> str:
        """The answer's tokens so far (all of them when `complete`) → the new text to send."""
        text = self.lm.decode(ids)
        if not complete:
            text = text.rstrip("\ufffd")
        at = find_stop(text, self.stop)
        if at is not None:
            text, self.stopped, self.reason, self.tokens = text[:at], True, "stop", tokens_for(self.lm, ids, at)
        elif complete:
            self.reason, self.tokens = reason, len(ids)
        else:
            text = text[:len(text) - held_back(text, self.stop)]
        if len(text) <= len(self.text) or not text.startswith(self.text):
            return ""
        new, self.text = text[len(self.text):], text
        return new


async def _next(ticket: Ticket):
    """The run's next event: ("start"|"final"|"draft"|"done"|"error", payload); TimeoutError at the deadline."""
    return await asyncio.wait_for(ticket.events.get(), max(0.0, ticket.deadline - time.monotonic()))


def _end(lm, job, chunks: "_Chunks", sent: _Sent, result: Result):
    """The last events of a stream: the finish reason (and the run's summary), usage if asked, [DONE]."""
    yield _sse(chunks.make(reason=sent.reason, diffusion=diffusion_summary(lm, job, result)))
    if job.include_usage:
        p = sum(job.prompt_tokens)
        yield _sse({**chunks.make(), "choices": [],
                    "usage": {"prompt_tokens": p, "completion_tokens": sent.tokens, "total_tokens": p + sent.tokens}})
    yield "data: [DONE]\n\n"


async def _events(lm, cfg: ServeConfig, ticket: Ticket):
    job, chunks, sent = ticket.job, _Chunks(cfg, ticket.job), _Sent(lm, ticket.job)
    try:
        if chunks.chat:
            yield _sse(chunks.make(role=True))
        while True:
            try:
                kind, payload = await _next(ticket)
            except asyncio.TimeoutError:
                ticket.cancelled = True
                yield _sse(cfg.timeout_error().body())
                return
            if kind == "error":
                yield _sse(payload.body())
                return
            if kind == "draft" and not sent.stopped:          # no draft past a stop string
                yield _sse(chunks.make(draft={**payload, "text": lm.decode([t for t in payload["ids"]
                                                                           if t != lm.mask_id])}))
            elif kind in ("final", "done") and not sent.stopped:
                ids = payload if kind == "final" else list(payload.rows[0].ids)
                new = sent.feed(*answer(lm, ids, job.max_tokens), complete=kind == "done")
                if new:
                    yield _sse(chunks.make(new))
                ticket.stopped = sent.stopped                 # the worker ends the run at its next step
            if kind == "done":
                for event in _end(lm, job, chunks, sent, payload):
                    yield event
                return
    finally:
        ticket.cancelled = True                 # a client that went away stops the run at its next step
