"""docs/models.md's section on the editor trained on its own errors, every figure read from
benchmarks/results/editor.json (`labkit bench editor`; tests/test_editor_results.py reads it back)."""
from __future__ import annotations

from labkit.bench.editor import BASE, CONTROL, EDITOR, KEY_RULES, row
from labkit.bench.tasks import ONE_PER_STEP, RULES

from .markdown import markdown_table
from .rl import SECTION_START as BEFORE  # the editor section goes just before the RL one

SECTION_START, SECTION_END = "<!-- editor section: python -m benchmarks.docgen -->", "<!-- end of editor section -->"

S_MODE_RATIO_TODAY = 4.3          # tiny-sudoku's S mode fixed / broken when the target was set (issue: x2)


def ratio(r: dict) -> float | None:
    e = r.get("edits")
    return e["fixed"] / e["broke"] if e and e["broke"] else None


def _cell(r: dict) -> str:
    lo, hi = r["ci95"]
    cell = f"{100 * r['accuracy']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] at {r['tpf']:.2f}"
    if "edits" in r:
        cell += f"; {r['edits']['fixed']} / {r['edits']['broke']}"
    return cell


def markdown_rules(result: dict) -> str:
    models = (BASE, CONTROL, EDITOR)
    rows = [[label] + [_cell(row(result, m, label)) for m in models] for label, _, _ in RULES]
    return markdown_table(["rule", f"`{BASE}`", f"`{CONTROL}` (control)", f"`{EDITOR}`"], rows)


def markdown_shares(result: dict) -> str:
    rows = []
    for share, rs in result["shares"].items():
        by = {r["label"]: r for r in rs}
        rows.append([share] + [f"{100 * by[k]['accuracy']:.1f}%" + (f" (×{ratio(by[k]):.1f})" if ratio(by[k]) else "")
                               for k in KEY_RULES])
    return markdown_table(["share of drafts"] + list(KEY_RULES), rows)


def markdown_breaks(result: dict) -> str:
    rows = [[f"`{m}`", str(b["fixed"]), str(b["broken"]), f"{b['in_conflict']} ({b['in_conflict'] / max(1, b['broken']):.0%})",
             str(b["partner_fixed_same_pass"])] for m, b in result["breaks"].items()]
    return markdown_table(["model", "S mode: cells fixed", "cells broken", "broken in a conflict",
                           "... with the wrong partner fixed in the same pass"], rows)


def verdict(result: dict) -> str:
    """The target (S mode's fixed / broken at least twice today's 4.3) against the measured ratio."""
    s = row(result, EDITOR, "S mode")
    got, want = ratio(s), 2 * S_MODE_RATIO_TODAY
    control = ratio(row(result, CONTROL, "S mode"))
    line = (f"S mode's edits on `{EDITOR}` fixed {s['edits']['fixed']} cells and broke {s['edits']['broke']}: "
            f"{got:.2f} fixed per broken, against the target of at least {want:.1f} (twice {S_MODE_RATIO_TODAY}) "
            f"and the control's {control:.2f}")
    if got >= want:
        return line + ": met."
    return line + f": missed, by {want - got:.2f} ({got / want:.0%} of the target)."


def conflicts(result: dict) -> str:
    b = result["breaks"][EDITOR]
    return (f"Of the {b['broken']} right cells S mode broke on `{EDITOR}`, {b['in_conflict']} "
            f"({b['in_conflict'] / max(1, b['broken']):.0%}) shared their digit with another cell of their row, "
            f"column or box in the state the model read: the edit took the wrong side of a conflict. In "
            f"{b['partner_fixed_same_pass']} of them the wrong partner was fixed in the same pass (both rewritten at "
            f"once).")


def one_per_step(result: dict) -> str:
    """The one-per-step rules before and after the editor's steps (its ordering kept or not)."""
    parts = []
    for label in ONE_PER_STEP:
        a, b = row(result, BASE, label), row(result, EDITOR, label)
        overlap = a["ci95"][0] <= b["ci95"][1] and b["ci95"][0] <= a["ci95"][1]
        parts.append(f"{label} {100 * a['accuracy']:.1f}% → {100 * b['accuracy']:.1f}% "
                     f"({'the intervals overlap' if overlap else 'beyond the intervals'})")
    return "; ".join(parts)


def models_section(result: dict) -> str:
    de = row(result, EDITOR, "draft-edit 0.5 / 0.9")
    de_c = row(result, CONTROL, "draft-edit 0.5 / 0.9")
    return f"""{SECTION_START}
## An editor trained on its own errors

`{EDITOR}` is `{BASE}` fine-tuned {result['steps']} steps with a share of each batch its own drafts:
the states its threshold-0.5 and S-mode decodings of training-split puzzles reached, each written cell
taught its true digit, each mask left by the draft its digit (`labkit.training.self_errors`; the rest of
the batch is `{BASE}`'s own rows and random repair noise). `{CONTROL}` is the control: the same
{result['steps']} steps with the random repair noise only. All 600 held-out puzzles, greedy; each cell is
accuracy [95% interval] at TPF, and for the rules that edit, the cells the edits fixed / broke
(`labkit bench editor --out benchmarks/results`).

{markdown_rules(result)}

The share of drafts in each batch, swept (the share is the recipe's knob, `self_error_share`; in
brackets, fixed per broken cell):

{markdown_shares(result)}

{verdict(result)} With an editing threshold the drafts do what they were for: draft-edit 0.5 / 0.9 fixes
{de['edits']['fixed']} and breaks {de['edits']['broke']} ({ratio(de):.1f} per broken; the control
{ratio(de_c):.1f}). S mode rewrites every cell whose top digit differs (editing threshold 0); where its
breaks come from is measured below. {conflicts(result)}

{markdown_breaks(result)}

The one-per-step orders before and after the editor's steps (the editor must not cost the model its
ordering): {one_per_step(result)}.
{SECTION_END}"""


__all__ = ["BEFORE", "S_MODE_RATIO_TODAY", "SECTION_END", "SECTION_START", "conflicts", "models_section", "ratio", "verdict"]
