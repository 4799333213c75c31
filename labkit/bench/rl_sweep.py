"""`labkit bench rl-sweep`: the search for an RL recipe that raises S mode without buying it with
overconfidence, run by run (runs/rl-sweep/NAME; `labkit bench rl-sweep` trains the missing ones,
resumable, and this module reads them).

Every run starts from `tiny-sudoku` on hard training puzzles (10-12 clues), 16 questions x 8
rollouts a step, clip 0.2 / clip-higher 0.28, dynamic sampling, centred advantages, and evaluates
greedily every 25 steps on 150 held-out puzzles (50 per level) under S mode, threshold 0.9, Q mode
and low-confidence: the rule RL trains and the rules it must not spoil. What changes from run to
run is in SWEEP. Each run's record: its per-step history (reward, signal share, commits per pass,
clip fraction, KL to the start, approximate KL) and its evaluations.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import torch

from ..training.rl import CHECKPOINT, RLConfig
from .rl import reward_tenths

RUNS = Path("runs") / "rl-sweep"
BASE = RLConfig(init_from="tiny-sudoku", rule="speed", temperature=1.0, surrogate="trajectory", questions=16, group=8,
                inner_steps=2, clip=0.2, clip_high=0.28, dynamic_sampling=True, max_draws=4, clues=(10, 12),
                scale_rewards=False, kl=0.01, lr=1e-4, steps=100, eval_every=25, eval_items=150,
                eval_rules=("S mode", "threshold 0.9", "Q mode", "low-confidence"), ckpt_every=10)
DECIDE = dict(surrogate="decisions", temperature=0.0, decision_temperature=0.1, kl=0.05)
# name → (what it tries, the settings that differ from BASE)
SWEEP = {
    "traj-lr1e-4": ("the trajectory surrogate (TraceRL), sampled tokens at temperature 1", {}),
    "dec-pen": ("the decisions surrogate: greedy tokens, Bernoulli commits / edits (kappa 0.1), reward - 0.5 * "
                "passes per cell", {**DECIDE, "pass_penalty": 0.5}),
    "dec-nopen": ("the decisions, no pass penalty", DECIDE),
    "dec-credit": ("the decisions with each one's own credit against the truth (weight 1), pass penalty 0.5",
                   {**DECIDE, "pass_penalty": 0.5, "decision_credit": 1.0}),
    "dec-mix": ("the decisions, half of each draw's questions in S mode and half in Q mode", {**DECIDE, "mix_rule": "quality"}),
    "dec-mix-pen": ("the decisions in S and Q mode, pass penalty 0.5", {**DECIDE, "mix_rule": "quality", "pass_penalty": 0.5}),
    "dec-edit-credit": ("the decisions with the rewrites' own credit against the truth (weight 1): the edits S mode "
                        "breaks, judged where the threshold rules never read", {**DECIDE, "decision_credit": 1.0,
                                                                                "credit_on": "edits"}),
    "dec-mix-kl0.2": ("the decisions in S and Q mode with a KL to the start four times as strong (beta 0.2)",
                      {**DECIDE, "mix_rule": "quality", "kl": 0.2}),
    "dec-mix-control": ("dec-mix's control: the same rollouts and updates, advantages from shuffled rewards",
                        {**DECIDE, "mix_rule": "quality", "control": True}),
}


def config(name: str) -> RLConfig:
    if name not in SWEEP:
        raise ValueError(f"run must be one of {', '.join(SWEEP)}, got {name!r}")
    return dataclasses.replace(BASE, **SWEEP[name][1])


def read(folder: str | Path) -> dict | None:
    """A run's history and evaluations (finished or not: its training.json, else its checkpoint);
    None when it has not started."""
    folder = Path(folder)
    if (folder / "training.json").is_file():
        rl = json.loads((folder / "training.json").read_text())["rl"]
        return {"history": rl["history"], "evals": rl["evals"]}
    if (folder / CHECKPOINT).is_file():
        ckpt = torch.load(folder / CHECKPOINT, weights_only=False, map_location="cpu")
        return {"history": ckpt["history"], "evals": ckpt["evals"]}
    return None


def summary(name: str, rec: dict) -> dict:
    """One run: what it tries, its settings, steps, reward over the first and last tenth and its
    mean over each 10 steps, the mean signal share, clip fraction and approximate KL, and its
    evaluations."""
    h = rec["history"]
    mean = lambda key: round(sum(x.get(key, 0.0) for x in h) / len(h), 5)     # noqa: E731
    rewards = [x["reward"] for x in h]
    by_ten = [round(sum(rewards[i:i + 10]) / len(rewards[i:i + 10]), 4) for i in range(0, len(rewards), 10)]
    return {"name": name, "tries": SWEEP[name][0], "settings": SWEEP[name][1], "steps": len(h),
            "reward_tenths": reward_tenths(h), "reward_by_ten_steps": by_ten, "signal_share": mean("signal_share"),
            "clip_fraction": mean("clip_fraction"), "approx_kl": mean("approx_kl"), "kl_end": h[-1].get("kl"),
            "evals": rec["evals"]}


def bench_rl_sweep(folder: str | Path = RUNS, names=tuple(SWEEP)) -> dict:
    """Every run of SWEEP found in `folder` (its steps so far), in SWEEP's order."""
    runs = [summary(n, rec) for n in names if (rec := read(Path(folder) / n)) is not None and rec["history"]]
    return {"base": dataclasses.asdict(BASE), "runs": runs}


def text_table(result: dict) -> str:
    lines = []
    for r in result["runs"]:
        last = r["evals"][-1]
        ev = " ".join(f"{k} {100 * v['accuracy']:.1f}%@{v['tpf']:.2f}" for k, v in last.items() if k != "step")
        lines.append(f"{r['name']:>12} {r['steps']:>4} steps reward {r['reward_tenths'][0]:.3f} -> "
                     f"{r['reward_tenths'][1]:.3f} | step {last['step']}: {ev}")
    return "\n".join(lines)


__all__ = ["BASE", "DECIDE", "RUNS", "SWEEP", "bench_rl_sweep", "config", "read", "summary", "text_table"]
