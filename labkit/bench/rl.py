"""`labkit bench rl`: what reinforcement learning with exact rewards did to the Sudoku pair.

    labkit bench rl --out benchmarks/results            # → rl.json (trains what is missing, resumable)

- `runs`: the RL policies (`labkit.training.rl.RL_RECIPES`) under every rule of `bench.tasks.RULES`
  on all 600 held-out puzzles, beside the starting models' rows of tasks.json (same items, same
  rules, measured before RL); the AR twin after RL under its exact likelihood;
- `curves`: the reward and the greedy held-out evaluations against steps and seconds for each
  surrogate at the same compute (`CURVES`: one recipe, only the surrogate changed);
- `gradient_noise`: for one batch of S-mode rollouts, how close one draw's policy gradient is to
  the same surrogate's many-draw mean (cosine), per surrogate;
- `targets`: the issue's targets, each with its measured value.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import torch

from .tasks import AR_LABEL, ONE_PER_STEP, run_pair

RL_MODEL, AR_RL_MODEL = "tiny-sudoku-rl", "tiny-sudoku-ar-rl"
CURVE_RUNS = Path("runs") / "rl-curves"


def curve_configs() -> dict:
    """label → RLConfig: tiny-sudoku-rl's recipe with each masked-model surrogate (block_elbo
    with blocks of 6 blanks: Sudoku decodes as one block, where EBPO is the ELBO itself)."""
    from ..training.rl import RL_RECIPES

    base = RL_RECIPES[RL_MODEL]
    return {"elbo": dataclasses.replace(base, surrogate="elbo"),
            "one_pass": dataclasses.replace(base, surrogate="one_pass", kept_weight=0.0)}


def train_curves(folder: str | Path = CURVE_RUNS, log=None) -> dict:
    """Each curve's run (resumable; a finished one is only read): {label: its rl record}."""
    from ..training.rl import train_rl

    out = {}
    for label, cfg in curve_configs().items():
        run = Path(folder) / label
        if not (run / "training.json").is_file():
            train_rl(cfg, run, progress=False, log=log or (lambda m: None))
        rec = json.loads((run / "training.json").read_text())["rl"]
        out[label] = {"config": rec["config"], "train_seconds": rec["train_seconds"],
                      "steps": [h["step"] for h in rec["history"]],
                      "reward": [h["reward"] for h in rec["history"]],
                      "solved": [h["solved"] for h in rec["history"]],
                      "kl": [h.get("kl", 0.0) for h in rec["history"]],
                      "evals": rec["evals"]}
    return out


def noise_table(lm, seed: int = 0, reference_draws: int = 32, single_draws: int = 8) -> list[dict]:
    """gradient_noise of each masked surrogate on one batch of tiny-sudoku-rl's recipe's rollouts."""
    from ..training.rl import RL_RECIPES, gradient_noise, group_advantages, rollout, rollout_rule, step_questions

    cfg = RL_RECIPES[RL_MODEL]
    rolls = rollout(lm, step_questions(cfg, 0), rollout_rule(cfg), cfg.group, seed)
    adv = group_advantages(rolls.reward, cfg.group)
    keep = adv.abs() > 0
    x, w, a = rolls.x[keep], rolls.written[keep], adv[keep]
    rows, refs = [], {}
    for label, surrogate, knobs in (("one_pass", "one_pass", {}), ("elbo", "elbo", {}),
                                    ("elbo + kept tokens", "elbo", {"kept_weight": 1.0}),
                                    ("block_elbo (6 blanks)", "block_elbo", {"block_length": 6})):
        r = gradient_noise(lm, x, w, a, surrogate, reference_draws=reference_draws, single_draws=single_draws,
                           seed=seed, **knobs)
        refs[label] = r.pop("reference")
        rows.append({"label": label, **r})
    for r in rows:                                       # do the estimators point the same way?
        r["cosine_to_elbo_reference"] = round(float(torch.nn.functional.cosine_similarity(
            refs[r["label"]], refs["elbo"], dim=0)), 4)
    return rows


def targets(after: list[dict], before: list[dict], ar_after: dict | None) -> dict:
    """The issue's targets on the held-out puzzles, each {target, value, met}."""
    acc = {r["label"]: r["tasks"]["sudoku"] for r in after}
    base = {r["label"]: r["tasks"]["sudoku"] for r in before}
    s = acc["S mode"]
    edits = s.get("edits", {"fixed": 0, "broke": 0})
    ratio = edits["fixed"] / max(1, edits["broke"])
    rivals = [(m, label, v) for m, rows in (("rl", acc), ("start", base)) for label, v in rows.items()
              if label.startswith(("threshold", "factor")) and v["tpf"] >= s["tpf"] and v["accuracy"] > s["accuracy"]]
    orders = {label: round(acc[label]["accuracy"] - base[label]["accuracy"], 4)
              for label in ("low-confidence", "margin", "entropy")}
    return {
        "s_mode_overall": {"target": ">= 0.95", "value": s["accuracy"], "met": s["accuracy"] >= 0.95},
        "s_mode_hard": {"target": ">= 0.90", "value": s["groups"]["hard"]["accuracy"],
                        "met": s["groups"]["hard"]["accuracy"] >= 0.90},
        "s_mode_tpf": {"target": ">= 7", "value": s["tpf"], "met": s["tpf"] >= 7},
        "edits_fixed_per_broken": {"target": ">= 5", "value": round(ratio, 2), "met": ratio >= 5},
        "s_mode_on_frontier": {"target": "no threshold/factor rule on either model more accurate at >= its TPF",
                               "value": [f"{m}: {label} {v['accuracy']} at {v['tpf']}" for m, label, v in rivals],
                               "met": not rivals},
        "confident_orders_kept": {"target": ">= -0.005 each (RL model minus tiny-sudoku)", "value": orders,
                                  "met": all(v >= -0.005 for v in orders.values())},
        "ar_twin": {"target": "reported", "value": ar_after["tasks"]["sudoku"]["accuracy"] if ar_after else None,
                    "met": ar_after is not None},
    }


def bench_rl(tasks_json: str | Path, n: int | None = None, curves_folder: str | Path = CURVE_RUNS,
             noise: bool = True, log=None) -> dict:
    """The whole comparison (see the module docstring): the committed RL models against the
    starting pair's rows of tasks.json."""
    from ..models.load import load

    before_all = json.loads(Path(tasks_json).read_text())["pairs"]["sudoku"]["runs"]
    before = [r for r in before_all if r["label"] != AR_LABEL]
    ar_before = next(r for r in before_all if r["label"] == AR_LABEL)
    lm, ar = load(RL_MODEL), load(AR_RL_MODEL)
    runs = run_pair("sudoku", lm, ar, n=n, log=log)
    after = [r for r in runs if r["label"] != AR_LABEL]
    ar_after = next(r for r in runs if r["label"] == AR_LABEL)
    start = load("tiny-sudoku")
    return {"models": {"rl": RL_MODEL, "start": "tiny-sudoku", "ar_rl": AR_RL_MODEL, "ar_start": "tiny-sudoku-ar"},
            "items_per_task": n or "all", "one_per_step": list(ONE_PER_STEP),
            "runs": {"rl": after, "start": before, "ar_rl": ar_after, "ar_start": ar_before},
            "curves": train_curves(curves_folder, log),
            "gradient_noise": noise_table(start) if noise else [],
            "targets": targets(after, before, ar_after)}


__all__ = ["AR_RL_MODEL", "CURVE_RUNS", "RL_MODEL", "bench_rl", "curve_configs", "noise_table", "targets",
           "train_curves"]
