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

from ..eval.intervals import paired_ratio
from .samplers import per_prompt, text_figures
from .tasks import AR_LABEL, ONE_PER_STEP, run_pair

RL_MODEL, AR_RL_MODEL = "tiny-sudoku-rl", "tiny-sudoku-ar-rl"
CURVE_RUNS = Path("runs") / "rl-curves"
SEED_RUNS = Path("runs") / "rl-seeds"
RL_SEEDS = (1, 2)                       # beside the committed model's seed 0
SEED_LABELS = ("low-confidence", "threshold 0.9", "factor 1.0", "S mode", "Q mode")
KEYWORD_RUN = Path("runs") / "rl-keywords"


def keyword_config():
    """RL on Shakespeare: `tiny` rewarded for holding three words in a 32-token answer, sampled at
    temperature 1 (one common word, one rarer, one rare for the plain model)."""
    from ..training.rl import RLConfig

    return RLConfig(init_from="tiny", task="keywords", keywords=("lord", "king", "death"), rule="low_confidence",
                    temperature=1.0, surrogate="elbo", questions=4, group=8, inner_steps=2, kl=0.05, lr=5e-5,
                    steps=150, gen_length=32, eval_every=50, eval_items=32)


def curve_configs() -> dict:
    """label → RLConfig: tiny-sudoku-rl's recipe with the ELBO and with the one-pass surrogate (no
    block_elbo run: Sudoku decodes as one block, where EBPO is the ELBO itself)."""
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


def keyword_eval(lm, ar, cfg, n: int = 96, seed: int = 0) -> dict:
    """`lm` sampled (the run's rule and temperature, `cfg.gen_length` tokens) once on each of `n`
    held-out prompts: mean keyword reward, the share holding every word (Wilson 95%), each word's
    rate, gen-PPL under the AR judge, and two samples."""
    from ..controls import contains_word
    from ..eval.exact import wilson
    from ..eval.metrics import distinct_n
    from ..training.prompts import sample_prompts
    from ..training.rewards import keyword_items
    from ..training.rl import rollout, rollout_rule

    items = keyword_items(sample_prompts(n), cfg.keywords)
    r = rollout(lm, items, rollout_rule(cfg), 1, seed, cfg.block_length, cfg.gen_length)
    hits = int((r.reward >= 2).sum())
    return {"n": n, "reward": round(float(r.reward.mean()), 4), "all_words": round(hits / n, 4),
            "all_words_ci95": [round(v, 4) for v in wilson(hits, n)],
            "word_rates": {w: round(sum(contains_word(t, w) for t in r.texts) / n, 4) for w in cfg.keywords},
            **text_figures(ar, [it.prompt for it in items], r.texts, digits=3),
            "distinct_2": round(sum(distinct_n(lm.encode(t)) for t in r.texts) / n, 4), "examples": r.texts[:2]}


def keyword_runs(folder: str | Path = KEYWORD_RUN, log=None) -> dict:
    """RL on Shakespeare (keyword_config; trained where `folder` holds no finished run): the plain
    `tiny` and the RL policy side by side on held-out prompts, and the run's reward curve."""
    from ..models.load import load
    from ..training.rl import train_rl

    cfg, folder = keyword_config(), Path(folder)
    if not (folder / "training.json").is_file():
        train_rl(cfg, folder, progress=False, log=log or (lambda m: None))
    rec = json.loads((folder / "training.json").read_text())["rl"]
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


def seed_runs(folder: str | Path = SEED_RUNS, seeds=RL_SEEDS, n: int | None = None, log=None) -> dict:
    """tiny-sudoku-rl's recipe with other seeds (each trained where its folder holds no finished run;
    resumable): per seed, its reward over the first and last tenth of steps and SEED_LABELS's rows
    on the held-out puzzles."""
    from ..models.load import load
    from ..training.rl import RL_RECIPES, train_rl

    out = {}
    for seed in seeds:
        run = Path(folder) / f"seed{seed}"
        if not (run / "training.json").is_file():
            train_rl(dataclasses.replace(RL_RECIPES[RL_MODEL], seed=seed), run, progress=False,
                     log=log or (lambda m: None))
        rec = json.loads((run / "training.json").read_text())["rl"]
        if rec["config"]["seed"] != seed:
            raise ValueError(f"{run} holds a run of seed {rec['config']['seed']}, not {seed}")
        out[str(seed)] = {"reward_tenths": reward_tenths(rec["history"]), "train_seconds": rec["train_seconds"],
                          "runs": run_pair("sudoku", load(str(run)), labels=SEED_LABELS, n=n, log=log)}
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
            "seeds": seed_runs(n=n, log=log),
            "keywords": keyword_runs(log=log),
            "targets": targets(after, before, ar_after)}


__all__ = ["AR_RL_MODEL", "CURVE_RUNS", "KEYWORD_RUN", "RL_MODEL", "RL_SEEDS", "SEED_LABELS", "SEED_RUNS", "bench_rl",
           "curve_configs", "keyword_config", "keyword_eval", "keyword_runs", "markdown_seeds", "noise_table", "reward_tenths",
           "seed_runs", "targets", "train_curves"]


def text_table(result: dict) -> str:
    """Every rule's accuracy and TPF before and after, then the targets: the command's printout."""
    lines = []
    for label in ("start", "rl"):
        for row in result["runs"][label]:
            s = row["tasks"]["sudoku"]
            lines.append(f"{result['models'][label]:>16} {row['label']:>22}: {s['accuracy']:.3f} TPF {s['tpf']:.2f}")
    lines += [f"{k:>24}: {v['value']} ({v['target']}) {'met' if v['met'] else 'missed'}"
              for k, v in result["targets"].items()]
    return "\n".join(lines)


# --- the tables docs/models.md shows (benchmarks/make_rl_section.py) --------------------------------

def _acc(s: dict) -> str:
    lo, hi = s["ci95"]
    return f"{100 * s['accuracy']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] (hard {100 * s['groups']['hard']['accuracy']:.1f}%)"


def _edits(s: dict) -> str:
    e = s.get("edits")
    return f"{e['fixed']} / {e['broke']}" if e else "–"


def markdown_rules(result: dict) -> str:
    """Every rule before and after RL on all held-out puzzles: accuracy [95% interval] (hard), TPF,
    edits fixed / broken; the AR twin's row last."""
    from .common import markdown_table

    start = {r["label"]: r["tasks"]["sudoku"] for r in result["runs"]["start"]}
    rows = []
    for r in result["runs"]["rl"]:
        a, b = start[r["label"]], r["tasks"]["sudoku"]
        rows.append([r["label"], _acc(a), f"{a['tpf']:.2f}", _edits(a), _acc(b), f"{b['tpf']:.2f}", _edits(b)])
    a, b = result["runs"]["ar_start"]["tasks"]["sudoku"], result["runs"]["ar_rl"]["tasks"]["sudoku"]
    rows.append([AR_LABEL, _acc(a), "1.00", "–", _acc(b), "1.00", "–"])
    m = result["models"]
    return markdown_table(["rule", f"`{m['start']}`", "TPF", "edits fixed / broke", f"`{m['rl']}` (AR row: "
                           f"`{m['ar_rl']}`)", "TPF", "edits fixed / broke"], rows)


def markdown_curves(result: dict) -> str:
    """Each surrogate's run at the same compute: reward over the first and last tenth of its steps,
    and its greedy evaluations (S mode, low-confidence) at the start, best and end."""
    from .common import markdown_table

    rows = []
    for label, c in result["curves"].items():
        k = max(1, len(c["reward"]) // 10)
        first, last = sum(c["reward"][:k]) / k, sum(c["reward"][-k:]) / k
        ev = c["evals"]
        best = max(ev, key=lambda e: e["speed"]["accuracy"])
        rows.append([label, f"{len(c['reward'])}", f"{c['train_seconds'] / 60:.0f}", f"{first:.3f} → {last:.3f}",
                     " / ".join(f"{100 * e['speed']['accuracy']:.1f}% at {e['speed']['tpf']:.2f}" for e in (ev[0], ev[-1])),
                     f"{100 * best['speed']['accuracy']:.1f}% (step {best['step']})",
                     f"{100 * ev[0]['low_confidence']['accuracy']:.1f}% → {100 * ev[-1]['low_confidence']['accuracy']:.1f}%"])
    return markdown_table(["surrogate", "steps", "minutes", "mean reward, first → last 10%",
                           "S mode start / end (accuracy at TPF)", "S mode best", "low-confidence start → end"], rows)


def markdown_noise(result: dict) -> str:
    from .common import markdown_table

    return markdown_table(["surrogate", "cosine of one draw to the many-draw mean", "cosine of its mean to the ELBO's"],
                          [[r["label"], f"{r['cosine_mean']:.2f} ± {r['cosine_sd']:.2f}",
                            f"{r['cosine_to_elbo_reference']:.2f}"] for r in result["gradient_noise"]])


def markdown_targets(result: dict) -> str:
    from .common import markdown_table

    return markdown_table(["target", "wanted", "measured", "met"],
                          [[k.replace("_", " "), v["target"], json.dumps(v["value"]) if isinstance(v["value"], (dict, list))
                            else v["value"], "yes" if v["met"] else "**no**"] for k, v in result["targets"].items()])


def markdown_seeds(result: dict) -> str:
    """The recipe with three seeds: seed 0 is the committed model (its rows from `runs.rl`, its
    reward from its training record)."""
    from ..models.load import model_folder
    from .common import markdown_table

    history = json.loads((model_folder(result["models"]["rl"]) / "training.json").read_text())["rl"]["history"]
    zero = {"reward_tenths": reward_tenths(history), "runs": [r for r in result["runs"]["rl"] if r["label"] in SEED_LABELS]}
    rows = []
    for seed, s in {"0": zero, **result.get("seeds", {})}.items():
        by = {r["label"]: r["tasks"]["sudoku"] for r in s["runs"]}
        rows.append([seed, " → ".join(f"{v:.3f}" for v in s["reward_tenths"])]
                    + [f"{_acc(by[label])} at {by[label]['tpf']:.2f}" for label in SEED_LABELS] + [_edits(by["S mode"])])
    return markdown_table(["seed", "reward (first → last tenth)", *SEED_LABELS, "S-mode edits fixed / broke"], rows)


SECTION_START, SECTION_END = "<!-- rl section: benchmarks/make_rl_section.py -->", "<!-- end of rl section -->"


def what_moved(result: dict) -> str:
    """The paragraph on what RL changed and what it did not, every figure from rl.json."""
    rl = {r["label"]: r["tasks"]["sudoku"] for r in result["runs"]["rl"]}
    start = {r["label"]: r["tasks"]["sudoku"] for r in result["runs"]["start"]}
    s, s0 = rl["S mode"], start["S mode"]
    ar0, ar1 = (result["runs"][k]["tasks"]["sudoku"]["accuracy"] for k in ("ar_start", "ar_rl"))
    run = result["curves"]["elbo"]["reward"]
    reward = reward_tenths([{"reward": r} for r in run])
    t9 = (start["threshold 0.9"], rl["threshold 0.9"])
    lc = (start["low-confidence"]["accuracy"], rl["low-confidence"]["accuracy"])
    sooner = t9[1]["tpf"] > t9[0]["tpf"] and t9[1]["accuracy"] < t9[0]["accuracy"]
    bar = (" (its proposals cleared the bar sooner and were wrong more often: the model grew\noverconfident)"
           if sooner else "")
    e0, e1 = s0.get("edits", {"fixed": 0, "broke": 0}), s.get("edits", {"fixed": 0, "broke": 0})
    overlap = "overlap" if s["ci95"][0] <= s0["ci95"][1] and s0["ci95"][0] <= s["ci95"][1] else "do not overlap"
    rose = "rose" if reward[1] > reward[0] + 0.01 else "did not rise"
    learned = ": the policy did not learn the reward." if reward[1] <= reward[0] + 0.01 else "."
    return f"""What RL did, and did not, at this budget. S mode went from {100 * s0['accuracy']:.1f}% at TPF {s0['tpf']:.2f} to
{100 * s['accuracy']:.1f}% at TPF {s['tpf']:.2f} (the two 95% intervals {overlap}), its edits from
{e0['fixed']} fixed / {e0['broke']} broken to {e1['fixed']} / {e1['broke']}. The mean rollout reward of the recipe's run
{rose} ({reward[0]:.3f} over its first tenth of steps, {reward[1]:.3f} over its last){learned}
Threshold 0.9 went from {100 * t9[0]['accuracy']:.1f}% at TPF {t9[0]['tpf']:.2f} to
{100 * t9[1]['accuracy']:.1f}% at TPF {t9[1]['tpf']:.2f}{bar}; low-confidence one per step
from {100 * lc[0]:.1f}% to {100 * lc[1]:.1f}%.
The AR twin under RL with its exact likelihood: {100 * ar0:.1f}% → {100 * ar1:.1f}%.
"""


def keywords_paragraph(result: dict) -> str:
    """RL on Shakespeare: the keyword run before and after, every figure from rl.json (empty without it)."""
    k = result.get("keywords")
    if not k:
        return ""
    c, b, a = k["config"], k["before"], k["after"]
    words = ", ".join(c["keywords"])
    rates = "; ".join(f"{w} {100 * b['word_rates'][w]:.0f}% → {100 * a['word_rates'][w]:.0f}%" for w in c["keywords"])
    rows = c["questions"] * c["group"]
    ci = lambda x: f"{100 * x['all_words']:.1f}% [{100 * x['all_words_ci95'][0]:.1f}, {100 * x['all_words_ci95'][1]:.1f}]"  # noqa: E731
    return f"""
RL on Shakespeare with the keyword reward (`labkit.bench.rl.keyword_config`): `{c['init_from']}` rewarded for
holding {words} in a {c['gen_length']}-token answer sampled at temperature {c['temperature']:g} ({c['questions']} training
prompts × {c['group']} rollouts a step, {c['steps']} steps, the ELBO surrogate, KL {c['kl']:g}, lr {c['lr']:g};
{k['train_seconds'] / 60:.1f} min on two threads; {k['signal_rows']:.1f} of {rows} rollouts a step carried a
signal). On {a['n']} held-out prompts, one sample each: answers holding every word {ci(b)} → {ci(a)}; mean reward
{b['reward']:.3f} → {a['reward']:.3f}; each word: {rates}; gen-PPL under `tiny-ar` {b['gen_ppl']:.2f} →
{a['gen_ppl']:.2f} (after / before {k['gen_ppl_ratio'][0]:.3f} [{k['gen_ppl_ratio'][1]:.3f},
{k['gen_ppl_ratio'][2]:.3f}], 95% bootstrap over the prompts), distinct-2 {b['distinct_2']:.3f} →
{a['distinct_2']:.3f}. The run's mean rollout reward over its first and last tenth of steps:
{k['reward_tenths'][0]:.3f} → {k['reward_tenths'][1]:.3f}. {_keyword_verdict(k)} The policy is not
committed as a model: it is a lesson in what a reward asks for (the words, whatever the sense), not a
better writer.
"""


def _keyword_verdict(k: dict) -> str:
    """What the figures say, worded from them: the reward rose, and whether the text got more repetitive."""
    b, a = k["before"], k["after"]
    rose = "rose" if a["reward"] > b["reward"] + 0.05 else "did not rise"
    lower = k["gen_ppl_ratio"][2] < 1                   # the interval of after / before lies below 1
    rep = ("the text repeats more (distinct-2 fell), so its lower gen-PPL is repetition the judge finds easy, not"
           " better text" if a["distinct_2"] < b["distinct_2"] and lower else
           "gen-PPL moved within noise" if k["gen_ppl_ratio"][1] <= 1 <= k["gen_ppl_ratio"][2] else
           "read the samples in notebook 12 for what the words cost")
    return f"The reward {rose}; {rep}."


def seeds_paragraph(result: dict) -> str:
    """The seeds' table with its lead-in (empty without seeds)."""
    if not result.get("seeds"):
        return ""
    return f"""
The same recipe with {1 + len(result['seeds'])} seeds (seed 0 is `tiny-sudoku-rl`; every held-out puzzle, the
rules RL is judged by):

{markdown_seeds(result)}
"""


def models_section(result: dict) -> str:
    """docs/models.md's section on RL, every figure read from rl.json (benchmarks/make_rl_section.py)."""
    c = next(iter(result["curves"].values()))["config"]
    missed = [k.replace("_", " ") for k, v in result["targets"].items() if not v["met"]]
    n_eval = c["eval_items"]
    noise = (result["gradient_noise"] or [{"reference_draws": 0, "single_draws": 0}])[0]
    return f"""{SECTION_START}
## Rewards: reinforcement learning with exact rewards on the Sudoku pair

`labkit.training.rl` is GRPO as the diffusion-LM papers adapt it: per step, {c['questions']} training-split
puzzles (`labkit.training.rewards.training_question`, never a held-out grid) decoded {c['group']} times each
by the rule being trained (for `tiny-sudoku-rl`, S mode sampled at a temperature: its drafts and its
edits are the actions), the exact reward of each answer (the share of blanks right + 1 if solved),
advantages normalised within each puzzle's group, and a clipped ratio over several inner updates
with an exact KL to the starting model. A diffusion LM's log-likelihood of its answer is
intractable, so the ratio is taken on a surrogate: diffu-GRPO's one-pass estimate, ESPO's
sequence-level ELBO, LLaDA2.1's block-level ELBO (EBPO), or, for the AR twin, its exact log p.
Recipes: `labkit.training.rl.RL_RECIPES` (`labkit train-rl --recipe NAME`); measured with
`labkit bench rl --out benchmarks/results` (→ `benchmarks/results/rl.json`).

Every rule on all 600 held-out puzzles before (`tiny-sudoku`'s rows of tasks.json) and after RL
(95% Wilson intervals; hard = 10–12 clues; edits: cells made right / made wrong):

{markdown_rules(result)}

{what_moved(result)}
{seeds_paragraph(result)}{keywords_paragraph(result)}
The surrogates side by side at the same compute (one recipe, only the surrogate changed; greedy
evaluations on {n_eval} held-out puzzles during training, a third of each level):

{markdown_curves(result)}

Why the estimator matters: for one batch of S-mode rollouts, the cosine between one draw's policy
gradient and the mean of {noise['reference_draws']} other draws of the same surrogate
(± over {noise['single_draws']} draws), and between each surrogate's mean gradient and the
ELBO's (the block ELBO with blocks of 6 blanks: Sudoku decodes in one block, where EBPO is the
ELBO itself):

{markdown_noise(result)}

Targets, as the issue set them (missed: {', '.join(missed) if missed else 'none'}):

{markdown_targets(result)}
{SECTION_END}"""
