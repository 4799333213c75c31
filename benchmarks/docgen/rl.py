"""docs/models.md's section on reinforcement learning, every figure read from
benchmarks/results/rl.json (`labkit bench rl`; benchmarks/make_rl_section.py writes it,
tests/test_rl_results.py reads it back)."""
from __future__ import annotations

import json

from labkit.bench.rl import SEED_LABELS, reward_tenths
from labkit.bench.tasks import AR_LABEL
from labkit.models.load import model_folder

from .markdown import markdown_table
from .tasks import accuracy_cell

SECTION_START, SECTION_END = "<!-- rl section: benchmarks/make_rl_section.py -->", "<!-- end of rl section -->"


def _acc(s: dict) -> str:
    return f"{accuracy_cell(s)} (hard {100 * s['groups']['hard']['accuracy']:.1f}%)"


def _edits(s: dict) -> str:
    e = s.get("edits")
    return f"{e['fixed']} / {e['broke']}" if e else "–"


def markdown_rules(result: dict) -> str:
    """Every rule before and after RL on all held-out puzzles: accuracy [95% interval] (hard), TPF,
    edits fixed / broken; the AR twin's row last."""
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
    return markdown_table(["surrogate", "cosine of one draw to the many-draw mean", "cosine of its mean to the ELBO's"],
                          [[r["label"], f"{r['cosine_mean']:.2f} ± {r['cosine_sd']:.2f}",
                            f"{r['cosine_to_elbo_reference']:.2f}"] for r in result["gradient_noise"]])


def markdown_targets(result: dict) -> str:
    return markdown_table(["target", "wanted", "measured", "met"],
                          [[k.replace("_", " "), v["target"], json.dumps(v["value"]) if isinstance(v["value"], (dict, list))
                            else v["value"], "yes" if v["met"] else "**no**"] for k, v in result["targets"].items()])


def markdown_seeds(result: dict) -> str:
    """The recipe with three seeds: seed 0 is the committed model (its rows from `runs.rl`, its
    reward from its training record)."""
    history = json.loads((model_folder(result["models"]["rl"]) / "training.json").read_text())["rl"]["history"]
    zero = {"reward_tenths": reward_tenths(history), "runs": [r for r in result["runs"]["rl"] if r["label"] in SEED_LABELS]}
    rows = []
    for seed, s in {"0": zero, **result.get("seeds", {})}.items():
        by = {r["label"]: r["tasks"]["sudoku"] for r in s["runs"]}
        rows.append([seed, " → ".join(f"{v:.3f}" for v in s["reward_tenths"])]
                    + [f"{_acc(by[label])} at {by[label]['tpf']:.2f}" for label in SEED_LABELS] + [_edits(by["S mode"])])
    return markdown_table(["seed", "reward (first → last tenth)", *SEED_LABELS, "S-mode edits fixed / broke"], rows)


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


def markdown_calibration(result: dict) -> str:
    """Confidence against accuracy before and after RL: per model, each confidence bin's share and
    accuracy, the ECE, and the share of predictions at >= 0.9 with how many of those are wrong."""
    cal = result["calibration"]
    bins = [b["lo"] for b in next(iter(cal.values()))["bins"] if b["lo"] >= 0.5]
    rows = []
    for name, c in cal.items():
        by = {b["lo"]: b for b in c["bins"]}
        rows.append([f"`{name}`"] + [f"{100 * by[lo]['accuracy']:.1f}% ({100 * by[lo]['n'] / c['points']:.1f}%)"
                                     if lo in by else "–" for lo in bins]
                    + [f"{c['ece']:.3f}", f"{100 * c['confident_share']:.1f}%", f"{100 * c['confident_wrong']:.2f}%"])
    return markdown_table(["model"] + [f"confidence {lo:.1f}–{lo + 0.1:.1f}" for lo in bins]
                          + ["ECE", "predictions at ≥ 0.9", "of those wrong"], rows)


def markdown_cosine(result: dict) -> str:
    g = result["gradient_cosine"]
    rows = [[r["label"], f"{r['cosine_of_mean']:.3f}", f"{r['single_mean']:.3f} [{r['single_min']:.3f}, {r['single_max']:.3f}]"]
            for r in g["rows"]]
    return markdown_table(["surrogate", f"cosine of its mean of {g['draws']} draws to the trajectory's gradient",
                           "one draw: mean [least, greatest]"], rows)


def calibration_paragraph(result: dict) -> str:
    cal = result["calibration"]
    a, b = cal["tiny-sudoku"], cal[result["models"]["rl"]]
    return (f"Why the confident rules fell: confidence against accuracy on the held-out puzzles, every still-masked "
            f"cell's top prediction at every pass of a one-per-step decoding ({a['points']:,} predictions per model; "
            f"`labkit.eval.calibration`). Each cell: the bin's accuracy (its share of the predictions). After RL, "
            f"{100 * b['confident_share']:.0f}% of the predictions sit at ≥ 0.9 (before: {100 * a['confident_share']:.0f}%) "
            f"and {100 * b['confident_wrong']:.1f}% of those are wrong (before: {100 * a['confident_wrong']:.2f}%): a "
            f"threshold of 0.9 commits what it used to hold."
            + (f" The ECE, an average gap over all bins, fell ({a['ece']:.3f} → {b['ece']:.3f}): it hides the top bin a "
               f"threshold reads." if b["ece"] < a["ece"] else "")
            + f"\n\n{markdown_calibration(result)}\n")


def cosine_paragraph(result: dict) -> str:
    g = result["gradient_cosine"]
    return (f"Do the likelihood surrogates point where the rule's own decoding does? On one batch of S-mode rollouts "
            f"({g['signal_rows']} of {g['rollouts']} with signal), each Monte-Carlo surrogate's start gradient against "
            f"the trajectory surrogate's exact one (each rollout's passes replayed from its trace, log p of each token "
            f"where the rule committed or edited it):\n\n{markdown_cosine(result)}\n")


def models_section(result: dict) -> str:
    """The whole section, markers included."""
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

{cosine_paragraph(result) if result.get("gradient_cosine") else ""}
{calibration_paragraph(result) if result.get("calibration") else ""}
Targets, as the issue set them (missed: {', '.join(missed) if missed else 'none'}):

{markdown_targets(result)}
{SECTION_END}"""
