# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% tags=["zh-setup"]
# 中文版：代码与英文版逐格相同，输出也相同。这一格把内核移到上一级目录 notebooks/，
# 英文版代码里的相对路径（../benchmarks/results）从那里才成立。
import os
if os.path.basename(os.getcwd()) == "zh-CN":
    os.chdir("..")

# %% [markdown]
# # 12 · Rewards: teaching a diffusion LM when to keep and when to edit（奖励：教扩散语言模型何时保留、何时编辑）
#
# *阅读并运行约 35 分钟，不含练习 · 前置：notebook 11（扩散模型在哪里胜出） · 下一步：notebook 10（从零训练）。*
#
# **问题：** LLaDA2.1 的文章把它的“草稿—编辑”解码做得好的地方归功于一个强化学习（RL）阶段：“RL 的意义不只是得到更高的分数，而是教会模型何时坚持己见、何时自我修正”。Notebook 11 展示了这一点在哪里要紧：在数独上，每一次编辑都可以检验，可是 `tiny-sudoku` 的 S 模式（极速模式）并不占优：一个简单的置信度阈值规则每次前向写下的格子比它多，准确率却与它相当（见本 notebook 第 7 节的表）。这里你将亲手写出掩码扩散语言模型强化学习的各个部件，逐一与 `labkit.training.rl` 核对，现场跑几步，再看看强化学习对仓库中两个模型做了什么：`tiny-sudoku-rl-elbo`（第一个配方，以每个答案的 ELBO 为替代目标，训练 400 步）和 `tiny-sudoku-rl`（训练 100 步，学的是 S 模式和 Q 模式自己的落定与编辑决定，并用较强的 KL 拉住起点模型）。
#
# 下文用到的词：
#
# - **rollout**：由一条规则解码出的一个回答（这里是 S 模式，按某个温度采样，所以它的草稿和编辑就是模型的*动作*）；**奖励**（reward）：对这个回答的精确评分（数独：填对的空格所占的比例；如果整个网格是保留了提示数的有效解，再加 1）；
# - **组**（group）：同一道题的 G 个 rollout；**优势**（advantage）：一个 rollout 的奖励减去所在组的均值，再除以组的标准差（GRPO）；组内所有 rollout 得分都相同的组不携带任何信号；
# - **替代目标**（surrogate）：扩散语言模型的 log p(answer) 无法精确计算，所以 RL 提高的是它的一个估计：d1 的**单次前向**（one pass：回答全部掩码，取每个 token 的 log p）、ESPO 的序列 **ELBO（证据下界）**（回答以随机比例 t 掩码，Σ log p / t）、LLaDA2.1 的**块级 ELBO**（EBPO，逐块计算），或 AR 孪生模型的**精确** log p；
# - 替代目标的**比率** ρ = π_θ / π_old，它被**截断**（clip）到 [1 − ε, 1 + ε] 之内（PPO），以及一个让策略保持在起始模型附近的 **KL** 项；
# - **TPF（每次前向写下的 token 数）**：这里是每次前向写下的答案格数；**改对 / 改错**（fixed / broken）：被一次编辑改对 / 改错的格子。

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
# ## 1 · Rollouts and their exact rewards（rollout 及其精确奖励）
#
# 训练集中的题目（它们的网格从来不是留出题目），每道题在温度 0.7 下用 S 模式解码 G = 8 次：同一个模型，不同的采样。八个回答常常完全一样（模型对大多数格子的置信度都很高，而 S 模式只落定（commit，即 unmask，去掩码）置信度高的格子），所以下面的单元格不断抽题，直到某一组的回答不全相同。奖励在这里按定义亲手写出，再与 `labkit.training.rewards.reward` 比较。

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
# ## 2 · Group-relative advantages（组内相对优势）
#
# 每个奖励减去所在组的均值，再除以组的标准差（加上一个很小的 ε，这样奖励全部相等的组得到 0，而不是除以零）。

# %%
# NBVAL_CHECK_OUTPUT
r = rolls.reward.view(-1, G)
adv_mine = ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + rl.ADV_EPS)).reshape(-1)
adv = rl.group_advantages(rolls.reward, G)
print("advantages:", [f"{a:+.2f}" for a in adv_mine.tolist()])
print("by hand == labkit:", torch.allclose(adv_mine, adv))
print("rollouts that carry signal:", int((adv.abs() > 0).sum()), "of", G)

# %% [markdown]
# ## 3 · The ELBO surrogate, by hand（亲手计算 ELBO 替代目标）
#
# 掩码模型没有精确的 log p(answer)。ESPO 转而提高它的证据下界：把规则写下的每个格子以概率 t 掩码（每个 rollout 抽一次 t，在整个批次上用低差异序列抽取），对被掩码的格子求真实格子的 log p 之和，每一项的权重为 1/t；再除以写下的格子数。下面用与 `surrogates.draw` 相同的生成器调用亲手抽取掩码，并从网络的 logits 亲手算出这个估计。

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
# ## 4 · The clipped objective and the KL, by hand（亲手计算截断目标与 KL）
#
# 一次更新会改变策略；此后每个 rollout 的替代目标比率 ρ = exp(ℓ_new − ℓ_old) 就会偏离 1。PPO 的悲观目标取 min(ρ·A, clip(ρ, 1 − ε, 1 + ε)·A)：一旦某个 rollout 的比率沿着它的优势所推的方向离开了 [1 − ε, 1 + ε]，它那一项就不再给出梯度。这限制的是这一批后续更新还能加上多少，而不是一步能走多远：下面那一次大步更新就把大多数比率推到了远超 ε 的地方。与起始模型之间的 KL 是在替代目标读取的那些位置上、对整个词表精确计算的。

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
# ## 5 · A few steps, live（现场跑几步）
#
# `rl.setup_rl` 和 `rl.rl_step` 就是 `labkit train-rl` 所运行的。每一步的平均奖励是在*那一步自己的*题目上算的，所以不同步的奖励回答的是不同的问题，它们的涨落说明不了多少。因此下面的单元格还会在第一步之前和每一步之后，用 S 模式贪心地解同样的八道留出难题：这些数字才可以相互比较。这里跑的是 `labkit.bench.rl_sweep` 的起点配方（轨迹替代目标：逐次重放每个 rollout 的前向，见第 10 节），每步四道题 × 四个 rollout；三步远远不足以改变贪心解码：重点在于机制，以及一次公平的比较是什么样子。

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
# ## 6 · What 400 steps of the ELBO did: the stored runs（ELBO 的 400 步做了什么：保存的运行）
#
# 第一个配方（`labkit train-rl --recipe tiny-sudoku-rl-elbo`，留作对照）：每步 16 道训练谜题 × 8 个 S 模式 rollout，温度 0.7，ELBO 替代目标，四次截断更新，KL 0.2，lr 1e-5，在一个 CPU 线程上跑 400 步；旁边是同样预算下改用单次前向替代目标的运行。每一步的奖励，按 20 步取平均：

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
# ## 7 · Before and after, on all 600 held-out puzzles（训练前后：在全部 600 道留出谜题上）
#
# `labkit bench rl` 在训练前（`tiny-sudoku`）和两个配方训练之后，用每条规则贪心地解码每一道留出谜题。两个配方是：ELBO（`tiny-sudoku-rl-elbo`），以及学习决定（`tiny-sudoku-rl`：S 模式和 Q 模式的每次落定和编辑都是围绕其阈值的一次伯努利抽样，重放每个决定的精确对数概率，对起点模型的 KL 权重 0.2，lr 1e-4，在困难谜题上训练 100 步；这是 docs/models.md 里配方搜索留下的那次运行）。每个准确率都附有 95% 区间（Wilson）；TPF 是每次前向写下的格子数。

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
# 每个配方再用另外两个种子训练（`labkit bench rl` 会训练它们；种子 0 就是仓库中的模型）：相对于 `tiny-sudoku` 的变化，是否大于种子之间的差异？每行开头是这次运行在前十分之一和最后十分之一步数上的平均 rollout 奖励。

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
# 答案因配方而异。ELBO 之后，每个种子的阈值 0.9 都掉了 37 到 43 个百分点，TPF 也更高：远大于种子之间的差异，所以这个变化来自配方。学习决定的配方之后，S 模式在各种子上变了 0.0 到 1.3 个百分点，都在各自的区间之内（约 ±2.5 个百分点），也没有哪个种子的 rollout 平均奖励上升得超过种子之间的差异。

# %% [markdown]
# 前沿：每条规则的准确率对它的 TPF：训练前（空心）、ELBO 之后（x）和学习决定之后（实心）。如果 S 模式移到了阈值规则和 factor 规则的右上方，RL 对 S 模式来说就值得它的成本。

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
# ## 8 · The edits, on the grid（网格上的编辑）
#
# 在同样十道困难的留出谜题上用三个模型运行 S 模式：对其中一道题，画出每一步哪个格子被写下（浅色）、哪个格子被编辑（深色）；然后看这十道题上的编辑总共做了什么。

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
# 为什么是 17 次前向对 4 次？下面按批次的每一次前向，在十道谜题上合计：写下的格子（落定的掩码）和被编辑的格子（改写已写下的 token）。

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
# ELBO 模型的画布在第二次前向之后就填满了，然后它的编辑始终停不下来：每次前向都有格子被改动，直到 S 模式对“填满的块还能继续编辑几次前向”的上限（`max_post_steps` = 16）结束解码。`tiny-sudoku` 和 `tiny-sudoku-rl` 在第四次前向后就停了：那一次前向什么都没改。

# %% [markdown]
# ## 9 · How noisy is each surrogate?（每种替代目标的噪声有多大？）
#
# 同一批 S 模式 rollout；计算一次抽样的策略梯度与同一替代目标另外 32 次抽样的平均梯度之间的余弦（没有噪声时为 1）。单次前向的估计最稳定，但有偏：它的平均梯度所指的方向与 ELBO 的不同。

# %%
# NBVAL_CHECK_OUTPUT
for row in R["gradient_noise"]:
    extra = f", mean vs the ELBO's mean {row['cosine_to_elbo_reference']:.2f}" if "cosine_to_elbo_reference" in row else ""
    print(f"{row['label']:>22}: cosine {row['cosine_mean']:.2f} ± {row['cosine_sd']:.2f}{extra}")

# %% [markdown]
# ## 10 · Do the surrogates score what the rule did?（替代目标评的是规则做过的事吗？）
#
# 上面的每种替代目标都是在模型下给*最终答案*打分。而赢得奖励的是一次解码：S 模式逐次前向的落定与编辑。TraceRL 的**轨迹**替代目标从 trace 重放每个 rollout，在规则写下每个 token 的那个状态上给它打分；没有任何东西需要抽样，所以它的梯度是精确的。在一批 S 模式 rollout 上（`labkit bench rl`），每种蒙特卡洛替代目标的起始梯度（16 次抽样的平均）与它有多接近？

# %%
# NBVAL_CHECK_OUTPUT
g = R["gradient_cosine"]
print(f"{g['signal_rows']} of {g['rollouts']} rollouts with signal")
for row in g["rows"]:
    print(f"{row['label']:>22}: cosine of the mean to the trajectory's gradient {row['cosine_of_mean']:+.3f}; "
          f"one draw {row['single_mean']:+.3f} [{row['single_min']:+.3f}, {row['single_max']:+.3f}]")

# %% [markdown]
# 余弦接近 0：在 808,960 个参数的空间里，似然替代目标的梯度与"规则做过的事"的梯度几乎正交。规则的决定本身也可以当作动作：`lk.DraftEdit(decision_temperature=κ)` 以概率 σ((p − τ) / κ) 落定一个掩码，以概率 σ((p − τ_edit) / κ) 改写一个不同的 token；"decisions" 替代目标重放每个决定的对数概率，保留不动的决定也算在内。在一个 rollout 上亲手计算，并与 `labkit` 对照：

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
# ## 11 · Why the confident rules fell: calibration（为什么高置信规则掉了：校准）
#
# 第 7 节中阈值规则的各行在 ELBO 配方之后下降了，而它们的 TPF 上升了。阈值规则会落定每个最高概率越过门槛的掩码，所以它只和这个概率一样好。`labkit bench rl` 每次前向落定一个格子来解留出谜题，并在每次前向时，把每个仍被掩码的格子的最高预测与正确答案对照打分（`labkit.eval.calibration`）。下图：每个置信度区间的准确率（左）和它占全部预测的比例（右），训练前与两个配方之后。

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
# `tiny-sudoku` 是欠自信的（0.75 的猜测大约 94% 是对的），所以阈值 0.9 是安全的。经过 ELBO 更新后，多得多的预测落在 ≥ 0.9，其中错的也多得多，于是阈值 0.9 会落定它以前会保留不动的错误。ECE 是所有区间上差距的平均值，它反而下降了：它掩盖了阈值所读的那一个区间。提高被奖励答案的似然会在所有地方提高置信度；这个目标里没有任何东西说明哪些高置信格子是错的。
#
# 学习了决定的 `tiny-sudoku-rl` 把最高的区间保持在原处（约 60% 的预测 ≥ 0.9，其中约 0.2% 是错的，和训练前一样）。它的中间几个区间，也就是它的 rollout 做决定的地方（S 模式在 0.5 落定，Q 模式在 0.7），准确率各掉了一到两个百分点，读取这些区间的阈值规则也跟着掉了（第 7 节里的阈值 0.7 和 0.5），而阈值 0.9 守住了。决定的梯度挪动的，正是被训练的规则所读的那些置信度，也只挪动这些。

# %% [markdown]
# ## 12 · RL on Shakespeare: three words as the reward, and the reward hacked（莎士比亚上的强化学习：三个词作奖励，以及奖励被钻了空子）
#
# 同样的 GRPO 用在文本上：`tiny` 因为写出三个给定的词（整词、不分大小写，和 notebook 06 的关键词控制的计数方式相同）而得到奖励，回答以温度 1 采样。这三个词不在提示词里：奖励是唯一的老师。`labkit bench rl` 训练这次运行，并让原始模型和训练后的模型在每个留出提示词上各采样一次。先读单元格最后几行，再读各个比率：奖励上升了，随之上升的是反复重复几个词的回答所占的比例。

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
# 这就是**奖励投机（reward hacking）**：奖励只数这些词，于是策略学会了几乎在每个回答里都说 "lord" 和 "king"，用结结巴巴、不断重复的短语（"Ay,, my lord, I, my lord."），而第三个词几乎从不出现。`tiny-ar` 下的 gen-PPL 没有发现这一点：它反而*下降*了，因为不断重复自己的文本很容易预测。发现它的是 distinct-2，即不同词对所占的比例，它从 0.856 降到 0.697（还有样本本身）。一个能靠捷径达成的奖励，就会被捷径达成。

# %% [markdown]
# ## 13 · RL on the rule itself: a learned unmasking policy（在规则本身上做强化学习：学到的去掩码策略）
#
# 上面的一切都改变了*模型*，并为此在置信度上付出了代价。Jazbec 等人和 UPO 改变的是*规则*：`lk.samplers.LearnedCommit` 用四个特征（logit p、块中仍被掩码的比例、该格子在被掩码格子中的排名、常数 1）把每个被掩码格子的置信度变成落定概率 σ(w · f)，策略梯度在规则自己抽出的决定上训练这四个权重（奖励减去每格的前向次数），模型冻结不动：其他任何规则都不会改变。对照组是同一次运行，但每批的奖励被打乱。左图：这次运行的奖励与对照组的对比；右图：两次运行过程中在留出谜题上的贪心解码，以及学到的规则在全部 600 道题上的位置，旁边是 `tiny-sudoku` 的各条规则（`labkit bench learned-policy`）。

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
# ## 14 · What it reached, and what it did not（达到了什么，没达到什么）
#
# 目标是在任何运行之前，按前沿显示编辑划算的地方设定的；`rl.json` 把每个目标与实测值对照记录下来。先读这个单元格的输出，再读它下面的结论。输出是英文的，每行依次是：目标名（如 s_mode_overall，S 模式的总准确率；other_rules_within_…，其余规则与起点相差不超过一个百分点；reward_rises，奖励上升）、要求、实测值，以及达到（met）或未达到（missed）。

# %%
# NBVAL_CHECK_OUTPUT
for name, t in R["targets"].items():
    print(f"{name:<26} target {t['target']:<34} value {str(t['value'])[:60]:<62} {'met' if t['met'] else 'missed'}")

# %% [markdown]
# 从上面各单元格读出这些运行说明了什么。在数独上，仓库中那次 ELBO 运行的 rollout 平均奖励在 400 步中没有上升（第 6 节；在莎士比亚上上升了，见第 12 节，靠的是钻奖励的空子）。更新同时改变了置信度和正确性：阈值 0.9 每次前向落定更多格子，解出的谜题却更少（第 7 节），因为模型有多得多的预测落在 0.9 以上，其中错的也更多（第 11 节）。第 6 节一路测到的：大多数组不携带信号，因为组内 rollout 的得分全都相同；截断的比率几乎从未达到边界，所以截断从没限制过任何一步，漂移是在许多小步中积累起来的；而似然替代目标的梯度与"规则做过的事"的梯度几乎正交（第 10 节）。改为塑造模型自己的决定（第 10 节的 "decisions"；`labkit bench rl-sweep` 的配方搜索，见 docs/models.md），只有在对起点模型的 KL 足够强时，才守住了 ELBO 弄坏的东西：`tiny-sudoku-rl`（第 7 节）把阈值 0.9 和几种按置信度排序的规则（low-confidence、margin、entropy）都保持在半个百分点以内，三个种子上它的 S 模式编辑每弄错一格所修好的格子都比 `tiny-sudoku` 多。但 S 模式解出的谜题并没有超出它的区间，它的 rollout 做决定时所用的阈值（0.7 和 0.5）掉了三到四个百分点（原因见第 11 节），三个种子上的 rollout 平均奖励也没有超出种子之间的差异而上升（见第 7 节各种子那几行）：一步的奖励主要取决于它抽到了哪些谜题。一个奖励被打乱的对照运行让阈值 0.9 移动的幅度与搜索中的大多数运行差不多，所以在这个规模上，很大一部分损害来自更新本身的噪声，而不是奖励。冻结模型、只塑造规则则好一些（第 13 节）：种子 0 的奖励上升得远超对照组，另外两个种子与对照组差不多，而它的贪心规则落在阈值规则与因子规则画出的前沿上，但没有超出它。练习 1 在两个温度下测量第一个原因。
#
# ## Exercises（练习）
#
# 每道题的参考答案就在它下面：先在一个新单元格里自己试一试。
#
# **1.** 在温度 0.7 和 1.0 下（G = 8，S 模式），在 10 道训练题上数一数携带信号的 rollout。哪个温度给 RL 提供了更多可学的东西？

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
qs = [rewards.training_question("sudoku", random.Random(f"ex1-{i}"), clues=(10, 13)) for i in range(10)]
for temp in (0.7, 1.0):
    r = rl.rollout(sd, qs, lk.samplers.registry.rule("speed", temperature=temp), group=8, seed=SEED)
    a = rl.group_advantages(r.reward, 8)
    print(f"temperature {temp}: mean reward {r.reward.mean():.3f}, rollouts with signal {int((a.abs() > 0).sum())} of 80")

# %% [markdown]
# **2.** Dr. GRPO 去掉了除以组标准差这一步（`scale_rewards=False`）。在第 1 节的 rollout 上说明：它保留了优势的符号和顺序，改变了它们的大小。

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
centred = rl.group_advantages(rolls.reward, G, scale=False)
print("same signs:", torch.equal(torch.sign(centred), torch.sign(adv)))
print("same order:", torch.equal(torch.argsort(centred, stable=True), torch.argsort(adv, stable=True)))
print("scale (GRPO / centred):", f"{float(adv.norm() / centred.norm()):.2f}" if centred.norm() > 0 else "no signal")

# %% [markdown]
# **3.** d1 的单次前向替代目标会掩码整个回答和一部分提示词。为第 1 节的 rollout 抽取它，并检查每个写下的格子都被掩码，且提示词中大约 15% 被掩码。

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
d1 = rl.draw("one_pass", x, written, sd.mask_id, torch.Generator().manual_seed(SEED), prompt_mask=0.15)
is_mask = d1.canvas == sd.mask_id
print("every written cell masked:", bool(is_mask[written].all()))
print(f"prompt cells masked: {float(is_mask[~written].float().mean()):.1%}")

# %% [markdown]
# **4.** 在命令行里：`labkit train-rl --recipe tiny-sudoku-rl --out runs/tiny-sudoku-rl` 重新训练仓库中学习决定的模型（中途停止后可以续跑；单线程大约 25 分钟），`--recipe tiny-sudoku-rl-elbo` 重新训练 ELBO 对照模型（约 20 分钟），`labkit
# train-rl --init-from tiny-sudoku --surrogate one_pass --steps 50 --out runs/try` 尝试另一种替代目标，`labkit bench rl --out benchmarks/results` 重新测量第 6 到 12 节的表格（`make model-rl`，`make bench-rl`），`labkit bench learned-policy` 重新测量第 13 节的。docs/models.md 的 “Rewards” 一节写明了每次运行的花费。
