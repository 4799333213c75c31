"""The Sudoku AR twin converted to a masked model on the grid canvas (recipe tiny-sudoku-from-ar,
`labkit bench blocks --parts sudoku`): its accuracy on the held-out puzzles by confidence order and
a few other rules, beside tiny-sudoku (trained from scratch, four times the steps) and the AR twin
itself, and its curve: accuracy by confidence at each kept snapshot, from step 0 (the twin's
weights on the canvas, before any training) to its last step, beside the same recipe trained from
scratch (tiny-sudoku-scratch, a run in runs/, not committed) at the same steps.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from ..eval.exact import evaluate_tasks
from ..models.load import load, model_folder, tiny_handle
from ..training.loop import build_model
from ..training.recipes import RECIPES, SUDOKU_CURVE_STEPS
from .common import find_model, train_seconds

CONVERTED, CONFIDENCE = "tiny-sudoku-from-ar", "low-confidence"   # the converted twin, the rule it is judged by
SCRATCH, TWIN = "tiny-sudoku", "tiny-sudoku-ar"
CONTROL = "tiny-sudoku-scratch"          # the converted model's recipe from scratch: the curve beside it
RULES = ((CONFIDENCE, "low_confidence", {}), ("random order", "random", {}), ("left to right", "left_to_right", {}),
         ("threshold 0.9", "threshold", {"threshold": 0.9}))


def _accuracy(lm, rule: str, knobs: dict, n: int | None) -> dict:
    t0 = time.perf_counter()
    s = evaluate_tasks(lm, rule, tasks=("sudoku",), n=n, **knobs)["tasks"]["sudoku"]
    return {"accuracy": s["accuracy"], "ci95": s["ci95"], "n": s["n"], "nfe_mean": s["nfe_mean"],
            "seconds": round(time.perf_counter() - t0, 1)}


def step_zero():
    """The AR twin's weights on the masked canvas before training (the recipe's build_model), as a model."""
    twin = load(TWIN)
    net = build_model(RECIPES[CONVERTED], twin.tokenizer).eval()
    return tiny_handle(net, twin.tokenizer, f"{TWIN} on the canvas (step 0)")


def sudoku_conversion(runs: str | Path = "runs", n: int | None = None, log=None) -> dict:
    """Rows by model and rule, and the converted model's curve by confidence order."""
    cfg, scratch_cfg = RECIPES[CONVERTED], RECIPES[SCRATCH]
    converted = find_model(CONVERTED, runs)
    rows = {CONVERTED: {label: _accuracy(converted, rule, knobs, n) for label, rule, knobs in RULES},
            SCRATCH: {CONFIDENCE: _accuracy(load(SCRATCH), "low_confidence", {}, n)},
            TWIN: {"AR (left to right)": _accuracy(load(TWIN), "autoregressive", {}, n)}}
    if log:
        log(f"sudoku rows: {json.dumps({m: {k: v['accuracy'] for k, v in r.items()} for m, r in rows.items()})}")
    curve = [{"step": 0, "train_minutes": 0.0, **_accuracy(step_zero(), "low_confidence", {}, n)},
             *_snapshots(CONVERTED, runs, n, log),
             {"step": cfg.steps, "train_minutes": round(train_seconds(model_folder(CONVERTED)) / 60, 1),
              **rows[CONVERTED][CONFIDENCE]}]
    control = [*_snapshots(CONTROL, runs, n, log), {"step": RECIPES[CONTROL].steps, "train_minutes": round(
        train_seconds(Path(runs) / CONTROL) / 60, 1), **_accuracy(find_model(CONTROL, runs), "low_confidence", {}, n)}]
    return {"steps": cfg.steps, "scratch_steps": scratch_cfg.steps, "share_of_scratch_steps": cfg.steps / scratch_cfg.steps,
            "rows": rows, "curve": curve, "control": control}


def _snapshots(recipe: str, runs, n: int | None, log) -> list[dict]:
    """Accuracy by confidence at each of SUDOKU_CURVE_STEPS of runs/RECIPE."""
    points = []
    for step in SUDOKU_CURVE_STEPS:
        snap = Path(runs) / recipe / f"step-{step}"
        if not (snap / "model.safetensors").is_file():
            raise FileNotFoundError(f"no snapshot {snap}: labkit train --recipe {recipe} --keep-steps "
                                    + ",".join(map(str, SUDOKU_CURVE_STEPS)))
        points.append({"step": step, "train_minutes": round(train_seconds(snap) / 60, 1),
                       **_accuracy(load(str(snap)), "low_confidence", {}, n)})
        if log:
            log(f"sudoku curve {recipe} step {step}: {points[-1]['accuracy']}")
    return points


__all__ = ["CONFIDENCE", "CONTROL", "CONVERTED", "RULES", "SCRATCH", "TWIN", "step_zero", "sudoku_conversion"]
