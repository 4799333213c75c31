"""Where diffusion wins, measured exactly: the task models (`tiny-task`, its AR twin `tiny-task-ar`)
on the held-out task suite under every decoding order and parallel rule, beside the Shakespeare
models' speed-quality table (`benchmarks/results/samplers.json`), in one JSON.

    labkit bench tasks --out benchmarks/results      # → tasks.json (about 15 min on 2 cores)

`RULES` is the matrix: the orders of one-token-per-step decoding (random, low-confidence,
margin, entropy) and the parallel rules (threshold at three values, factor, S and Q modes).
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from ..eval.exact import evaluate_tasks
from ..tasks import TASKS
from .common import metadata

# (label, rule name, knobs): the decoding orders first, then the parallel rules
RULES = (
    ("random order", "random", {}),
    ("low-confidence", "low_confidence", {}),
    ("margin", "low_confidence", {"score": "margin"}),
    ("entropy", "low_confidence", {"score": "neg_entropy"}),
    ("threshold 0.9", "threshold", {"threshold": 0.9}),
    ("threshold 0.7", "threshold", {"threshold": 0.7}),
    ("threshold 0.5", "threshold", {"threshold": 0.5}),
    ("factor 1.0", "factor", {"factor": 1.0}),
    ("S mode", "speed", {}),
    ("Q mode", "quality", {}),
)
AR_LABEL = "AR twin (left to right)"
SEED_RULES = ("random order", "low-confidence", "margin", "threshold 0.9")   # the seed-spread matrix
# Shakespeare rows of samplers.json set beside the tasks: (label, model key, row key)
SHAKESPEARE = (
    ("low-confidence", "tiny", "low_confidence_1tok"), ("threshold 0.9", "tiny", "threshold_0.9"),
    ("threshold 0.7", "tiny", "threshold_0.7"), ("threshold 0.5", "tiny", "threshold_0.5"),
    ("factor 1.0", "tiny", "factor_1.0"), ("low-confidence", "tiny-cap", "low_confidence_1tok"),
    ("threshold 0.9", "tiny-cap", "threshold_0.9"), ("S mode", "tiny-cap", "draft_edit_speed"),
    ("Q mode", "tiny-cap", "draft_edit_quality"),
)


def run_matrix(lm, ar=None, tasks=TASKS, n: int | None = None, labels=None, log=None) -> list[dict]:
    """One evaluate_tasks result per rule of RULES (those in `labels`, default all) on `lm`, then
    the AR twin's, each with its label and wall seconds."""
    runs = []
    for label, name, knobs in RULES:
        if labels is not None and label not in labels:
            continue
        t0 = time.perf_counter()
        r = evaluate_tasks(lm, name, tasks=tasks, n=n, **knobs)
        runs.append({"label": label, "rule": name, "knobs": knobs, **r, "seconds": round(time.perf_counter() - t0, 1)})
        if log:
            log(f"{lm.name} · {label}: " + ", ".join(f"{t} {v['accuracy']:.3f}" for t, v in r["tasks"].items()))
    if ar is not None:
        t0 = time.perf_counter()
        r = evaluate_tasks(ar, "autoregressive", tasks=tasks, n=n)
        runs.append({"label": AR_LABEL, "rule": "autoregressive", "knobs": {}, **r,
                     "seconds": round(time.perf_counter() - t0, 1)})
    return runs


def shakespeare_rows(samplers_json: str | Path) -> list[dict]:
    """The Shakespeare models' rows of the committed speed-quality table: TPF and gen-PPL, and
    gen-PPL as a multiple of the same model's one-token-per-step run."""
    data = json.loads(Path(samplers_json).read_text())
    by_model = {"tiny": data, "tiny-cap": data["cap"]}
    rows = []
    for label, model, key in SHAKESPEARE:
        r = by_model[model][key]
        base = by_model[model]["low_confidence_1tok"]["gen_ppl"]
        rows.append({"label": label, "model": model, "row": key, "tpf": r["tpf"], "gen_ppl": r["gen_ppl"],
                     "gen_ppl_x_1tok": round(r["gen_ppl"] / base, 3), "distinct_2": r["distinct_2"]})
    return rows


def bench_tasks(lm, ar, samplers_json: str | Path, n: int | None = None, log=None) -> dict:
    """The whole comparison: every rule on `lm`, the AR twin, and the Shakespeare rows."""
    return {"meta": metadata(lm), "runs": run_matrix(lm, ar, n=n, log=log),
            "shakespeare": shakespeare_rows(samplers_json)}
