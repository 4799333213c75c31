"""docs/models.md's section on reinforcement learning, every figure read from
benchmarks/results/rl.json (`labkit bench rl`; benchmarks/make_rl_section.py writes it,
tests/test_rl_results.py reads it back)."""
from __future__ import annotations

import json

from labkit.bench.rl import SEED_LABELS, reward_tenths
from labkit.bench.tasks import AR_LABEL
from labkit.samplers.draft_edit import DraftEdit

from .markdown import markdown_table
from .targets import reward_rise, rl_record, seed_tenths
from .tasks import accuracy_cell

SEED_KEYS = {"rl": "seeds", "rl_elbo": "seeds_elbo"}     # the model's key in runs → its seeds' key
SECTION_START, SECTION_END = "<!-- rl section: benchmarks/make_rl_section.py -->", "<!-- end of rl section -->"


def _acc(s: dict) -> str:
    return f"{accuracy_cell(s)} (hard {100 * s['groups']['hard']['accuracy']:.1f}%)"


def _edits(s: dict) -> str:
    e = s.get("edits")
    return f"{e['fixed']} / {e['broke']}" if e else "–"


def markdown_rules(result: dict) -> str:
    """Every rule before RL, after the control recipe (the ELBO) and after the RL model's recipe, on
    all held-out puzzles: accuracy [95% interval] (hard), TPF, edits fixed / broken; the AR twin's row last."""
    by = {k: {r["label"]: r["tasks"]["sudoku"] for r in result["runs"][k]} for k in ("start", "rl_elbo", "rl")}
    rows = []
    for r in result["runs"]["rl"]:
        rows.append([r["label"]] + [cell for k in ("start", "rl_elbo", "rl") for cell in
                                    (_acc(by[k][r["label"]]), f"{by[k][r['label']]['tpf']:.2f}", _edits(by[k][r["label"]]))])
    a, b = result["runs"]["ar_start"]["tasks"]["sudoku"], result["runs"]["ar_rl"]["tasks"]["sudoku"]
    rows.append([AR_LABEL, _acc(a), "1.00", "–", "", "", "", _acc(b), "1.00", "–"])
    m = result["models"]
    return markdown_table(["rule", f"`{m['start']}`", "TPF", "edits fixed / broke", f"`{m['rl_elbo']}` (control)", "TPF",
                           "edits fixed / broke", f"`{m['rl']}` (AR row: `{m['ar_rl']}`)", "TPF", "edits fixed / broke"],
                          rows)


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


def markdown_seeds(result: dict, model: str = "rl") -> str:
    """A recipe with three seeds: seed 0 is the committed model (its rows from `runs[model]`, its
    reward from its training record); model "rl" reads `seeds`, "rl_elbo" `seeds_elbo`."""
    zero = {"reward_tenths": reward_tenths(rl_record(result, model)["history"]),
            "runs": [r for r in result["runs"][model] if r["label"] in SEED_LABELS]}
    rows = []
    for seed, s in {"0": zero, **result.get(SEED_KEYS[model], {})}.items():
        by = {r["label"]: r["tasks"]["sudoku"] for r in s["runs"]}
        rows.append([seed, " → ".join(f"{v:.3f}" for v in s["reward_tenths"])]
                    + [f"{_acc(by[label])} at {by[label]['tpf']:.2f}" for label in SEED_LABELS] + [_edits(by["S mode"])])
    return markdown_table(["seed", "reward (first → last tenth)", *SEED_LABELS, "S-mode edits fixed / broke"], rows)


def _ratio(s: dict) -> str:
    e = s.get("edits", {"fixed": 0, "broke": 0})
    return f"{e['fixed']} fixed / {e['broke']} broken ({e['fixed'] / max(1, e['broke']):.1f} per broken)"


def what_moved(result: dict) -> str:
    """The paragraph on what the RL model's recipe changed and what it did not, every figure from
    rl.json (and the seeds' rewards from the training records)."""
    rl = {r["label"]: r["tasks"]["sudoku"] for r in result["runs"]["rl"]}
    start = {r["label"]: r["tasks"]["sudoku"] for r in result["runs"]["start"]}
    s, s0 = rl["S mode"], start["S mode"]
    overlap = "overlap" if s["ci95"][0] <= s0["ci95"][1] and s0["ci95"][0] <= s["ci95"][1] else "do not overlap"
    moves = sorted(((round(100 * (v["accuracy"] - start[k]["accuracy"]), 1), k) for k, v in rl.items() if k != "S mode"))
    t9, q = (start["threshold 0.9"], rl["threshold 0.9"]), (start["Q mode"], rl["Q mode"])
    rise = reward_rise(seed_tenths(result))
    seeds = ", ".join(f"{r:+.3f}" for r in rise["rises"])
    verdict = ("rose by more than the seeds' spread" if rise["mean_rise"] > rise["spread"] else
               "rose by less than the seeds' spread: within what another seed gives" if rise["mean_rise"] > 0 else
               "did not rise")
    return f"""What `{result['models']['rl']}` learned. S mode went from {100 * s0['accuracy']:.1f}% at TPF {s0['tpf']:.2f} to
{100 * s['accuracy']:.1f}% at TPF {s['tpf']:.2f} (the two 95% intervals {overlap}), its edits from {_ratio(s0)}
to {_ratio(s)}. The rules it must not spoil: threshold 0.9 {100 * t9[0]['accuracy']:.1f}% → {100 * t9[1]['accuracy']:.1f}%
(TPF {t9[0]['tpf']:.2f} → {t9[1]['tpf']:.2f}), Q mode {100 * q[0]['accuracy']:.1f}% → {100 * q[1]['accuracy']:.1f}%;
across all {len(moves)} other rules the changes run from {moves[0][0]:+.1f} points ({moves[0][1]}) to
{moves[-1][0]:+.1f} ({moves[-1][1]}). The mean rollout reward (last tenth of steps minus first) per seed:
{seeds}; their mean {rise['mean_rise']:+.3f} against a spread of {rise['spread']:.3f} between the seeds' last
tenths: the reward {verdict}.
"""


def control_moved(result: dict) -> str:
    """The control recipe (`tiny-sudoku-rl-elbo`, the ELBO): what it did, every figure from rl.json."""
    rl = {r["label"]: r["tasks"]["sudoku"] for r in result["runs"]["rl_elbo"]}
    start = {r["label"]: r["tasks"]["sudoku"] for r in result["runs"]["start"]}
    s, s0 = rl["S mode"], start["S mode"]
    ar0, ar1 = (result["runs"][k]["tasks"]["sudoku"]["accuracy"] for k in ("ar_start", "ar_rl"))
    reward = reward_tenths(rl_record(result, "rl_elbo")["history"])
    t9 = (start["threshold 0.9"], rl["threshold 0.9"])
    lc = (start["low-confidence"]["accuracy"], rl["low-confidence"]["accuracy"])
    sooner = t9[1]["tpf"] > t9[0]["tpf"] and t9[1]["accuracy"] < t9[0]["accuracy"]
    bar = (" (its proposals cleared the bar sooner and were wrong more often: the model grew\noverconfident)"
           if sooner else "")
    overlap = "overlap" if s["ci95"][0] <= s0["ci95"][1] and s0["ci95"][0] <= s["ci95"][1] else "do not overlap"
    rose = "rose" if reward[1] > reward[0] + 0.01 else "did not rise"
    learned = ": the policy did not learn the reward." if reward[1] <= reward[0] + 0.01 else "."
    return f"""What the control recipe did (`{result['models']['rl_elbo']}`, the ELBO of the sampled answer). S mode
went from {100 * s0['accuracy']:.1f}% at TPF {s0['tpf']:.2f} to {100 * s['accuracy']:.1f}% at TPF {s['tpf']:.2f} (the two
95% intervals {overlap}), its edits from {_ratio(s0)} to {_ratio(s)}. The mean rollout
reward of its run {rose} ({reward[0]:.3f} over its first tenth of steps, {reward[1]:.3f} over its last){learned}
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
    """Each recipe's seeds' table with its lead-in (empty for a recipe without seeds)."""
    out = ""
    for model, what in (("rl", "The RL model's recipe"), ("rl_elbo", "The control recipe")):
        if result.get(SEED_KEYS[model]):
            out += f"""
{what} with {1 + len(result[SEED_KEYS[model]])} seeds (seed 0 is `{result['models'][model]}`; every held-out puzzle, the
rules RL is judged by):

{markdown_seeds(result, model)}
"""
    return out


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
    cal, m = result["calibration"], result["models"]
    a, b = cal["tiny-sudoku"], cal[m["rl_elbo"]]
    c = cal.get(m["rl"])
    return (f"Why the confident rules fell under the control recipe: confidence against accuracy on the held-out "
            f"puzzles, every still-masked cell's top prediction at every pass of a one-per-step decoding "
            f"({a['points']:,} predictions per model; `labkit.eval.calibration`). Each cell: the bin's accuracy (its "
            f"share of the predictions). After the ELBO run, {100 * b['confident_share']:.0f}% of the predictions sit at "
            f"≥ 0.9 (before: {100 * a['confident_share']:.0f}%) and {100 * b['confident_wrong']:.1f}% of those are wrong "
            f"(before: {100 * a['confident_wrong']:.2f}%): a threshold of 0.9 commits what it used to hold."
            + (f" The ECE, an average gap over all bins, fell ({a['ece']:.3f} → {b['ece']:.3f}): it hides the top bin a "
               f"threshold reads." if b["ece"] < a["ece"] else "")
            + (decisions_calibration(result) if c else "")
            + f"\n\n{markdown_calibration(result)}\n")


def decisions_calibration(result: dict) -> str:
    """The RL model's calibration against the start's: the top bin the 0.9 threshold reads, and the
    middle bins (0.5–0.9) where its rollouts' S and Q modes decided (thresholds 0.5 and 0.7)."""
    cal, m = result["calibration"], result["models"]
    a, c = cal["tiny-sudoku"], cal[m["rl"]]
    by_a, by_c = ({b["lo"]: b for b in x["bins"]} for x in (a, c))
    mid = [lo for lo in (0.5, 0.6, 0.7, 0.8) if lo in by_a and lo in by_c]
    moves = ", ".join(f"{lo:.1f}–{lo + 0.1:.1f} {100 * (by_c[lo]['accuracy'] - by_a[lo]['accuracy']):+.1f}" for lo in mid)
    rows = {k: {r["label"]: r["tasks"]["sudoku"]["accuracy"] for r in result["runs"][k]} for k in ("start", "rl")}
    drop = ", ".join(f"{t} {100 * (rows['rl'][t] - rows['start'][t]):+.1f}" for t in ("threshold 0.9", "threshold 0.7",
                                                                                     "threshold 0.5") if t in rows["rl"])
    s_at, q_at = DraftEdit.speed().threshold, DraftEdit.quality().threshold
    return (f" `{m['rl']}`, its decisions learned under a KL to the start: {100 * c['confident_share']:.0f}% of its "
            f"predictions at ≥ 0.9 with {100 * c['confident_wrong']:.2f}% of those wrong (`tiny-sudoku`: "
            f"{100 * a['confident_share']:.0f}%, {100 * a['confident_wrong']:.2f}%). Its "
            f"middle bins, where its rollouts decided (S mode commits at {s_at}, Q mode at {q_at}), moved in accuracy by "
            f"{moves} points; the threshold rules that read them moved with them ({drop} points).")


def cosine_paragraph(result: dict) -> str:
    g = result["gradient_cosine"]
    return (f"Do the likelihood surrogates point where the rule's own decoding does? On one batch of S-mode rollouts "
            f"({g['signal_rows']} of {g['rollouts']} with signal), each Monte-Carlo surrogate's start gradient against "
            f"the trajectory surrogate's exact one (each rollout's passes replayed from its trace, log p of each token "
            f"where the rule committed or edited it):\n\n{markdown_cosine(result)}\n")


def models_section(result: dict) -> str:
    """The whole section, markers included."""
    c = next(iter(result["curves"].values()))["config"]
    rc, m = rl_record(result)["config"], result["models"]
    missed = [k.replace("_", " ") for k, v in result["targets"].items() if not v["met"]]
    n_eval = c["eval_items"]
    noise = (result["gradient_noise"] or [{"reference_draws": 0, "single_draws": 0}])[0]
    return f"""{SECTION_START}
## Rewards: reinforcement learning with exact rewards on the Sudoku pair

`labkit.training.rl` is GRPO as the diffusion-LM papers adapt it: per step, training-split puzzles
(`labkit.training.rewards.training_question`, never a held-out grid) decoded several times each by
the rule being trained, the exact reward of each answer (the share of blanks right + 1 if solved),
advantages within each puzzle's group, and a clipped ratio over inner updates with an exact KL to
the starting model. What the ratio is taken on is the recipe's choice. `{m['rl']}` learns its
decisions: S mode (and, for half of each draw's puzzles, Q mode) with greedy tokens and each commit
and edit drawn as a Bernoulli decision around its threshold (p = sigmoid((confidence − threshold) /
{rc['decision_temperature']})), the exact log-probabilities of those decisions replayed from the trace (the
"decisions" surrogate: no Monte Carlo), {rc['questions']} hard puzzles ({rc['clues'][0]}–{rc['clues'][1]} clues) × {rc['group']}
rollouts a step with dynamic sampling, clip {rc['clip']} / {rc['clip_high']}, advantages centred, lr {rc['lr']:g}, KL
{rc['kl']} to the start, {rc['steps']} steps: the recipe the search above found. `{m['rl_elbo']}`, the control, is the
first recipe: S mode sampled at a temperature, ESPO's sequence-level ELBO of each answer as the
surrogate (the alternatives: diffu-GRPO's one-pass estimate, LLaDA2.1's block-level ELBO (EBPO);
for the AR twin, its exact log p). Recipes: `labkit.training.rl.RL_RECIPES`
(`labkit train-rl --recipe NAME`); measured with `labkit bench rl --out benchmarks/results`
(→ `benchmarks/results/rl.json`).

Every rule on all 600 held-out puzzles before (`tiny-sudoku`'s rows of tasks.json) and after each
recipe (95% Wilson intervals; hard = 10–12 clues; edits: cells made right / made wrong):

{markdown_rules(result)}

{what_moved(result)}
{control_moved(result)}
{seeds_paragraph(result)}{keywords_paragraph(result)}
The control recipe's surrogates side by side at the same compute (only the surrogate changed; greedy
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
