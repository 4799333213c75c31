"""`labkit bench editor`: the editor trained on its own errors against the random-noise T2T stage.

Three Sudoku models on the 600 held-out puzzles under every rule of `bench.tasks.RULES` (the
one-per-step orders, the parallel rules, and the rules that edit):

    tiny-sudoku          the committed model (its T2T stage: random corruptions, edit_prob 0.1)
    tiny-sudoku-t2t      it, fine-tuned 1000 steps more with the same recipe (the control)
    tiny-sudoku-editor   it, fine-tuned 1000 steps with half of each batch its own drafts
                         (`labkit.training.self_errors`), the rest as the control's

Each row: accuracy with its Wilson interval (overall and by difficulty), TPF and, for the editing
rules, the cells the edits fixed and broke. The runs are found in runs/ (or are embedded models);
`labkit bench editor` trains the missing ones first (labkit/cli/bench_training.py).
"""
from __future__ import annotations

import time
from pathlib import Path

from ..eval.exact import evaluate_tasks
from .common import find_model, metadata
from .tasks import EDIT_LABELS, RULES

BASE, CONTROL, EDITOR = "tiny-sudoku", "tiny-sudoku-t2t", "tiny-sudoku-editor"
MODELS = (BASE, CONTROL, EDITOR)
RUNS = Path("runs") / "editor"         # the fine-tuned runs (not committed unless embedded)
TRAINED = (CONTROL, EDITOR)            # the recipes `labkit bench editor` trains when missing


def rule_row(lm, label: str, name: str, knobs: dict, n: int | None) -> dict:
    """One rule on the held-out puzzles: accuracy, interval, TPF, groups and (editing rules) edits."""
    t0 = time.perf_counter()
    s = evaluate_tasks(lm, name, tasks=("sudoku",), n=n, **knobs)["tasks"]["sudoku"]
    row = {"label": label, "rule": name, "knobs": knobs, "n": s["n"], "accuracy": s["accuracy"], "ci95": s["ci95"],
           "tpf": s["tpf"], "groups": {g: {"accuracy": v["accuracy"], "ci95": v["ci95"]} for g, v in s["groups"].items()},
           "seconds": round(time.perf_counter() - t0, 1)}
    if label in EDIT_LABELS:
        edits = s.get("edits", {"fixed": 0, "broke": 0, "other": 0})
        row["edits"] = {**edits, "ratio": round(edits["fixed"] / edits["broke"], 2) if edits["broke"] else None}
    return row


def bench_editor(runs: str | Path = RUNS, models=MODELS, n: int | None = None, log=None) -> dict:
    """Every rule on each model; {"meta", "models": {name: [row, ...]}}."""
    out = {"meta": None, "models": {}}
    for name in models:
        lm = find_model(name, runs)
        out["meta"] = out["meta"] or metadata(lm)
        rows = []
        for label, rule, knobs in RULES:
            rows.append(rule_row(lm, label, rule, knobs, n))
            if log:
                r = rows[-1]
                log(f"{name} · {label}: {r['accuracy']:.3f} at TPF {r['tpf']:.2f}"
                    + (f", edits {r['edits']['fixed']} fixed / {r['edits']['broke']} broken" if "edits" in r else ""))
        out["models"][name] = rows
    return out


def text_table(result: dict) -> str:
    """Rule by rule, each model's accuracy [interval] at its TPF, and the edits' fixed / broken."""
    models = list(result["models"])
    lines = ["| rule | " + " | ".join(models) + " |", "|---|" + "---|" * len(models)]
    for label, _, _ in RULES:
        cells = []
        for m in models:
            r = row(result, m, label)
            cell = f"{100 * r['accuracy']:.1f}% [{100 * r['ci95'][0]:.1f}, {100 * r['ci95'][1]:.1f}] at {r['tpf']:.2f}"
            if "edits" in r:
                cell += f", {r['edits']['fixed']}/{r['edits']['broke']} fixed/broken"
            cells.append(cell)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def row(result: dict, model: str, label: str) -> dict:
    """The row of `label` for `model` in an editor.json."""
    return next(r for r in result["models"][model] if r["label"] == label)


__all__ = ["BASE", "CONTROL", "EDITOR", "MODELS", "RUNS", "TRAINED", "bench_editor", "row", "rule_row", "text_table"]
