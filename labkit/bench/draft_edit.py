"""`labkit bench draft-edit`: notebook 04's three sweeps on `tiny-cap`, the figures it prints from
benchmarks/results/draft_edit.json (the notebook runs a small part of each live, with the same code).

- modes: editing against none, on 6 held-out prompts (128 tokens, blocks of 32, greedy): threshold
  decoding at τ 0.5 and 0.7, LLaDA2.1's S and Q modes, each with multi-block editing (MBE);
- sweep: the mask threshold τ_M2T (0.3 0.5 0.7 0.9) against the editing threshold τ_T2T (0.0 0.5 0.9)
  on the same prompts, S mode (0.5 / 0.0) and Q mode (0.7 / 0.5) two points of the grid;
- corrections: S mode on 12 held-out prompts with 3 seeds (seed 0 greedy, 1 and 2 sampled at
  temperature 0.8; 64 tokens, blocks of 32), every readable correction (`labkit.eval.corrections`).

Each row: nfe and tpf (`run_one`), gen_ppl under the AR twin (unrounded, as the notebook printed it)
with its 95% bootstrap interval over the prompts and the per-prompt parts, and distinct_2. About 4 min on 2 cores.
"""
from __future__ import annotations

import dataclasses

from ..decode import generate
from ..eval.corrections import corrections
from ..eval.metrics import gen_nats, ppl_of
from ..models.load import load
from ..samplers import DraftEdit, Threshold
from ..training.prompts import sample_prompts
from .common import metadata
from .samplers import nats_figures, run_one

MODEL, AR_MODEL = "tiny-cap", "tiny-ar"
KNOBS = dict(gen_length=128, block_length=32, steps=128)          # modes and sweep
SEARCH = dict(gen_length=64, block_length=32, steps=64)           # the correction search
PROMPTS, SEARCH_PROMPTS, SEEDS = 6, 12, (0, 1, 2)
M2T, T2T = (0.3, 0.5, 0.7, 0.9), (0.0, 0.5, 0.9)
MARKS = {(0.5, 0.0): "S mode", (0.7, 0.5): "Q mode"}


def mode_rules() -> dict:
    """The rules of notebook 04's 'Does it help?' table, by the names it prints."""
    return {"threshold 0.5 (no edits)": Threshold(threshold=0.5), "S": DraftEdit.speed(),
            "S + MBE": DraftEdit.speed(mbe_blocks=1), "threshold 0.7 (no edits)": Threshold(threshold=0.7),
            "Q": DraftEdit.quality(), "Q + MBE": DraftEdit.quality(mbe_blocks=1)}


def search_rules() -> dict:
    """seed → the S-mode rule the correction search runs with it (seed 0 greedy, others T=0.8)."""
    return {seed: DraftEdit.speed(temperature=0.0 if seed == 0 else 0.8) for seed in SEEDS}


def measure(lm, ar, rule, prompts) -> dict:
    """One rule on the prompts: NFE, TPF, gen-PPL and distinct-2, as the notebook computes them."""
    row, texts = run_one(lm, rule, prompts, tps_prompts=0, **KNOBS)
    rows = gen_nats(ar, prompts, texts)                  # one pass of the judge: the figure and its interval
    return {"nfe": row["nfe"], "tpf": row["tpf"], **nats_figures(rows, digits=4), "gen_ppl": ppl_of(rows),
            "distinct_2": row["distinct_2"]}


def search(lm, prompts, seeds=SEEDS) -> list[dict]:
    """The readable corrections of S mode on each (seed, prompt), in that order."""
    rules, found = search_rules(), []
    for seed in seeds:
        for i, p in enumerate(prompts):
            out = generate(lm, p, rules[seed], seed=seed, **SEARCH)
            found += [{"seed": seed, "prompt": i, **{k: v for k, v in dataclasses.asdict(c).items() if k != "row"}}
                      for c in corrections(out, lm, SEARCH["block_length"])]
    return found


def bench_draft_edit(model: str = MODEL, ar_model: str = AR_MODEL, log=None) -> dict:
    lm, ar = load(model), load(ar_model)
    prompts = sample_prompts(PROMPTS)
    modes = {}
    for name, rule in mode_rules().items():
        modes[name] = measure(lm, ar, rule, prompts)
        if log:
            log(f"{name:<26} {modes[name]}")
    sweep = []
    for t2t in T2T:
        for m2t in M2T:
            sweep.append({"m2t": m2t, "t2t": t2t,
                          **measure(lm, ar, DraftEdit(threshold=m2t, editing_threshold=t2t), prompts)})
            if log:
                log(f"tau M2T {m2t} tau T2T {t2t}: {sweep[-1]}")
    found = search(lm, sample_prompts(SEARCH_PROMPTS))
    return {"model": model, "ar_model": ar_model, "prompts": PROMPTS, **KNOBS, "modes": modes, "sweep": sweep,
            "corrections": {"prompts": SEARCH_PROMPTS, "seeds": list(SEEDS), **SEARCH,
                            "runs": SEARCH_PROMPTS * len(SEEDS), "found": found},
            "meta": metadata(lm)}


def modes_table(r: dict) -> str:
    return "\n".join(f"{name:<26} NFE {m['nfe']:6.1f}  TPF {m['tpf']:.2f}  gen-PPL {m['gen_ppl']:6.2f}"
                     f"  distinct-2 {m['distinct_2']:.3f}" for name, m in r["modes"].items())


def sweep_table(r: dict) -> str:
    lines = [f"{'tau M2T':>7} {'tau T2T':>7} {'TPF':>6} {'gen-PPL':>8} {'distinct-2':>10}"]
    for s in r["sweep"]:
        mark = f"  <- {MARKS[s['m2t'], s['t2t']]}" if (s["m2t"], s["t2t"]) in MARKS else ""
        lines.append(f"{s['m2t']:>7} {s['t2t']:>7} {s['tpf']:>6.2f} {s['gen_ppl']:>8.2f} {s['distinct_2']:>10.3f}{mark}")
    return "\n".join(lines)


def corrections_table(r: dict) -> str:
    c = r["corrections"]
    lines = [f"{len(c['found'])} readable corrections in {c['runs']} S-mode runs:"]
    lines += [f"  seed {f['seed']}  prompt {f['prompt']:>2}  block {f['block']}  {f['before']!r} → {f['after']!r}"
              f"  ({f['why']})" for f in c["found"]]
    return "\n".join(lines)


def table(r: dict) -> str:
    return "\n\n".join((f"== {r['model']}, {r['prompts']} held-out prompts, {r['gen_length']} tokens, blocks of "
                        f"{r['block_length']}, greedy; gen-PPL under {r['ar_model']}", modes_table(r), sweep_table(r),
                        corrections_table(r)))
