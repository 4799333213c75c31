"""The decoding loop's own cost for the cached decoders (`labkit bench loop-cost`).

A step of `lk.generate` is one forward pass plus everything labkit does around it. For each decoder
(the AR twin through its exact KV cache, the tiny LLaDA2.1 in S mode through its BlockCache) and
batch size, on the same held-out prompts:

- `full`: wall seconds of `lk.generate`, trace and all (median of interleaved repeats);
- `forward`: the seconds spent inside the network's cached pass (`net.run`: the bare forwards of that
  very run, same windows over the same cache), measured in a run with only that timer on;
- `split`: one more run with a timer around each part of a step: the forward (`net.run`), the cache
  wrapper's bookkeeping and the loop's logit edits around it (`model`), the rule (`rule`), the trace's
  record (`trace`), controls (`controls`), and what is left (`python`: the loop itself: states,
  live rows, stop tests).

`loop_ratio = full / forward`: 1.0 would be a loop that costs nothing beside its forwards.
"""
from __future__ import annotations

import json
import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import torch

from .. import decode
from ..models.kv_cache import BlockCache, CausalCache
from ..models.load import load
from ..samplers import Autoregressive, DraftEdit
from ..trace import Trace
from ..training.prompts import sample_prompts
from .common import check_repeats, metadata, save, stopwatch

PARTS = ("forward", "model", "rule", "trace", "controls", "python")
DECODERS = {"tiny-ar + KV cache": ("tiny-ar", CausalCache, Autoregressive),
            "tiny-llada21 S mode + BlockCache": ("tiny-llada21", BlockCache, DraftEdit.speed)}


class _Clock:
    """Seconds spent in each named part of the run, summed over calls."""

    def __init__(self):
        self.seconds = dict.fromkeys(PARTS, 0.0)

    def timed(self, part: str, fn):
        def wrapper(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[part] += time.perf_counter() - t0
        return wrapper


@contextmanager
def _patched(obj, name: str, value):
    """obj.name = value for the block (an instance attribute shadows a method; a class is patched as is)."""
    had = name in vars(obj)
    old = vars(obj).get(name)
    object.__setattr__(obj, name, value) if not isinstance(obj, type) else setattr(obj, name, value)
    try:
        yield
    finally:
        if had:
            object.__setattr__(obj, name, old) if not isinstance(obj, type) else setattr(obj, name, old)
        else:
            object.__delattr__(obj, name) if not isinstance(obj, type) else delattr(obj, name)


@contextmanager
def forward_clock(lm, clock: _Clock):
    """Time every call of the network's cached pass (`lm.net.run`) into clock's `forward`."""
    with _patched(lm.net, "run", clock.timed("forward", lm.net.run)):
        yield


@contextmanager
def split_clock(lm, rule, clock: _Clock):
    """Time the forward, the model function around it, the rule, the trace record and the controls."""
    make_model = decode._model_fn

    def timed_model_fn(*args, **kwargs):
        forward = make_model(*args, **kwargs)

        def model(x):                     # the model part, less the forward inside it
            before, t0 = clock.seconds["forward"], time.perf_counter()
            out = forward(x)
            clock.seconds["model"] += time.perf_counter() - t0 - (clock.seconds["forward"] - before)
            return out
        return model

    with (forward_clock(lm, clock), _patched(decode, "_model_fn", timed_model_fn),
          _patched(rule, "step", clock.timed("rule", rule.step)),
          _patched(Trace, "append", clock.timed("trace", Trace.append)),
          _patched(decode.ctl, "controlled_step", clock.timed("controls", decode.ctl.controlled_step))):
        yield


def measure(name: str, *, batch: int = 1, gen: int = 224, repeats: int = 3, prompts: list[str] | None = None) -> dict:
    """One decoder (a DECODERS label) at one batch size: full, forward and split (see the module's notes)."""
    check_repeats(repeats)
    if name not in DECODERS:
        raise ValueError(f"decoder must be one of {list(DECODERS)}, got {name!r}")
    model, cache, make_rule = DECODERS[name]
    lm, rule = load(model), make_rule()
    if prompts is None:
        prompts = sample_prompts(batch)
    if len(prompts) != batch:
        raise ValueError(f"prompts must hold batch={batch} prompts, got {len(prompts)}")
    block = decode.block_for(lm)

    def run():
        return decode.generate(cache(lm), prompts, rule, gen_length=gen, block_length=block, steps=gen, seed=0)

    _, ref = stopwatch(run)                                     # warm-up
    full, forward = [], []
    for _ in range(repeats):                                   # interleaved: drift hits both alike
        full.append(stopwatch(run)[0])
        clock = _Clock()
        with forward_clock(lm, clock):
            stopwatch(run)
        forward.append(clock.seconds["forward"])
    clock = _Clock()
    with split_clock(lm, rule, clock):
        total, out = stopwatch(run)
    if not torch.equal(out.ids, ref.ids):
        raise AssertionError("the timers changed what was written")
    nfe = int(out.stats["nfe"])
    clock.seconds["python"] = total - sum(clock.seconds[p] for p in PARTS if p != "python")
    f, b = statistics.median(full), statistics.median(forward)
    return {"decoder": name, "model": model, "batch": batch, "gen_length": gen, "nfe": nfe, "repeats": repeats,
            "full_s": round(f, 4), "forward_s": round(b, 4), "ms_per_step": round(1e3 * f / nfe, 3),
            "forward_ms_per_step": round(1e3 * b / nfe, 3), "loop_ratio": round(f / b, 3),
            "split_ms_per_step": {p: round(1e3 * s / nfe, 3) for p, s in clock.seconds.items()},
            "split_total_s": round(total, 4)}


LOOP_TARGET = 1.25      # issue 60: the loop at most this many times its bare forwards' time per step, batch 1


def bench_loop_cost(*, batches=(1, 4), gen: int = 224, repeats: int = 3, log=None) -> dict:
    """Every decoder at every batch size (`measure`), on the first held-out openings, and the target."""
    rows = []
    for name in DECODERS:
        for b in batches:
            rows.append(measure(name, batch=b, gen=gen, repeats=repeats, prompts=sample_prompts(b)))
            if log:
                log(f"{name}, batch {b}: loop {rows[-1]['loop_ratio']}x its forwards")
    at_one = {r["decoder"]: r["loop_ratio"] for r in rows if r["batch"] == 1}
    return {"gen_length": gen, "threads": torch.get_num_threads(), "rows": rows, "target": LOOP_TARGET,
            "met": bool(at_one) and all(x <= LOOP_TARGET for x in at_one.values()),
            "meta": metadata(load(DECODERS[next(iter(DECODERS))][0]))}


def table(result: dict) -> str:
    """One line per decoder and batch: ms per step, the forward's share and the split."""
    lines = [f"{result['gen_length']} answer tokens, {result['threads']} thread(s); ms per step "
             f"(forward = the network's cached pass, the rest labkit's)",
             f"{'decoder':34s} {'batch':>5s} {'steps':>5s} {'step':>7s} {'fwd':>7s} {'loop/fwd':>8s}  "
             + " ".join(f"{p:>8s}" for p in PARTS)]
    for r in result["rows"]:
        lines.append(f"{r['decoder']:34s} {r['batch']:5d} {r['nfe']:5d} {r['ms_per_step']:7.2f} "
                     f"{r['forward_ms_per_step']:7.2f} {r['loop_ratio']:8.3f}  "
                     + " ".join(f"{r['split_ms_per_step'][p]:8.3f}" for p in PARTS))
    lines.append(f"{'met ' if result['met'] else 'MISS'} the loop at most {result['target']}x its bare forwards "
                 f"at batch 1, both decoders")
    return "\n".join(lines)


def add_flags(p) -> None:
    """`labkit bench loop-cost`'s own flags."""
    p.add_argument("--batches", type=int, nargs="+", default=[1, 4], help="batch sizes (default 1 4)")
    p.add_argument("--gen-length", type=int, default=224, help="answer tokens (default 224)")
    p.add_argument("--repeats", type=int, default=3, help="timed runs per decoder and batch, median (default 3)")


def run_cli(a) -> int:
    """Run, write loop_cost.json to --out, print the table (or the JSON)."""
    for b in a.batches:
        if not 1 <= b <= 64:
            raise SystemExit(f"--batches: each batch size must be in 1..64, got {b}")
    log = None if a.quiet else (lambda m: print(m, file=sys.stderr))
    result = bench_loop_cost(batches=tuple(a.batches), gen=a.gen_length, repeats=a.repeats, log=log)
    path = save(result, Path(a.out) / "loop_cost.json")
    print(json.dumps(result) if a.json else f"{table(result)}\n\nwritten: {path}")
    return 0


__all__ = ["DECODERS", "LOOP_TARGET", "PARTS", "add_flags", "bench_loop_cost", "forward_clock", "measure", "run_cli",
           "split_clock", "table"]
