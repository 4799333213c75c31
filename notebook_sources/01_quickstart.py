# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 01 · Quickstart: watch a diffusion LM write
#
# *About 10 minutes to read and run, exercises apart · needs: nothing but the lab · next: notebook 02 · Step through (the start-here path: 01 → 02 → 03 → 05).*
#
# **New here?** Four notebooks, about 45 minutes, make the start-here path: 01 (this one: how a masked
# diffusion LM writes), 02 (which position is written when, and the decoding loop in 20 lines), 03 (how
# many tokens one forward pass can commit) and 05 (every knob in one panel). After it: 04 and 11
# (editing, and where diffusion wins), 10 and 13 (how the models are made); README.md lists all of them.
#
# **The question:** an autoregressive LM writes left to right, one token per forward pass. How does a
# *masked diffusion* LM such as LLaDA write instead?
#
# It starts from a **canvas of masks** after the prompt. Each **step** runs the model once over the
# whole canvas (one forward pass, one **NFE**), the model proposes a token for every masked position,
# and the **sampler** *commits* some of them (mask → token): LLaDA's rule commits the ones the model is
# most **confident** about and leaves the rest masked for later. After enough steps no mask is left.
# The canvas is split into **blocks** decoded left to right (semi-autoregressive), so a block's
# positions are only committed during that block's steps.
#
# This notebook runs the lab's embedded model (a 5M-parameter bidirectional transformer trained on
# Shakespeare on a CPU) and steps through one generation. On a GPU with the weights you can set
# `MODEL = "GSAI-ML/LLaDA-8B-Instruct"` in the next cell.

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
# ## Is this machine ready?
#
# `labkit doctor` checks Python, torch and its threads, JupyterLab and
# the widget extension, that every embedded model loads, and how long a 64-token generation takes
# here against the course's reference machine (`benchmarks/results/doctor.json`). From a terminal,
# `labkit doctor` runs the same checks and exits with status 1, each fix printed, if anything is missing.

# %%
# NBVAL_IGNORE_OUTPUT
from labkit.cli import doctor
print(doctor.report(doctor.run()))

# %% [markdown]
# ## Generate
#
# `lk.generate` runs the one decoding loop, `lk.stream`, to the end and collects every step into a
# **trace**. With `steps == gen_length`, each step commits exactly one token: NFE = 64 forward passes
# for 64 tokens, *tokens per forward* (TPF) = 1.

# %%
# NBVAL_CHECK_OUTPUT
out = lk.generate(lm, PROMPT, sampler, seed=SEED, **settings)
print(PROMPT + out.text)
print("NFE:", out.stats["nfe"], "| tokens:", out.stats["gen_tokens"], "| TPF:", out.stats["tpf"])

# %%
# NBVAL_IGNORE_OUTPUT
print(f"{out.stats['seconds']:.2f} s, {out.stats['tps']:.0f} tokens/s on this machine")

# %% [markdown]
# ## Step through the denoising
#
# The trace holds, for every step, the canvas, the proposals, their confidence and which positions
# were committed: small `(steps, batch, positions)` arrays, never the logits. First, the number of
# masks left after each step: one fewer per step, and block 2 starts only once block 1 is full. Each figure
# in these notebooks is stored with a picture of itself, so it shows on GitHub and on paper; in
# JupyterLab, move the pointer onto a figure and it becomes interactive (hover over a cell for its step,
# position and token, drag to zoom).

# %%
# NBVAL_CHECK_OUTPUT
trace = out.trace
P = trace.prompt_len
masks_left = trace.masked()[:, 0, P:].sum(-1)
print("masks left after steps 0, 8, 16, ...:", masks_left[::8].tolist())
print("block of each step:", "".join(str(r.block) for r in trace))

# %% [markdown]
# The **state heatmap**: one row per step (top to bottom), one column per canvas position. Grey is
# still masked, orange is committed at that step, blue was committed earlier. Hover a cell to see its
# token. The two blocks show up as two triangles of commits.

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(trace, lm, kind="state")

# %% [markdown]
# The **confidence heatmap** colours each newly committed token by the probability the model gave it.
# This run samples (`temperature=1.0` within the top-p 0.9 nucleus, the sampler printed at the top):
# each step draws a proposal at every masked position of the block, and low-confidence remasking
# commits the proposal the model gave the highest probability. A drawn token need not be the model's
# likeliest, and on a canvas of masks nothing is likely yet, so the first commits are not sure ones:
# 0.17 and 0.09 at steps 0 and 1 in the printout below. On average confidence still falls as a block
# fills: the commits of the first 16 steps of each block (0.40 and 0.49) are surer than those of its
# last 16 (0.25 and 0.21). Greedy decoding (`lk.LowConfidence()`, notebook 02) commits the model's
# surest token at every step.

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
# The **commit order**: the step at which each position was written. Positions are not written left
# to right; within a block the model fills in the easy tokens (newlines, punctuation, speaker names)
# first.

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
# ## The canvas as text
#
# The token grid shows the canvas after one step: masks as ▢, tokens committed at that step coloured
# by confidence (red < 0.3, orange < 0.7, green ≥ 0.7), earlier ones blue.

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.token_grid(trace, lm, step=20)

# %% [markdown]
# The **step slider** below is a plain plotly figure with one frame per step: drag it, or press Play.
# It needs no running kernel, so it also works in a saved or exported notebook.

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.step_slider(trace, lm)

# %% [markdown]
# Every step at once, one line per step:

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.token_grid_steps(trace, lm)

# %% [markdown]
# ## Streaming
#
# `lk.stream` is the loop itself: a generator yielding one `StepRecord` per forward pass. This is how
# a terminal or a server shows text appearing.

# %%
# NBVAL_CHECK_OUTPUT
for rec in lk.stream(lm, PROMPT, sampler, seed=SEED, **settings):
    if rec.step % 16 == 15:
        canvas = lm.decode(rec.tokens[0, P:], skip_special=False)
        print(f"step {rec.step:2d}:", canvas.replace("<mask>", "▢").replace("\n", "↵"))

# %% [markdown]
# A static figure for papers and slides (matplotlib):

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap_matplotlib(trace, lm, kind="state")

# %% [markdown]
# ## Exercises
#
# Each has its solution just below it: try it in a new cell first.
#
# **1.** Commit 4 tokens per step: generate with `steps=16` instead of 64. How many forward passes does
# it take, and what happens to the text and to the mean confidence of the committed tokens?

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
# **2.** Use `lk.LowConfidence(remasking="random")`: positions are committed in a random order. Which
# positions are written first now, and how does the text read?

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
rand = lk.generate(lm, PROMPT, lk.LowConfidence(remasking="random"), seed=SEED, **settings)
print("first 8 positions written:", rand.trace.commit_step()[0, P:].argsort()[:8].tolist(),
      "(low-confidence:", order.argsort()[:8].tolist(), ")")
print(PROMPT + rand.text)

# %% [markdown]
# **3.** Use `block_length=64` (one block for the whole answer): where does the model commit first?

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
one = lk.generate(lm, PROMPT, sampler, seed=SEED, **{**settings, "block_length": 64})
first = one.trace.commit_step()[0, P:].argsort()[:8]
print("first 8 positions written in one block:", first.tolist(), "| mean position", float(first.float().mean()))
