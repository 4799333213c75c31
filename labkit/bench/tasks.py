"""Where diffusion wins, measured exactly: each task model pair (a masked model and its AR twin,
labkit.tasks) on its held-out items under every decoding order and parallel rule, the AR twin
beside, and the Shakespeare models' speed-quality table (`benchmarks/results/samplers.json`), in
one JSON.

    labkit bench tasks --out benchmarks/results        # → tasks.json: every rule on the committed pairs
    labkit bench task-seeds --out benchmarks/results   # → task_seeds.json: the Sudoku pair over 3 training seeds

`RULES` is the matrix: the orders of one-token-per-step decoding (random, left to right, right to
left, low-confidence, margin, entropy), the parallel rules (threshold at three values, factor) and
the rules that also edit (S and Q mode; on Sudoku, whose masked model learned to repair a cell,
two more draft-and-edit threshold pairs). The tables read from the JSON are in
`labkit.bench.task_tables`; the targets are judged in benchmarks/docgen/targets.py.
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from ..eval.exact import evaluate_tasks
from ..models.load import load, model_folder
from .common import metadata

# pair → (masked model, AR twin, its tasks)
PAIRS = {"sudoku": ("tiny-sudoku", "tiny-sudoku-ar", ("sudoku",)),
         "facts": ("tiny-facts", "tiny-facts-ar", ("reversal", "mirror")),
         "add": ("tiny-add", "tiny-add-ar", ("addition",))}
ORDERS = (
    ("random order", "random", {}),
    ("left to right", "left_to_right", {}),
    ("right to left", "right_to_left", {}),
    ("low-confidence", "low_confidence", {}),
    ("margin", "low_confidence", {"score": "margin"}),
    ("entropy", "low_confidence", {"score": "neg_entropy"}),
)
PARALLEL = (
    ("threshold 0.9", "threshold", {"threshold": 0.9}),
    ("threshold 0.7", "threshold", {"threshold": 0.7}),
    ("threshold 0.5", "threshold", {"threshold": 0.5}),
    ("factor 1.0", "factor", {"factor": 1.0}),
)
EDITING = (
    ("S mode", "speed", {}),
    ("Q mode", "quality", {}),
    ("draft-edit 0.7 / 0.9", "draft_edit", {"threshold": 0.7, "editing_threshold": 0.9}),
    ("draft-edit 0.5 / 0.9", "draft_edit", {"threshold": 0.5, "editing_threshold": 0.9}),
)
RULES = ORDERS + PARALLEL + EDITING
ONE_PER_STEP = tuple(label for label, _, _ in ORDERS)
RULES_BY_LABEL = {label: (name, knobs) for label, name, knobs in RULES}
EDIT_LABELS = tuple(label for label, _, _ in EDITING)
SUDOKU_ONLY = EDIT_LABELS[2:]          # the extra draft-and-edit pairs: the pair trained to repair cells
AR_LABEL = "AR twin (left to right)"
SOLVER_TWIN = "tiny-sudoku-ar-solver"  # the third Sudoku model: AR, writing the cells in a solver's order
SOLVER_LABEL = "AR twin (solver's order)"
# Shakespeare rows of samplers.json set beside the tasks: (label, model key, row key)
SHAKESPEARE = (
    ("low-confidence", "tiny", "low_confidence_1tok"), ("threshold 0.9", "tiny", "threshold_0.9"),
    ("threshold 0.7", "tiny", "threshold_0.7"), ("threshold 0.5", "tiny", "threshold_0.5"),
    ("factor 1.0", "tiny", "factor_1.0"), ("low-confidence", "tiny-cap", "low_confidence_1tok"),
    ("threshold 0.9", "tiny-cap", "threshold_0.9"), ("S mode", "tiny-cap", "draft_edit_speed"),
    ("Q mode", "tiny-cap", "draft_edit_quality"),
)


def rules_for(pair: str, labels=None) -> list[tuple[str, str, dict]]:
    """The rows of RULES run on `pair` (those in `labels`, default all that apply)."""
    return [r for r in RULES if (pair == "sudoku" or r[0] not in SUDOKU_ONLY)
            and (labels is None or r[0] in labels)]


def run_pair(pair: str, lm, ar=None, n: int | None = None, labels=None, log=None) -> list[dict]:
    """One evaluate_tasks result per rule on the masked model `lm` (if given), then the AR twin's
    (if given), each with its label and wall seconds."""
    tasks = PAIRS[pair][2]
    runs = []
    for label, name, knobs in rules_for(pair, labels) if lm is not None else ():
        t0 = time.perf_counter()
        r = evaluate_tasks(lm, name, tasks=tasks, n=n, **knobs)
        runs.append({"label": label, "rule": name, "knobs": knobs, **r, "seconds": round(time.perf_counter() - t0, 1)})
        if log:
            log(f"{lm.name} · {label}: " + ", ".join(f"{t} {v['accuracy']:.3f}" for t, v in r["tasks"].items()))
    if pair == "sudoku" and (labels is None or SOLVER_LABEL in labels):
        solver_lm = load(SOLVER_TWIN, device=lm.device if lm is not None else "cpu")
        t0 = time.perf_counter()
        r = evaluate_tasks(solver_lm, "autoregressive", tasks=tasks, n=n)
        runs.append({"label": SOLVER_LABEL, "rule": "autoregressive", "knobs": {}, "model": SOLVER_TWIN, **r,
                     "seconds": round(time.perf_counter() - t0, 1)})
        if log:
            log(f"{SOLVER_TWIN} · {SOLVER_LABEL}: " + ", ".join(f"{t} {v['accuracy']:.3f}" for t, v in r["tasks"].items()))
    if ar is not None and (labels is None or AR_LABEL in labels):
        t0 = time.perf_counter()
        r = evaluate_tasks(ar, "autoregressive", tasks=tasks, n=n)
        runs.append({"label": AR_LABEL, "rule": "autoregressive", "knobs": {}, **r,
                     "seconds": round(time.perf_counter() - t0, 1)})
        if log:
            log(f"{ar.name} · {AR_LABEL}: " + ", ".join(f"{t} {v['accuracy']:.3f}" for t, v in r["tasks"].items()))
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


def refresh_rows(result: dict, pair: str, labels: list[str], n: int | None = None, device: str = "cpu",
                 log=None) -> dict:
    """`result` (a tasks.json) with the rows of `labels` on `pair` run again (or added, in RULES'
    order with the twins last): the other rows are kept as they are."""
    known = [r[0] for r in rules_for(pair)] + ([SOLVER_LABEL] if pair == "sudoku" else []) + [AR_LABEL]
    bad = [x for x in labels if x not in known]
    if bad:
        raise ValueError(f"rows {bad} are not rows of pair {pair!r}; choose from {known}")
    masked, twin, _ = PAIRS[pair]
    lm = load(masked, device=device) if any(x in RULES_BY_LABEL for x in labels) else None
    ar = load(twin, device=device) if AR_LABEL in labels else None
    new = {r["label"]: r for r in run_pair(pair, lm, ar, n=n, labels=labels, log=log)}
    runs = {r["label"]: r for r in result["pairs"][pair]["runs"]} | new
    result["pairs"][pair]["runs"] = [runs[x] for x in known if x in runs]
    return result


def bench_tasks(samplers_json: str | Path, pairs=tuple(PAIRS), n: int | None = None, device: str = "cpu",
                log=None) -> dict:
    """The whole comparison: every rule on each pair's masked model, its AR twin (on Sudoku also
    the AR twin trained in a solver's order), and the Shakespeare rows."""
    out = {"meta": None, "pairs": {}, "shakespeare": shakespeare_rows(samplers_json)}
    for pair in pairs:
        masked, twin, tasks = PAIRS[pair]
        lm, ar = load(masked, device=device), load(twin, device=device)
        out["meta"] = out["meta"] or metadata(lm)
        out["pairs"][pair] = {"masked": masked, "ar": twin, "tasks": list(tasks),
                              "runs": run_pair(pair, lm, ar, n=n, log=log)}
    return out


# --- the spread over training seeds ----------------------------------------------------------------
SEEDS = (0, 1, 2)
SEED_RULES = ("random order", "left to right", "low-confidence", "margin", "threshold 0.9", "S mode", AR_LABEL)
SEED_RUNS = Path("runs") / "task-seeds"   # where seeds other than 0 are trained (labkit bench task-seeds; not committed)


def seed_runs(folder: str | Path = SEED_RUNS, seeds=SEEDS, n: int | None = None, log=None) -> dict:
    """The Sudoku pair once per training seed at its full recipe: seed 0 is the committed pair,
    every other seed the run trained in folder/<model>-seed<k> (`labkit bench task-seeds` trains
    them first). Each model is evaluated under SEED_RULES (its own rows: the masked model's
    orders and rules, or the AR twin's), and the evaluation is kept in folder/ as
    `<model>-seed<k>.eval.json`, so a rerun evaluates only what is new: the order effect's spread
    across seeds."""
    masked, twin, _ = PAIRS["sudoku"]
    runs, minutes = [], {}
    for seed in seeds:
        for name in (masked, twin):
            run = model_folder(name) if seed == 0 else Path(folder) / f"{name}-seed{seed}"
            minutes[f"{name} seed {seed}"] = round(json.loads((run / "training.json").read_text())["train_seconds"] / 60, 1)
            rows = _seed_eval(name, run, seed, Path(folder), n, log)
            runs.extend({"seed": seed, **{k: r[k] for k in ("label", "rule", "knobs", "tasks")}} for r in rows)
    order = {label: i for i, label in enumerate(SEED_RULES)}
    runs.sort(key=lambda r: (r["seed"], order[r["label"]]))
    return {"pair": "sudoku", "models": [masked, twin], "seeds": list(seeds), "items_per_task": n or "all",
            "runs": runs, "train_minutes": minutes}


def _seed_eval(name: str, run: Path, seed: int, folder: Path, n: int | None, log) -> list[dict]:
    """run_pair's rows for one model of the Sudoku pair at one seed, read from its kept evaluation
    when that evaluation was of the same weights, items and rules."""
    weights = hashlib.sha256((run / "model.safetensors").read_bytes()).hexdigest()
    key = {"weights": weights, "n": n, "labels": list(SEED_RULES)}
    kept = folder / f"{name}-seed{seed}.eval.json"
    if kept.is_file():
        data = json.loads(kept.read_text())
        if data["key"] == key:
            return data["runs"]
    lm = load(name if seed == 0 else str(run))
    if name == PAIRS["sudoku"][1]:
        rows = run_pair("sudoku", None, lm, n=n, labels=(AR_LABEL,), log=log)
    else:
        rows = run_pair("sudoku", lm, None, n=n, labels=SEED_RULES, log=log)
    folder.mkdir(parents=True, exist_ok=True)
    kept.write_text(json.dumps({"key": key, "runs": rows}))
    return rows
