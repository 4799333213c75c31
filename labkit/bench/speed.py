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

import copy
import dataclasses

import torch

from ..decode import generate, stream
from ..eval.metrics import gen_ppl
from ..models.kv_cache import CausalCache, DualCache, PrefixCache
from ..models.tiny_net import TinyDLM
from ..profile import peak_memory
from ..samplers import Autoregressive, LowConfidence, Threshold
from ..training.prompts import long_prompts, sample_prompts
from .common import check_repeats, interleaved, metadata

PROMPT = "KING HENRY:\nNow, lords, for France! the enterprise whereof\n"
BATCH_PROMPTS = 64            # bench_batch: distinct held-out prompts, repeated to fill larger batches
LONG_PROMPT_TOKENS = 120      # bench_cache: the longest prompt (less where the context needs it)
NO_CONTEXT_LIMIT = 10**9      # bench_length's `context` when neither model has a limit (JSON has no inf)
LENGTH_BLOCKS = 4             # bench_length: blocks per answer


def bench_overhead(lm, *, repeats: int = 5, gen_length: int = 128, block_length: int = 32,
                   prompt: str = PROMPT, accel=None) -> dict:
    """Greedy decoding (full: with its trace; untraced: stream() alone) against the bare forward
    passes over the same canvases, interleaved: labkit's own cost around the model. `accel`: an
    lk.Accel for the decoding runs (lk.Accel.GPU: labkit.accel)."""
    check_repeats(repeats)
    knobs = dict(gen_length=gen_length, block_length=block_length, steps=gen_length)
    rule = LowConfidence()
    knobs["accel"] = accel
    ref = generate(lm, prompt, rule, **knobs)                           # warm-up, and the canvases
    trace = ref.trace
    canvases = [trace.init.to(lm.device)] + [r.tokens.long().to(lm.device) for r in trace.records[:-1]]

    def untraced():
        for _rec in stream(lm, prompt, rule, **knobs):
            pass

    def bare():
        for x in canvases:
            lm(x)
    medians, _ = interleaved({"full": lambda: generate(lm, prompt, rule, **knobs), "untraced": untraced,
                              "bare": bare}, repeats, lm.device)
    f, u, b = medians["full"], medians["untraced"], medians["bare"]
    return {"model": lm.name, "device": str(lm.device), "gen_length": gen_length, "nfe": len(canvases),
            "accel": repr(accel) if accel is not None else None,
            "repeats": repeats, "full_s": round(f, 4), "no_trace_s": round(u, 4), "bare_forward_s": round(b, 4),
            "labkit_overhead_ratio": round(f / b, 4), "overhead_share": round(1 - b / f, 4),
            "trace_overhead_ratio": round(f / u, 4), "meta": metadata(lm)}


def _is_oom(e: BaseException) -> bool:
    return isinstance(e, torch.OutOfMemoryError) or (
        isinstance(e, RuntimeError) and ("out of memory" in str(e) or "can't allocate memory" in str(e)))


def bench_batch(lm, *, sizes=(1, 4, 8, 16), beyond: bool | None = None, max_batch: int = 4096,
                gen_length: int = 64, block_length: int = 32, log=None, accel=None) -> dict:
    """Batch sweep: greedy low-confidence decoding of `b` held-out prompts at once (one token per
    step, gen_length steps), for each b in `sizes`, then (with `beyond`, default on a GPU) doubling
    until memory runs out or `max_batch`. Running out of memory ends the sweep with a message in
    `stopped`; it is never raised. Per size: ms per step, tokens/s, peak memory."""
    sizes = list(sizes)
    if not sizes or any(not isinstance(b, int) or b < 1 for b in sizes):
        raise ValueError(f"sizes must be positive integers, got {sizes!r}")
    beyond = lm.device.type == "cuda" if beyond is None else beyond
    rows, stopped, b_i = [], None, 0
    knobs = dict(gen_length=gen_length, block_length=block_length, steps=gen_length, accel=accel)
    generate(lm, "ROMEO:\n", LowConfidence(), **knobs)                   # warm-up
    while True:
        if b_i < len(sizes):
            b = sizes[b_i]
        elif beyond and rows and rows[-1]["batch"] * 2 <= max_batch:
            b = rows[-1]["batch"] * 2
        else:
            break
        b_i += 1
        prompts = (sample_prompts(BATCH_PROMPTS) * (b // BATCH_PROMPTS + 1))[:b]
        try:
            with peak_memory(lm.device) as mem:
                out = generate(lm, prompts, LowConfidence(), **knobs)
        except Exception as e:            # noqa: BLE001 - only out-of-memory is swallowed
            if not _is_oom(e):
                raise
            if lm.device.type == "cuda":
                torch.cuda.empty_cache()
            stopped = f"batch {b}: out of memory ({type(e).__name__}); the sweep stops here"
            break
        s = out.stats
        row = {"batch": b, "nfe": s["nfe"], "seconds": s["seconds"],
               "ms_per_step": round(1000 * s["seconds"] / s["nfe"], 3), "tokens_per_s": s["tps"],
               "peak_bytes": mem["peak_bytes"], "memory_kind": mem["kind"]}
        rows.append(row)
        if log:
            log(f"batch {b:>5}: {row['ms_per_step']:.1f} ms/step, {row['tokens_per_s']:.0f} tok/s, "
                f"peak {row['peak_bytes'] / 2**20:.0f} MiB ({row['memory_kind']})")
    return {"model": lm.name, "device": str(lm.device), "gen_length": gen_length, "rows": rows, "stopped": stopped,
            "accel": repr(accel) if accel is not None else None,
            "meta": metadata(lm)}


LENGTH_RUNS = ("ar", "ar_cached", "diffusion_fixed", "diffusion_threshold", "diffusion_threshold_cached")


def with_context(lm, n: int):
    """A copy of a labkit TinyDLM model whose rotary positions reach n tokens (the weights are
    shared in value, not trained there). Past the trained context its text is out of
    distribution, but a forward pass costs what it would cost: for speed studies only."""
    if lm.max_length is None or n <= lm.max_length:
        return lm
    if not isinstance(lm.net, TinyDLM):
        raise ValueError(f"only labkit's own models can be stretched past their context; {lm.name!r} "
                         f"is {type(lm.net).__name__} with max_length {lm.max_length}")
    net = copy.deepcopy(lm.net)
    net.config.max_position_embeddings = n
    return dataclasses.replace(lm, net=net, max_length=n)


def bench_length(lm, ar, *, lengths=(32, 64, 128, 256, 512), fixed_steps: int = 32, threshold: float = 0.9,
                 prompt: str = PROMPT, extend_context: bool = True, repeats: int = 3, log=None) -> dict:
    """The AR-vs-diffusion study: for each answer length L (4 blocks of L / 4), forward passes,
    wall time and tokens/s of
    - ar: the AR twin, one token per forward over the whole decided prefix (the loop's default);
    - ar_cached: the same through its exact KV cache (labkit.models.kv_cache.CausalCache), a one-token
      forward per step, as any AR server decodes;
    - diffusion_fixed: `fixed_steps` steps whatever L; diffusion_threshold: τ `threshold`;
    - diffusion_threshold_cached: the threshold rule through the dual cache (Fast-dLLM's setup).
    Greedy; per run one warm-up, then the median of `repeats` timed runs. Lengths past a model's
    context run on `with_context` copies (rows marked `beyond_context`: speed figures only) when
    `extend_context`, else are `skipped`."""
    check_repeats(repeats)
    rows, skipped = [], []
    n_prompt = max(len(lm.encode(prompt)), len(ar.encode(prompt)))
    context = min((m.max_length for m in (lm, ar) if m.max_length is not None), default=NO_CONTEXT_LIMIT)
    for L in lengths:
        beyond = n_prompt + L > context
        if (beyond and not extend_context) or L % LENGTH_BLOCKS or fixed_steps % LENGTH_BLOCKS or fixed_steps > L:
            skipped.append(L)
            continue
        dlm, alm = (with_context(lm, n_prompt + L), with_context(ar, n_prompt + L)) if beyond else (lm, ar)
        block = L // LENGTH_BLOCKS
        runs = {"ar": (lambda alm=alm: alm, Autoregressive(), L),
                "ar_cached": (lambda alm=alm: CausalCache(alm), Autoregressive(), L),
                "diffusion_fixed": (lambda dlm=dlm: dlm, LowConfidence(), fixed_steps),
                "diffusion_threshold": (lambda dlm=dlm: dlm, Threshold(threshold=threshold), L),
                "diffusion_threshold_cached": (lambda dlm=dlm: DualCache(dlm), Threshold(threshold=threshold), L)}
        row = {"length": L, "beyond_context": beyond}
        for name, (model, rule, steps) in runs.items():
            outs = [generate(model(), prompt, rule, gen_length=L, block_length=block, steps=steps)
                    for _ in range(1 + repeats)][1:]                                 # after a warm-up
            out = sorted(outs, key=lambda o: o.stats["seconds"])[len(outs) // 2]     # the median run
            row[name] = {"nfe": out.stats["nfe"], "seconds": out.stats["seconds"], "tps": out.stats["tps"],
                         "ms_per_forward": round(1000 * out.stats["seconds"] / out.stats["nfe"], 3)}
        rows.append(row)
        if log:
            log(f"L {L:>4}{' (beyond context)' if beyond else ''}: " + " | ".join(
                f"{k} NFE {row[k]['nfe']} {row[k]['seconds']:.2f} s" for k in LENGTH_RUNS))
    return {"model": lm.name, "ar_model": ar.name, "fixed_steps": fixed_steps, "threshold": threshold,
            "repeats": repeats, "context": context, "prompt_tokens": n_prompt, "rows": rows, "skipped": skipped,
            "meta": metadata(lm)}


def sweep_figure(batch: dict | None = None, length: dict | None = None):
    """Matplotlib figure: tokens/s against batch size, and forward passes / seconds against length."""
    import matplotlib.pyplot as plt  # on the first figure: `labkit`'s start and the tables need none

    panels = [p for p in (batch, length) if p]
    fig, axes = plt.subplots(1, len(panels) + (1 if length else 0), figsize=(5 * (len(panels) + bool(length)), 3.8))
    axes = list(axes) if hasattr(axes, "__len__") else [axes]
    i = 0
    if batch:
        ax = axes[i]
        i += 1
        bs = [r["batch"] for r in batch["rows"]]
        ax.plot(bs, [r["tokens_per_s"] for r in batch["rows"]], "o-")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("batch size")
        ax.set_ylabel("tokens / s")
        ax.set_title(f"batch sweep ({batch['device']})")
    if length:
        Ls = [r["length"] for r in length["rows"]]
        for key, ylabel, ax in (("nfe", "forward passes", axes[i]), ("seconds", "wall time (s)", axes[i + 1])):
            for name in LENGTH_RUNS:
                if all(name in r for r in length["rows"]):     # files from before ar_cached lack it
                    ax.plot(Ls, [r[name][key] for r in length["rows"]], "o-", label=name)
            beyond = [r["length"] for r in length["rows"] if r.get("beyond_context")]
            if beyond:
                ax.axvspan(min(beyond) * 0.9, max(Ls) * 1.05, color="0.92", zorder=0,
                           label="past the trained context (speed only)")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xticks(Ls, [str(n) for n in Ls])
            ax.set_xlabel("answer length (tokens)")
            ax.set_ylabel(ylabel + " (log)")
            ax.legend(fontsize=7)
        axes[i].set_title("AR vs diffusion: forward passes")
        axes[i + 1].set_title("AR vs diffusion: wall time")
    fig.tight_layout()
    return fig


def bench_cache(lm, ar, *, n_prompts: int = 8, repeats: int = 3, gen_length: int = 128, block_length: int = 32,
                rules: dict | None = None) -> dict:
    """PrefixCache and DualCache against no cache, greedy, on long held-out prompts (one batch):
    speedup (median wall time of `repeats` interleaved runs), share of answers identical to the
    uncached ones, and gen-PPL of each."""
    budget = LONG_PROMPT_TOKENS if lm.max_length is None else min(LONG_PROMPT_TOKENS, lm.max_length - gen_length)
    prompts = long_prompts(lm, n_prompts, max_tokens=budget)
    rules = rules or {"low_confidence": LowConfidence(), "threshold_0.9": Threshold(threshold=0.9)}
    knobs = dict(gen_length=gen_length, block_length=block_length, steps=gen_length)
    result = {"model": lm.name, "device": str(lm.device), "prompts": len(prompts),
              "prompt_tokens": [len(lm.encode(p)) for p in prompts], "rules": {}, "meta": metadata(lm)}
    for rname, rule in rules.items():
        models = {"none": lm, "prefix": PrefixCache(lm), "dual": DualCache(lm)}
        seconds, outs = interleaved({k: lambda m=m, rule=rule: generate(m, prompts, rule, **knobs)
                                     for k, m in models.items()}, repeats, lm.device)
        texts = {k: out.texts for k, out in outs.items()}
        result["rules"][rname] = {k: {"seconds": round(seconds[k], 4),
                                      "speedup": round(seconds["none"] / seconds[k], 3),
                                      "identical": round(sum(a == b for a, b in zip(texts[k], texts["none"]))
                                                         / len(prompts), 4),
                                      "gen_ppl": round(gen_ppl(ar, prompts, texts[k]), 3)} for k in models}
    return result


__all__ = ["BATCH_PROMPTS", "LENGTH_BLOCKS", "LENGTH_RUNS", "LONG_PROMPT_TOKENS", "NO_CONTEXT_LIMIT", "PROMPT",
           "bench_batch", "bench_cache", "bench_length", "bench_overhead", "long_prompts", "sweep_figure",
           "with_context"]
