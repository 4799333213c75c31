"""Reading `labkit bench tasks`'s JSON: one cell, a text table per task, the spread over training
seeds, the TPF-accuracy frontier, and the targets the task models were trained for against what
they reached (the model cards state them, labkit.bench.task_card; docs/models.md's tables of these
results are written by benchmarks/docgen/tasks.py; notebook 11 shows both; tests check them
against the JSON)."""
from __future__ import annotations

from .common import Column, format_table
from .tasks import AR_LABEL, EDIT_LABELS, ONE_PER_STEP, PARALLEL

SUDOKU_LEVELS = ("easy", "medium", "hard")
REVERSAL_MODES = ("forward", "backward_infill", "backward_reversed")


def run_of(result: dict, pair: str, label: str) -> dict:
    return next(r for r in result["pairs"][pair]["runs"] if r["label"] == label)


def accuracy(result: dict, pair: str, label: str, task: str, group: str | None = None) -> dict:
    """One cell of tasks.json: the summary of rule `label` on `task` of `pair` (or one of its groups)."""
    t = run_of(result, pair, label)["tasks"][task]
    return t if group is None else t["groups"][group]


def best_order(result: dict, pair: str, task: str, group: str | None = None) -> str:
    """The one-token-per-step order with the highest accuracy on `task` (ties: the earlier in ORDERS)."""
    accs = {label: accuracy(result, pair, label, task, group)["accuracy"] for label in ONE_PER_STEP
            if task in run_of(result, pair, label)["tasks"]}
    return max(accs, key=lambda k: (accs[k], -ONE_PER_STEP.index(k)))


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def table(result: dict, pair: str, task: str, groups: bool = True) -> str:
    """Accuracy (95% interval), NFE and TPF of every rule on one task, as a text table."""
    lines = [f"{task:<26} {'accuracy':>9} {'95% interval':>15} {'NFE':>6} {'TPF':>6}"]
    for run in result["pairs"][pair]["runs"]:
        t = run["tasks"].get(task)
        if t is None:
            continue
        rows = [(run["label"], t)] + ([(f"  {g}", s) for g, s in t.get("groups", {}).items()] if groups else [])
        for label, s in rows:
            lo, hi = s["ci95"]
            lines.append(f"{label:<26} {s['accuracy']:>9.3f} {f'[{lo:.3f}, {hi:.3f}]':>15} {s['nfe_mean']:>6.1f} "
                         f"{s['tpf']:>6.2f}")
    return "\n".join(lines)


def seed_spread(seeds: dict, label: str, group: str | None = None) -> dict:
    """min, max and mean Sudoku accuracy of rule `label` across the seed runs (or of one level)."""
    accs = [(r["tasks"]["sudoku"] if group is None else r["tasks"]["sudoku"]["groups"][group])["accuracy"]
            for r in seeds["runs"] if r["label"] == label]
    return {"min": min(accs), "max": max(accs), "mean": round(sum(accs) / len(accs), 4), "runs": len(accs)}


def seed_rows(seeds: dict) -> list[list[str]]:
    """Per rule: its name, Sudoku solved at each training seed (and on the hard level), the spread."""
    rows = []
    for label in dict.fromkeys(r["label"] for r in seeds["runs"]):
        by_seed = {r["seed"]: r["tasks"]["sudoku"] for r in seeds["runs"] if r["label"] == label}
        rows.append([label, *(f"{pct(s['accuracy'])} (hard {pct(s['groups']['hard']['accuracy'])})"
                              for s in by_seed.values()), "{min:.1%}–{max:.1%}".format(**seed_spread(seeds, label))])
    return rows


def seeds_table(seeds: dict) -> str:
    """seed_rows as the text `labkit bench task-seeds` prints."""
    cols = [Column("rule", 26, align="<"), *(Column(f"seed {k}", 22) for k in seeds["seeds"]), Column("spread", 16)]
    return format_table(cols, seed_rows(seeds))


def fastest(result: dict, pair: str, task: str, floor: float, points: float, min_tpf: float,
            labels=tuple(label for label, _, _ in PARALLEL)) -> dict:
    """The fastest rule among `labels` at >= min_tpf within `points` of `floor`; else the most
    accurate of those at >= min_tpf; else the fastest. Returns its summary with its label."""
    runs = [(label, accuracy(result, pair, label, task)) for label in labels]
    fast = [(lab, s) for lab, s in runs if s["tpf"] >= min_tpf]
    kept = [(lab, s) for lab, s in fast if s["accuracy"] >= floor - points / 100 - 1e-9]
    label, s = (max(kept, key=lambda x: x[1]["tpf"]) if kept else
                max(fast, key=lambda x: x[1]["accuracy"]) if fast else max(runs, key=lambda x: x[1]["tpf"]))
    return {**s, "label": label}


def frontier_figure(result: dict):
    """TPF against exact-match accuracy of the masked task models (every order and parallel rule;
    S and Q mode on Sudoku, whose model learned to edit), beside Shakespeare's TPF against gen-PPL
    (× the one-token-per-step run) for tiny and tiny-cap: confidence follows predictability."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for pair, task in (("facts", "mirror"), ("add", "addition"), ("sudoku", "sudoku")):
        keep = ("low-confidence", *(label for label, _, _ in PARALLEL)) + (EDIT_LABELS[:2] if pair == "sudoku" else ())
        pts = sorted((accuracy(result, pair, lab, task)["tpf"], accuracy(result, pair, lab, task)["accuracy"])
                     for lab in keep)
        left.plot(*zip(*pts), "o-", label=task)
    left.set_xlabel("tokens per forward pass (TPF)")
    left.set_ylabel("exact match on held-out items")
    left.set_title("task models: low-confidence and the parallel rules")
    left.legend()
    for model in ("tiny", "tiny-cap"):
        pts = sorted((r["tpf"], r["gen_ppl_x_1tok"]) for r in result["shakespeare"] if r["model"] == model)
        right.plot(*zip(*pts), "s-", label=model)
    right.set_xlabel("tokens per forward pass (TPF)")
    right.set_ylabel("gen-PPL / one token per step")
    right.set_title("Shakespeare models (benchmarks/results/samplers.json)")
    right.legend()
    fig.tight_layout()
    return fig


# --- the targets the task models were trained for, against what they reached -------------------------
MAX_MB = 5.0


def _row(target: str, met: bool, measured: str, short: str) -> dict:
    return {"target": target, "met": bool(met), "measured": measured, "note": "" if met else short}


def _acc(result: dict, pair: str, label: str, task: str, group: str | None = None) -> float:
    return accuracy(result, pair, label, task, group)["accuracy"]


def _at_least(target: str, got: float, floor: float, measured: str) -> dict:
    return _row(target, got >= floor, measured, f"{100 * (floor - got):.1f} points short")


def _sudoku_targets(result: dict, seeds: dict | None) -> list[dict]:
    best = max(("low-confidence", "margin"), key=lambda k: _acc(result, "sudoku", k, "sudoku"))
    top, hard = _acc(result, "sudoku", best, "sudoku"), _acc(result, "sudoku", best, "sudoku", "hard")
    rnd_hard = _acc(result, "sudoku", "random order", "sudoku", "hard")
    ar, ar_hard = _acc(result, "sudoku", AR_LABEL, "sudoku"), _acc(result, "sudoku", AR_LABEL, "sudoku", "hard")
    rows = [
        _at_least("Sudoku: margin or low-confidence ≥ 95% overall", top, 0.95, f"{best} {pct(top)}"),
        _at_least("Sudoku: ≥ 90% on the hardest clue range (10–12 clues)", hard, 0.90, f"{best} {pct(hard)}"),
        _row("Sudoku: random order ≤ 60% on the hardest range", rnd_hard <= 0.60, pct(rnd_hard),
             f"{100 * (rnd_hard - 0.60):.1f} points over"),
        _row("Sudoku: masked model at least level with the AR twin overall", top >= ar,
             f"{pct(top)} against {pct(ar)}", f"{100 * (ar - top):.1f} points behind"),
        _row("Sudoku: ahead of the AR twin on the hardest range", hard > ar_hard,
             f"{pct(hard)} against {pct(ar_hard)}", f"{100 * (ar_hard - hard):.1f} points behind"),
    ]
    if seeds:
        s = seed_spread(seeds, best)
        rows.append(_row(f"Sudoku: spread over {len(seeds['seeds'])} training seeds reported", True,
                         f"{best} {pct(s['min'])}–{pct(s['max'])}", ""))
    return rows


def _facts_targets(result: dict) -> list[dict]:
    def mode(label, group):
        return _acc(result, "facts", label, "reversal", group)
    fwd, ar_fwd, infill = mode("low-confidence", "forward"), mode(AR_LABEL, "forward"), mode("low-confidence",
                                                                                              "backward_infill")
    ar_back, back = mode(AR_LABEL, "backward_reversed"), mode("low-confidence", "backward_reversed")
    return [
        _at_least("Facts: forward ≥ 95% (masked model)", fwd, 0.95, pct(fwd)),
        _at_least("Facts: forward ≥ 95% (AR twin)", ar_fwd, 0.95, pct(ar_fwd)),
        _at_least("Facts: backward infill ≥ 90% of forward (masked)", infill, 0.9 * fwd,
                  f"{pct(infill)} against {pct(fwd)}"),
        _row("Facts: AR twin backwards (reversed order) near chance (≤ 2%): the curse", ar_back <= 0.02,
             f"AR {pct(ar_back)}; masked, reversed order {pct(back)}", "the AR twin answers reversed questions"),
    ]


def _edit_shortfall(s: dict, e: dict, one: float) -> str:
    """By how much the S-mode target was missed, each part that failed."""
    parts = []
    if s["accuracy"] < one - 0.02 - 1e-9:
        parts.append(f"{100 * (one - s['accuracy']):.1f} points below the best order ({pct(one)}): "
                     "its 0.5 draft threshold commits guesses the edits do not all repair")
    if s["tpf"] < 2.5:
        parts.append(f"TPF {2.5 - s['tpf']:.2f} short")
    if e["fixed"] <= e["broke"]:
        parts.append("its edits broke as many cells as they fixed")
    return "; ".join(parts)


def _speed_targets(result: dict) -> list[dict]:
    one = _acc(result, "sudoku", best_order(result, "sudoku", "sudoku"), "sudoku")
    f = fastest(result, "sudoku", "sudoku", one, 2, 3)
    rows = [_row("Parallel, Sudoku: a threshold rule ≥ 3 TPF at ≤ 2 points below the best order",
                 f["tpf"] >= 3 and f["accuracy"] >= one - 0.02 - 1e-9,
                 f"{f['label']}: TPF {f['tpf']:.2f} at {pct(f['accuracy'])} (best order {pct(one)})",
                 "no threshold rule is that fast at that accuracy")]
    one_m = _acc(result, "facts", best_order(result, "facts", "mirror"), "mirror")
    f = fastest(result, "facts", "mirror", one_m, 1, 4)
    rows.append(_row("Parallel, mirror: ≥ 4 TPF at ≤ 1 point below the best order",
                     f["tpf"] >= 4 and f["accuracy"] >= one_m - 0.01 - 1e-9,
                     f"{f['label']}: TPF {f['tpf']:.2f} at {pct(f['accuracy'])} (best order {pct(one_m)})",
                     "no threshold rule is that fast at that accuracy"))
    s = accuracy(result, "sudoku", "S mode", "sudoku")
    e = s.get("edits", {"fixed": 0, "broke": 0})
    rows.append(_row("Editing: S mode on Sudoku ≥ 2.5 TPF at ≤ 2 points below the best order, edits fix more than "
                     "they break", s["tpf"] >= 2.5 and s["accuracy"] >= one - 0.02 - 1e-9 and e["fixed"] > e["broke"],
                     f"TPF {s['tpf']:.2f} at {pct(s['accuracy'])}; edits fixed {e['fixed']} cells, broke {e['broke']}",
                     _edit_shortfall(s, e, one)))
    return rows


def targets(result: dict, seeds: dict | None = None, sizes_mb: dict | None = None) -> list[dict]:
    """Each target of issue 32 with what tasks.json (and task_seeds.json, the model sizes in MB)
    measured: met or not, and by how much it was missed."""
    add_best = max(("low-confidence", "left to right", "right to left", "margin"),
                   key=lambda k: _acc(result, "add", k, "addition"))
    add, add_ar = _acc(result, "add", add_best, "addition"), _acc(result, "add", AR_LABEL, "addition")
    rows = [*_sudoku_targets(result, seeds), *_facts_targets(result),
            _at_least("Addition: masked model ≥ 95% exact in its best order", add, 0.95,
                      f"{add_best} {pct(add)} (AR twin {pct(add_ar)})"),
            *_speed_targets(result)]
    for model, mb in (sizes_mb or {}).items():
        rows.append(_row(f"{model}: ≤ {MAX_MB:g} MB", mb <= MAX_MB, f"{mb:.2f} MB", f"{mb - MAX_MB:.2f} MB over"))
    return rows
