"""Exact evaluation on the task suite (`labkit.tasks`): exact-match accuracy per task with a 95%
confidence interval, for any rule of the registry on a masked model and left to right on a
causal one, with the forward passes it took.

    labkit eval --model tiny-task --tasks sudoku,addition --sampler threshold --threshold 0.9
    evaluate_tasks(lm, "margin", tasks=("sudoku",))      # Python

Each item is decoded on a canvas of exactly its answer's length, one block, so the rule alone
chooses the order; a budgeted rule gets one step per answer token. Items with an infill layout
(reversal's backward infill) put the answer canvas around fixed text (labkit.Infill) and are asked
of masked models only. Scoring is exact match of the decoded canvas against the answer.
"""
from __future__ import annotations

import math
from collections import defaultdict

import torch

from ..controls import Infill
from ..decode import generate
from ..samplers import registry
from ..tasks import TASKS, Item, heldout

Z95 = 1.959964             # two-sided 95% normal quantile
BATCH = 256                # items decoded together (one canvas shape per batch)


def exact_match(prediction: str, answer: str) -> bool:
    """The prediction is the answer, character for character (outer whitespace ignored)."""
    return prediction.strip() == answer.strip()


def wilson(correct: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion (correct / n): (low, high), within [0, 1]."""
    if n <= 0:
        raise ValueError(f"n must be a positive count, got {n}")
    p = correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (0.0 if correct == 0 else max(0.0, centre - half)), (1.0 if correct == n else min(1.0, centre + half))


def _decode_batch(lm, items: list[Item], rule, seed: int) -> list[tuple[str, int]]:
    """(prediction, forward passes) per item; all items share prompt and answer lengths."""
    n = len(lm.encode(items[0].answer))
    out = generate(lm, [it.prompt for it in items], rule, gen_length=n, block_length=n, steps=n, seed=seed)
    nfe = out.trace.row_nfe().tolist()
    return [(text, int(k)) for text, k in zip(out.texts, nfe)]


def _decode_infill(lm, item: Item, rule, seed: int) -> tuple[str, int]:
    """The gaps of an infill item, filled: the prediction is the text at the gap positions."""
    layout = Infill(item.infill).layout(lm)
    n = len(layout)
    gaps = sum(1 for t in layout if t is None)
    out = generate(lm, item.prompt, rule, gen_length=n, block_length=n, steps=gaps, seed=seed,
                   controls=[Infill(item.infill)])
    canvas = out.ids[0, out.trace.prompt_len:].tolist()
    return lm.decode([t for t, fixed in zip(canvas, layout) if fixed is None]), int(out.trace.row_nfe()[0])


def run_items(lm, items: list[Item], rule, seed: int = 0, batch: int = BATCH) -> list[dict]:
    """Decode every item with `rule`: one dict per item (task, group, prediction, correct, nfe, tokens)."""
    rows = []
    shapes = defaultdict(list)
    for i, it in enumerate(items):
        if it.infill is not None:
            if lm.kind == "causal":
                continue                    # a left-to-right model cannot be asked to fill a gap
            pred, nfe = _decode_infill(lm, it, rule, seed)
            rows.append((i, pred, nfe))
        else:
            shapes[(len(lm.encode(it.prompt)), len(lm.encode(it.answer)))].append(i)
    for idx in shapes.values():
        for start in range(0, len(idx), batch):
            part = idx[start:start + batch]
            for i, (pred, nfe) in zip(part, _decode_batch(lm, [items[j] for j in part], rule, seed)):
                rows.append((i, pred, nfe))
    rows.sort()
    return [{"task": items[i].task, "group": items[i].group, "prediction": pred, "answer": items[i].answer,
             "correct": exact_match(pred, items[i].answer), "nfe": nfe, "tokens": len(items[i].answer)}
            for i, pred, nfe in rows]


def summarise(rows: list[dict]) -> dict:
    """Exact-match accuracy with its Wilson 95% interval, NFE and TPF (answer tokens per forward
    pass, over all items) of a list of scored items."""
    n = len(rows)
    right = sum(r["correct"] for r in rows)
    lo, hi = wilson(right, n)
    nfe = sum(r["nfe"] for r in rows)
    return {"n": n, "accuracy": round(right / n, 4), "ci95": [round(lo, 4), round(hi, 4)],
            "nfe_mean": round(nfe / n, 3), "tpf": round(sum(r["tokens"] for r in rows) / max(nfe, 1), 3)}


def evaluate_tasks(lm, sampler=None, tasks=TASKS, n: int | None = None, seed: int = 0, **knobs) -> dict:
    """{task: summary, with "groups": {group: summary}} for one rule (a name plus knobs, a rule
    object, or None for the model's own) on the held-out items of `tasks`."""
    bad = [t for t in tasks if t not in TASKS]
    if bad or not tasks:
        raise ValueError(f"tasks must be drawn from {', '.join(TASKS)}, got {list(tasks)!r}")
    name = sampler if isinstance(sampler, str) or sampler is None else None
    rule = registry.rule(name or registry.default_rule(lm), **knobs) if name or not sampler else sampler
    result = {"model": lm.name, "sampler": repr(rule), "seed": seed, "tasks": {}}
    with torch.inference_mode():
        for task in tasks:
            rows = run_items(lm, heldout(task) if n is None else heldout(task, n), rule, seed)
            groups = defaultdict(list)
            for r in rows:
                groups[r["group"]].append(r)
            summary = summarise(rows)
            if len(groups) > 1:
                summary["groups"] = {g: summarise(rs) for g, rs in groups.items()}
            result["tasks"][task] = summary
    return result
