"""Samplers against accuracy through lm-evaluation-harness, in the spirit of Fast-dLLM's tables:
each rule's score on the shipped generation task, its TPF and its time, for tiny and tiny-cap.

    labkit bench lm-eval --out benchmarks/results      # → lm_eval.json

Every number comes from `lm_eval.simple_evaluate` with the labkit model (`labkit.eval.harness`),
the TPF from the model's own decode log of the same run. docs/benchmarks.md's table of these rows is
written by benchmarks/docgen (benchmarks_md.lm_eval_table).
"""
from __future__ import annotations

import time

from ..models.load import load
from .common import metadata

TASK = "labkit_shakespeare_complete"
METRICS = ("word_f1", "exact_match")
# (label, rule name, knobs)
RULES = (
    ("low-confidence, 1 token/step", "low_confidence", {}),
    ("threshold 0.9", "threshold", {"threshold": 0.9}),
    ("threshold 0.7", "threshold", {"threshold": 0.7}),
    ("factor 1.0", "factor", {"factor": 1.0}),
    ("S mode", "speed", {}),
    ("Q mode", "quality", {}),
)
MODELS = ("tiny", "tiny-cap")


def run_one(model: str, rule: str, knobs: dict, limit: int | None, batch_size: int = 16) -> dict:
    """One simple_evaluate of TASK: its metrics, the decode log's NFE and TPF, and the wall time."""
    import lm_eval  # the eval extra: `labkit bench` lists this benchmark without it
    from lm_eval.tasks import TaskManager  # the eval extra

    from ..eval.harness import TASKS_DIR, LabkitLM  # imports lm_eval, the eval extra

    lm = LabkitLM(model=model, sampler=rule, batch_size=batch_size, **knobs)
    t0 = time.perf_counter()
    res = lm_eval.simple_evaluate(model=lm, tasks=[TASK], limit=limit, task_manager=TaskManager(include_path=str(TASKS_DIR)),
                                  bootstrap_iters=0, log_samples=False)["results"][TASK]
    seconds = time.perf_counter() - t0
    return {**{m: round(res[f"{m},none"], 4) for m in METRICS}, **lm.decode_summary(),
            "seconds": round(seconds, 1), "sampler": repr(lm.rule({}))}


def bench_lm_eval(models=MODELS, limit: int | None = None, log=None) -> dict:
    """Every rule of RULES on every model: {"meta", "task", "limit", "rows": [...]}."""
    rows = []
    for model in models:
        for label, rule, knobs in RULES:
            r = run_one(model, rule, knobs, limit)
            rows.append({"model": model, "label": label, "rule": rule, "knobs": knobs, **r})
            if log:
                log(f"{model} · {label}: word_f1 {r['word_f1']:.3f}, TPF {r['tpf']:.2f}, {r['seconds']} s")
    return {"meta": metadata(load(models[0])), "task": TASK, "limit": limit, "rows": rows}


def table(result: dict) -> str:
    lines = [f"{'model':<9} {'rule':<30} {'word F1':>8} {'exact':>6} {'TPF':>6} {'seconds':>8}"]
    for r in result["rows"]:
        lines.append(f"{r['model']:<9} {r['label']:<30} {r['word_f1']:>8.3f} {r['exact_match']:>6.3f} "
                     f"{r['tpf']:>6.2f} {r['seconds']:>8.1f}")
    return "\n".join(lines)
