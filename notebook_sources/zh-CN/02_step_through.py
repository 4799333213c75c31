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
# # 02 · Step through one denoising run（逐步查看一次去噪运行）
#
# *阅读并运行约 15 分钟，不含练习 · 前置：notebook 01（快速上手） · 下一步：notebook 03（并行解码）（入门路线：01 → 02 → 03 → 05）。*
#
# **问题：** 当掩码扩散语言模型用 64 步写 64 个 token 时，它在每一步写的是*哪个*位置？置信度有多高？又是什么决定了顺序？
#
# 这是对一次运行的导览，一个视图接一个视图地看。每个视图都由同一条**轨迹（trace）**绘制：每一步之后的画布、模型在每个位置上的候选及其置信度，以及哪些位置被落定（commit，即 unmask，去掩码；掩码 → token）或被编辑（token → token）。快速上手（01）介绍了这些视图；这里我们仔细解读它们，并且一次只改变一件事：重掩码规则、块长度，最后换成一条会编辑的规则。

# %%
# Parameters: CI runs this notebook on a CPU with these values.
MODEL = "tiny"
PROMPT = "KING HENRY:\nNow, lords, for France!\n"
GEN, BLOCK = 64, 32

import torch
import labkit as lk
lk.viz.notebook_mode()
lm = lk.load(MODEL)
def run(rule=lk.LowConfidence(), block=BLOCK, steps=GEN):
    return lk.generate(lm, PROMPT, rule, gen_length=GEN, block_length=block, steps=steps)
def spearman(a, b):
    """Rank correlation of two 1-D tensors (1 = same order, 0 = unrelated)."""
    ra, rb = a.argsort().argsort().float(), b.argsort().argsort().float()
    return float(torch.corrcoef(torch.stack([ra, rb]))[0, 1])


# %% [markdown]
# ## The run（这次运行）
#
# 贪心解码（温度 0），配合 LLaDA 的低置信度重掩码：每一步，模型预测当前块中每个被掩码的位置，并落定其中置信度最高的那一个。贪心意味着每次运行的结果都相同，所以下面的数字是关于这个模型的事实。

# %%
# NBVAL_CHECK_OUTPUT
out = run()
trace, P = out.trace, out.trace.prompt_len
print(PROMPT + out.text)
print("NFE", out.stats["nfe"], "| TPF", out.stats["tpf"])

# %% [markdown]
# ## View 1 · mask state: *where* the canvas fills（视图一 · 掩码状态：画布在*哪里*被填满）
#
# 行是步（从上到下），列是回答中的位置。灰色表示仍被掩码，橙色是在这一步落定的 token，蓝色是更早落定的。虚线是块的边界：块 2（位置 32-63）一直是灰色，直到块 1 填满为止。这就是**半自回归的块解码**：块内的顺序是自由的，块与块之间从左到右。

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(trace, lm, kind="state")

# %%
# NBVAL_CHECK_OUTPUT
order = trace.commit_step()[0, P:]                      # (64,) step at which each position was written
for b in range(GEN // BLOCK):
    steps = order[b * BLOCK:(b + 1) * BLOCK]
    print(f"block {b + 1}: written during steps {int(steps.min())}-{int(steps.max())}, "
          f"rank correlation position↔step {spearman(torch.arange(BLOCK), steps):+.2f}")

# %% [markdown]
# 秩相关系数接近 +1 就意味着从左到右写，像自回归模型那样。上面的值说明这个模型在一个块*内部*离从左到右有多远。
#
# ## View 2 · confidence: *how sure* each commit was（视图二 · 置信度：每次落定的置信度*有多高*）
#
# 每个落定的 token 按它被写下那一刻模型给它的概率着色。低置信度重掩码总是选置信度最高的位置，所以在一个块内，早期的落定置信度高，难的位置留到最后，那时已知的上下文最多。

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(trace, lm, kind="confidence")

# %%
# NBVAL_CHECK_OUTPUT
conf = trace.confidence()[:, 0].float()                 # (steps, L)
committed = trace.committed()[:, 0]
per_step = torch.stack([conf[s][committed[s]].mean() for s in range(len(trace))])
for q in range(4):
    part = per_step[q * 16:(q + 1) * 16]
    print(f"steps {q * 16:2d}-{q * 16 + 15}: mean confidence of the commit {part.mean():.2f}")

# %% [markdown]
# ## View 3 · commit order: *what* gets written first（视图三 · 落定顺序：*什么*先被写下）
#
# 只有一行：每个位置按它在哪一步落定来着色（悬停可以看到 token）。一个块最早的落定通常是结构（换行、下一个说话人的名字及其冒号、标点）：模型不需要知道周围的词就能放下的 token。

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(trace, lm, kind="commit_step")

# %%
# NBVAL_CHECK_OUTPUT
first = order.argsort()[:10].tolist()
print("first 10 positions written:", first)
print("their tokens:", [lm.token_strings([trace.final[0, P + i]])[0] for i in first])

# %% [markdown]
# ## What low-confidence remasking does: compare with random order（低置信度重掩码的作用：与随机顺序比较）
#
# `remasking="random"` 保持其他一切不变，每一步落定一个*随机*选出的被掩码位置（LLaDA 的另一个选项）。读一读下面的文本和落定的平均置信度，然后看落定顺序。

# %%
# NBVAL_CHECK_OUTPUT
rand = run(lk.LowConfidence(remasking="random"))
def commit_conf(t):
    c, m = t.confidence()[:, 0].float(), t.committed()[:, 0]
    return float(c[m].mean())
print("low-confidence: mean confidence of commits", round(commit_conf(trace), 3))
print("random        : mean confidence of commits", round(commit_conf(rand.trace), 3))
print("random text   :", rand.text.replace("\n", " / ")[:160])

# %% [markdown]
# 随机顺序失去了“先搭结构”的骨架，重复也多得多（“Warwick, and Warwick”；上面的文本也重复了 “my lords”）。然而它的落定平均置信度*更高*：重复短语的下一个 token 很容易预测。置信度衡量的是模型有多确定，而不是文本有多好；这就是采样器基准（notebook 03）要用一个独立的模型给文本打分的原因。

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(rand.trace, lm, kind="commit_step")

# %% [markdown]
# ## Where semi-AR blocks show up: one block against small blocks（半自回归块在哪里显现：一个块对比小块）
#
# 当 `block_length = 64` 时，整个回答就是一个块，模型可以在任何地方写。有些扩散语言模型（LLaDA，它训练用的回答以文本结束符填充）这时会很早就填上画布的*末尾*，这正是半自回归块存在的原因之一。这个模型也会这样吗？更小的块又会强加多少顺序？

# %%
# NBVAL_CHECK_OUTPUT
for block in (64, 32, 8):
    t = run(block=block).trace
    o = t.commit_step()[0, P:]
    early = o.argsort()[:16]                             # the first 16 positions written
    print(f"block_length {block:2d}: first 16 commits at mean position {early.float().mean():5.1f}, "
          f"{int((early >= 48).sum()):2d} of them in the last quarter, "
          f"rank correlation position↔step {spearman(torch.arange(GEN), o):+.2f}")

# %% [markdown]
# 即使整个回答是一个长 64 的块，这个模型最早的落定也仍然靠近开头（它由它的 AR 孪生模型改造而来，训练窗口也没有填充），所以它没有表现出先写末尾的效应。块展示的是它们强加了多少顺序：位置与落定步的秩相关系数从 +0.24（一个块）升到 +0.85（块长度 32）和 +1.00（块长度 8 个 token，每个块内每步一个 token）。+1.00 是四舍五入到两位小数的结果：在每个 8 个 token 的块内，顺序仍由模型选择，所以小块让解码接近从左到右，但并不严格。

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(run(block=64).trace, lm, kind="state")

# %% [markdown]
# ## View 4 · edits: when a rule rewrites what it wrote（视图四 · 编辑：当规则改写它已写下的内容）
#
# 低置信度重掩码从不改变已落定的 token。LLaDA2.1 的“草稿—编辑”规则则会：在 S 模式（极速模式）的阈值下，它把每个高于 0.5 的 token 并行地写成草稿（掩码 → token，M2T），并改写任何预测已经改变的已写 token（token → token，T2T，编辑阈值 0.0）。一次起草许多 token 需要一个对它们置信度很高的模型，所以这个视图在 **`tiny-cap`** 上运行，这是为并行解码和编辑而训练的内置模型（notebook 04 展示了它是怎么训练的）。`tiny` 每次前向传播大约只落定一个 token，置信度不够高：在 S 模式下，它的编辑会互相打架。编辑视图标出这些改写；在状态视图中，它们显示为紫色。
#

# %%
# NBVAL_CHECK_OUTPUT
cap = lk.load("tiny-cap")
de = lk.generate(cap, PROMPT, lk.DraftEdit.speed(), gen_length=GEN, block_length=BLOCK, steps=GEN)
edits = de.trace.edits()[:, 0]                           # (steps, L)
print(PROMPT + de.text)
print("S mode on tiny-cap: NFE", de.stats["nfe"], "| TPF", de.stats["tpf"], "| edits", int(edits.sum()))
shown = 0
for rec in de.trace:
    for pos in rec.edited[0].nonzero().flatten().tolist():
        before = de.trace[rec.step - 1].tokens[0, pos]
        print(f"step {rec.step}: position {pos - de.trace.prompt_len}: {cap.token_strings([before])[0]!r} -> "
              f"{cap.token_strings([rec.tokens[0, pos]])[0]!r}")
        shown += 1
    if shown >= 6:
        break

# %% [markdown]
# 并行草稿会冲突：在同一步里，相邻的位置各自猜一个稳妥的填充词（逗号、换行），因为它们谁也看不到其他位置会写什么。等周围的词都起草好之后，模型对这些位置的预测就变了，T2T 会把它们改写：上面的大多数编辑都是把一个填充词换成一个单词。这正是 LLaDA2.1 的编辑的用途。
#

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(de.trace, cap, kind="edits")

# %% [markdown]
# ## Scrub through it（拖动查看）
#
# 下面的时间步滑块是一张 plotly 图，每步一帧（不需要内核）。带有全部解码参数的实时面板见 notebook 05。

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.step_slider(trace, lm)

# %% [markdown]
# ## Build it yourself: the decoding loop in 20 lines（亲手实现：二十行写出解码循环）
#
# 上面的一切都来自 `lk.generate`。这里是它为 LLaDA 的低置信度规则运行的循环，直接写在裸模型调用 `lm(x)` 上（输入一张由 token id 组成的画布，每个位置输出一行 logits）。按块从左到右；每一步：一次前向传播，在块内每个被掩码的位置上取最可能的 token 及其概率（即**置信度**），然后落定置信度最高的 `k` 个，其中 `k = ceil(masks left / steps left)`。

# %%
# NBVAL_IGNORE_OUTPUT (a definition: the next cell checks it)
import math

@torch.no_grad()
def my_generate(lm, prompt, gen_length=GEN, block_length=BLOCK, steps=GEN):
    prompt_ids = torch.tensor([lm.encode(prompt)])                        # (1, P)
    P = prompt_ids.shape[1]
    x = torch.cat([prompt_ids, torch.full((1, gen_length), lm.mask_id)], dim=1)   # (1, P + G): the canvas
    per_block = steps // (gen_length // block_length)
    for start in range(P, P + gen_length, block_length):                  # semi-autoregressive blocks
        end = start + block_length
        for step in range(per_block):
            masked = x[0, start:end] == lm.mask_id                         # (N,) this block's masks
            logits = lm(x)[0, start:end].float()                           # (N, V): one forward pass
            logits[:, lm.mask_id] = -math.inf                              # never propose the mask (labkit does this; LLaDA's generate() does not)
            confidence, candidate = logits.softmax(-1).max(-1)             # greedy proposal, its probability
            confidence[~masked] = -math.inf                                # only masks can be committed
            k = math.ceil(int(masked.sum()) / (per_block - step))          # LLaDA's schedule
            chosen = confidence.topk(k).indices                            # the k surest masks
            x[0, start + chosen] = candidate[chosen]                       # commit them
    return x


# %%
# NBVAL_CHECK_OUTPUT
mine = my_generate(lm, PROMPT)
print(PROMPT + lm.decode(mine[0, P:]))
print("token-identical to lk.generate with the same rule:", torch.equal(mine, out.ids))

# %% [markdown]
# 二十行就装下了整个思路；实验室的循环在此之上加了批处理（左侧填充和注意力掩码）、采样（温度、top-k、top-p）、其他规则（阈值、编辑）、内容控制、KV 缓存和轨迹。试着把 `confidence` 改成**概率差（margin）**（top-1 概率减去 top-2 概率），并把落定顺序与下面的练习 3 比较。
#
# ## Exercises（练习）
#
# 每道题的参考答案就在它下面：先在一个新单元格里自己试一试。
#
# **1.** 把提示词改成只有一个说话人的名字（`"HAMLET:\n"`）。第一个块还是以结构 token 开头吗？

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
ham = lk.generate(lm, "HAMLET:\n", lk.LowConfidence(), gen_length=GEN, block_length=BLOCK, steps=GEN)
hp = ham.trace.prompt_len
first = ham.trace.commit_step()[0, hp:].argsort()[:10].tolist()
print("first 10 tokens written:", [lm.token_strings([ham.trace.final[0, hp + i]])[0] for i in first])

# %% [markdown]
# **2.** 用 `steps=16` 运行（每步 4 个 token）。哪个视图变化最大：顺序、落定的置信度，还是文本？

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
fast = run(steps=16)
print("NFE", fast.stats["nfe"], "| mean confidence of commits", round(commit_conf(fast.trace), 3),
      "(64 steps:", round(commit_conf(trace), 3), ")")
print("rank correlation of commit steps with the 64-step run:",
      round(spearman(order.float(), fast.trace.commit_step()[0, P:].float()), 2))
print(PROMPT + fast.text)

# %% [markdown]
# **3.** 把 `lk.LowConfidence(score="margin")` 与默认的概率打分比较：落定顺序变了吗？文本呢？

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
margin = run(lk.LowConfidence(score="margin"))
m_order = margin.trace.commit_step()[0, P:]
print("positions written at a different step:", int((m_order != order).sum()), "of", GEN)
print("same text:", margin.text == out.text)
