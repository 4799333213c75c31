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
# **问题：** LLaDA2.1 的文章把它的“草稿—编辑”解码做得好的地方归功于一个强化学习（RL）阶段：“RL 的意义不只是得到更高的分数，而是教会模型何时坚持己见、何时自我修正”。Notebook 11 展示了这一点在哪里要紧：在数独上，每一次编辑都可以检验，而 `tiny-sudoku` 的 S 模式（极速模式）而简单的置信度阈值每次前向写下更多格子，准确率却与它相当（见第 7 节的表）。这里你将亲手写出掩码扩散语言模型强化学习的各个部件，逐一与 `labkit.training.rl` 核对，现场跑几步，再看看 400 步训练对仓库中的 `tiny-sudoku-rl` 做了什么。
#
# 下文用到的词：
#
# - **rollout**：由一条规则解码出的一个回答（这里是 S 模式，按某个温度采样，所以它的草稿和编辑就是模型的*动作*）；**奖励**（reward）：对这个回答的精确评分（数独：填对的空格所占的比例；如果整个网格是保留了提示数的有效解，再加 1）；
# - **组**（group）：同一道题的 G 个 rollout；**优势**（advantage）：一个 rollout 的奖励减去所在组的均值，再除以组的标准差（GRPO）；组内所有 rollout 得分都相同的组不携带任何信号；
# - **替代目标**（surrogate）：扩散语言模型的 log p(answer) 无法精确计算，所以 RL 提高的是它的一个估计：d1 的**单次前向**（one pass：回答全部掩码，取每个 token 的 log p）、ESPO 的序列 **ELBO（证据下界）**（回答以随机比例 t 掩码，Σ log p / t）、LLaDA2.1 的**块 ELBO**（EBPO，逐块计算），或 AR 孪生模型的**精确** log p；
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
from labkit.eval.exact import edit_outcomes
from labkit.models.load import model_folder
from labkit.tasks import heldout, sudoku
from labkit.training import rewards, rl
from labkit.training.losses import stratified_t

SEED = 0
RESULTS = Path("..") / "benchmarks" / "results"
R = json.loads((RESULTS / "rl.json").read_text())
sd = lk.load("tiny-sudoku")
sd_rl = lk.load("tiny-sudoku-rl")
print(sd.name, "and", sd_rl.name, "loaded;", f"{sum(p.numel() for p in sd.net.parameters()):,} parameters each")

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
# 一次更新会改变策略；此后每个 rollout 的替代目标比率 ρ = exp(ℓ_new − ℓ_old) 就会偏离 1。PPO 的悲观目标取 min(ρ·A, clip(ρ, 1 − ε, 1 + ε)·A)：一个 rollout 无法把策略拉到离抽取这批数据时的策略超过 ε 的地方。与起始模型之间的 KL 是在替代目标读取的那些位置上、对整个词表精确计算的。

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
# `rl.setup_rl` 和 `rl.rl_step` 就是 `labkit train-rl` 所运行的：这里每步四道题 × 四个 rollout，做两次截断更新（仓库中的那次运行用的是 16 × 8、四次更新、400 步）。每一步打印它的平均奖励、解出的比例，以及有多少个 rollout 携带了信号。

# %%
# NBVAL_CHECK_OUTPUT
cfg = rl.RLConfig(init_from="tiny-sudoku", rule="speed", temperature=0.7, surrogate="elbo", questions=4,
                  group=4, inner_steps=2, kl=0.2, lr=1e-5, steps=3, clues=(10, 13), seed=SEED)
run = rl.setup_rl(cfg, tempfile.mkdtemp(), log=lambda m: None)
for _ in range(cfg.steps):
    rec = rl.rl_step(run)
    print(f"step {rec['step']}: mean reward {rec['reward']:.3f}, solved {rec['solved']:.2f}, "
          f"rollouts with signal {rec['signal_rows']} of {cfg.questions * cfg.group}")

# %% [markdown]
# ## 6 · What 400 steps did: the stored runs（这几百步做了什么：保存的运行）
#
# 仓库中的配方（`labkit train-rl --recipe tiny-sudoku-rl`）：每步 16 道训练谜题 × 8 个 S 模式 rollout，温度 0.7，ELBO 替代目标，四次截断更新，KL 0.2，lr 1e-5，在一个 CPU 线程上跑 400 步；旁边是同样预算下改用单次前向替代目标的运行。每一步的奖励，按 20 步取平均：

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
hist = json.loads((model_folder("tiny-sudoku-rl") / "training.json").read_text())["rl"]["history"]
rows = R["curves"]["elbo"]["config"]["questions"] * R["curves"]["elbo"]["config"]["group"]
signal = sum(h["signal_rows"] for h in hist) / len(hist)
print(f"tiny-sudoku-rl: rollouts with signal, mean over {len(hist)} steps: {signal:.1f} of {rows} ({signal / rows:.0%}); "
      f"share of ratios clipped: {sum(h['clip_fraction'] for h in hist) / len(hist):.2%}")
for label, c in R["curves"].items():
    rew = c["reward"]
    k = len(rew) // 10
    first, last = sum(rew[:k]) / k, sum(rew[-k:]) / k
    print(f"{label:>9}: mean reward, first tenth of steps {first:.3f}, last tenth {last:.3f} "
          f"({'rose' if last > first + 0.01 else 'fell' if last < first - 0.01 else 'flat'})")


# %% [markdown]
# ## 7 · Before and after, on all 600 held-out puzzles（训练前后：在全部留出谜题上）
#
# `labkit bench rl` 在训练前（`tiny-sudoku`）和训练后（`tiny-sudoku-rl`）用每条规则贪心地解码每一道留出谜题；每个准确率都附有 95% 区间（Wilson）。这里的 TPF 是每次前向写下的格子数。

# %%
# NBVAL_CHECK_OUTPUT
def by_label(runs):
    return {r["label"]: r["tasks"]["sudoku"] for r in runs}


before, after = by_label(R["runs"]["start"]), by_label(R["runs"]["rl"])
print(f"{'rule':<24}{'tiny-sudoku':>28}{'tiny-sudoku-rl':>28}")
for label in before:
    b, a = before[label], after[label]
    fmt = lambda s: f"{s['accuracy']:6.1%} [{s['ci95'][0]:.1%}, {s['ci95'][1]:.1%}] {s['tpf']:5.2f}"
    print(f"{label:<24}{fmt(b):>28}{fmt(a):>28}")
for name, runs in (("tiny-sudoku", before), ("tiny-sudoku-rl", after)):
    e = runs["S mode"]["edits"]
    print(f"{name}: S mode's edits fixed {e['fixed']} cells and broke {e['broke']} "
          f"({e['fixed'] / e['broke']:.2f} fixed per broken)")

# %% [markdown]
# 同一个配方再用另外两个种子训练（`labkit bench rl` 会训练它们；种子 0 就是仓库中的模型）：相对于 `tiny-sudoku` 的变化，是否大于种子之间的差异？

# %%
# NBVAL_CHECK_OUTPUT
seeds = {"0": R["runs"]["rl"]} | {k: v["runs"] for k, v in R["seeds"].items()}
for seed, runs in seeds.items():
    by = by_label(runs)
    print(f"seed {seed}: " + " | ".join(f"{label} {by[label]['accuracy']:.1%} at {by[label]['tpf']:.2f}"
                                        for label in ("S mode", "threshold 0.9", "low-confidence")))
print("tiny-sudoku: " + " | ".join(f"{label} {before[label]['accuracy']:.1%} at {before[label]['tpf']:.2f}"
                                   for label in ("S mode", "threshold 0.9", "low-confidence")))

# %% [markdown]
# 前沿：每条规则的准确率对它的 TPF，训练前（空心）和训练后（实心）。如果 S 模式移到了阈值规则和 factor 规则的右上方，RL 对 S 模式来说就值得它的成本。

# %%
# NBVAL_CHECK_OUTPUT
fig, ax = plt.subplots(figsize=(6.5, 4))
for runs, filled in ((before, False), (after, True)):
    for label, s in runs.items():
        colour = "C3" if label.startswith(("S mode", "Q mode")) else "C0"
        ax.scatter(s["tpf"], s["accuracy"], s=30, color=colour, facecolors=colour if filled else "none")
        if filled:
            ax.annotate(label, (s["tpf"], s["accuracy"]), fontsize=6, xytext=(3, 2), textcoords="offset points")
ax.set(xlabel="TPF (cells per forward pass)", ylabel="solved", title="hollow: tiny-sudoku, filled: tiny-sudoku-rl")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## 8 · The edits, on the grid（网格上的编辑）
#
# 在同样十道困难的留出谜题上用两个模型运行 S 模式：对其中一道题，画出每一步哪个格子被写下（浅色）、哪个格子被编辑（深色）；然后看这十道题上的编辑总共做了什么。

# %%
# NBVAL_CHECK_OUTPUT
hard = [it for it in heldout("sudoku") if it.group == "hard"][:10]
truth = torch.tensor([sd.encode(it.answer) for it in hard])
fig, axes = plt.subplots(1, 2, figsize=(10, 2.6))
for ax, lm in zip(axes, (sd, sd_rl)):
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
# ## 9 · How noisy is each surrogate?（每种替代目标的噪声有多大？）
#
# 同一批 S 模式 rollout；计算一次抽样的策略梯度与同一替代目标另外 32 次抽样的平均梯度之间的余弦（没有噪声时为 1）。单次前向的估计最稳定，但有偏：它的平均梯度所指的方向与 ELBO 的不同。

# %%
# NBVAL_CHECK_OUTPUT
for row in R["gradient_noise"]:
    extra = f", mean vs the ELBO's mean {row['cosine_to_elbo_reference']:.2f}" if "cosine_to_elbo_reference" in row else ""
    print(f"{row['label']:>22}: cosine {row['cosine_mean']:.2f} ± {row['cosine_sd']:.2f}{extra}")

# %% [markdown]
# ## 10 · RL on Shakespeare: three words as the reward（莎士比亚上的强化学习：把三个词当作奖励）
#
# 同样的 GRPO 用在文本上：`tiny` 因为写出三个给定的词（整词、不分大小写，和 notebook 06 的关键词控制的计数方式相同）而得到奖励，回答以温度 1 采样。这三个词不在提示词里：奖励是唯一的老师。`labkit bench rl` 训练这次运行，并让原始模型和训练后的模型在每个留出提示词上各采样一次；`tiny-ar` 下的 gen-PPL 说明这些词在流畅度上付出了多少代价。

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
# ## 11 · What it reached, and what it did not（达到了什么，没达到什么）
#
# 目标是在任何运行之前，按前沿显示编辑划算的地方设定的；`rl.json` 把每个目标与实测值对照记录下来。先读这个单元格的输出，再读它下面的结论。

# %%
# NBVAL_CHECK_OUTPUT
for name, t in R["targets"].items():
    print(f"{name:<26} target {t['target']:<34} value {str(t['value'])[:60]:<62} {'met' if t['met'] else 'missed'}")

# %% [markdown]
# 从上面各单元格读出这些运行说明了什么：在数独上，rollout 的平均奖励在 400 步中没有上升（在莎士比亚上上升了，见第 10 节，办法是不管怎样都把那几个词写出来）；更新改变的是模型的*置信度*（比较第 7 节训练前后阈值规则的各行），而不是它的正确性。有三个实测的原因：大多数组不携带信号，因为组内 rollout 的得分全都相同（第 6 节打印了整个运行中的比例，第 5 节逐步打印）；截断的比率几乎从未达到边界，所以每个批次只把策略朝更好的回答推动了一点点；而且 ELBO 的一次抽样给出的梯度噪声很大（第 9 节）。提高更好回答的似然会让模型在所有地方都变得更尖锐，而阈值规则会把这种尖锐当成许可，每次前向落定更多格子。练习 1 在两个温度下测量第一个原因。
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
# **4.** 在命令行里：`labkit train-rl --recipe tiny-sudoku-rl --out runs/tiny-sudoku-rl` 重新训练仓库中的模型（中途停止后可以续跑；单线程大约 20 分钟），`labkit
# train-rl --init-from tiny-sudoku --surrogate one_pass --steps 50 --out runs/try` 尝试另一种替代目标，`labkit bench rl --out benchmarks/results` 重新测量第 6 到 10 节的表格（`make model-rl`，`make bench-rl`）。docs/models.md 的 “Rewards” 一节写明了每次运行的花费。
