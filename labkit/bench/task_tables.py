"""Reading `labkit bench tasks`'s JSON: one cell, a text table per task, the spread over training
seeds, the TPF-accuracy frontier, and the task models' sizes (docs/models.md's tables of these
results, the models' cards and the targets the task models were trained for are written and judged
by benchmarks/docgen: tasks.py, task_cards.py, targets.py; notebook 11 shows them; tests check them
against the JSON)."""
from __future__ import annotations

from ..models.load import model_folder
from ..tasks import REVERSAL_MODES  # noqa: F401  (re-exported: the reversal groups in table order, one definition)
from .common import Column, format_table
from .tasks import EDIT_LABELS, ONE_PER_STEP, PAIRS, PARALLEL

SUDOKU_LEVELS = ("easy", "medium", "hard")


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


def frontier_figure(result: dict):
    """TPF against exact-match accuracy of the masked task models (every order and parallel rule;
    S and Q mode on Sudoku, whose model learned to edit), beside Shakespeare's TPF against gen-PPL
    (× the one-token-per-step run) for tiny and tiny-cap: confidence follows predictability."""
    import matplotlib.pyplot as plt  # on the first figure: `labkit`'s start and the tables need none

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


def sizes_mb() -> dict[str, float]:
    """Each task pair model's weights file in MB (the pairs' masked models and AR twins present)."""
    return {m: round((model_folder(m) / "model.safetensors").stat().st_size / 1e6, 2)
            for pair in PAIRS.values() for m in pair[:2] if (model_folder(m) / "model.safetensors").is_file()}
