"""`labkit bench samplers`: the speed-quality table of every rule on the same prompts.

Greedy (temperature 0, the setting all reference numbers use), gen_length 128, block 32. The
prompts are decoded in one left-padded batch, where each row finishes on its own and counts only
the forward passes it took part in (a row's tokens do not depend on the batch: tests check it).
Per sampler:
- nfe: forward passes per sample (mean over rows); tpf: answer tokens per forward pass (sum of
  tokens over sum of per-row NFE); tps: answer tokens per second of wall time decoding the first
  `tps_prompts` prompts one at a time (batch 1, as Fast-dLLM and LLaDA2.1 report speed);
- gen_ppl: perplexity of the answers under the autoregressive twin; distinct_2: mean share of
  distinct token bigrams per answer (low = loops).
"""
from __future__ import annotations

import dataclasses
import time

from ..decode import generate
from ..eval.intervals import ppl_interval
from ..eval.metrics import distinct_n, gen_nats, ppl_of
from ..samplers import registry
from ..training.prompts import sample_prompts
from .common import Column, format_table

GEN_LENGTH, BLOCK_LENGTH = 128, 32
TOKENS_PER_STEP = (1, 2, 4)                      # low_confidence_{k}tok: a fixed k tokens per step
THRESHOLDS = (0.95, 0.93, 0.9, 0.7, 0.5)         # threshold_{τ}: the curve near 2 tokens per forward and below
FACTOR = 1.0                                     # factor_{f}
MBE_BLOCKS = 1                                   # draft_edit_{preset}_mbe: earlier blocks T2T may revisit


def sampler_suite(gen_length: int = GEN_LENGTH) -> dict[str, tuple[object, int]]:
    """name → (rule, steps), every rule built by the sampler registry. `steps` only matters for
    the fixed-count rules."""
    rule = registry.rule
    return {
        **{f"low_confidence_{k}tok": (rule("low_confidence"), gen_length // k) for k in TOKENS_PER_STEP},
        "random": (rule("random"), gen_length),
        **{f"threshold_{tau}": (rule("threshold", threshold=tau), gen_length) for tau in THRESHOLDS},
        f"factor_{FACTOR}": (rule("factor", factor=FACTOR), gen_length),
        "entropy_bound": (rule("entropy_bound"), gen_length),
        **{f"draft_edit_{mode}": (rule(mode), gen_length) for mode in registry.PRESETS},
        **{f"draft_edit_{mode}_mbe": (dataclasses.replace(rule(mode), mbe_blocks=MBE_BLOCKS), gen_length)
           for mode in registry.PRESETS},
    }


def run_one(lm, rule, prompts: list[str], *, steps: int, gen_length: int = GEN_LENGTH,
            block_length: int = BLOCK_LENGTH, seed: int = 0, tps_prompts: int = 4) -> tuple[dict, list[str]]:
    """Decode the prompts (one batch for the figures, batch 1 for the speed); return the
    aggregate figures and the answers."""
    knobs = dict(gen_length=gen_length, block_length=block_length, steps=steps, seed=seed)
    out = generate(lm, prompts, rule, **knobs)
    P = out.trace.prompt_len
    d2 = [distinct_n(row[P:].tolist(), 2) for row in out.ids]
    tokens, seconds = 0, 0.0
    for prompt in prompts[:tps_prompts]:
        one = generate(lm, prompt, rule, **knobs)
        tokens, seconds = tokens + one.stats["gen_tokens"], seconds + one.stats["seconds"]
    n = len(prompts)
    return {"nfe": round(out.stats["row_nfe"] / n, 2), "tpf": round(out.stats["tpf"], 3),
            "tps": round(tokens / max(seconds, 1e-9), 1), "distinct_2": round(sum(d2) / n, 4)}, out.texts


def text_figures(ar, prompts: list[str], texts: list[str], digits: int = 2) -> dict:
    """gen-PPL with its 95% bootstrap interval over prompts (labkit.eval.intervals), and the
    per-prompt parts (nats, tokens) a paired comparison of two rules on these prompts resamples."""
    return nats_figures(gen_nats(ar, prompts, texts), digits)


def nats_figures(rows: list[tuple[float, int]], digits: int = 2) -> dict:
    """text_figures from gen_nats' per-prompt (nats, tokens), when the caller already has them."""
    return {"gen_ppl": round(ppl_of(rows), digits),
            "gen_ppl_ci95": [round(v, digits) for v in ppl_interval(rows)],
            "per_prompt": {"nats": [round(n, 3) for n, _ in rows], "tokens": [k for _, k in rows]}}


def per_prompt(row: dict) -> list[tuple[float, int]]:
    """The stored (nats, tokens) per prompt of a bench row (text_figures)."""
    return list(zip(row["per_prompt"]["nats"], row["per_prompt"]["tokens"]))


def bench_samplers(lm, ar, *, n_prompts: int = 96, names: list[str] | None = None,
                   gen_length: int = GEN_LENGTH, block_length: int = BLOCK_LENGTH, seed: int = 0,
                   with_ar: bool = True, tps_prompts: int = 4, log=None) -> dict:
    """{sampler name: {nfe, tpf, tps, gen_ppl, distinct_2, prompts}} on the held-out prompts; "ar"
    is the autoregressive twin decoding the same prompts through the same loop. tps_prompts=0
    skips the batch-1 speed runs (tps is then 0.0)."""
    if not isinstance(n_prompts, int) or n_prompts < 1:
        raise ValueError(f"prompts must be a positive integer, got {n_prompts!r}")
    prompts = sample_prompts(n_prompts)
    suite = sampler_suite(gen_length)
    unknown = sorted(set(names or []) - set(suite) - {"ar"})
    if unknown:
        raise ValueError(f"unknown sampler name(s) {unknown}; choose from {', '.join([*suite, 'ar'])}")
    results = {}
    for name, (rule, steps) in suite.items():
        if names and name not in names:
            continue
        t0 = time.perf_counter()
        row, texts = run_one(lm, rule, prompts, steps=steps, gen_length=gen_length,
                             block_length=block_length, seed=seed, tps_prompts=tps_prompts)
        results[name] = {**row, **text_figures(ar, prompts, texts), "prompts": n_prompts}
        if log:
            log(f"{name:<24} {row}  ({time.perf_counter() - t0:.0f} s)")
    if with_ar and (not names or "ar" in names):
        row, texts = run_one(ar, registry.rule("autoregressive"), prompts, steps=gen_length, gen_length=gen_length,
                             block_length=block_length, seed=seed, tps_prompts=tps_prompts)
        results["ar"] = {**row, **text_figures(ar, prompts, texts), "prompts": n_prompts}
    return results


def table(results: dict, title: str = "") -> str:
    """A fixed-width text table, one row per sampler, with gen-PPL relative to the 1-token reference."""
    ref = results.get("low_confidence_1tok", {}).get("gen_ppl")
    columns = [Column("sampler", 24, align="<"), Column("NFE", 8, ".1f"), Column("TPF", 7, ".2f"),
               Column("TPS", 8, ".1f"), Column("gen-PPL", 9, ".2f"), Column("x ref", 7), Column("dist-2", 8, ".3f")]
    rows = [(name, r["nfe"], r["tpf"], r["tps"], r["gen_ppl"], f"{r['gen_ppl'] / ref:.2f}" if ref else "-",
             r["distinct_2"]) for name, r in results.items()]
    return format_table(columns, rows, title)


def frontier_figure(runs: dict[str, dict]):
    """Matplotlib figure: TPF (x) against gen-PPL (y) for each model's samplers; lower right is better."""
    import matplotlib.pyplot as plt  # on the first figure: `labkit`'s start and the tables need none

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (model, results), marker in zip(runs.items(), "os^D"):
        xs = [r["tpf"] for r in results.values()]
        ys = [r["gen_ppl"] for r in results.values()]
        ax.scatter(xs, ys, marker=marker, label=model)
        for name, x, y in zip(results, xs, ys):
            ax.annotate(name, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("tokens per forward (TPF)")
    ax.set_ylabel("gen-PPL under the AR twin (lower is better)")
    ax.set_title("speed-quality frontier, gen_length 128, block 32, greedy")
    ax.legend()
    fig.tight_layout()
    return fig
