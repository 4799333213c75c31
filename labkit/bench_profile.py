"""`labkit bench overhead`: what labkit costs around the model's forward passes.

One greedy generation (LLaDA low-confidence, gen_length 128, block 32, 128 steps) is timed three
ways, interleaved `repeats` times so that load on the machine hits all three alike (medians):
- full: generate() as users call it (loop, rule, trace recording, stats);
- no trace: the same loop through stream() without a Trace;
- bare: only the forward passes, on the very canvases the full run fed the model, in a plain loop.
labkit_overhead_ratio = full / bare (the target, at most 5% of the total wall time spent outside
the model, is a ratio <= 1.053); trace_overhead_ratio = full / no trace (target <= 1.10).
"""
from __future__ import annotations

import statistics
import time

import torch

from .decode import generate, stream
from .samplers import LowConfidence

PROMPT = "KING HENRY:\nNow, lords, for France! the enterprise whereof\n"


def _sync(lm) -> None:
    if lm.device.type == "cuda":
        torch.cuda.synchronize(lm.device)


def bench_overhead(lm, *, repeats: int = 5, gen_length: int = 128, block_length: int = 32,
                   prompt: str = PROMPT) -> dict:
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a positive integer, got {repeats!r}")
    knobs = dict(gen_length=gen_length, block_length=block_length, steps=gen_length)
    rule = LowConfidence()
    ref = generate(lm, prompt, rule, **knobs)                           # warm-up, and the canvases
    trace = ref.trace
    canvases = [trace.init.to(lm.device)] + [r.tokens.long().to(lm.device) for r in trace.records[:-1]]
    full, untraced, bare = [], [], []
    for _ in range(repeats):
        _sync(lm)
        t0 = time.perf_counter()
        generate(lm, prompt, rule, **knobs)
        _sync(lm)
        full.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for _rec in stream(lm, prompt, rule, **knobs):
            pass
        _sync(lm)
        untraced.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for x in canvases:
            lm(x)
        _sync(lm)
        bare.append(time.perf_counter() - t0)
    f, u, b = (statistics.median(v) for v in (full, untraced, bare))
    return {"model": lm.name, "device": str(lm.device), "gen_length": gen_length, "nfe": len(canvases),
            "repeats": repeats, "full_s": round(f, 4), "no_trace_s": round(u, 4), "bare_forward_s": round(b, 4),
            "labkit_overhead_ratio": round(f / b, 4), "overhead_share": round(1 - b / f, 4),
            "trace_overhead_ratio": round(f / u, 4)}


__all__ = ["bench_overhead"]
