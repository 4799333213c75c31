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
import re
from collections import defaultdict

import torch

from ..controls import Infill
from ..decode import generate
from ..models.formats import formats_of
from ..samplers import registry
from ..tasks import TASKS, Item, exact_match, heldout
from ..tasks.solver import read_steps

Z95 = 1.959964             # two-sided 95% normal quantile
BATCH = 256                # items decoded together (one canvas shape per batch)


def wilson(correct: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion (correct / n): (low, high), within [0, 1]."""
    if n <= 0:
        raise ValueError(f"n must be a positive count, got {n}")
    p = correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (0.0 if correct == 0 else max(0.0, centre - half)), (1.0 if correct == n else min(1.0, centre + half))


def answer_format(lm, item: Item):
    """The prompt format (labkit.models.formats) a task model reads `item` with, or None."""
    return next((f for f in formats_of(lm) if f.match(item.prompt) is not None), None)


def _decode_batch(lm, items: list[Item], rule, seed: int, block_length: int | None = None
                  ) -> list[tuple[str, int, int]]:
    """(prediction, forward passes, tokens written) per item; all items share prompt and answer
    lengths. A task model reads the question in its own layout (a Sudoku's clues fixed in place:
    only the blanks are written); a model that answers in steps (the solver layout) writes its
    format's canvas, read into the grid before it is scored."""
    fmt = answer_format(lm, items[0])
    steps = fmt is not None and fmt.reads == "steps"
    n = fmt.answer if steps else len(lm.encode(items[0].answer))
    out = generate(lm, [it.prompt for it in items], rule, gen_length=n, block_length=block_length or n, steps=n,
                   seed=seed)
    if steps:                     # the steps laid into each question's grid: the prediction is a grid
        texts = [read_steps(re.fullmatch(fmt.pattern, it.prompt.strip()).group(1), text)
                 for it, text in zip(items, out.texts)]
        nfe = out.trace.row_nfe().tolist()
        return [(text, int(k), n, {"fixed": 0, "broke": 0, "other": 0}) for text, k in zip(texts, nfe)]
    nfe = out.trace.row_nfe().tolist()
    P = out.trace.prompt_len
    written = (out.trace.init[:, P:] == lm.mask_id).sum(-1).tolist()
    truth = torch.tensor([lm.encode(it.answer) for it in items])                    # (B, n)
    edits = edit_outcomes(out.trace, truth)
    return [(text, int(k), int(w), e) for text, k, w, e in zip(out.texts, nfe, written, edits)]


def edit_outcomes(trace, truth: torch.Tensor) -> list[dict]:
    """Per row, what its T2T edits did to the answer canvas, judged against `truth` (B, n) token
    ids: "fixed" (a wrong token made right), "broke" (a right one made wrong), "other" (wrong to
    another wrong token)."""
    P, n = trace.prompt_len, truth.shape[1]
    before = trace.init[:, P:P + n].long()
    fixed = torch.zeros(len(truth), dtype=torch.long)
    broke, other = fixed.clone(), fixed.clone()
    for rec in trace:
        after = rec.tokens[:, P:P + n].long()
        edited = rec.edited[:, P:P + n].bool()
        was, now = before == truth, after == truth
        fixed += (edited & ~was & now).sum(-1)
        broke += (edited & was & ~now).sum(-1)
        other += (edited & ~was & ~now).sum(-1)
        before = after
    return [{"fixed": int(f), "broke": int(b), "other": int(o)} for f, b, o in zip(fixed, broke, other)]


def _decode_infill(lm, item: Item, rule, seed: int) -> tuple[str, int, int]:
    """The gaps of an infill item, filled: the prediction is the text at the gap positions."""
    layout = Infill(item.infill).layout(lm)
    n = len(layout)
    gaps = sum(1 for t in layout if t is None)
    out = generate(lm, item.prompt, rule, gen_length=n, block_length=n, steps=gaps, seed=seed,
                   controls=[Infill(item.infill)])
    canvas = out.ids[0, out.trace.prompt_len:].tolist()
    pred = lm.decode([t for t, fixed in zip(canvas, layout) if fixed is None])
    return pred, int(out.trace.row_nfe()[0]), gaps, {"fixed": 0, "broke": 0, "other": int(out.trace.edited().sum())}


def run_items(lm, items: list[Item], rule, seed: int = 0, batch: int = BATCH,
              block_length: int | None = None) -> list[dict]:
    """Decode every item with `rule`: one dict per item (task, group, prediction, correct, nfe,
    tokens: the answer tokens the model wrote). `block_length` (a divisor of the answer) decodes
    in blocks: 1 is strictly left to right."""
    rows = []
    shapes = defaultdict(list)
    for i, it in enumerate(items):
        if it.infill is not None:
            if lm.kind == "causal":
                continue                    # a left-to-right model cannot be asked to fill a gap
            rows.append((i, *_decode_infill(lm, it, rule, seed)))
        else:
            shapes[(len(lm.encode(it.prompt)), len(lm.encode(it.answer)))].append(i)
    for idx in shapes.values():
        for start in range(0, len(idx), batch):
            part = idx[start:start + batch]
            for i, got in zip(part, _decode_batch(lm, [items[j] for j in part], rule, seed, block_length)):
                rows.append((i, *got))
    rows.sort()
    return [{"task": items[i].task, "group": items[i].group, "prediction": pred, "answer": items[i].answer,
             "correct": exact_match(pred, items[i].answer), "nfe": nfe, "tokens": written, "edits": edits}
            for i, pred, nfe, written, edits in rows]


def summarise(rows: list[dict]) -> dict:
    """Exact-match accuracy with its Wilson 95% interval, NFE and TPF (answer tokens per forward
    pass, over all items) of a list of scored items."""
    n = len(rows)
    right = sum(r["correct"] for r in rows)
    lo, hi = wilson(right, n)
    nfe = sum(r["nfe"] for r in rows)
    out = {"n": n, "correct": right, "accuracy": round(right / n, 4), "ci95": [round(lo, 4), round(hi, 4)],
           "nfe_mean": round(nfe / n, 3), "tpf": round(sum(r["tokens"] for r in rows) / max(nfe, 1), 3)}
    edits = {k: sum(r.get("edits", {}).get(k, 0) for r in rows) for k in ("fixed", "broke", "other")}
    if any(edits.values()):
        out["edits"] = edits
    return out


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
            if len(groups) > 1:                         # carry chains by length; else as the items come
                order = sorted(groups, key=lambda g: int(g.split()[-1])) if task == "addition" else groups
                summary["groups"] = {g: summarise(groups[g]) for g in order}
            result["tasks"][task] = summary
    return result
