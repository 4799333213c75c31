# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 02 · Step through one denoising run
#
# *About 15 minutes to read and run, exercises apart · needs: notebook 01 · Quickstart · next: notebook 03 · Parallel decoding (the start-here path: 01 → 02 → 03 → 05).*
#
# **The question:** when a masked diffusion LM writes 64 tokens in 64 steps, *which* position does it
# write at each step, how sure is it, and what decides the order?
#
# This is a guided tour of one run, view by view. Every view is drawn from the same **trace**: the
# canvas after each step, the model's proposal and its confidence at each position, and which positions
# were committed (mask → token) or edited (token → token). The quickstart (01) introduced the views;
# here we read them closely and change one thing at a time: the remasking rule, the block length,
# and finally a rule that edits.

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
# ## The run
#
# Greedy decoding (temperature 0) with LLaDA's low-confidence remasking: each step the model predicts
# every masked position of the current block, and the one it is most sure of is committed. Greedy
# means the run is the same every time, so the numbers below are facts about this model.

# %%
# NBVAL_CHECK_OUTPUT
out = run()
trace, P = out.trace, out.trace.prompt_len
print(PROMPT + out.text)
print("NFE", out.stats["nfe"], "| TPF", out.stats["tpf"])

# %% [markdown]
# ## View 1 · mask state: *where* the canvas fills
#
# Rows are steps (top to bottom), columns are answer positions. Grey is still masked, orange is the
# token committed at that step, blue was committed earlier. The dotted line is the block boundary:
# block 2 (positions 32-63) stays grey until block 1 is full. That is **semi-autoregressive block
# decoding**: inside a block the order is free, across blocks it is left to right.

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
# A rank correlation near +1 would mean left to right, like an autoregressive model. The value above
# says how far from that this model is *inside* a block.
#
# ## View 2 · confidence: *how sure* each commit was
#
# Each committed token coloured by the probability the model gave it at the moment it was written.
# Low-confidence remasking always takes the surest position, so within a block the early commits are
# the confident ones and the hard positions are left for last, when the most context is known.

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
# ## View 3 · commit order: *what* gets written first
#
# One row: each position coloured by the step it was committed at (hover for the token). The first
# commits of a block are usually structure (newlines, the next speaker's name and its colon, punctuation):
# tokens the model can place without knowing the words around them.

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(trace, lm, kind="commit_step")

# %%
# NBVAL_CHECK_OUTPUT
first = order.argsort()[:10].tolist()
print("first 10 positions written:", first)
print("their tokens:", [lm.token_strings([trace.final[0, P + i]])[0] for i in first])

# %% [markdown]
# ## What low-confidence remasking does: compare with random order
#
# `remasking="random"` keeps everything else and commits a *random* masked position each step (LLaDA's
# other option). Read the text and the mean confidence of the commits below, then look at the commit
# order.

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
# Random order loses the structure-first skeleton, and repeats far more ("Warwick, and Warwick";
# the text above repeats "my lords" too). Yet its commits are *more* confident on average: a repeated
# phrase's next token is easy to predict. Confidence measures how sure the model is, not how good the text is; that
# is why the sampler benchmark (notebook 03) scores text with an independent model.

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(rand.trace, lm, kind="commit_step")

# %% [markdown]
# ## Where semi-AR blocks show up: one block against small blocks
#
# With `block_length = 64` the whole answer is one block and the model may write anywhere. Some
# diffusion LMs (LLaDA, trained on answers padded with end-of-text tokens) then fill the *end* of the
# canvas early, which is one reason semi-AR blocks exist. Does this model? And how much order do
# smaller blocks impose?

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
# This model keeps its first commits near the start even in one block of 64 (it was adapted from an
# autoregressive twin, and its training windows are not padded), so it does not show the end-first
# effect. What blocks do show is how much order they impose: the rank correlation of position and
# commit step rises from +0.24 (one block) to +0.85 (blocks of 32) and +1.00 (blocks of 8 tokens, one
# step per token within each). +1.00 is rounded to two decimals: inside each 8-token block the order
# is still the model's choice, so small blocks make decoding nearly left to right, not strictly.

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(run(block=64).trace, lm, kind="state")

# %% [markdown]
# ## View 4 · edits: when a rule rewrites what it wrote
#
# Low-confidence remasking never changes a committed token. LLaDA2.1's draft-and-edit rule does: with
# S-mode thresholds it drafts every token above 0.5 in parallel (mask → token, M2T) and rewrites any
# written token whose prediction has changed (token → token, T2T, editing threshold 0.0). Drafting
# many tokens at once needs a model that is sure of them, so this view runs on **`tiny-cap`**, the
# embedded model trained for parallel decoding and editing (notebook 04 shows how). `tiny`, which
# commits about one token per forward pass, is not confident enough: under S mode its edits fight
# each other. The edits view marks the rewrites; in the state view they appear in purple.
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
# Parallel drafts collide: in one step, neighbouring positions each guess a safe filler (a comma, a
# newline) because none of them can see what the others will write. Once the words around them are
# drafted, the model's prediction for those positions changes and T2T rewrites them: most edits above
# turn a filler into a word. That is what LLaDA2.1's editing is for.
#

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(de.trace, cap, kind="edits")

# %% [markdown]
# ## Scrub through it
#
# The step slider below is a plotly figure with one frame per step (no kernel needed). For the live
# panel with every knob, see notebook 05.

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.step_slider(trace, lm)

# %% [markdown]
# ## Build it yourself: the decoding loop in 20 lines
#
# Everything above came from `lk.generate`. Here is the loop it runs for LLaDA's low-confidence rule,
# written out on the bare model call `lm(x)` (a canvas of token ids in, one row of logits per position
# out). Per block, left to right; per step: one forward pass, the most likely token and its
# probability at every masked position of the block (the **confidence**), then commit the `k` most
# confident, `k = ceil(masks left / steps left)`.

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
# Twenty lines hold the whole idea; the lab's loop adds batches (left padding and an attention mask),
# sampling (temperature, top-k, top-p), other rules (thresholds, editing), controls, KV caches and
# the trace. Try changing `confidence` to a **margin** (top-1 minus top-2 probability) and compare the
# commit order with exercise 3 below.
#
# ## Exercises
#
# Each has its solution just below it: try it in a new cell first.
#
# **1.** Change the prompt to a speaker name only (`"HAMLET:\n"`). Does the first block still start
# with structure tokens?

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
ham = lk.generate(lm, "HAMLET:\n", lk.LowConfidence(), gen_length=GEN, block_length=BLOCK, steps=GEN)
hp = ham.trace.prompt_len
first = ham.trace.commit_step()[0, hp:].argsort()[:10].tolist()
print("first 10 tokens written:", [lm.token_strings([ham.trace.final[0, hp + i]])[0] for i in first])

# %% [markdown]
# **2.** Run with `steps=16` (4 tokens per step). Which view changes most: the order, the confidence of
# the commits, or the text?

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
# **3.** Compare `lk.LowConfidence(score="margin")` with the default probability score: does the commit
# order change, and does the text?

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
margin = run(lk.LowConfidence(score="margin"))
m_order = margin.trace.commit_step()[0, P:]
print("positions written at a different step:", int((m_order != order).sum()), "of", GEN)
print("same text:", margin.text == out.text)
