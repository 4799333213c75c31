"""`labkit bench rl`: what reinforcement learning with exact rewards did to the Sudoku pair.

    labkit bench rl --out benchmarks/results            # → rl.json (trains what is missing first)

- `runs`: the RL policies (`labkit.training.rl.RL_RECIPES`: `tiny-sudoku-rl`, its decisions learned,
  and `tiny-sudoku-rl-elbo`, the first recipe kept as the control) under every rule of
  `bench.tasks.RULES` on all 600 held-out puzzles, beside the starting models' rows of tasks.json
  (same items, same rules, measured before RL); the AR twin after RL under its exact likelihood;
- `curves`: the reward and the greedy held-out evaluations against steps and seconds for each
  surrogate at the same compute (`curve_configs`: the ELBO recipe, only the surrogate changed);
- `gradient_noise`: for one batch of S-mode rollouts, how close one draw's policy gradient is to
  the same surrogate's many-draw mean (cosine), per surrogate;
- `seeds` / `seeds_elbo`: each recipe with other seeds; `keywords`: RL on Shakespeare with a keyword
  reward.

This module measures runs that are already trained (`training_runs` names them; `labkit bench rl`
trains the missing ones first, labkit/cli/bench_rl.py). The issue's targets are judged from the rows
beside the docs (benchmarks/docgen/targets.py), which store them in rl.json as `targets`.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import torch

from ..controls import contains_word
from ..eval.calibration import prediction_points, reliability
from ..eval.exact import wilson
from ..eval.intervals import paired_ratio
from ..eval.metrics import distinct_n
from ..models.load import load
from ..tasks import heldout
from ..training.prompts import sample_prompts
from ..training.rewards import keyword_items
from ..training.rl import (
    RL_RECIPES,
    RLConfig,
    gradient_noise,
    group_advantages,
    policy_gradient,
    rollout,
    rollout_rule,
    same_config,
    step_questions,
)
from .samplers import per_prompt, text_figures
from .tasks import AR_LABEL, ONE_PER_STEP, SOLVER_LABEL, run_pair

__all__ = ["AR_RL_MODEL", "bench_rl", "calibration", "CALIBRATION_MODELS", "COSINE_CONFIG", "cosine_table", "curve_configs",
           "CURVE_RUNS", "curves", "ELBO_MODEL", "ELBO_SEED_RUNS", "keyword_config", "keyword_eval", "KEYWORD_RUN",
           "keyword_runs", "noise_table", "read_run", "reward_tenths", "RL_MODEL", "RL_SEEDS", "seed_config", "SEED_LABELS",
           "SEED_RUNS", "seed_runs", "text_table", "training_runs"]

RL_MODEL, ELBO_MODEL, AR_RL_MODEL = "tiny-sudoku-rl", "tiny-sudoku-rl-elbo", "tiny-sudoku-ar-rl"
CURVE_RUNS = Path("runs") / "rl-curves"
SEED_RUNS = Path("runs") / "rl-seeds"             # tiny-sudoku-rl's recipe, seeds RL_SEEDS
ELBO_SEED_RUNS = Path("runs") / "rl-seeds-elbo"   # the control recipe's
RL_SEEDS = (1, 2)                       # beside the committed model's seed 0
SEED_LABELS = ("low-confidence", "threshold 0.9", "factor 1.0", "S mode", "Q mode")
KEYWORD_RUN = Path("runs") / "rl-keywords"


def keyword_config() -> RLConfig:
    """RL on Shakespeare: `tiny` rewarded for holding three words in a 32-token answer, sampled at
    temperature 1 (one common word, one rarer, one rare for the plain model)."""
    return RLConfig(init_from="tiny", task="keywords", keywords=("lord", "king", "death"), rule="low_confidence",
                    temperature=1.0, surrogate="elbo", questions=4, group=8, inner_steps=2, kl=0.05, lr=5e-5,
                    steps=150, gen_length=32, eval_every=50, eval_items=32)


def curve_configs() -> dict[str, RLConfig]:
    """label → RLConfig: tiny-sudoku-rl-elbo's recipe with the ELBO and with the one-pass surrogate
    (no block_elbo run: Sudoku decodes as one block, where EBPO is the ELBO itself)."""
    base = RL_RECIPES[ELBO_MODEL]
    return {"elbo": dataclasses.replace(base, surrogate="elbo"),
            "one_pass": dataclasses.replace(base, surrogate="one_pass", kept_weight=0.0)}


def seed_config(seed: int, model: str = RL_MODEL) -> RLConfig:
    """`model`'s recipe with another seed."""
    return dataclasses.replace(RL_RECIPES[model], seed=seed)


def training_runs(curves_folder: str | Path = CURVE_RUNS, seeds_folder: str | Path = SEED_RUNS, seeds=RL_SEEDS,
                  keyword_folder: str | Path = KEYWORD_RUN,
                  elbo_seeds_folder: str | Path = ELBO_SEED_RUNS) -> dict[Path, RLConfig]:
    """Every run bench_rl reads beside the committed models: folder → the RLConfig it trains."""
    return {**{Path(curves_folder) / label: cfg for label, cfg in curve_configs().items()},
            **{Path(seeds_folder) / f"seed{seed}": seed_config(seed) for seed in seeds},
            **{Path(elbo_seeds_folder) / f"seed{seed}": seed_config(seed, ELBO_MODEL) for seed in seeds},
            Path(keyword_folder): keyword_config()}


def read_run(folder: str | Path) -> dict:
    """The rl record of a finished run (its training.json)."""
    record = Path(folder) / "training.json"
    if not record.is_file():
        raise FileNotFoundError(f"{folder} holds no finished RL run (labkit bench rl trains it first)")
    return json.loads(record.read_text())["rl"]


def curves(folder: str | Path = CURVE_RUNS) -> dict:
    """Each curve's run, read: {label: its config, seconds, reward, solved, KL and evaluations by step}."""
    out = {}
    for label in curve_configs():
        rec = read_run(Path(folder) / label)
        out[label] = {"config": rec["config"], "train_seconds": rec["train_seconds"],
                      "steps": [h["step"] for h in rec["history"]],
                      "reward": [h["reward"] for h in rec["history"]],
                      "solved": [h["solved"] for h in rec["history"]],
                      "kl": [h.get("kl", 0.0) for h in rec["history"]],
                      "evals": rec["evals"]}
    return out


def keyword_eval(lm, ar, cfg: RLConfig, n: int = 96, seed: int = 0) -> dict:
    """`lm` sampled (the run's rule and temperature, `cfg.gen_length` tokens) once on each of `n`
    held-out prompts: mean keyword reward, the share holding every word (Wilson 95%), each word's
    rate, gen-PPL under the AR judge, and two samples."""
    items = keyword_items(sample_prompts(n), cfg.keywords)
    r = rollout(lm, items, rollout_rule(cfg), 1, seed, cfg.block_length, cfg.gen_length)
    hits = int((r.reward >= 2).sum())
    return {"n": n, "reward": round(float(r.reward.mean()), 4), "all_words": round(hits / n, 4),
            "all_words_ci95": [round(v, 4) for v in wilson(hits, n)],
            "word_rates": {w: round(sum(contains_word(t, w) for t in r.texts) / n, 4) for w in cfg.keywords},
            **text_figures(ar, [it.prompt for it in items], r.texts, digits=3),
            "distinct_2": round(sum(distinct_n(lm.encode(t)) for t in r.texts) / n, 4), "examples": r.texts[:2]}


def keyword_runs(folder: str | Path = KEYWORD_RUN) -> dict:
    """RL on Shakespeare (keyword_config, the run trained in `folder`): the plain `tiny` and the RL
    policy side by side on held-out prompts, and the run's reward curve."""
    cfg, rec = keyword_config(), read_run(folder)
    ar = load("tiny-ar")
    before, after = keyword_eval(load(cfg.init_from), ar, cfg), keyword_eval(load(str(folder)), ar, cfg)
    ratio, lo, hi = paired_ratio(per_prompt(after), per_prompt(before))       # the same prompts
    return {"config": rec["config"], "train_seconds": rec["train_seconds"],
            "reward": [h["reward"] for h in rec["history"]], "reward_tenths": reward_tenths(rec["history"]),
            "signal_rows": round(sum(h["signal_rows"] for h in rec["history"]) / len(rec["history"]), 2),
            "before": before, "after": after,
            "gen_ppl_ratio": [round(v, 3) for v in (ratio, lo, hi)]}


def reward_tenths(history: list[dict]) -> list[float]:
    """The mean rollout reward over the first and the last tenth of a run's steps."""
    k = max(1, len(history) // 10)
    return [round(sum(h["reward"] for h in history[:k]) / k, 4), round(sum(h["reward"] for h in history[-k:]) / k, 4)]


def seed_runs(folder: str | Path = SEED_RUNS, seeds=RL_SEEDS, n: int | None = None, log=None,
              model: str = RL_MODEL) -> dict:
    """`model`'s recipe with other seeds (each run trained in folder/seedK): per seed, its reward
    over the first and last tenth of steps and SEED_LABELS's rows on the held-out puzzles."""
    out = {}
    for seed in seeds:
        run = Path(folder) / f"seed{seed}"
        rec = read_run(run)
        if not same_config(rec["config"], seed_config(seed, model)):
            raise ValueError(f"{run} holds another run than {model}'s recipe with seed {seed}")
        out[str(seed)] = {"reward_tenths": reward_tenths(rec["history"]), "train_seconds": rec["train_seconds"],
                          "runs": run_pair("sudoku", load(str(run)), labels=SEED_LABELS, n=n, log=log)}
    return out


def noise_table(lm, seed: int = 0, reference_draws: int = 32, single_draws: int = 8) -> list[dict]:
    """gradient_noise of each masked surrogate on one batch of tiny-sudoku-rl-elbo's recipe's rollouts."""
    cfg = RL_RECIPES[ELBO_MODEL]
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


COSINE_CONFIG = RLConfig(init_from="tiny-sudoku", rule="speed", temperature=1.0, surrogate="trajectory", questions=16,
                         group=8, clues=(10, 13))    # the batch the start gradients are compared on
CALIBRATION_MODELS = ("tiny-sudoku", ELBO_MODEL, RL_MODEL)   # confidence against accuracy, before and after RL


def calibration(models=CALIBRATION_MODELS, n: int | None = None) -> dict:
    """labkit.eval.calibration's reliability of each model on the held-out puzzles (the first n)."""
    items = heldout("sudoku")[:n] if n else heldout("sudoku")
    return {name: reliability(*prediction_points(load(name), items)) for name in models}


def cosine_table(lm, cfg: RLConfig = COSINE_CONFIG, seed: int = 0, draws: int = 16) -> dict:
    """Before a long run: how well each Monte-Carlo surrogate's policy gradient points along the
    trajectory surrogate's exact one, on one batch of `cfg`'s rollouts (its rule, temperature and
    questions) from `lm`. Per surrogate: the cosine of the mean of `draws` one-draw gradients to the
    trajectory gradient, and the mean, least and greatest cosine of a single draw."""
    rolls = rollout(lm, step_questions(cfg, 0), rollout_rule(cfg), cfg.group, seed)
    adv = group_advantages(rolls.reward, cfg.group, cfg.scale_rewards)
    keep = adv.abs() > 0
    x, w, a = rolls.x[keep], rolls.written[keep], adv[keep]
    rows = keep.nonzero().squeeze(1)
    exact = policy_gradient(lm, x, w, a, "trajectory", torch.Generator(), trace=rolls.trace, rows=rows)
    out = {"rollouts": len(adv), "signal_rows": int(keep.sum()), "draws": draws, "rows": []}
    for label, surrogate, knobs in (("one_pass", "one_pass", {}), ("elbo", "elbo", {}),
                                    ("block_elbo (6 blanks)", "block_elbo", {"block_length": 6})):
        g = torch.Generator().manual_seed(seed)
        grads = [policy_gradient(lm, x, w, a, surrogate, g, **knobs) for _ in range(draws)]
        single = [float(torch.nn.functional.cosine_similarity(gr, exact, dim=0)) for gr in grads]
        mean = float(torch.nn.functional.cosine_similarity(torch.stack(grads).mean(0), exact, dim=0))
        out["rows"].append({"label": label, "cosine_of_mean": round(mean, 4),
                            "single_mean": round(sum(single) / len(single), 4),
                            "single_min": round(min(single), 4), "single_max": round(max(single), 4)})
    return out


def bench_rl(tasks_json: str | Path, n: int | None = None, curves_folder: str | Path = CURVE_RUNS,
             noise: bool = True, log=None) -> dict:
    """The whole comparison (see the module docstring): the committed RL models against the
    starting pair's rows of tasks.json, and the runs of `training_runs`, read."""
    before_all = json.loads(Path(tasks_json).read_text())["pairs"]["sudoku"]["runs"]
    before = [r for r in before_all if r["label"] not in (AR_LABEL, SOLVER_LABEL)]   # the masked model's rules
    ar_before = next(r for r in before_all if r["label"] == AR_LABEL)
    labels = [r["label"] for r in before] + [AR_LABEL]                  # the rows measured before RL
    runs = run_pair("sudoku", load(RL_MODEL), load(AR_RL_MODEL), n=n, labels=labels, log=log)
    after = [r for r in runs if r["label"] != AR_LABEL]
    ar_after = next(r for r in runs if r["label"] == AR_LABEL)
    start = load("tiny-sudoku")
    return {"models": {"rl": RL_MODEL, "rl_elbo": ELBO_MODEL, "start": "tiny-sudoku", "ar_rl": AR_RL_MODEL,
                       "ar_start": "tiny-sudoku-ar"},
            "items_per_task": n or "all", "one_per_step": list(ONE_PER_STEP),
            "runs": {"rl": after, "rl_elbo": run_pair("sudoku", load(ELBO_MODEL), n=n, labels=labels[:-1], log=log),
                     "start": before, "ar_rl": ar_after, "ar_start": ar_before},
            "curves": curves(curves_folder),
            "gradient_noise": noise_table(start) if noise else [],
            "gradient_cosine": cosine_table(start) if noise else {},
            "calibration": calibration(n=n),
            "seeds": seed_runs(n=n, log=log),
            "seeds_elbo": seed_runs(ELBO_SEED_RUNS, n=n, log=log, model=ELBO_MODEL),
            "keywords": keyword_runs()}


def text_table(result: dict) -> str:
    """Every rule's accuracy and TPF before and after: the command's printout (bench_rl judges no
    targets; benchmarks/make_rl_section.py judges them from these rows)."""
    lines = []
    for label in ("start", "rl_elbo", "rl"):
        for row in result["runs"][label]:
            s = row["tasks"]["sudoku"]
            lines.append(f"{result['models'][label]:>16} {row['label']:>22}: {s['accuracy']:.3f} TPF {s['tpf']:.2f}")
    return "\n".join(lines)


