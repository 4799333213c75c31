"""`labkit bench editor`: the editor trained on its own errors against the random-noise T2T stage.

Three Sudoku models on the 600 held-out puzzles under every rule of `bench.tasks.RULES` (the
one-per-step orders, the parallel rules, and the rules that edit):

    tiny-sudoku          the committed model (its T2T stage: random corruptions, edit_prob 0.1)
    tiny-sudoku-t2t      it, fine-tuned 1000 steps more with the same recipe (the control)
    tiny-sudoku-editor   it, fine-tuned 1000 steps with a quarter of each batch its own drafts
                         (`labkit.training.self_errors`), the rest as the control's

Each row: accuracy with its Wilson interval (overall and by difficulty), TPF and, for the editing
rules, the cells the edits fixed and broke. `shares`: the editor's recipe with 1/8, 1/4 and 1/2 of
each batch drafts, under the rules that show the trade (KEY_RULES). The runs are found in
runs/editor/ (or are embedded models); `labkit bench editor` trains the missing ones first
(labkit/cli/bench_training.py).
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import torch

from ..eval.exact import evaluate_tasks
from ..samplers import registry
from ..tasks import heldout, sudoku
from ..training.recipes import RECIPES
from ..training.rollouts import rollout
from .common import find_model, metadata
from .tasks import EDIT_LABELS, RULES

BASE, CONTROL, EDITOR = "tiny-sudoku", "tiny-sudoku-t2t", "tiny-sudoku-editor"
MODELS = (BASE, CONTROL, EDITOR)
RUNS = Path("runs") / "editor"         # the fine-tuned runs (not committed unless embedded)
TRAINED = (CONTROL, EDITOR)            # the recipes `labkit bench editor` trains when missing
SHARES = (0.125, 0.25, 0.5)            # the editor's draft share, swept (0.25 is the recipe's)
KEY_RULES = ("random order", "low-confidence", "threshold 0.9", "threshold 0.5", "S mode", "Q mode",
             "draft-edit 0.5 / 0.9")


def share_run(share: float) -> str:
    """The run name of the editor's recipe at another draft share (the recipe's own share: EDITOR)."""
    return EDITOR if share == RECIPES[EDITOR].self_error_share else f"share-{share}"


def share_config(share: float):
    return dataclasses.replace(RECIPES[EDITOR], self_error_share=share)


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


def _rows(lm, name: str, labels, n: int | None, log) -> list[dict]:
    rows = []
    for label, rule, knobs in (r for r in RULES if r[0] in labels):
        rows.append(rule_row(lm, label, rule, knobs, n))
        if log:
            r = rows[-1]
            log(f"{name} · {label}: {r['accuracy']:.3f} at TPF {r['tpf']:.2f}"
                + (f", edits {r['edits']['fixed']} fixed / {r['edits']['broke']} broken" if "edits" in r else ""))
    return rows


def bench_editor(runs: str | Path = RUNS, models=MODELS, shares=SHARES, n: int | None = None, log=None) -> dict:
    """Every rule on each model, KEY_RULES on the editor at each draft share;
    {"meta", "models": {name: [row, ...]}, "shares": {share: [row, ...]}, "steps"}."""
    out = {"meta": None, "steps": RECIPES[EDITOR].steps, "models": {}, "shares": {}}
    every = [label for label, _, _ in RULES]
    for name in models:
        lm = find_model(name, runs)
        out["meta"] = out["meta"] or metadata(lm)
        out["models"][name] = _rows(lm, name, every, n, log)
        out.setdefault("breaks", {})[name] = break_analysis(lm, heldout("sudoku")[:n] if n else None)
    for share in shares:
        name = share_run(share)
        if name in out["models"]:
            out["shares"][str(share)] = [r for r in out["models"][name] if r["label"] in KEY_RULES]
        else:
            out["shares"][str(share)] = _rows(find_model(name, runs), name, KEY_RULES, n, log)
    return out


def break_analysis(lm, items=None, batch: int = 200) -> dict:
    """Where S mode's edits break a right cell: of the right cells an edit made wrong (greedy, on the
    held-out puzzles), how many held a digit that another cell of its row, column or box also held
    in the state the model read (a conflict: one of the two is wrong, and the edit picked the wrong
    side), and how many of those had their wrong partner fixed in the same pass (both rewritten at
    once). Also the fixes, for the ratio."""
    units = sudoku.UNITS
    items = items or heldout("sudoku")
    out = {"broken": 0, "in_conflict": 0, "partner_fixed_same_pass": 0, "fixed": 0}
    for start in range(0, len(items), batch):
        chunk = items[start:start + batch]
        trace = rollout(lm, chunk, registry.rule("speed"), 1, 0).trace
        P = trace.prompt_len
        truth = torch.tensor([lm.encode(it.answer) for it in chunk])                 # (B, 36)
        state = trace.init.long()[:, P:]
        for rec in trace.records:
            new, edited = rec.tokens.long()[:, P:], rec.edited[:, P:]
            right = state == truth
            broke, fixed = edited & right & (new != truth), edited & ~right & (new == truth)
            out["broken"] += int(broke.sum())
            out["fixed"] += int(fixed.sum())
            for b, i in broke.nonzero().tolist():
                rivals = [j for u in units if i in u for j in u if j != i and int(state[b, j]) == int(state[b, i])]
                out["in_conflict"] += bool(rivals)
                out["partner_fixed_same_pass"] += any(bool(fixed[b, j]) for j in rivals)
            state = new
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


__all__ = ["BASE", "CONTROL", "EDITOR", "KEY_RULES", "MODELS", "RUNS", "SHARES", "TRAINED", "bench_editor",
           "break_analysis", "row", "rule_row", "share_config", "share_run", "text_table"]
