"""`labkit bench learned-policy`: the learned unmasking policy on tiny-sudoku against the rules it
must beat (`labkit.samplers.learned`, `labkit.training.learned_policy`).

The run (PolicyConfig's defaults: 150 steps of 16 hard training puzzles x 8 rollouts, reward −
1.0 · passes per cell) is trained once into runs/learned-policy/run.json (read again when its config
is the same), its control (the same, each batch's rewards shuffled) into control.json and the same
recipe with seeds 1 and 2 into seed1.json and seed2.json; then
the greedy rule with the learned weights decodes all 600 held-out puzzles, beside tiny-sudoku's rows
of tasks.json under the same puzzles (threshold and factor rules, S and Q mode). A rule
"dominates" the learned one when it solves at least as many at a TPF at least as high.
"""
from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

from ..eval.exact import evaluate_tasks
from ..models.load import load
from ..samplers.learned import FEATURES, LearnedCommit
from ..training.learned_policy import PolicyConfig, train_policy
from .common import metadata
from .rl import reward_tenths

RUN = Path("runs") / "learned-policy" / "run.json"
CONTROL_RUN = RUN.with_name("control.json")   # the same run with shuffled rewards
SEEDS = (1, 2)                                # beside the run's seed 0: runs/learned-policy/seedK.json
DEFAULT = PolicyConfig()               # the committed run's config
COMPARED = ("threshold 0.9", "threshold 0.7", "threshold 0.5", "factor 1.0", "S mode", "Q mode",
            "draft-edit 0.7 / 0.9", "low-confidence")


def trained(cfg: PolicyConfig = DEFAULT, path: str | Path = RUN, log=None) -> dict:
    """The run of `cfg`: read from `path` when it holds this config, else trained and saved there."""
    path = Path(path)
    want = json.loads(json.dumps(dataclasses.asdict(cfg)))
    if path.is_file():
        run = json.loads(path.read_text())
        if run.get("config") == want:
            return run
    t0 = time.perf_counter()
    run = {"config": want, **train_policy(cfg, log=log), "train_seconds": round(time.perf_counter() - t0, 1)}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(run, indent=1))
    return run


def dominated_by(row: dict, others: dict) -> list[str]:
    """The labels of `others` (label → a tasks.json sudoku row) at least as accurate at a TPF at
    least as high as `row`."""
    return [label for label, o in others.items() if o["accuracy"] >= row["accuracy"] and o["tpf"] >= row["tpf"]]


def tenths(run: dict) -> list[float]:
    """The mean rollout reward over the first and last tenth of a run's steps (`bench.rl.reward_tenths`),
    then its solved share over the same steps."""
    solved = [{"reward": x["solved"]} for x in run["history"]]
    return reward_tenths(run["history"]) + reward_tenths(solved)


def bench_learned_policy(tasks_json: str | Path, cfg: PolicyConfig = DEFAULT, run_path: str | Path = RUN,
                         control_path: str | Path = CONTROL_RUN, n: int | None = None, log=None) -> dict:
    run = trained(cfg, run_path, log)
    control = trained(dataclasses.replace(cfg, control=True), control_path, log)
    seeds = {k: trained(dataclasses.replace(cfg, seed=k), Path(run_path).with_name(f"seed{k}.json"), log) for k in SEEDS}
    lm = load(cfg.init_from)
    s = evaluate_tasks(lm, LearnedCommit(weights=tuple(run["weights"])), tasks=(cfg.task,), n=n)["tasks"][cfg.task]
    learned = {k: s[k] for k in ("n", "accuracy", "ci95", "tpf", "nfe_mean")}
    learned["groups"] = {g: {"accuracy": v["accuracy"], "ci95": v["ci95"], "tpf": v["tpf"]} for g, v in s["groups"].items()}
    rows = {r["label"]: r["tasks"][cfg.task] for r in json.loads(Path(tasks_json).read_text())["pairs"]["sudoku"]["runs"]
            if r.get("model", cfg.init_from) == cfg.init_from and r["label"] in COMPARED}
    return {"meta": metadata(lm), "features": list(FEATURES), "run": run, "learned": learned,
            "tenths": {"run": tenths(run), "control": tenths(control),
                       **{f"seed{k}": tenths(r) for k, r in seeds.items()}},
            "seed_evals": {f"seed{k}": r["evals"] for k, r in seeds.items()},
            "control": {k: control[k] for k in ("config", "weights", "evals")},
            "start": {k: {f: v[f] for f in ("n", "accuracy", "ci95", "tpf")} for k, v in rows.items()},
            "dominated_by": dominated_by(learned, rows)}


def text_table(result: dict) -> str:
    lines = [f"{'rule':<22} accuracy [95%]           TPF"]
    for label, r in {"learned": result["learned"], **result["start"]}.items():
        lines.append(f"{label:<22} {100 * r['accuracy']:5.1f}% [{100 * r['ci95'][0]:.1f}, {100 * r['ci95'][1]:.1f}]"
                     f"   {r['tpf']:.2f}")
    lines.append(f"weights {dict(zip(result['features'], result['run']['weights']))}; dominated by: "
                 f"{', '.join(result['dominated_by']) or 'none'}")
    return "\n".join(lines)


__all__ = ["COMPARED", "CONTROL_RUN", "DEFAULT", "RUN", "SEEDS", "bench_learned_policy", "dominated_by", "tenths",
           "text_table", "trained"]
