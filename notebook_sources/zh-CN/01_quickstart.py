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
# # 01 · Quickstart: watch a diffusion LM write（快速上手：看扩散语言模型写作）
#
# *阅读并运行约 10 分钟，不含练习 · 前置：无，打开实验室即可 · 下一步：notebook 02（逐步查看）（入门路线：01 → 02 → 03 → 05）。*
#
# **第一次来？** 四个 notebook、约 45 分钟，构成入门路线：01（本篇：掩码扩散语言模型怎样写）、02（每一步写哪个位置，以及 20 行的解码循环）、03（一次前向能落定多少个 token）和 05（一个面板里的所有旋钮）。走完之后：04 和 11（编辑，以及扩散模型在哪里胜出），10 和 13（模型是怎样做出来的）；README 列出了全部 notebook。
#
# **问题：** 自回归语言模型从左往右写，每次前向传播写一个 token。像 LLaDA 这样的*掩码扩散*语言模型又是怎么写的？
#
# 它从提示词后面一张**全是掩码的画布**开始。每一**步**把模型在整张画布上运行一次（一次前向传播，即一次 **NFE**（前向次数）），模型为每个被掩码的位置给出一个候选 token，再由**采样器***落定*（commit，即 unmask，去掩码）其中一部分（掩码 → token）：LLaDA 的规则落定模型**置信度**最高的那些，其余位置保持掩码，留到后面再落定。经过足够多的步之后，画布上就不再有掩码。画布被切成若干**块**，从左到右依次解码（半自回归），所以一个块里的位置只会在这个块自己的那些步里落定。
#
# 本 notebook 运行实验室内置的模型（一个 5M 参数的双向 transformer，在 CPU 上用莎士比亚的剧本训练而成），并逐步查看一次生成。在有 GPU 和权重的机器上，可以在下一个单元格里设置 `MODEL = "GSAI-ML/LLaDA-8B-Instruct"`。

# %%
# Parameters: CI runs this notebook on a CPU with these values.
MODEL = "tiny"
PROMPT = "ROMEO:\n"
SEED = 0

import torch
import labkit as lk
lk.viz.notebook_mode()

# %%
# NBVAL_CHECK_OUTPUT
lm = lk.load(MODEL)
sampler = lk.defaults.sampler()          # the lab's default: LLaDA low-confidence remasking
settings = lk.defaults.settings()        # gen_length, block_length, steps
print(lm)
print(sampler, settings)

# %% [markdown]
# ## Is this machine ready?（这台机器准备好了吗？）
#
# `labkit doctor` 检查 Python、torch 及其线程数、JupyterLab 和 widget 扩展、每个内置模型能否加载，以及在本机上生成 64 个 token 要多久，并与课程的参考机器比较（`benchmarks/results/doctor.json`）。在终端里运行 `labkit doctor` 会做同样的检查；只要缺了什么，它就以状态 1 退出，并打印每一项的修法。

# %%
# NBVAL_IGNORE_OUTPUT
from labkit.cli import doctor
print(doctor.report(doctor.run()))

# %% [markdown]
# ## Generate（生成）
#
# `lk.generate` 把唯一的解码循环 `lk.stream` 运行到底，并把每一步收集进一条**轨迹（trace）**。当 `steps == gen_length` 时，每一步恰好落定一个 token：64 个 token 用了 NFE = 64 次前向传播，TPF（*每次前向写下的 token 数*）= 1。

# %%
# NBVAL_CHECK_OUTPUT
out = lk.generate(lm, PROMPT, sampler, seed=SEED, **settings)
print(PROMPT + out.text)
print("NFE:", out.stats["nfe"], "| tokens:", out.stats["gen_tokens"], "| TPF:", out.stats["tpf"])

# %%
# NBVAL_IGNORE_OUTPUT
print(f"{out.stats['seconds']:.2f} s, {out.stats['tps']:.0f} tokens/s on this machine")

# %% [markdown]
# ## Step through the denoising（逐步查看去噪）
#
# 轨迹为每一步保存画布、候选 token、它们的置信度，以及哪些位置被落定：都是形状为 `(steps, batch, positions)` 的小数组，从不保存 logits。首先看每一步之后还剩多少个掩码：每步少一个，而块 2 要等块 1 填满之后才开始。这些 notebook 里的每张图都连同它自己的一张图片一起保存，所以在 GitHub 上和打印到纸上都能看到；在 JupyterLab 中，把指针移到图上，它就变成可交互的（悬停在一个格子上可以看到它的步、位置和 token，拖动可以缩放）。

# %%
# NBVAL_CHECK_OUTPUT
trace = out.trace
P = trace.prompt_len
masks_left = trace.masked()[:, 0, P:].sum(-1)
print("masks left after steps 0, 8, 16, ...:", masks_left[::8].tolist())
print("block of each step:", "".join(str(r.block) for r in trace))

# %% [markdown]
# **状态热力图**：每一步一行（从上到下），每个画布位置一列。灰色表示仍被掩码，橙色表示在这一步落定，蓝色表示更早落定。悬停在格子上可以看到它的 token。两个块显示为两个由落定组成的三角形。

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(trace, lm, kind="state")

# %% [markdown]
# **置信度热力图**按模型给每个新落定 token 的概率为它着色。这次运行是采样的（在 top-p 0.9 的核内取 `temperature=1.0`，采样器打印在输出的最上方）：每一步在块内每个被掩码的位置上抽取一个候选，低置信度重掩码落定模型给出概率最高的那个候选。抽到的 token 不一定是模型认为最可能的，而在一张全是掩码的画布上，还没有什么是很可能的，所以最早的几次落定置信度并不高：在下面的打印中，第 0 步和第 1 步分别是 0.17 和 0.09。但平均来说，置信度仍会随着块被填满而下降：每个块前 16 步的落定（0.40 和 0.49）比最后 16 步的落定（0.25 和 0.21）置信度更高。贪心解码（`lk.LowConfidence()`，notebook 02）在每一步都落定模型置信度最高的 token。

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(trace, lm, kind="confidence")

# %%
# NBVAL_CHECK_OUTPUT
conf = trace.confidence()[:, 0].float()
committed = trace.committed()[:, 0]
per_step = torch.stack([conf[s][committed[s]].mean() for s in range(len(trace))])   # (steps,)
for b in range(2):
    first, last = per_step[32 * b:32 * b + 16].mean(), per_step[32 * b + 16:32 * b + 32].mean()
    print(f"block {b + 1}: mean confidence of the commits, first 16 steps {first:.2f}, last 16 steps {last:.2f}")
print("steps 0-7:", [round(float(c), 2) for c in per_step[:8]])

# %% [markdown]
# **落定顺序**：每个位置在哪一步被写下。位置并不是从左到右写下的；在一个块内，模型先填容易的 token（换行、标点、说话人的名字）。

# %%
# NBVAL_CHECK_OUTPUT
order = trace.commit_step()[0, P:]
first = order.argsort()[:8].tolist()
print("first 8 positions written:", first)
print("their tokens:", [lm.token_strings([trace.final[0, P + i]])[0] for i in first])

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(trace, lm, kind="commit_step")

# %% [markdown]
# ## The canvas as text（以文本显示画布）
#
# token 网格显示某一步之后的画布：掩码显示为 ▢，在这一步落定的 token 按置信度着色（红色 < 0.3，橙色 < 0.7，绿色 ≥ 0.7），更早落定的为蓝色。

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.token_grid(trace, lm, step=20)

# %% [markdown]
# 下面的**时间步滑块**是一张普通的 plotly 图，每一步一帧：拖动它，或者按 Play。它不需要运行中的内核，所以在保存或导出的 notebook 里同样可用。

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.step_slider(trace, lm)

# %% [markdown]
# 一次看全部的步，每步一行：

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.token_grid_steps(trace, lm)

# %% [markdown]
# ## Streaming（流式输出）
#
# `lk.stream` 就是循环本身：一个生成器，每次前向传播产出一个 `StepRecord`。终端或服务器就是这样让文本逐渐出现的。

# %%
# NBVAL_CHECK_OUTPUT
for rec in lk.stream(lm, PROMPT, sampler, seed=SEED, **settings):
    if rec.step % 16 == 15:
        canvas = lm.decode(rec.tokens[0, P:], skip_special=False)
        print(f"step {rec.step:2d}:", canvas.replace("<mask>", "▢").replace("\n", "↵"))

# %% [markdown]
# 用于论文和幻灯片的静态图（matplotlib）：

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap_matplotlib(trace, lm, kind="state")

# %% [markdown]
# ## Exercises（练习）
#
# 每道题的参考答案就在它下面：先在一个新单元格里自己试一试。
#
# **1.** 每步落定 4 个 token：用 `steps=16` 代替 64 来生成。这需要多少次前向传播？文本和已落定 token 的平均置信度会发生什么变化？

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
out16 = lk.generate(lm, PROMPT, sampler, seed=SEED, **{**settings, "steps": 16})
def mean_commit_confidence(t):
    return float(t.confidence()[:, 0].float()[t.committed()[:, 0]].mean())
print(PROMPT + out16.text)
for name, o in (("64 steps", out), ("16 steps", out16)):
    print(f"{name}: NFE {o.stats['nfe']}, TPF {o.stats['tpf']:.2f}, mean confidence of the commits "
          f"{mean_commit_confidence(o.trace):.2f}")

# %% [markdown]
# **2.** 使用 `lk.LowConfidence(remasking="random")`：位置按随机顺序落定。现在哪些位置最先被写下？文本读起来怎么样？

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
rand = lk.generate(lm, PROMPT, lk.LowConfidence(remasking="random"), seed=SEED, **settings)
print("first 8 positions written:", rand.trace.commit_step()[0, P:].argsort()[:8].tolist(),
      "(low-confidence:", order.argsort()[:8].tolist(), ")")
print(PROMPT + rand.text)

# %% [markdown]
# **3.** 使用 `block_length=64`（整个回答只有一个块）：模型最先在哪里落定？

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
one = lk.generate(lm, PROMPT, sampler, seed=SEED, **{**settings, "block_length": 64})
first = one.trace.commit_step()[0, P:].argsort()[:8]
print("first 8 positions written in one block:", first.tolist(), "| mean position", float(first.float().mean()))
