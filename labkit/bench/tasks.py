"""Where diffusion wins, measured exactly: the task models (`tiny-task`, its AR twin `tiny-task-ar`)
on the held-out task suite under every decoding order and parallel rule, beside the Shakespeare
models' speed-quality table (`benchmarks/results/samplers.json`), in one JSON.

    labkit bench tasks --out benchmarks/results        # → tasks.json: every rule on the committed models
    labkit bench task-seeds --out benchmarks/results   # → task_seeds.json: 3 training seeds at a reduced budget

`RULES` is the matrix: the orders of one-token-per-step decoding (random, low-confidence,
margin, entropy) and the parallel rules (threshold at three values, factor, S and Q modes).
"""
from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

from ..eval.exact import evaluate_tasks
from ..tasks import TASKS
from .common import markdown_table, metadata

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
EDIT_LABELS = ("S mode", "Q mode")   # the rules that also edit written tokens
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


# --- the spread over training seeds ----------------------------------------------------------------
SEEDS = (0, 1, 2)
SEED_STEPS = 400           # the reduced budget of each seed's run (the committed models: their recipe's)
SEED_ITEMS = 200           # held-out items per task in each seed's evaluation


def seed_recipe(name: str, seed: int, steps: int = SEED_STEPS):
    """The committed recipe at `steps` steps (warm-up and curriculum phases scaled alike), with `seed`."""
    from ..training.recipes import RECIPES

    cfg = RECIPES[name]
    scale = steps / cfg.steps
    phases = tuple((round(start * scale), names) for start, names in cfg.task_phases)
    return dataclasses.replace(cfg, steps=steps, seed=seed, warmup=max(1, round(cfg.warmup * scale)), task_phases=phases)


SEED_RUNS = Path("runs") / "task-seeds"   # where the seed runs train (resumable; not committed)


def seed_runs(folder: str | Path = SEED_RUNS, seeds=SEEDS, steps: int = SEED_STEPS, n: int = SEED_ITEMS,
              log=None) -> dict:
    """Train tiny-task and tiny-task-ar once per seed at a reduced budget (into folder/, resumable:
    a finished run is only evaluated) and evaluate each: the accuracies' spread across seeds."""
    from ..models.load import load
    from ..training.loop import train

    runs = []
    for seed in seeds:
        pair = {}
        for name in ("tiny-task", "tiny-task-ar"):
            run = Path(folder) / f"{name}-seed{seed}"
            train(seed_recipe(name, seed, steps), run, progress=False, log=log or (lambda m: None))
            pair[name] = load(str(run))
        for run in run_matrix(pair["tiny-task"], pair["tiny-task-ar"], n=n, labels=SEED_RULES, log=log):
            runs.append({"seed": seed, **{k: run[k] for k in ("label", "rule", "knobs", "tasks")}})
    return {"steps": steps, "items_per_task": n, "seeds": list(seeds), "runs": runs}


# --- reading the results -----------------------------------------------------------------------------
def accuracy(result: dict, label: str, task: str, group: str | None = None) -> dict:
    """One cell of tasks.json: the summary of rule `label` on `task` (or on one of its groups)."""
    run = next(r for r in result["runs"] if r["label"] == label)
    t = run["tasks"][task]
    return t if group is None else t["groups"][group]


def table(result: dict, task: str, groups: bool = True) -> str:
    """Accuracy (95% interval), NFE and TPF of every rule on one task, as a text table."""
    lines = [f"{task:<26} {'accuracy':>9} {'95% interval':>15} {'NFE':>6} {'TPF':>6}"]
    for run in result["runs"]:
        t = run["tasks"].get(task)
        if t is None:
            continue
        rows = [(run["label"], t)]
        if groups:
            rows += [(f"  {g}", s) for g, s in t.get("groups", {}).items()]
        for label, s in rows:
            lo, hi = s["ci95"]
            lines.append(f"{label:<26} {s['accuracy']:>9.3f} {f'[{lo:.3f}, {hi:.3f}]':>15} {s['nfe_mean']:>6.1f} "
                         f"{s['tpf']:>6.2f}")
    return "\n".join(lines)


def seed_spread(seeds: dict, label: str, task: str, model: str | None = None) -> dict:
    """min, max and mean accuracy of rule `label` on `task` across the seed runs."""
    accs = [r["tasks"][task]["accuracy"] for r in seeds["runs"] if r["label"] == label]
    return {"min": min(accs), "max": max(accs), "mean": round(sum(accs) / len(accs), 4), "runs": len(accs)}


def frontier_figure(result: dict, tasks=("mirror", "addition", "sudoku")):
    """TPF against exact-match accuracy per task (every rule that only commits: S and Q mode edit,
    which a model not trained to edit cannot do), beside Shakespeare's TPF against gen-PPL (× the
    one-token-per-step run) for tiny and tiny-cap: confidence follows predictability."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for task in tasks:
        pts = sorted((r["tasks"][task]["tpf"], r["tasks"][task]["accuracy"]) for r in result["runs"]
                     if task in r["tasks"] and r["label"] not in (AR_LABEL, *EDIT_LABELS))
        left.plot(*zip(*pts), "o-", label=task)
    left.set_xlabel("tokens per forward pass (TPF)")
    left.set_ylabel("exact match on held-out items")
    left.set_title("task models: the rules that only commit")
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


# --- the tables docs/models.md shows (a test compares them with this output) -------------------------
def _cell(s: dict) -> str:
    lo, hi = s["ci95"]
    return f"{100 * s['accuracy']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"


def markdown_accuracy(result: dict) -> str:
    """Exact match (95% interval) of every rule on every task and group, and TPF per task."""
    cols = [("sudoku", None), ("sudoku", "hard"), ("addition", None), ("reversal", "forward"),
            ("reversal", "backward_infill"), ("reversal", "backward_reversed"), ("mirror", None)]
    head = ["rule"] + [t if g is None else f"{t}: {g}" for t, g in cols] + ["TPF sudoku / addition / mirror"]
    rows = []
    for run in result["runs"]:
        cells = []
        for task, group in cols:
            t = run["tasks"].get(task)
            s = None if t is None else (t if group is None else t.get("groups", {}).get(group))
            cells.append("—" if s is None else _cell(s))
        tpf = " / ".join(f"{run['tasks'][t]['tpf']:.2f}" for t in ("sudoku", "addition", "mirror"))
        rows.append([run["label"], *cells, tpf])
    return markdown_table(head, rows)


def markdown_shakespeare(result: dict) -> str:
    return markdown_table(["model · rule", "TPF", "gen-PPL", "× one token per step", "distinct-2"],
                          [(f"{r['model']} · {r['label']}", f"{r['tpf']:.2f}", f"{r['gen_ppl']:.2f}",
                            f"{r['gen_ppl_x_1tok']:.2f}", f"{r['distinct_2']:.3f}") for r in result["shakespeare"]])


def markdown_seeds(seeds: dict) -> str:
    from ..tasks import TASKS

    def spread(label, task):
        s = seed_spread(seeds, label, task)
        return f"{100 * s['min']:.1f}–{100 * s['max']:.1f}%"
    return markdown_table(["rule", *TASKS], [[label, *(spread(label, t) for t in TASKS)]
                                             for label in (*SEED_RULES, AR_LABEL)])


# --- the targets the task models were trained for, against what they reached -------------------------
TRAIN_MINUTES = 45         # the budget of each twin's training on the 2-core CPU


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _fastest(result: dict, task: str, floor: float) -> dict:
    """The task's figures of the fastest commit-only rule at >= 4 TPF within 1 point of `floor`
    (one token per step's accuracy); the fastest of all when none is."""
    runs = [r["tasks"][task] for r in result["runs"] if r["label"] not in (AR_LABEL, *EDIT_LABELS)]
    kept = [t for t in runs if t["tpf"] >= 4 and t["accuracy"] >= floor - 0.01]
    return max(kept or runs, key=lambda t: t["tpf"])


def targets(result: dict, train_minutes: dict[str, float]) -> list[dict]:
    """Each target of the task models (issue 25) with what tasks.json measured: met or not, and
    by how much it was missed. `train_minutes`: {model: minutes of its training}."""
    def acc(label, task, group=None):
        return accuracy(result, label, task, group)["accuracy"]

    best = max(("low-confidence", "margin"), key=lambda k: acc(k, "sudoku"))
    lc, ar = acc(best, "sudoku"), acc(AR_LABEL, "sudoku")
    hard_lc, hard_rnd = acc(best, "sudoku", "hard"), acc("random order", "sudoku", "hard")
    fwd, infill = acc(best, "reversal", "forward"), acc(best, "reversal", "backward_infill")
    one = {t: accuracy(result, best, t) for t in ("mirror", "addition")}
    fast = {t: _fastest(result, t, one[t]["accuracy"]) for t in ("mirror", "addition")}
    rows = [
        ("Sudoku: low-confidence or margin solves ≥ 85%", lc >= 0.85, f"{best} {_pct(lc)}",
         f"{100 * (0.85 - lc):.1f} points short" if lc < 0.85 else ""),
        ("Sudoku: ≥ 2× random order on the hardest clue range", hard_lc >= 2 * hard_rnd and hard_lc > 0,
         f"{_pct(hard_lc)} against {_pct(hard_rnd)}", "both near zero" if hard_lc < 0.1 else ""),
        ("Sudoku: at least as many as the AR twin", lc >= ar, f"{_pct(lc)} against {_pct(ar)}",
         f"{100 * (ar - lc):.1f} points short" if lc < ar else ""),
        ("Reversal: backward infill ≥ 90% of forward", fwd > 0 and infill >= 0.9 * fwd,
         f"{_pct(infill)} against {_pct(fwd)} forward", "no fact learned forward either" if fwd == 0 else ""),
    ]
    for task in ("mirror", "addition"):
        f, o = fast[task], one[task]
        ok = f["tpf"] >= 4 and f["accuracy"] >= o["accuracy"] - 0.01
        rows.append((f"Parallel, {task}: ≥ 4 tokens per forward at ≤ 1 point lost", ok,
                     f"best TPF {f['tpf']:.2f} at {_pct(f['accuracy'])} (one per step {_pct(o['accuracy'])})",
                     "" if ok else "the model is not sure enough to commit several at once"))
    s = accuracy(result, "S mode", "mirror")
    rows.append(("Parallel, mirror: S mode ≥ 4 tokens per forward at ≤ 1 point lost",
                 s["tpf"] >= 4 and s["accuracy"] >= one["mirror"]["accuracy"] - 0.01,
                 f"TPF {s['tpf']:.2f} at {_pct(s['accuracy'])}", "its edits need a model trained to edit"))
    for model, minutes in train_minutes.items():
        rows.append((f"{model}: trained in ≤ {TRAIN_MINUTES} min on the 2-core CPU", minutes <= TRAIN_MINUTES,
                     f"{minutes:.1f} min", f"{minutes - TRAIN_MINUTES:.1f} min over" if minutes > TRAIN_MINUTES else ""))
    return [{"target": t, "met": bool(m), "measured": v, "note": w} for t, m, v, w in rows]


def markdown_targets(rows: list[dict]) -> str:
    return markdown_table(["target", "measured", "met", "by how much, or why"],
                          [(r["target"], r["measured"], "yes" if r["met"] else "no", r["note"] or "—") for r in rows])
