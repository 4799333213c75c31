"""docs/models.md's section on the RL recipe search and the learned unmasking policy, every figure
read from benchmarks/results/rl_sweep.json (`labkit bench rl-sweep`) and learned_policy.json
(`labkit bench learned-policy`); tests/test_rl_search_results.py reads it back."""
from __future__ import annotations

from labkit.bench.rl import RL_MODEL
from labkit.bench.rl_sweep import SWEEP, config
from labkit.training.rl_config import RL_RECIPES

from .markdown import markdown_table
from .rl import SECTION_START as BEFORE  # the section goes just before the RL one
from .targets import reward_rise

SECTION_START, SECTION_END = "<!-- rl search section: python -m benchmarks.docgen -->", "<!-- end of rl search section -->"
WATCHED = ("S mode", "threshold 0.9", "Q mode", "low-confidence")


def _eval(e: dict, label: str) -> str:
    v = e.get(label)
    return f"{100 * v['accuracy']:.1f}% at {v['tpf']:.2f}" if v else "–"


def markdown_sweep(sweep: dict) -> str:
    rows = []
    for r in sweep["runs"]:
        first, last = r["evals"][0], r["evals"][-1]
        rows.append([f"`{r['name']}`", r["tries"], str(r["steps"]),
                     f"{r['reward_tenths'][0]:.3f} → {r['reward_tenths'][1]:.3f}",
                     f"{r['clip_fraction']:.4f}", f"{r['approx_kl']:.5f}", str(last["step"])]
                    + [f"{_eval(first, k)} → {_eval(last, k)}" for k in WATCHED])
    return markdown_table(["run", "what it tries", "steps", "mean rollout reward, first → last tenth", "clip fraction",
                           "approx. KL per step", "last evaluation (step)"] + list(WATCHED), rows)


def rose(r: dict) -> bool:
    """The run's reward rose: its last 10-step mean above its first by more than twice the standard
    deviation of its 10-step means."""
    m = r["reward_by_ten_steps"]
    if len(m) < 3:
        return False
    mean = sum(m) / len(m)
    sd = (sum((v - mean) ** 2 for v in m) / (len(m) - 1)) ** 0.5
    return m[-1] - m[0] > 2 * sd


def reading(sweep: dict) -> str:
    up = [f"`{r['name']}`" for r in sweep["runs"] if rose(r)]
    fell = [f"`{r['name']}` ({_eval(r['evals'][0], 'threshold 0.9')} → {_eval(r['evals'][-1], 'threshold 0.9')})"
            for r in sweep["runs"] if r["evals"][-1].get("threshold 0.9", {}).get("accuracy", 1)
            < r["evals"][0]["threshold 0.9"]["accuracy"] - 0.01]
    text = (f"Runs whose reward rose (last 10-step mean above the first by more than twice the spread of the "
            f"10-step means): {', '.join(up) or 'none'}. Runs whose threshold 0.9 lost more than a point on "
            f"the {sweep['base']['eval_items']} puzzles by their last evaluation: {', '.join(fell) or 'none'}.")
    controls = [r for r in sweep["runs"] if r["settings"].get("control")]
    for c in controls:
        accs = [e["threshold 0.9"]["accuracy"] for e in c["evals"]]
        text += (f" Without any reward signal, `{c['name']}` (the same updates on shuffled rewards) read threshold 0.9 between "
                 f"{100 * min(accs):.1f}% and {100 * max(accs):.1f}% over its {len(accs)} evaluations.")
    kept = [r["name"] for r in sweep["runs"] if r["name"] in SWEEP and config(r["name"]) == RL_RECIPES[RL_MODEL]]
    if kept:
        held = [r["name"] for r in sweep["runs"] if not r["settings"].get("control") and f"`{r['name']}` (" not in
                " ".join(fell)]
        why = (f" (the {'only ' if held == kept else ''}run that learned from the reward and kept threshold 0.9 within a point)"
               if kept[0] in held else "")
        text += (f" The recipe kept: `{kept[0]}`{why}, trained again with three seeds and evaluated on all 600 "
                 f"puzzles as `{RL_MODEL}` (below, \"Rewards\").")
    return text


def seed_rise(policy: dict) -> dict:
    """The reward's rise over the three seeds: each seed's last-tenth minus first-tenth mean, their
    mean, and the spread (greatest minus least) of the seeds' last-tenth means."""
    t = policy["tenths"]
    return reward_rise([t["run"][:2]] + [t[k][:2] for k in sorted(t) if k.startswith("seed")])   # [reward first, last]


def frontier(policy: dict, lo: str = "threshold 0.9", hi: str = "factor 1.0") -> str:
    """Where the learned rule sits against the straight line between two rules of the frontier."""
    a, b, x = policy["start"][lo], policy["start"][hi], policy["learned"]
    if not a["tpf"] <= x["tpf"] <= b["tpf"]:
        return ""
    line = a["accuracy"] + (b["accuracy"] - a["accuracy"]) * (x["tpf"] - a["tpf"]) / (b["tpf"] - a["tpf"])
    if x["ci95"][0] <= line <= x["ci95"][1]:
        where = "on that frontier, within its interval, not beyond it"
    else:
        where = f"{'above' if x['accuracy'] > line else 'below'} it, beyond its interval"
    return (f"The line from {lo} to {hi} passes through {100 * line:.1f}% at its TPF of {x['tpf']:.2f}: the learned "
            f"rule is {where}.")


def markdown_policy(policy: dict) -> str:
    rows = [["learned (greedy)", f"{100 * policy['learned']['accuracy']:.1f}% [{100 * policy['learned']['ci95'][0]:.1f}, "
             f"{100 * policy['learned']['ci95'][1]:.1f}]", f"{policy['learned']['tpf']:.2f}"]]
    rows += [[label, f"{100 * r['accuracy']:.1f}% [{100 * r['ci95'][0]:.1f}, {100 * r['ci95'][1]:.1f}]", f"{r['tpf']:.2f}"]
             for label, r in policy["start"].items()]
    return markdown_table(["rule on `tiny-sudoku`", "solved [95%]", "TPF"], rows)


def models_section(sweep: dict, policy: dict) -> str:
    base = sweep["base"]
    run = policy["run"]
    c = run["config"]
    ev0, ev1 = run["evals"][0], run["evals"][-1]
    weights = ", ".join(f"{f} {w:+.2f}" for f, w in zip(policy["features"], run["weights"]))
    dominated = ", ".join(policy["dominated_by"]) or "no rule"
    t = policy["tenths"]
    r = seed_rise(policy)
    rises = ", ".join(f"{x:+.3f}" for x in r["rises"])
    more = "more" if r["mean_rise"] > r["spread"] else "less"
    beat = sum(x > t["control"][1] - t["control"][0] for x in r["rises"])
    return f"""{SECTION_START}
## Reinforcement learning on the decoding: the recipe search, and a learned unmasking policy

After the ELBO run made every confident rule worse (below, "Rewards"), RL was tried again on what the
rule does. Every run starts from `tiny-sudoku` on hard training puzzles ({base['clues'][0]}–{base['clues'][1]}
clues), {base['questions']} questions × {base['group']} rollouts a step, lr {base['lr']:g}, clip {base['clip']} /
clip-higher {base['clip_high']}, dynamic sampling (only groups whose rewards differ, refilled up to
{base['max_draws']} draws), centred advantages, and evaluates greedily every {base['eval_every']} steps on
{base['eval_items']} held-out puzzles (a third of each level) under the rule it trains and the rules it must
not spoil (`labkit bench rl-sweep`; each evaluation is accuracy at TPF, about ±3 points at this size).
Runs that stopped before {base['steps']} steps are shown at the step they reached; `labkit bench
rl-sweep` resumes them.

{markdown_sweep(sweep)}

{reading(sweep)}

A learned unmasking policy leaves the model alone and learns the rule instead (after Jazbec et al.
and UPO): `labkit.samplers.LearnedCommit` turns each masked cell's confidence into a commit probability
σ(w · f) from four features, and `labkit.training.learned_policy` trains the four weights by policy
gradient on the rule's own drawn decisions ({c['steps']} steps of {c['questions']} hard training puzzles ×
{c['group']}, reward − {c['pass_penalty']:g} · passes per cell; `labkit bench learned-policy`). Its mean
rollout reward over the first and last tenth of the steps went {t['run'][0]:.3f} → {t['run'][1]:.3f} (solved
rollouts {100 * t['run'][2]:.1f}% → {100 * t['run'][3]:.1f}%); the control, the same run with each batch's
rewards shuffled, went {t['control'][0]:.3f} → {t['control'][1]:.3f} ({100 * t['control'][2]:.1f}% →
{100 * t['control'][3]:.1f}%). Over seeds 0, 1 and 2 the rise was {rises} (mean {r['mean_rise']:+.3f}) against a
spread of {r['spread']:.3f} between the seeds' last tenths: on the mean, the reward rose by {more} than the seeds'
spread; {beat} of the three seeds rose by more than the control's {t['control'][1] - t['control'][0]:+.3f}.
Part of a stochastic policy's rise is its own randomness shrinking (the weights grow), so the greedy rule on
held-out puzzles is what to read: started at a threshold of 0.9, on
{c['eval_items']} held-out puzzles it went from {100 * ev0['accuracy']:.1f}% at {ev0['tpf']:.2f} cells per pass
to {100 * ev1['accuracy']:.1f}% at {ev1['tpf']:.2f}; the weights it learned: {weights}. On all 600 held-out
puzzles, greedy, beside `tiny-sudoku`'s rules (tasks.json); {dominated} solves at least as many at a TPF at
least as high. {frontier(policy)}

{markdown_policy(policy)}
{SECTION_END}"""


__all__ = ["BEFORE", "SECTION_END", "SECTION_START", "WATCHED", "markdown_policy", "markdown_sweep", "models_section", "reading",
           "frontier", "rose", "seed_rise"]
