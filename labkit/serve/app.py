"""The OpenAI-compatible HTTP app over one model: GET /v1/models, POST /v1/chat/completions,
POST /v1/completions, POST /generate ({prompt, max_len, steps, batch_size} → {"texts": [...]}).

    app = create_app(lk.load("tiny"), "tiny", api_key="secret")
    server, url = run_in_thread(app)          # http://127.0.0.1:PORT; server.should_exit = True stops it

Every error is {"error": {"message", "type", "param", "code"}} with a 4xx/5xx status; bad input is
never a 500. Answers carry an extra "diffusion" field (nfe, tpf, steps, sampler, batch) that
standard clients ignore. With "stream": true the answer comes as server-sent chat.completion.chunk
(or text_completion) events, block by block as each block's text becomes final; "drafts": true
adds each step's draft of the current block in an extra "draft" field of extra chunks. A stream
with `stop` holds back text that could still start a stop string and ends at the stop (the run is
stopped there): labkit.serve.streaming. A body over the limit is read and thrown away (up to
DRAIN_FACTOR times the limit) before its 413, so a client that writes its whole body first still
reads the answer; a client that hangs up while sending its body is one line in the "labkit.serve"
log. Here: the routes, the error shape, the key check, the request body's reading, the JSON
answer, and the server in a thread; the settings are labkit.serve.config's ServeConfig.
"""
from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import threading
import time
import uuid
from dataclasses import dataclass

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from .answers import answer, final_text
from .config import ServeConfig
from .scheduler import QueueFull, Result, Scheduler, Ticket
from .schemas import MAX_BODY, ServeError, chat_fields, parse_chat, parse_generate, parse_text, text_fields
from .streaming import diffusion_summary, stream

log = logging.getLogger("labkit.serve")
DRAIN_FACTOR = 4        # a body over the limit is read (and dropped) up to this many times the limit


def create_app(lm, model_id: str, *, api_key: str | None = None, max_batch: int = 16, queue_size: int = 256,
               timeout: float = 120.0, max_body: int = MAX_BODY, batch_wait: float = 0.01) -> FastAPI:
    """The app; its scheduler (app.state.scheduler) starts and stops with the server."""
    cfg = ServeConfig(model_id=model_id, api_key=api_key or None, max_batch=max_batch, queue_size=queue_size,
                      timeout=timeout, max_body=max_body, batch_wait=batch_wait)
    scheduler = Scheduler(lm, max_batch=max_batch, queue_size=queue_size, timeout=timeout, batch_wait=batch_wait)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        scheduler.start()
        yield
        scheduler.stop()

    app = FastAPI(title="labkit serve", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.scheduler, app.state.config, app.state.lm = scheduler, cfg, lm
    _handlers(app)
    _routes(app, lm, cfg, scheduler)
    return app


def _error(e: ServeError) -> JSONResponse:
    headers = {**({"Retry-After": "1"} if e.status == 429 else {}), **e.headers}
    return JSONResponse(e.body(), status_code=e.status, headers=headers or None)


def _handlers(app: FastAPI) -> None:
    @app.exception_handler(ServeError)
    async def serve_error(request, e: ServeError):
        return _error(e)

    @app.exception_handler(RequestValidationError)
    async def validation(request, e: RequestValidationError):
        first = (e.errors() or [{}])[0]
        param = ".".join(str(p) for p in first.get("loc", ())[1:]) or None
        return _error(ServeError(400, f"{param or 'request'}: {first.get('msg', 'invalid request')}", param=param,
                                 code="invalid_value"))

    @app.exception_handler(Exception)
    async def internal(request, e: Exception):          # a bug: still the error shape, never a bare 500 page
        return _error(ServeError(500, f"internal error: {type(e).__name__}: {str(e)[:200]}", code="internal_error",
                                 type="server_error"))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request, e: StarletteHTTPException):
        if e.status_code == 404:
            msg = f"no route {request.method} {request.url.path} (routes: GET /v1/models, POST /v1/chat/completions, " \
                  f"POST /v1/completions, POST /generate)"
            return _error(ServeError(404, msg, code="unknown_url"))
        return _error(ServeError(e.status_code, str(e.detail), code="http_error"))


def _check_key(request: Request, cfg: ServeConfig) -> None:
    if cfg.api_key is None:
        return
    given = request.headers.get("authorization", "")
    scheme, _, token = given.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), cfg.api_key.encode()):
        raise ServeError(401, "missing or wrong API key: send the header 'Authorization: Bearer KEY'",
                         code="invalid_api_key", type="authentication_error")


def _too_large(cfg: ServeConfig, size: int | None, drained: bool) -> ServeError:
    """413; a body left unread closes the connection (what is still on the wire cannot be skipped)."""
    what = f"{size} bytes is" if size is not None else "it is"
    return ServeError(413, f"request body: {what} more than the limit of {cfg.max_body} bytes", code="body_too_large",
                      headers=None if drained else {"Connection": "close"})


async def _read(request: Request, limit: int, bound: int) -> tuple[bytes | None, int, bool]:
    """The body (None past `limit`), the bytes read, and whether it was read to its end: past the
    limit the rest is read and dropped, up to `bound` bytes, so the client can read its 413."""
    raw, total = bytearray(), 0
    async for chunk in request.stream():
        total += len(chunk)
        if total <= limit:
            raw += chunk
        elif total > bound:
            return None, total, False
    return (bytes(raw) if total <= limit else None), total, True


async def _body(request: Request, cfg: ServeConfig) -> dict:
    size = request.headers.get("content-length")
    declared = int(size) if size is not None and size.isdigit() else None
    bound = DRAIN_FACTOR * cfg.max_body
    if declared is not None and declared > bound:
        raise _too_large(cfg, declared, drained=False)
    try:
        raw, total, drained = await _read(request, cfg.max_body, bound)
    except ClientDisconnect:
        log.warning("client disconnected while sending the request body (%s %s)", request.method, request.url.path)
        raise ServeError(499, "the client closed the connection while sending the body", code="client_closed") \
            from None
    if raw is None:
        raise _too_large(cfg, declared if declared is not None else (total if drained else None), drained)
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as e:          # bad UTF-8 or JSON, a huge integer, deep nesting
        raise ServeError(400, f"request body: not valid JSON ({str(e)[:200]})", code="invalid_json") from None


def _check_model(body, cfg: ServeConfig) -> None:
    if not isinstance(body, dict):
        return                                            # the parser says what is wrong
    model = body.get("model")
    if model is None:
        raise ServeError(400, f"model: required (this server serves {cfg.model_id!r})", param="model",
                         code="missing_model")
    if model != cfg.model_id:
        raise ServeError(404, f"model: {model!r} does not exist; this server serves {cfg.model_id!r}",
                         param="model", code="model_not_found")


def _model_card(cfg: ServeConfig, created: int) -> dict:
    """The model, and (an extra field) the request fields each route reads: standard and diffusion."""
    return {"id": cfg.model_id, "object": "model", "created": created, "owned_by": "labkit",
            "parameters": {"/v1/chat/completions": sorted(chat_fields()), "/v1/completions": sorted(text_fields())}}


def _routes(app: FastAPI, lm, cfg: ServeConfig, scheduler: Scheduler) -> None:
    created = int(time.time())

    @app.get("/v1/models")
    async def models(request: Request):
        _check_key(request, cfg)
        return {"object": "list", "data": [_model_card(cfg, created)]}

    @app.get("/v1/models/{model_id:path}")
    async def model(model_id: str, request: Request):
        _check_key(request, cfg)
        if model_id != cfg.model_id:
            raise ServeError(404, f"model: {model_id!r} does not exist; this server serves {cfg.model_id!r}",
                             param="model", code="model_not_found")
        return _model_card(cfg, created)

    @app.get("/labkit/stats")
    async def stats(request: Request):
        _check_key(request, cfg)
        return scheduler.stats()

    async def completion(request: Request, parse):
        _check_key(request, cfg)
        body = await _body(request, cfg)
        if parse is not parse_generate:
            _check_model(body, cfg)
        job = parse(lm, body, cfg.max_batch)
        ticket = _submit(scheduler, job)
        if job.stream:
            return await stream(lm, cfg, ticket)
        result = await _wait(ticket, cfg, request)
        return _format(lm, cfg, job, result)

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        return await completion(request, parse_chat)

    @app.post("/v1/completions")
    async def text(request: Request):
        return await completion(request, parse_text)

    @app.post("/generate")
    async def simple(request: Request):
        return await completion(request, parse_generate)


def _submit(scheduler: Scheduler, job) -> Ticket:
    try:
        return scheduler.submit(job, asyncio.get_running_loop())
    except QueueFull as e:
        raise ServeError(429, str(e), code="queue_full", type="rate_limit_error") from None


DISCONNECT_POLL = 0.25          # seconds between checks that a waiting client is still connected


async def _wait(ticket: Ticket, cfg: ServeConfig, request: Request) -> Result:
    """The request's result; a client that disconnects (uvicorn does not cancel the handler) or a
    deadline that passes marks the ticket cancelled, so the worker drops it or stops its run."""
    try:
        while True:
            left = ticket.deadline - time.monotonic()
            if left <= 0:
                raise asyncio.TimeoutError
            try:
                return await asyncio.wait_for(asyncio.shield(ticket.future), min(left, DISCONNECT_POLL))
            except asyncio.TimeoutError:
                if await request.is_disconnected():
                    ticket.cancelled = True
                    raise ServeError(499, "the client closed the connection", code="client_closed") from None
    except asyncio.TimeoutError:
        ticket.cancelled = True
        raise cfg.timeout_error() from None
    except asyncio.CancelledError:                       # the server is shutting down
        ticket.cancelled = True
        raise


def _format(lm, cfg: ServeConfig, job, result: Result) -> dict:
    choices, completion_tokens = [], 0
    for i, row in enumerate(result.rows):
        text, tokens, reason = final_text(lm, *answer(lm, list(row.ids), job.max_tokens), job.stop)
        completion_tokens += tokens
        if job.kind == "chat":
            choices.append({"index": i, "message": {"role": "assistant", "content": text}, "finish_reason": reason,
                            "logprobs": None})
        elif job.kind == "text":
            choices.append({"index": i, "text": text, "finish_reason": reason, "logprobs": None})
        else:
            choices.append(text)
    if job.kind == "generate":
        return {"texts": choices, "diffusion": diffusion_summary(lm, job, result)}
    prompt_tokens = sum(job.prompt_tokens)
    return {"id": f"{'chatcmpl' if job.kind == 'chat' else 'cmpl'}-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion" if job.kind == "chat" else "text_completion", "created": int(time.time()),
            "model": cfg.model_id, "choices": choices,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
            "diffusion": diffusion_summary(lm, job, result)}


@dataclass(frozen=True)
class Running:
    """A server started by run_in_thread: its base URL (no /v1) and how to stop it."""
    server: object
    thread: object
    url: str

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


def run_in_thread(app: FastAPI, host: str = "127.0.0.1", port: int = 0, ready_timeout: float = 60.0) -> Running:
    """Serve `app` with uvicorn in a daemon thread (port 0: a free port) and wait until it listens."""
    import uvicorn  # only to run the app: create_app and its tests need fastapi alone

    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, name="labkit-serve-http", daemon=True)
    thread.start()
    deadline = time.monotonic() + ready_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError(f"the server did not start on {host}:{port}")
        time.sleep(0.02)
    bound = server.servers[0].sockets[0].getsockname()[1]
    return Running(server=server, thread=thread, url=f"http://{host}:{bound}")
