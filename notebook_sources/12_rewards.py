# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 12 · Rewards: teaching a diffusion LM when to keep and when to edit
#
# *About 35 minutes to read and run, exercises apart · needs: notebook 11 · Where diffusion wins · next: notebook 10 · Train from scratch.*
#
# **The question:** LLaDA2.1's article credits a reinforcement-learning stage for what its
# draft-and-edit decoding does well: "the point of RL is not only a higher score, but to teach the model
# when to hold its ground and when to correct itself". Notebook 11 showed where that matters: on Sudoku
# every edit can be checked, and a plain confidence threshold matches `tiny-sudoku`'s S mode at more
# cells per pass (this notebook's section 7 table). Here
# you write the pieces of RL for a masked diffusion LM by hand, check each against `labkit.training.rl`,
# run a few steps live, and read what RL did to two committed models: `tiny-sudoku-rl-elbo` (400 steps of
# the first recipe, the ELBO of each answer) and `tiny-sudoku-rl` (100 steps that learned S and Q mode's
# own commit and edit decisions, with a strong KL to the start).
#
# Words used below:
#
# - **rollout**: one answer decoded by a rule (here S mode, sampling at a temperature, so its drafts and
#   its edits are the model's *actions*); **reward**: an exact score of that answer (Sudoku: the share of
#   blanks right, + 1 if the grid is a valid solution that keeps the clues);
# - **group**: G rollouts of one question; **advantage**: a rollout's reward minus its group's mean,
#   divided by the group's standard deviation (GRPO); a group whose rollouts all scored the same
#   carries no signal;
# - **surrogate**: a diffusion LM's log p(answer) is intractable, so RL raises an estimate of it: d1's
#   **one pass** (answer all masked, log p of each token), ESPO's sequence **ELBO** (answer masked at a
#   random ratio t, Σ log p / t), LLaDA2.1's **block ELBO** (EBPO, per block), or the **exact** log p of
#   an AR twin;
# - **ratio** ρ = π_θ / π_old of the surrogate, **clipped** to [1 − ε, 1 + ε] (PPO), and a **KL** term
#   that keeps the policy near the model it started from;
# - **TPF**: answer cells written per forward pass; **fixed / broken**: cells an edit made right /
#   wrong.

# %%
# NBVAL_CHECK_OUTPUT
import copy
import json
import random
import tempfile
from dataclasses import replace
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F

import labkit as lk
from labkit.bench.rl import reward_tenths
from labkit.eval.exact import edit_outcomes
from labkit.models.load import model_folder
from labkit.tasks import heldout, sudoku
from labkit.training import rewards, rl
from labkit.training.losses import stratified_t

SEED = 0
RESULTS = Path("..") / "benchmarks" / "results"
R = json.loads((RESULTS / "rl.json").read_text())
sd = lk.load("tiny-sudoku")
sd_elbo = lk.load("tiny-sudoku-rl-elbo")     # after the first recipe: the ELBO of each answer (the control)
sd_rl = lk.load("tiny-sudoku-rl")            # after its S- and Q-mode decisions were learned, KL 0.2 to the start
print(", ".join(m.name for m in (sd, sd_elbo, sd_rl)), "loaded;",
      f"{sum(p.numel() for p in sd.net.parameters()):,} parameters each")

# %% [markdown]
# ## 1 · Rollouts and their exact rewards
#
# Training-split questions (their grids are never held-out ones), each decoded G = 8 times in S mode
# at temperature 0.7: the same model, different draws. Often all eight answers come out alike (the
# model is sure of most cells, and S mode commits only confident ones), so the cell below draws
# questions until one group differs. The reward is written here by hand from its definition, then
# compared with `labkit.training.rewards.reward`.

# %%
# NBVAL_CHECK_OUTPUT
G = 8
rng = random.Random(SEED)
rule = lk.samplers.registry.rule("speed", temperature=0.7)
for tried in range(1, 51):                       # the first question whose rollouts do not all score alike
    question = rewards.training_question("sudoku", rng, clues=(10, 13))
    rolls = rl.rollout(sd, [question], rule, group=G, seed=SEED)
    if rolls.reward.unique().numel() > 1:
        break
print(f"questions drawn: {tried} ({tried - 1} whose {G} rollouts all earned the same reward)")


def valid_grid(cells: str) -> bool:
    '''Every row, column and 2x3 box of a 6x6 grid holds 1..6 once.'''
    if len(cells) != 36 or not all(c in "123456" for c in cells):
        return False
    g = [cells[r * 6:r * 6 + 6] for r in range(6)]
    units = g + ["".join(g[r][c] for r in range(6)) for c in range(6)]
    units += ["".join(g[r][c] for r in range(br, br + 2) for c in range(bc, bc + 3))
              for br in range(0, 6, 2) for bc in range(0, 6, 3)]
    return all(sorted(u) == list("123456") for u in units)


def reward_by_hand(pred: str, item) -> float:
    puzzle = item.prompt.strip().removeprefix("S").removesuffix("=")
    pred = pred.strip()
    blanks = [i for i, c in enumerate(puzzle) if c == "."]
    right = sum(i < len(pred) and pred[i] == item.answer[i] for i in blanks) / len(blanks)
    keeps = len(pred) == 36 and all(c == "." or pred[i] == c for i, c in enumerate(puzzle))
    return right + (1.0 if keeps and valid_grid(pred) else 0.0)


mine = torch.tensor([reward_by_hand(t, question) for t in rolls.texts])
clues = sum(c != "." for c in question.prompt.strip().removeprefix("S").removesuffix("="))
print("puzzle:", question.prompt, f"({clues} clues)")
for t, r in zip(rolls.texts, mine):
    print(f"  {t}  reward {r:.3f}")
print("by hand == labkit:", torch.allclose(mine, rolls.reward))

# %% [markdown]
# ## 2 · Group-relative advantages
#
# Each reward minus its group's mean, over the group's standard deviation (plus a small ε so a group of
# equal rewards gives 0, not a division by zero).

# %%
# NBVAL_CHECK_OUTPUT
r = rolls.reward.view(-1, G)
adv_mine = ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + rl.ADV_EPS)).reshape(-1)
adv = rl.group_advantages(rolls.reward, G)
print("advantages:", [f"{a:+.2f}" for a in adv_mine.tolist()])
print("by hand == labkit:", torch.allclose(adv_mine, adv))
print("rollouts that carry signal:", int((adv.abs() > 0).sum()), "of", G)

# %% [markdown]
# ## 3 · The ELBO surrogate, by hand
#
# A masked model has no exact log p(answer). ESPO raises its evidence lower bound instead: mask each
# cell the rule wrote with probability t (t drawn once per rollout, low-discrepancy over the batch), and
# sum log p of the true cell over the masked ones, each weighted 1/t; divide by the number of written
# cells. Below, the masks are drawn by hand with the same generator calls as `surrogates.draw`, and the
# estimate is computed by hand from the network's logits.

# %%
# NBVAL_CHECK_OUTPUT
x, written = rolls.x, rolls.written                                   # (G, L) final rows, (G, L) written cells
g_hand, g_lib = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
t = stratified_t(G, 0.1, g_hand)                                      # (G,) masking ratios in [0.1, 1)
u = torch.rand(x.shape, generator=g_hand)                             # (G, L)
masked = written & (u < t[:, None])
canvas = torch.where(masked, torch.full_like(x, sd.mask_id), x)
with torch.no_grad():
    logp = F.log_softmax(sd.net(input_ids=canvas).logits.float(), -1)  # (G, L, V)
tok = logp.gather(-1, x[..., None]).squeeze(-1)                       # log p of each true token
elbo_mine = (torch.where(masked, tok / t[:, None], 0.0)).sum(-1) / written.sum(-1)

d = rl.draw("elbo", x, written, sd.mask_id, g_lib, t_min=0.1)
with torch.no_grad():
    est = rl.estimate(lambda c: rl.policy_logits(sd, sd.net, c), d, x)
print("same canvases:", torch.equal(canvas, d.canvas))
print("ELBO per answer cell:", [f"{v:.3f}" for v in elbo_mine.tolist()])
print("by hand == labkit:", torch.allclose(elbo_mine, est.sequence, atol=1e-5))

# %% [markdown]
# ## 4 · The clipped objective and the KL, by hand
#
# One update changes the policy; the ratio ρ = exp(ℓ_new − ℓ_old) of each rollout's surrogate then
# moves away from 1. PPO's pessimistic objective takes min(ρ·A, clip(ρ, 1 − ε, 1 + ε)·A): once a
# rollout's ratio has left [1 − ε, 1 + ε] in the direction its advantage pushes, its term stops
# giving a gradient. That bounds what the *next* updates of the batch add, not how far one step goes:
# the single large step below sends most ratios well past ε. The KL to the starting model is exact
# over the vocabulary at the positions the surrogate read.

# %%
# NBVAL_CHECK_OUTPUT
policy = copy.deepcopy(sd.net)
opt = torch.optim.SGD(policy.parameters(), lr=0.5)
policy_lm = replace(sd, net=policy)
new = rl.estimate(lambda c: rl.policy_logits(policy_lm, policy, c), d, x)
(-(adv * new.sequence).mean()).backward()                             # a (large) policy-gradient step
opt.step()

new = rl.estimate(lambda c: rl.policy_logits(policy_lm, policy, c), d, x)
rho = torch.exp(new.sequence - est.sequence)                          # (G,)
eps, beta = 0.2, 0.1
obj = torch.minimum(rho * adv, rho.clamp(1 - eps, 1 + eps) * adv)
kl_pos = (new.logp.exp() * (new.logp - est.logp)).sum(-1)             # (G, L) KL at each position
kl_mine = torch.where(d.scored, kl_pos, 0.0).sum(-1) / d.scored.sum(-1).clamp_min(1)   # a row with no masked cell: 0
loss_mine = -obj.mean() + beta * kl_mine.mean()

kl = rl.kl_to_ref(new.logp, est.logp, d)
loss, parts = rl.grpo_loss(new, est, adv, d, eps, kl, beta)
print("ratios:", [f"{v:.3f}" for v in rho.tolist()])
print(f"clipped: {int(((rho - 1).abs() > eps).sum())} of {G}")
print("KL by hand == labkit:", torch.allclose(kl_mine, kl, atol=1e-6))
print("loss by hand == labkit:", torch.allclose(loss_mine.detach(), loss.detach(), atol=1e-6))

# %% [markdown]
# ## 5 · A few steps, live
#
# `rl.setup_rl` and `rl.rl_step` are what `labkit train-rl` runs. A step's mean reward is over *that
# step's* questions, so rewards of different steps answer different questions and their rise or fall
# says little. The cell below therefore also decodes the same eight held-out hard puzzles greedily in
# S mode before the first step and after each one: those numbers are comparable. The run here is the
# recipe `labkit.bench.rl_sweep` starts from (the trajectory surrogate: each rollout's passes
# replayed, section 10) at four questions × four rollouts a step, and three steps are far too few to
# move greedy decoding: the point is the mechanics, and what a fair comparison looks like.

# %%
# NBVAL_CHECK_OUTPUT
fixed = [it for it in heldout("sudoku") if it.group == "hard"][20:28]        # the same eight, every time


def greedy_on_fixed(lm) -> str:
    r = rl.rollout(lm, fixed, lk.samplers.registry.rule("speed"), group=1, seed=SEED)
    return f"solved {int((r.reward >= 1).sum())}/8, mean reward {r.reward.mean():.3f}"


cfg = rl.RLConfig(init_from="tiny-sudoku", rule="speed", temperature=1.0, surrogate="trajectory", questions=4,
                  group=4, inner_steps=2, kl=0.01, lr=1e-4, steps=3, clues=(10, 12), clip_high=0.28,
                  scale_rewards=False, seed=SEED)
run = rl.setup_rl(cfg, tempfile.mkdtemp(), log=lambda m: None)
print(f"before:  fixed puzzles {greedy_on_fixed(run.lm)}")
for _ in range(cfg.steps):
    rec = rl.rl_step(run)
    run.lm.net.eval()
    print(f"step {rec['step']}: its own questions: mean reward {rec['reward']:.3f}, rollouts with signal "
          f"{rec['signal_rows']} of {cfg.questions * cfg.group}, clip fraction {rec.get('clip_fraction', 0.0):.3f} | "
          f"fixed puzzles {greedy_on_fixed(run.lm)}")

# %% [markdown]
# ## 6 · What 400 steps of the ELBO did: the stored runs
#
# The first recipe (`labkit train-rl --recipe tiny-sudoku-rl-elbo`, kept as the control): 16 training
# puzzles × 8 S-mode rollouts a step at temperature 0.7, the ELBO surrogate, four clipped updates, KL
# 0.2, lr 1e-5, 400 steps on one CPU thread; beside it the same budget with the one-pass surrogate.
# Rewards of each step, averaged over 20 steps:

# %%
# NBVAL_CHECK_OUTPUT
fig, axes = plt.subplots(1, 2, figsize=(10, 3.2))
for label, c in R["curves"].items():
    rew = np.array(c["reward"])
    smooth = np.convolve(rew, np.ones(20) / 20, mode="valid")
    axes[0].plot(np.arange(len(smooth)) + 20, smooth, label=label)
    ev = c["evals"]
    axes[1].plot([e["step"] for e in ev], [e["speed"]["accuracy"] for e in ev], marker="o", label=f"{label}: S mode")
    axes[1].plot([e["step"] for e in ev], [e["low_confidence"]["accuracy"] for e in ev], ls="--",
                 label=f"{label}: low-confidence")
axes[0].set(xlabel="step", ylabel="mean rollout reward (20-step mean)", title="reward per step")
axes[1].set(xlabel="step", ylabel="solved (150 held-out puzzles)", title="in-training evaluation")
for a in axes:
    a.legend(fontsize=7)
plt.tight_layout()
plt.show()
hist = json.loads((model_folder("tiny-sudoku-rl-elbo") / "training.json").read_text())["rl"]["history"]
rows = R["curves"]["elbo"]["config"]["questions"] * R["curves"]["elbo"]["config"]["group"]
signal = sum(h["signal_rows"] for h in hist) / len(hist)
print(f"tiny-sudoku-rl-elbo: rollouts with signal, mean over {len(hist)} steps: {signal:.1f} of {rows} ({signal / rows:.0%}); "
      f"share of ratios clipped: {sum(h['clip_fraction'] for h in hist) / len(hist):.2%}")
for label, c in R["curves"].items():
    rew = c["reward"]
    k = len(rew) // 10
    first, last = sum(rew[:k]) / k, sum(rew[-k:]) / k
    print(f"{label:>9}: mean reward, first tenth of steps {first:.3f}, last tenth {last:.3f} "
          f"({'rose' if last > first + 0.01 else 'fell' if last < first - 0.01 else 'flat'})")


# %% [markdown]
# ## 7 · Before and after, on all 600 held-out puzzles
#
# `labkit bench rl` decodes every held-out puzzle with every rule, greedily, before (`tiny-sudoku`)
# and after each recipe: the ELBO (`tiny-sudoku-rl-elbo`) and the decisions learned
# (`tiny-sudoku-rl`: S and Q mode with each commit and edit a Bernoulli draw around its threshold, the
# exact log-probability of every decision replayed, KL 0.2 to the start, lr 1e-4, 100 steps on hard
# puzzles; the run the recipe search in docs/models.md kept). Each accuracy has its 95% interval
# (Wilson); TPF is cells per forward pass.

# %%
# NBVAL_CHECK_OUTPUT
def by_label(runs):
    return {r["label"]: r["tasks"]["sudoku"] for r in runs}


def fmt(s):
    return f"{s['accuracy']:6.1%} [{s['ci95'][0]:.1%}, {s['ci95'][1]:.1%}] {s['tpf']:5.2f}"


before, elbo, after = (by_label(R["runs"][k]) for k in ("start", "rl_elbo", "rl"))
print(f"{'rule':<22}{'tiny-sudoku':>28}{'tiny-sudoku-rl-elbo':>28}{'tiny-sudoku-rl':>28}")
for label in before:
    print(f"{label:<22}" + "".join(f"{fmt(runs[label]):>28}" for runs in (before, elbo, after)))
for name, runs in (("tiny-sudoku", before), ("tiny-sudoku-rl-elbo", elbo), ("tiny-sudoku-rl", after)):
    e = runs["S mode"]["edits"]
    print(f"{name}: S mode's edits fixed {e['fixed']} cells and broke {e['broke']} "
          f"({e['fixed'] / e['broke']:.2f} fixed per broken)")

# %% [markdown]
# Each recipe trained with two more seeds (`labkit bench rl` trains them; seed 0 is the committed
# model): is the change from `tiny-sudoku` larger than the spread between seeds? Each line starts with
# the run's mean rollout reward over its first and its last tenth of steps.

# %%
# NBVAL_CHECK_OUTPUT
SHOWN = ("S mode", "threshold 0.9", "Q mode", "low-confidence")
print("tiny-sudoku:          " + " | ".join(f"{label} {before[label]['accuracy']:.1%} at {before[label]['tpf']:.2f}"
                                            for label in SHOWN))
for model, key, seeds_key in (("tiny-sudoku-rl-elbo", "rl_elbo", "seeds_elbo"), ("tiny-sudoku-rl", "rl", "seeds")):
    history = json.loads((model_folder(model) / "training.json").read_text())["rl"]["history"]
    seeds = {"0": {"runs": R["runs"][key], "reward_tenths": reward_tenths(history)}} | R[seeds_key]
    for seed, s in seeds.items():
        by = by_label(s["runs"])
        first, last = s["reward_tenths"]
        print(f"{model} seed {seed}: reward {first:.3f} -> {last:.3f} ({last - first:+.3f}) | "
              + " | ".join(f"{label} {by[label]['accuracy']:.1%} at {by[label]['tpf']:.2f}" for label in SHOWN))

# %% [markdown]
# The answer differs by recipe. After the ELBO, every seed lost between 37 and 43 points of threshold
# 0.9 at a higher TPF: far more than the seeds differ from one another, so the change is the recipe's.
# After the decisions recipe, S mode moved by 0.0 to 1.3 points across the seeds, inside each one's
# interval (about ±2.5 points), and no seed's mean rollout reward rose by more than the seeds' spread.

# %% [markdown]
# The frontier: each rule's accuracy against its TPF, before (hollow), after the ELBO (x) and after the
# decisions recipe (filled). RL is worth its cost to S mode if S mode moves up and to the right of the
# threshold and factor rules.

# %%
# NBVAL_CHECK_OUTPUT
fig, ax = plt.subplots(figsize=(6.5, 4))
for runs, style in ((before, "hollow"), (elbo, "x"), (after, "filled")):
    for label, s in runs.items():
        colour = "C3" if label.startswith(("S mode", "Q mode")) else "C0"
        if style == "x":
            ax.scatter(s["tpf"], s["accuracy"], s=22, color=colour, marker="x", alpha=0.6)
        else:
            ax.scatter(s["tpf"], s["accuracy"], s=30, color=colour, facecolors=colour if style == "filled" else "none")
        if style == "filled":
            ax.annotate(label, (s["tpf"], s["accuracy"]), fontsize=6, xytext=(3, 2), textcoords="offset points")
ax.set(xlabel="TPF (cells per forward pass)", ylabel="solved",
       title="hollow: tiny-sudoku, x: tiny-sudoku-rl-elbo, filled: tiny-sudoku-rl")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## 8 · The edits, on the grid
#
# S mode on the same ten hard held-out puzzles with the three models: for one puzzle, which cell was
# written (light) and which was edited (dark) at each step; then what the edits did over the ten.

# %%
# NBVAL_CHECK_OUTPUT
hard = [it for it in heldout("sudoku") if it.group == "hard"][:10]
truth = torch.tensor([sd.encode(it.answer) for it in hard])
fig, axes = plt.subplots(1, 3, figsize=(13, 2.6))
for ax, lm in zip(axes, (sd, sd_elbo, sd_rl)):
    out = lk.generate(lm, [it.prompt for it in hard], "speed", seed=SEED)
    P = out.trace.prompt_len
    view = (out.trace.committed()[:, 0, P:P + 36].float() + 2 * out.trace.edited()[:, 0, P:P + 36].float())
    ax.imshow(view.T.numpy(), aspect="auto", cmap="Greys", vmin=0, vmax=2)
    ax.set(xlabel="step", ylabel="cell", title=f"{lm.name}: {len(out.trace)} steps")
    o = edit_outcomes(out.trace, truth)
    solved = sum(t.strip() == it.answer for t, it in zip(out.texts, hard))
    print(f"{lm.name:<15} solved {solved}/10 in {out.stats['nfe']} batched forward passes; edits fixed "
          f"{sum(e['fixed'] for e in o)}, broke {sum(e['broke'] for e in o)}")
plt.tight_layout()
plt.show()

# %% [markdown]
# Why 17 passes against 4? Each pass of the batch, counted over the ten puzzles: the cells written
# (masks committed) and the cells edited (written tokens rewritten).

# %%
# NBVAL_CHECK_OUTPUT
for lm in (sd, sd_elbo, sd_rl):
    tr = lk.generate(lm, [it.prompt for it in hard], "speed", seed=SEED).trace
    P = tr.prompt_len
    commits = tr.committed()[:, :, P:P + 36].sum(dim=(1, 2)).tolist()       # cells written at each pass, ten puzzles
    edits = tr.edited()[:, :, P:P + 36].sum(dim=(1, 2)).tolist()
    print(f"{lm.name:<20} passes {len(tr)}: cells written per pass {commits}")
    print(f"{'':<20} cells edited per pass {edits}")

# %% [markdown]
# The ELBO model's canvases are full after its second pass, and then its edits never settle: some
# cell changes at every pass until S mode's limit on the passes a full block may keep editing
# (`max_post_steps` = 16) ends the decoding. `tiny-sudoku` and `tiny-sudoku-rl` stop after four passes,
# when a pass changes nothing.

# %% [markdown]
# ## 9 · How noisy is each surrogate?
#
# The same batch of S-mode rollouts; the cosine between one draw's policy gradient and the mean of 32
# other draws of the same surrogate (1 would be noiseless). The one-pass estimate is the steadiest and
# biased: its mean gradient points elsewhere than the ELBO's.

# %%
# NBVAL_CHECK_OUTPUT
for row in R["gradient_noise"]:
    extra = f", mean vs the ELBO's mean {row['cosine_to_elbo_reference']:.2f}" if "cosine_to_elbo_reference" in row else ""
    print(f"{row['label']:>22}: cosine {row['cosine_mean']:.2f} ± {row['cosine_sd']:.2f}{extra}")

# %% [markdown]
# ## 10 · Do the surrogates score what the rule did?
#
# Every surrogate above scores the *final answer* under the model. What earned the reward was a
# decoding: S mode's commits and edits, pass by pass. TraceRL's **trajectory** surrogate replays each
# rollout from its trace and scores each token at the state where the rule wrote it; there is nothing
# to draw, so its gradient is exact. How well does each Monte-Carlo surrogate's start gradient (the
# mean of 16 draws) point along it, on one batch of S-mode rollouts (`labkit bench rl`)?

# %%
# NBVAL_CHECK_OUTPUT
g = R["gradient_cosine"]
print(f"{g['signal_rows']} of {g['rollouts']} rollouts with signal")
for row in g["rows"]:
    print(f"{row['label']:>22}: cosine of the mean to the trajectory's gradient {row['cosine_of_mean']:+.3f}; "
          f"one draw {row['single_mean']:+.3f} [{row['single_min']:+.3f}, {row['single_max']:+.3f}]")

# %% [markdown]
# Cosines near 0: in a space of 808,960 parameters, the likelihood surrogates' gradients are
# nearly orthogonal to the gradient of what the rule did. A rule's decisions can themselves be
# the actions: `lk.DraftEdit(decision_temperature=κ)` commits a mask with probability
# σ((p − τ) / κ) and rewrites a differing token with probability σ((p − τ_edit) / κ), and the
# "decisions" surrogate replays the log-probability of every decision, holds included. By hand, on
# one rollout, against `labkit`:

# %%
# NBVAL_CHECK_OUTPUT
stoch = lk.samplers.DraftEdit.speed(decision_temperature=0.1)
one = rl.rollout(sd, fixed[:1], stoch, group=1, seed=SEED)
tr = one.trace
state, total, n_dec = tr.init.long(), 0.0, 0
for rec in tr.records:
    with torch.no_grad():
        p = F.softmax(sd.net(input_ids=state).logits.float(), -1)              # (1, L, V)
    cand = rec.candidates.long()
    pc = p.gather(-1, cand[..., None]).squeeze(-1)                            # p of each proposal
    scored = ~torch.isnan(rec.confidence.float())
    commit = scored & (state == sd.mask_id)                                     # masks: commit or hold
    edit = scored & (state != sd.mask_id) & (cand != state)                     # differing tokens: rewrite or keep
    acted = torch.where(rec.committed | rec.edited, 1.0, -1.0)
    tau = torch.where(commit, stoch.threshold, stoch.editing_threshold)
    total += float(torch.where(commit | edit, F.logsigmoid(acted * (pc - tau) / 0.1), 0.0).sum())
    n_dec += int((commit | edit).sum())
    state = rec.tokens.long()
d = rl.draw("decisions", one.x, one.written, sd.mask_id, None, trace=tr, rows=torch.arange(1), rule=stoch)
with torch.no_grad():
    est = rl.estimate(lambda c: rl.policy_logits(sd, sd.net, c), d, one.x)
print(f"{len(tr)} passes, {n_dec} decisions ({int(one.written.sum())} cells to write)")
print(f"log p of the decisions by hand {total:.3f}, labkit {float(est.sequence[0] * one.written.sum()):.3f}")

# %% [markdown]
# ## 11 · Why the confident rules fell: calibration
#
# Section 7's threshold rows fell after the ELBO recipe while their TPF rose. A threshold rule commits every mask
# whose top probability clears the bar, so it is only as good as that probability. `labkit bench rl`
# decodes the held-out puzzles one cell per pass and scores every still-masked cell's top prediction
# at every pass against the truth (`labkit.eval.calibration`). Below: each confidence bin's accuracy
# (left) and its share of the predictions (right), before and after each recipe.

# %%
# NBVAL_CHECK_OUTPUT
cal = R["calibration"]
fig, axes = plt.subplots(1, 2, figsize=(10, 3.2))
for name, c in cal.items():
    mids = [(b["lo"] + b["hi"]) / 2 for b in c["bins"]]
    axes[0].plot([b["confidence"] for b in c["bins"]], [b["accuracy"] for b in c["bins"]], marker="o", label=name)
    shift = 0.027 * (list(cal).index(name) - 1)                                # the models' bars side by side
    axes[1].bar([m + shift for m in mids], [b["n"] / c["points"] for b in c["bins"]], width=0.026, label=name)
axes[0].plot([0, 1], [0, 1], color="grey", lw=0.8, ls=":")
axes[0].set(xlabel="confidence (bin mean)", ylabel="accuracy", title="confidence against accuracy")
axes[1].set(xlabel="confidence bin", ylabel="share of predictions", title="where the predictions sit")
for a in axes:
    a.legend(fontsize=7)
plt.tight_layout()
plt.show()
for name, c in cal.items():
    print(f"{name:>19}: {c['confident_share']:.1%} of {c['points']:,} predictions at >= 0.9, {c['confident_wrong']:.2%} "
          f"of those wrong; ECE {c['ece']:.3f}")
for name, c in cal.items():                      # the middle bins: where S mode (0.5) and Q mode (0.7) decide
    by = {b["lo"]: b for b in c["bins"]}
    print(f"{name:>19}: accuracy in 0.5-0.6, 0.6-0.7, 0.7-0.8, 0.8-0.9: "
          + ", ".join(f"{by[lo]['accuracy']:.1%}" for lo in (0.5, 0.6, 0.7, 0.8)))

# %% [markdown]
# `tiny-sudoku` is under-confident (a 0.75 guess is right about 94% of the time), which is why a
# threshold of 0.9 was safe. After the ELBO updates, many more predictions sit at ≥ 0.9 and many more of
# those are wrong, so threshold 0.9 commits errors it used to hold. The ECE, an average gap over all
# bins, fell: it hides the one bin a threshold reads. Raising the likelihood of rewarded answers raises
# confidence everywhere; nothing in that objective says which confident cells were the wrong ones.
#
# `tiny-sudoku-rl`, whose decisions were learned, keeps the top bin where it was (about 60% of the
# predictions at ≥ 0.9, about 0.2% of those wrong, as before). Its middle bins, where its rollouts
# decided (S mode commits at 0.5, Q mode at 0.7), each lost one to two points of accuracy, and the
# threshold rules that read them lost with them (threshold 0.7 and 0.5 in section 7) while threshold
# 0.9 held. The decisions' gradients move the confidences the trained rules read, and those only.

# %% [markdown]
# ## 12 · RL on Shakespeare: three words as the reward, and the reward hacked
#
# The same GRPO on text: `tiny`, rewarded for writing three given words (whole words, any case, as
# notebook 06's keyword controls count them) in an answer sampled at temperature 1. The words are not
# in the prompt: the reward is the only teacher. `labkit bench rl` trains the run and samples the
# plain and the trained model once on each held-out prompt. Read the cell's last lines before the
# rates: the reward rose, and what rose with it was the share of answers that repeat a few words.

# %%
# NBVAL_CHECK_OUTPUT
k = R["keywords"]
c = k["config"]
print(f"reward: the share of {', '.join(c['keywords'])} present + 1 if all; {c['steps']} steps, "
      f"{c['questions']} prompts x {c['group']} rollouts, {c['gen_length']} tokens at temperature {c['temperature']}")
print(f"mean rollout reward, first tenth of steps {k['reward_tenths'][0]:.3f}, last tenth {k['reward_tenths'][1]:.3f}")
for name, e in (("tiny", k["before"]), ("after RL", k["after"])):
    lo, hi = e["all_words_ci95"]
    rates = ", ".join(f"{w} {v:.0%}" for w, v in e["word_rates"].items())
    glo, ghi = e["gen_ppl_ci95"]
    print(f"{name:>9}: all three {e['all_words']:.1%} [{lo:.1%}, {hi:.1%}] of {e['n']} | {rates} | "
          f"gen-PPL {e['gen_ppl']:.2f} [{glo:.2f}, {ghi:.2f}], distinct-2 {e['distinct_2']:.3f}")
r, lo, hi = k["gen_ppl_ratio"]
print(f"gen-PPL after / before on the same prompts: {r:.3f} [{lo:.3f}, {hi:.3f}] -> "
      + ("within noise" if lo <= 1 <= hi else "lower after RL" if hi < 1 else "higher after RL"))
print("after RL, a sample:", repr(k["after"]["examples"][0]))

# %% [markdown]
# This is **reward hacking**: the reward counts the words, so the policy learned to say "lord" and
# "king" in almost every answer, in stuttering, repeated phrases ("Ay,, my lord, I, my lord."), and
# almost never the third word. gen-PPL under `tiny-ar` did not catch it: it *fell*, because a text that
# repeats itself is easy to predict. What caught it is distinct-2, the share of distinct word pairs,
# which fell from 0.856 to 0.697 (and the samples). A reward that can be met by a shortcut will be.

# %% [markdown]
# ## 13 · RL on the rule itself: a learned unmasking policy
#
# Everything above changed the *model* and paid for it in confidence. Jazbec et al. and UPO change the
# *rule* instead: `lk.samplers.LearnedCommit` turns each masked cell's confidence into a commit
# probability σ(w · f) from four features (logit p, the share of the block still masked, the cell's
# rank among the masked, 1), and policy gradient trains the four weights on the rule's own drawn
# decisions (reward − passes per cell), the model frozen: no other rule can change. The control is
# the same run with each batch's rewards shuffled. Left: the run's reward against the control's;
# right: greedy decoding on held-out puzzles during both runs, and the learned rule on all 600 beside
# `tiny-sudoku`'s rules (`labkit bench learned-policy`).

# %%
# NBVAL_CHECK_OUTPUT
P = json.loads((RESULTS / "learned_policy.json").read_text())
fig, axes = plt.subplots(1, 2, figsize=(10, 3.2))
rew = [h["reward"] for h in P["run"]["history"]]
smooth = np.convolve(rew, np.ones(10) / 10, mode="valid")
axes[0].plot(np.arange(len(smooth)) + 10, smooth, label="learned policy (10-step mean)")
t = P["tenths"]
axes[0].axhline(t["control"][0], color="grey", ls=":", label="control, first tenth")
axes[0].axhline(t["control"][1], color="grey", ls="--", label="control, last tenth")
axes[0].set(xlabel="step", ylabel="mean rollout reward", title="reward per step")
for name, run in (("learned", P["run"]), ("control", P["control"])):
    ev = run["evals"]
    axes[1].plot([e["tpf"] for e in ev], [e["accuracy"] for e in ev], marker="o", label=f"{name}: greedy, every 25 steps")
for label, r in P["start"].items():
    axes[1].scatter(r["tpf"], r["accuracy"], s=18, color="C3")
    axes[1].annotate(label, (r["tpf"], r["accuracy"]), fontsize=6, xytext=(3, 2), textcoords="offset points")
axes[1].scatter(P["learned"]["tpf"], P["learned"]["accuracy"], s=60, marker="*", color="C2", label="learned, all 600")
axes[1].set(xlabel="TPF (cells per pass)", ylabel="solved", ylim=(0.85, 1.0), title="held-out puzzles")
for a in axes:
    a.legend(fontsize=6)
plt.tight_layout()
plt.show()
for name in ("run", "seed1", "seed2", "control"):
    print(f"{'seed0' if name == 'run' else name:>8}: rollout reward, first -> last tenth {t[name][0]:.3f} -> "
          f"{t[name][1]:.3f} ({t[name][1] - t[name][0]:+.3f})")
L = P["learned"]
print(f"learned rule on all 600: {L['accuracy']:.1%} [{L['ci95'][0]:.1%}, {L['ci95'][1]:.1%}] at {L['tpf']:.2f}; "
      f"rules at least as accurate at a TPF at least as high: {', '.join(P['dominated_by']) or 'none'}")
print("weights:", {f: w for f, w in zip(P["features"], P["run"]["weights"])})

# %% [markdown]
# ## 14 · What it reached, and what it did not
#
# The targets were set where the frontier says editing pays, before any run; `rl.json` records each
# against the measured value. Read this cell's output before the conclusion below it.

# %%
# NBVAL_CHECK_OUTPUT
for name, t in R["targets"].items():
    print(f"{name:<26} target {t['target']:<34} value {str(t['value'])[:60]:<62} {'met' if t['met'] else 'missed'}")

# %% [markdown]
# What the runs say, read from the cells above. On Sudoku the mean rollout reward of the committed
# ELBO run did not rise in 400 steps (section 6; on Shakespeare it did, section 12, by hacking the
# reward). The updates moved both confidence and correctness: threshold 0.9 commits more cells per pass
# and solves fewer puzzles (section 7), because many more of the model's predictions now sit above 0.9
# and more of those are wrong (section 11). What section 6 measured along the way: most groups carried
# no signal, since their rollouts all scored alike; the clipped ratio almost never reached its bound, so
# the clip never limited a step and the drift built up over many small ones; and the likelihood
# surrogates' gradients are nearly orthogonal to the gradient of what the rule did (section 10).
# Shaping the model's own decisions instead (section 10's "decisions"; the recipe search of `labkit
# bench rl-sweep`, in docs/models.md) kept what the ELBO broke only once the KL to the start was strong:
# `tiny-sudoku-rl` (section 7) kept threshold 0.9 and the confidence orders (low-confidence, margin,
# entropy) within half a point, and on all three seeds its S-mode edits fixed more cells per broken one
# than `tiny-sudoku`'s. But S mode solved no more puzzles beyond its interval, the thresholds its
# rollouts decided at (0.7 and 0.5) lost three to four points (section 11 says why), and its mean
# rollout reward did not rise on the three seeds beyond their spread (section 7's seed lines): a step's
# reward is mostly which puzzles it drew. A control run whose rewards are shuffled moves threshold 0.9
# about as much as most runs of the search, so at this size the updates' own noise, not the reward,
# does much of the damage. Shaping the rule with the model frozen did better (section 13): seed 0's
# reward rose well past the control's, the other two seeds about as much as the control, and its
# greedy rule lands on the frontier the
# threshold and factor rules draw, not beyond it. Exercise 1 measures the first cause at two
# temperatures.
#
# ## Exercises
#
# Each has its solution just below it: try it in a new cell first.
#
# **1.** Count the rollouts that carry signal over 10 training questions at temperature 0.7 and at 1.0
# (G = 8, S mode). Which temperature gives RL more to learn from?

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
qs = [rewards.training_question("sudoku", random.Random(f"ex1-{i}"), clues=(10, 13)) for i in range(10)]
for temp in (0.7, 1.0):
    r = rl.rollout(sd, qs, lk.samplers.registry.rule("speed", temperature=temp), group=8, seed=SEED)
    a = rl.group_advantages(r.reward, 8)
    print(f"temperature {temp}: mean reward {r.reward.mean():.3f}, rollouts with signal {int((a.abs() > 0).sum())} of 80")

# %% [markdown]
# **2.** Dr. GRPO drops the division by the group's standard deviation (`scale_rewards=False`). Show on
# the rollouts of section 1 that it keeps the advantages' signs and order, and changes their size.

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
centred = rl.group_advantages(rolls.reward, G, scale=False)
print("same signs:", torch.equal(torch.sign(centred), torch.sign(adv)))
print("same order:", torch.equal(torch.argsort(centred, stable=True), torch.argsort(adv, stable=True)))
print("scale (GRPO / centred):", f"{float(adv.norm() / centred.norm()):.2f}" if centred.norm() > 0 else "no signal")

# %% [markdown]
# **3.** The one-pass surrogate of d1 masks the whole answer and a share of the prompt. Draw it for the
# rollouts of section 1 and check that every written cell is masked and that about 15% of the prompt is.

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
d1 = rl.draw("one_pass", x, written, sd.mask_id, torch.Generator().manual_seed(SEED), prompt_mask=0.15)
is_mask = d1.canvas == sd.mask_id
print("every written cell masked:", bool(is_mask[written].all()))
print(f"prompt cells masked: {float(is_mask[~written].float().mean()):.1%}")

# %% [markdown]
# **4.** From the command line: `labkit train-rl --recipe tiny-sudoku-rl --out runs/tiny-sudoku-rl`
# retrains the committed model whose decisions were learned (it resumes if stopped; about 25 minutes
# on one thread), `--recipe tiny-sudoku-rl-elbo` the ELBO control (about 20 minutes), `labkit
# train-rl --init-from tiny-sudoku --surrogate one_pass --steps 50 --out runs/try` tries another
# surrogate, `labkit bench rl --out benchmarks/results` re-measures the tables of sections 6 to 12
# (`make model-rl`, `make bench-rl`) and `labkit bench learned-policy` section 13's. docs/models.md,
# "Rewards", says what each run cost.
