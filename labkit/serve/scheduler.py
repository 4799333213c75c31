"""One worker thread owns the model. Requests wait in a bounded queue; the worker takes the oldest
and every waiting request with the same Knobs (up to max_batch rows) and decodes their prompts
together as ONE batch of the loop: rows finish independently and, at temperature 0, a row's
answer does not depend on the batch (up to floating-point rounding of a different batch shape).
Streams, keyword runs and seeded sampling requests run alone.

A request that waits longer than `timeout` seconds (queue + run) is answered 504 by the app and
marked cancelled; the worker skips it if it is still queued, and stops a run at its next step
(generate's on_step raising ends the run) once every request in the batch is cancelled. A stream
whose answer reached a stop string is marked stopped: its run ends at the next step too, and the
stream gets the run so far as its result (the summary of what ran).
"""
from __future__ import annotations

import asyncio
import collections
import secrets
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field

from ..decode import generate
from .schemas import Job, ServeError


class QueueFull(Exception):
    pass


class Cancelled(Exception):
    """Raised from on_step: every request in the batch has been given up on."""


class Finished(Exception):
    """Raised from on_step: the streamed answer is complete (it reached a stop string)."""


class RunRefused(ValueError):
    """generate() refused the run before its first step (a knob only the run can check)."""


@dataclass(frozen=True)
class Row:
    ids: tuple[int, ...]             # the row's canvas after the run (answer positions only)
    nfe: int                         # forward passes this row took part in


@dataclass(frozen=True)
class Result:
    rows: tuple[Row, ...]
    batch_requests: int              # requests decoded in the same batch
    batch_rows: int
    seconds: float


@dataclass
class Ticket:
    """A queued request and the way back to its (asyncio) caller."""
    job: Job
    loop: asyncio.AbstractEventLoop
    deadline: float
    future: asyncio.Future = None
    events: asyncio.Queue | None = None      # streams: ("start"|"final"|"draft"|"done"|"error", payload)
    cancelled: bool = False
    stopped: bool = False                    # a stream's answer reached a stop string: end the run

    def __post_init__(self):
        self.future = self.loop.create_future()
        if self.job.stream:
            self.events = asyncio.Queue()

    @property
    def dead(self) -> bool:
        return self.cancelled or time.monotonic() > self.deadline

    def post(self, kind: str, payload=None) -> None:
        """Called from the worker thread."""
        if self.events is not None:
            self.loop.call_soon_threadsafe(self.events.put_nowait, (kind, payload))
        elif kind in ("done", "error"):
            self.loop.call_soon_threadsafe(_settle, self.future, kind, payload)


def _settle(future: asyncio.Future, kind: str, payload) -> None:
    if future.done():
        return
    if kind == "done":
        future.set_result(payload)
    else:
        future.set_exception(payload)


@dataclass
class Counters:
    batches: int = 0
    requests: int = 0                # requests decoded (not dropped)
    multi_request_batches: int = 0   # batches holding more than one request
    largest_batch: int = 0           # most requests in one batch
    dropped: int = 0                 # timed out or cancelled before they ran
    stopped_runs: int = 0            # runs stopped because every request in them was given up
    stop_strings: int = 0            # streamed runs ended early because their answer reached a stop string
    sizes: collections.Counter = field(default_factory=collections.Counter)


class Scheduler:
    def __init__(self, lm, *, max_batch: int = 16, queue_size: int = 256, timeout: float = 120.0,
                 batch_wait: float = 0.01):
        self.lm, self.max_batch, self.queue_size = lm, max_batch, queue_size
        self.timeout, self.batch_wait = timeout, batch_wait
        self.counters = Counters()
        self._pending: collections.deque[Ticket] = collections.deque()
        self._cond = threading.Condition()
        self._stop = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        with self._cond:
            self._stop = False                      # an app may be started again after a stop
        self._thread = threading.Thread(target=self._work, name="labkit-serve-worker", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def submit(self, job: Job, loop: asyncio.AbstractEventLoop) -> Ticket:
        ticket = Ticket(job=job, loop=loop, deadline=time.monotonic() + self.timeout)
        with self._cond:
            if len(self._pending) >= self.queue_size:
                raise QueueFull(f"the queue is full ({self.queue_size} requests waiting); retry later")
            self._pending.append(ticket)
            self._cond.notify()
        return ticket

    def stats(self) -> dict:
        c = self.counters
        with self._cond:
            waiting = len(self._pending)
        return {"batches": c.batches, "requests": c.requests, "multi_request_batches": c.multi_request_batches,
                "largest_batch": c.largest_batch, "dropped": c.dropped, "stopped_runs": c.stopped_runs,
                "stop_strings": c.stop_strings,
                "batch_sizes": {str(k): v for k, v in sorted(c.sizes.items())}, "waiting": waiting,
                "max_batch": self.max_batch, "queue_size": self.queue_size}

    def _work(self) -> None:
        while True:
            batch = self._take()
            if batch is None:
                return
            if batch:
                self._run(batch)

    def _take(self) -> list[Ticket] | None:
        """The next batch: the oldest live request and every compatible one behind it (waiting up
        to batch_wait for more when the batch is not full). None when stopping."""
        with self._cond:
            while not self._pending and not self._stop:
                self._cond.wait()
            if self._stop:
                return None
            first = self._pop_live()
            if first is None or not first.job.batchable:
                return [] if first is None else [first]
            batch, rows = [first], len(first.job.prompts)
            end = time.monotonic() + self.batch_wait
            while True:
                rows = self._gather(batch, rows)
                left = end - time.monotonic()
                if rows >= self.max_batch or left <= 0 or self._stop:
                    return batch
                self._cond.wait(left)

    def _pop_live(self) -> Ticket | None:
        while self._pending:
            t = self._pending.popleft()
            if not t.dead:
                return t
            self.counters.dropped += 1
        return None

    def _gather(self, batch: list[Ticket], rows: int) -> int:
        key = batch[0].job.knobs
        for t in list(self._pending):
            n = len(t.job.prompts)
            if t.dead:
                self._pending.remove(t)
                self.counters.dropped += 1
            elif t.job.batchable and t.job.knobs == key and rows + n <= self.max_batch:
                self._pending.remove(t)
                batch.append(t)
                rows += n
        return rows

    def _run(self, batch: list[Ticket]) -> None:
        c = self.counters
        c.batches += 1
        c.requests += len(batch)
        c.multi_request_batches += len(batch) > 1
        c.largest_batch = max(c.largest_batch, len(batch))
        c.sizes[len(batch)] += 1
        try:
            result = self._decode(batch)
        except Cancelled:
            c.stopped_runs += 1
            err = ServeError(504, "the request was given up on (timeout or client gone)", code="timeout",
                             type="timeout_error")
            for t in batch:
                t.post("error", err)
            return
        except RunRefused as e:                       # a knob only the run could check (keywords that do not fit)
            for t in batch:
                t.post("error", ServeError(400, str(e), code="invalid_value"))
            return
        except Exception as e:                        # noqa: BLE001 - answered as JSON; the worker goes on
            traceback.print_exc(file=sys.stderr)
            for t in batch:
                t.post("error", ServeError(500, f"the run failed: {type(e).__name__}: {e}", code="internal_error",
                                           type="server_error"))
            return
        start = 0
        for t in batch:
            n = len(t.job.prompts)
            t.post("done", Result(rows=result.rows[start:start + n], batch_requests=len(batch),
                                  batch_rows=result.batch_rows, seconds=result.seconds))
            start += n

    def _decode(self, batch: list[Ticket]) -> Result:
        k = batch[0].job.knobs
        prompts = [p for t in batch for p in t.job.prompts]
        watch = _Watch(batch)
        t0 = time.perf_counter()
        seed = secrets.randbits(63) if k.seed is None else k.seed      # no seed: a fresh sample
        try:
            out = generate(self.lm, prompts, k.rule(), **k.loop(), seed=seed, eos_early_stop=True,
                           controls=k.controls(), on_start=watch.start, on_step=watch.step)
        except Finished:
            self.counters.stop_strings += 1
            return watch.so_far(time.perf_counter() - t0)
        except ValueError as e:
            if watch.started:                         # raised while decoding: a bug, not the request
                raise RuntimeError(str(e)) from e
            raise RunRefused(str(e)) from None        # refused by generate()'s checks before the first step
        P = out.trace.prompt_len
        row_nfe = out.trace.row_nfe().tolist()
        rows = tuple(Row(ids=tuple(out.ids[r, P:].tolist()), nfe=int(row_nfe[r])) for r in range(len(prompts)))
        return Result(rows=rows, batch_requests=len(batch), batch_rows=len(prompts),
                      seconds=time.perf_counter() - t0)


class _Watch:
    """on_start / on_step of a batch's run: stops it when every request is given up on, and tells
    a streaming request each block as it becomes final (and, if asked, each step's draft)."""

    def __init__(self, batch: list[Ticket]):
        self.batch, self.P, self.block, self.prev, self.started = batch, 0, 0, None, False
        self.stream = batch[0] if len(batch) == 1 and batch[0].job.stream else None
        self.steps = 0

    def so_far(self, seconds: float) -> Result:
        """The stream's run as it stood when it was ended early: its canvas, one pass per step."""
        ids = () if self.prev is None else tuple(self.prev[0, self.P:].tolist())
        return Result(rows=(Row(ids=ids, nfe=self.steps),), batch_requests=1, batch_rows=1, seconds=seconds)

    def start(self, trace) -> None:
        """Every knob has passed generate()'s checks: the requests learn their run has started (a
        stream's 200 goes out only now, so a refusal is still a plain 400)."""
        self.P, self.started = trace.prompt_len, True
        for t in self.batch:
            t.post("start")

    def step(self, rec) -> None:
        if all(t.dead for t in self.batch):
            raise Cancelled()
        self.steps += 1
        t = self.stream
        if t is None:
            return
        if t.stopped:
            raise Finished()
        k = t.job.knobs
        if rec.block != self.block and self.prev is not None:       # the loop moved past a block: it is final
            t.post("final", self.prev[0, self.P:self.P + rec.block * k.block_length].tolist())
        self.block, self.prev = rec.block, rec.tokens
        if t.job.drafts:
            s = self.P + rec.block * k.block_length
            t.post("draft", {"block": rec.block, "step": rec.step, "ids": rec.tokens[0, s:s + k.block_length].tolist()})
