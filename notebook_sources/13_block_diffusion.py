# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 13 · Block diffusion, and a diffusion LM made from an AR one
#
# *About 35 minutes to read and run, exercises apart · needs: notebook 10 · Train from scratch · next: notebook 06 · Controls.*
#
# **The question:** LLaDA2.x, whose draft-and-edit notebook 04 teaches, is not a model that attends
# over its whole canvas. It is a **block-diffusion** model: inside a block attention is bidirectional,
# across blocks it is causal, and it was **converted** from an autoregressive model (Ling) rather than
# trained from scratch. Fast-dLLM v2, SDAR and BD3-LM are built the same way. This notebook writes the
# pieces by hand and checks each against labkit: the block-causal mask, the one-pass training loss,
# the exact KV cache it allows, answers whose length is not fixed in advance, and the conversion
# schedules (LLaDA2.0's block-size warm-up, DiffuLLaMA's attention annealing), measured against
# training from scratch.
#
# Words used below:
#
# - **block**: `b` consecutive positions; a position attends to its own block and the blocks before
#   it (**block-causal**). Block size 1 is the causal mask of an AR model; one block the size of the
#   canvas is full attention (`tiny`);
# - **two streams**: block-diffusion training runs the noisy canvas and the clean sequence side by side
#   in one forward pass, so each noisy block sees the *clean* blocks before it, as at decoding time;
# - **token shift**: a model converted from an AR one reads position i from hidden state i − 1 (Dream,
#   Fast-dLLM v2), so the AR model's next-token head is reused as is;
# - **bits per token**: −log₂ p of held-out text per predicted token (exact for the AR model, an upper
#   bound, −ELBO, for the diffusion models); **PPL** = 2^bits;
# - **NFE**: forward passes; **TPF**: tokens written per forward pass.

# %%
# NBVAL_CHECK_OUTPUT
import json
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

import labkit as lk
from labkit.bench.likelihood import pick_windows
from labkit.eval.likelihood import ar_bits, predicted_bits
from labkit.models.kv_cache import BlockCache
from labkit.models.load import model_folder
from labkit.models.tiny_net import block_causal_mask, two_stream_mask
from labkit.training.convert import anneal_layout, as_block_model, block_at
from labkit.training.losses import EPS, block_diffusion_loss
from labkit.training.prompts import sample_prompts
from labkit.training.recipes import RECIPES, TrainConfig

torch.set_num_threads(2)
RESULTS = Path("..") / "benchmarks" / "results"
R = json.loads((RESULTS / "blocks.json").read_text())
ar = lk.load("tiny-ar")
blk = lk.load("tiny-block4-from-ar")
print(ar.name, "and", blk.name, "loaded;", f"{sum(p.numel() for p in blk.net.parameters()):,} parameters each;",
      "block size", blk.net.config.block_size)


# %% [markdown]
# ## 1 · The block-causal mask, by hand
#
# Query i may read key j when j's block is i's block or an earlier one. Written from that sentence and
# compared with the mask `TinyDLM` uses; at block size 1 it must be the causal mask. Then the training
# mask of the two streams: the noisy canvas (first half) and the clean sequence (second half).

# %%
# NBVAL_CHECK_OUTPUT
def block_mask_by_hand(L: int, b: int) -> torch.Tensor:
    return torch.tensor([[j // b <= i // b for j in range(L)] for i in range(L)])


def two_streams_by_hand(L: int, b: int) -> torch.Tensor:
    '''[noisy; clean] queries x [noisy; clean] keys.'''
    m = torch.zeros(2 * L, 2 * L, dtype=torch.bool)
    for i in range(L):
        for j in range(L):
            m[i, j] = i // b == j // b                  # a noisy block sees itself
            m[i, L + j] = j // b < i // b               # ... and the clean blocks before it
            m[L + i, L + j] = j // b <= i // b          # the clean stream is block-causal
    return m


print("block mask by hand == labkit:", torch.equal(block_mask_by_hand(12, 4), block_causal_mask(0, 12, 12, 4)))
print("block size 1 is the causal mask:", torch.equal(block_mask_by_hand(12, 1), torch.ones(12, 12, dtype=torch.bool).tril()))
print("two-stream mask by hand == labkit:", torch.equal(two_streams_by_hand(12, 4), two_stream_mask(12, 4)))

# %%
# NBVAL_IGNORE_OUTPUT
fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), layout="constrained")
axes[0].imshow(block_mask_by_hand(12, 4), cmap="Greys")
axes[0].set_title("decoding: 12 positions, blocks of 4")
axes[1].imshow(two_streams_by_hand(12, 4), cmap="Greys")
axes[1].axhline(11.5, color="tab:red"); axes[1].axvline(11.5, color="tab:red")
axes[1].set_title("training: noisy | clean, in one pass")
for ax in axes:
    ax.set_xlabel("key"); ax.set_ylabel("query")
plt.show()

# %% [markdown]
# ## 2 · The block-diffusion loss, by hand
#
# Each block of each row is masked at its own rate t ~ U(ε, 1); the masked tokens' cross-entropy is
# weighted by 1/t of their block and averaged over all tokens. Summed over blocks this bounds the
# negative log-likelihood: each block's masked-diffusion bound given the clean blocks before it. The
# masks below are drawn with the same generator calls as `losses.block_diffusion_loss`.

# %%
# NBVAL_CHECK_OUTPUT
windows = pick_windows(ar, 8)                                         # (8, 256) held-out token windows
x0 = windows[:4, :64]                                                 # (B, L) = (4, 64)
B, L, b = x0.shape[0], x0.shape[1], blk.net.config.block_size
g_hand, g_lib = torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)
t = EPS + (1 - EPS) * torch.rand(B, L // b, generator=g_hand)         # (B, blocks): one rate per block
t_pos = t.repeat_interleave(b, dim=1)                                 # (B, L)
masked = torch.rand(B, L, generator=g_hand) < t_pos
xt = torch.where(masked, torch.full_like(x0, blk.mask_id), x0)
with torch.no_grad():
    logits = blk.net.run_two_streams(xt, x0)                          # (B, L, V): block k from clean blocks < k
    ce = F.cross_entropy(logits[masked].float(), x0[masked], reduction="none")
    mine = (ce / t_pos[masked]).sum() / (B * L)
    lib = block_diffusion_loss(blk.net, x0, blk.mask_id, generator=g_lib)
print(f"masked: {int(masked.sum())} of {B * L} tokens; loss by hand {mine:.4f} nats, labkit {lib:.4f}")
print("by hand == labkit:", torch.allclose(mine, lib, atol=1e-4))

# %% [markdown]
# ## 3 · Training a block model for a few seconds
#
# A tiny block-4 network (2 layers, width 64) from scratch on 64-token windows of the training plays,
# with `labkit.training.loop` itself. It will not write Shakespeare; the point is that the loss above
# trains. The committed models ran the same loop for the steps their recipes give (section 8).

# %%
# NBVAL_IGNORE_OUTPUT
from labkit.training.loop import setup, train_step

cfg = TrainConfig(block_size=4, hidden_size=64, num_layers=2, num_heads=2, intermediate_size=160, seq_len=64,
                  batch_size=8, steps=60, warmup=5, lr=3e-3, ckpt_every=10_000)
tmp = Path(tempfile.mkdtemp())
for f in ("tokenizer.json", "tokenizer_config.json"):
    shutil.copy(model_folder("tiny") / f, tmp / f)
run = setup(cfg, tmp, lambda *a: None, "cpu")
t0 = time.perf_counter()
losses = [train_step(run) for _ in range(cfg.steps)]
seconds = time.perf_counter() - t0
first, last = sum(losses[:10]) / 10, sum(losses[-10:]) / 10
shutil.rmtree(tmp)

# %%
# NBVAL_IGNORE_OUTPUT
print(f"{cfg.steps} steps in {seconds:.1f} s; mean loss of the first 10 steps {first:.2f}, of the last 10 {last:.2f}")

# %%
# NBVAL_CHECK_OUTPUT
print("the loss fell by more than a tenth:", last < 0.9 * first)

# %% [markdown]
# ## 4 · Block size 1 is the AR model
#
# With the token shift, a block of one token is read from the clean hidden state before it, which is
# exactly what the AR model computes. So `tiny-ar`'s own weights, read as a block-1 model, must give
# its exact likelihood, and read as a block-4 model (untrained) they must not. That gap is what
# LLaDA2.0's warm-up (blocks of 1, then 2, then 4) trains to close; how much of it this lab's
# conversion closed is section 5's table (`tiny-block4-from-ar` against `tiny-ar`), and the answer is: not all.

# %%
# NBVAL_CHECK_OUTPUT
w = windows[:4]
exact = ar_bits(ar, w)["bits_per_token"]
one = predicted_bits(as_block_model(ar, 1), w)["bits_per_token"]
four = predicted_bits(as_block_model(ar, 4), w, mc_num=4)["bits_per_token"]
print(f"tiny-ar exact {exact:.4f} bits/token; its weights as block 1 {one:.4f}; as block 4, untrained {four:.4f}")
print("block 1 == AR:", abs(one - exact) < 1e-3)
print("the warm-up schedule of tiny-block4-from-ar (step: block):",
      {s: block_at(4, RECIPES['tiny-block4-from-ar'].block_warmup, s) for s in (0, 59, 60, 119, 120)})

# %% [markdown]
# ## 5 · Likelihood and quality by block size
#
# From `benchmarks/results/blocks.json` (`make bench-blocks`): every model scored on the same tokens,
# positions 1..255 of 32 held-out windows given token 0 (`labkit.eval.likelihood.predicted_bits`),
# ± the standard error over windows, and the paired gap to the AR model. Then the targets of the
# issue that asked for these models, each checked.

# %%
# NBVAL_CHECK_OUTPUT
rows = R["likelihood"]["rows"]
print(f"{'model':<26}{'block':>6}{'bits/token':>12}{'± s.e.':>8}{'PPL / AR':>10}")
for name, r in rows.items():
    size = "-" if r["block_size"] is None else (r["block_size"] or "full")
    print(f"{name:<26}{size!s:>6}{r['bits_per_token']:>12.3f}{r['se']:>8.3f}{r['ppl_ratio_to_ar']:>10.3f}")

# %%
# NBVAL_CHECK_OUTPUT
a = rows["tiny-ar"]["bits_per_token"]
b1, b4, b16, full = (rows[k]["bits_per_token"] for k in ("tiny-ar as block 1", "tiny-block4-from-ar", "tiny-block16", "tiny"))
checks = {
    "block 1 within 2% of tiny-ar's bits": abs(b1 - a) <= 0.02 * a,
    "block 4 PPL <= 1.15 x tiny-ar's": rows["tiny-block4-from-ar"]["ppl_ratio_to_ar"] <= 1.15,
    "block 4 below tiny's bound": b4 < full,
    "block 16 between block 4 and full": b4 <= b16 <= full,
}
for k, v in checks.items():
    print(f"{k:<40} {'met' if v else 'missed'}")
print(f"block 4: PPL {rows['tiny-block4-from-ar']['ppl_ratio_to_ar']:.3f} x tiny-ar's (BD3-LM on LM1B: 1.24 x)")

# %% [markdown]
# Text quality: each model writes 128 tokens for 24 held-out prompts in blocks of 32, a block model in
# its own blocks (in longer decoding blocks its later model blocks would be written from noisy earlier
# ones, which its training never shows it; exercise 2 tries it), greedily one token
# per step and in LLaDA2.1's S mode, and in its Q mode too for `tiny-block4-edit` and `tiny-cap`, the two
# trained with T2T noise (the ones whose edits mean something); gen-PPL is the answers' perplexity under
# `tiny-ar` with its 95% bootstrap
# interval over prompts, word validity the share of words that occur in the training plays. Then the
# frontier for one model per block size: threshold decoding at a few thresholds, tokens per forward
# against gen-PPL.

# %%
# NBVAL_CHECK_OUTPUT
Q = R["quality"]["rows"]
def cell(x):
    lo, hi = x["gen_ppl_ci95"]
    return f"{x['gen_ppl']:6.1f} [{lo:5.1f}, {hi:5.1f}] {x['word_validity']:.2f} {x['tpf']:4.2f}"


MODES = ("greedy", "S mode", "Q mode")
print(f"{'model':<20}{'block':>6}  " + "  ".join(f"{m + ': gen-PPL [95% CI] words TPF':<33}" for m in MODES))
for name, r in Q.items():
    size = "-" if r["block_size"] is None else (r["block_size"] or "full")
    print(f"{name:<20}{size!s:>6}  " + "  ".join(f"{cell(r[m]) if m in r else '-':<33}" for m in MODES))

# %%
# NBVAL_IGNORE_OUTPUT
fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
for name, r in Q.items():
    if name == "tiny-ar":
        ax.scatter([1], [r["greedy"]["gen_ppl"]], marker="*", s=120, color="black", label="tiny-ar (AR)")
        continue
    if name not in R["quality"]["frontier_models"]:
        continue
    pts = sorted((r[k]["tpf"], r[k]["gen_ppl"]) for k in r if k.startswith("threshold") or k == "greedy")
    ax.plot(*zip(*pts), marker="o", label=f"{name} (block {r['block_size'] or 'full'})")
ax.set_xlabel("tokens per forward (TPF)"); ax.set_ylabel("gen-PPL under tiny-ar (lower is better)")
ax.set_title("greedy and threshold decoding at " + ", ".join(map(str, R["quality"]["thresholds"])))
ax.legend(fontsize=7)
plt.show()

# %% [markdown]
# Why does S mode write under one token per forward pass on every block model, when on `tiny-cap` it
# writes about six? Its passes on two prompts, sorted by what they did: commit masks, only edit written
# tokens, or change nothing.

# %%
# NBVAL_CHECK_OUTPUT
for name in ("tiny-block4-edit", "tiny-block4-from-ar"):
    tr = lk.generate(lk.load(name), sample_prompts(2), "speed", steps=64, seed=0, gen_length=64, block_length=4).trace
    P = tr.prompt_len
    commits, edits = tr.committed()[:, :, P:].sum(dim=(1, 2)), tr.edited()[:, :, P:].sum(dim=(1, 2))  # per pass, both rows
    print(f"{name}: S mode, 2 prompts x 64 tokens in 16 blocks of 4: {len(tr)} passes, TPF {64 / len(tr):.2f}; "
          f"{int((commits > 0).sum())} passes commit, {int(((commits == 0) & (edits > 0)).sum())} only edit, "
          f"{int(((commits == 0) & (edits == 0)).sum())} change nothing")

# %% [markdown]
# A block of 4 holds at most 4 tokens, and S mode commits only those above 0.5: on `tiny-block4-edit`
# each block takes about three passes that commit (53 for 16 blocks), then a pass that changes nothing
# (16, one per block: a block is done only when a pass changes nothing), and a few passes that only
# edit. `tiny-block4-from-ar`, never trained to edit, spends most of its passes only editing (95 of
# 167). With blocks of 32, `tiny-cap` spreads that closing pass over 32 tokens and commits many at once.

# %% [markdown]
# ## 6 · The exact KV cache
#
# Because no block sees a later one, the keys and values of every finished block are final: a cache
# of them is exact, not an approximation (labkit's `PrefixCache` and `DualCache` on `tiny` are
# approximations). `BlockCache` recomputes only the active block over the cached prefix and never
# computes anything after it. Decoding with it must give the same tokens as decoding without.

# %%
# NBVAL_CHECK_OUTPUT
prompt = sample_prompts(1)[0]
knobs = dict(gen_length=64, block_length=4, steps=64)
plain = lk.generate(blk, prompt, "low_confidence", **knobs)
cache = BlockCache(blk)
cached = lk.generate(cache, prompt, "low_confidence", **knobs)
canvas = cached.ids.shape[1]
print("same tokens with and without the cache:", torch.equal(plain.ids, cached.ids))
print(f"positions computed: {cache.computed} with the cache, {plain.stats['nfe'] * canvas} without "
      f"({plain.stats['nfe']} passes over {canvas} positions)")
print(repr(cached.texts[0][:160]))

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap_matplotlib(cached.trace, blk, kind="commit_step")

# %%
# NBVAL_CHECK_OUTPUT
S = R["speed"]
print(f"{S['model']}, {S['rule']}, blocks of {S['block_length']}, batch 1, median of {S['repeats']} interleaved rounds:")
print(f"{'canvas':>7}{'no cache s':>12}{'BlockCache s':>14}{'speed-up':>10}{'identical':>11}{'DualCache x':>13}")
for r in S["rows"]:
    print(f"{r['canvas']:>7}{r['none_seconds']:>12.2f}{r['block_seconds']:>14.2f}{r['block_speedup']:>9.1f}x"
          f"{str(r['block_identical']):>11}{r['dual_speedup']:>12.1f}x")
at256 = next(r for r in S["rows"] if r["canvas"] == 256)
print("identical at every length:", all(r["block_identical"] for r in S["rows"]),
      "| >= 2x faster at 256 tokens:", at256["block_speedup"] >= 2)

# %% [markdown]
# ## 7 · Answers of any length
#
# A full-attention model's answer length is fixed before decoding starts: the whole canvas attends to
# itself. A block model's earlier blocks never see later ones, so decoding can simply stop: once a stop
# (an end token, or a stop string) is written with everything before it decided, the blocks after it
# are never decoded, and the answer is the same as on a fixed canvas. The Shakespeare corpus ends a
# speech with a blank line, so `stop="\n\n"` asks for one speech.

# %%
# NBVAL_CHECK_OUTPUT
prompts = sample_prompts(4)
knobs = dict(gen_length=128, block_length=4, steps=128)
fixed = lk.generate(BlockCache(blk), prompts, "low_confidence", **knobs)
speech = lk.generate(BlockCache(blk), prompts, "low_confidence", stop="\n\n", **knobs)
print("forward passes per row, fixed canvas:", fixed.trace.row_nfe().tolist())
print("forward passes per row, one speech:  ", speech.trace.row_nfe().tolist())
print("answers unchanged up to the stop:", all(fixed.texts[i].startswith(speech.texts[i]) for i in range(4)))
for p, t in zip(prompts, speech.texts):
    print("---", repr(p + t))

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap_matplotlib(speech.trace, blk, kind="state")

# %%
# NBVAL_CHECK_OUTPUT
for label, key in (("one speech (stop at the speech break)", "one_speech"), ("closing lines, stop at EOS", "eos_closing_lines")):
    r = R["stop"][key]
    print(f"{label}: {r['prompts']} prompts, passes per row {r['fixed_nfe_per_row']:.1f} fixed -> {r['stop_nfe_per_row']:.1f}, "
          f"saved {r['saved']:.0%}, rows stopped {r['rows_stopped']}, answers unchanged {r['answers_unchanged']}")
print("the stop saves >= 30% of passes on answers that end early:", R["stop"]["one_speech"]["saved"] >= 0.30)

# %% [markdown]
# The second line is the honest part: the corpus writes EOS only where a play ends, so a model trained
# on it almost never writes one, even after a play's closing lines; a stop string is what makes its
# answers end. Section 10's `tiny-llada21` learned EOS after every speech, and stops by itself.
#
# ## 8 · Conversion from an AR model, against training from scratch
#
# Five runs, each read at 120, 300, 600 and 1200 steps of 16 × 256 tokens (10%, 25%, 50% and 100% of
# the 1200-step runs; 5% to 50% of `tiny`'s 2400): block 4 converted from `tiny-ar` with the warm-up
# (LLaDA2.0) and block 4 from scratch; full attention opened at once from `tiny-ar` (Dream: `tiny`'s
# own recipe, its run stopped at 1200 and then `tiny` itself at 2400), opened gradually from its causal
# mask (DiffuLLaMA's annealing), and full attention from scratch. The converted runs start, at step 0,
# from `tiny-ar`'s weights read as the target model.

# %%
# NBVAL_IGNORE_OUTPUT
C = R["curves"]["curves"]
fig, ax = plt.subplots(figsize=(7.5, 4.4), layout="constrained")
for label, c in C.items():
    pts = [(p["step"], p["bits_per_token"]) for p in c["points"]]
    ax.plot(*zip(*pts), marker="o", ls="-" if c["init_from"] else "--", label=label)
ax.axhline(rows["tiny-ar"]["bits_per_token"], color="grey", lw=0.8, ls=":", label="tiny-ar (exact)")
ax.set_xscale("symlog", linthresh=100)
ax.set_xlabel("training steps (16 x 256 tokens each)"); ax.set_ylabel("bits per token (held-out)")
ax.set_ylim(top=max(rows["tiny-ar"]["bits_per_token"] + 4, 9))
ax.legend(fontsize=7)
plt.show()


# %%
# NBVAL_CHECK_OUTPUT
def at(label, step):
    return next(p for p in C[label]["points"] if p["step"] == step)


from labkit.bench.block_tables import PAIRS, behind_points, sudoku_behind

for pair, (conv, scratch) in PAIRS.items():
    steps = [p["step"] for p in C[scratch]["points"]]
    print(f"{pair}: step " + "  ".join(f"{s:>5}" for s in steps))
    for label in (conv, scratch):
        print(f"  {label:<48}" + "  ".join(f"{at(label, s)['bits_per_token']:>5.2f}" for s in steps))
    behind = [s for s in steps if at(conv, s)["bits_per_token"] >= at(scratch, s)["bits_per_token"]]
    print(f"  conversion ahead at every budget point: {not behind}" + (f" (not at steps {behind})" if behind else ""),
          "| labkit agrees:", behind == behind_points(R, pair))
quarter = at("block 4 from tiny-ar (LLaDA2.0)", 600)
print(f"block 4 converted, at 600 steps (25% of tiny's 2400): {quarter['bits_per_token']:.3f} bits/token;",
      "at or below tiny's bound:", quarter["bits_per_token"] <= rows["tiny"]["bits_per_token"])

# %%
# NBVAL_CHECK_OUTPUT
import sys
import textwrap

sys.path.insert(0, "../benchmarks")         # benchmarks/docgen: the docs' wording of the missed targets
from docgen.blocks import misses

missed = [k for k, v in R["targets"].items() if not v["met"]]
print(f"{len(missed)} of {len(R['targets'])} targets missed; by how much, and the comparison at equal steps:")
for sentence in misses(R):
    print(textwrap.fill(sentence, 100, initial_indent="- ", subsequent_indent="  "))

# %% [markdown]
# ## 9 · The Sudoku twin converted to a masked model
#
# `tiny-sudoku-ar` reads a puzzle, then `=`, then writes the 36 solution cells left to right. The
# masked model's canvas is the grid itself: the tag `S`, then the 36 cells, clues in place and blanks
# masked. To convert the twin, each canvas position starts from the AR position that plays its part:
# the tag from `=` and cell k from solution cell k, whose hidden state in the twin predicts the next
# solution cell, which is exactly what a shifted masked model reads (`labkit.tasks.layouts.ar_positions`).
# The row, column and box tables are shared by both layouts, so they carry over as they are. Written
# by hand below and checked against the recipe's own initialisation (`tiny-sudoku-from-ar`, a quarter of
# `tiny-sudoku`'s steps).

# %%
# NBVAL_CHECK_OUTPUT
from safetensors.torch import load_file

from labkit.tasks.layouts import ar_positions
from labkit.training.loop import build_model

twin = load_file(model_folder("tiny-sudoku-ar") / "model.safetensors")
cells = 36
by_hand = torch.cat([twin["positions.weight"][cells + 1:cells + 2],          # '=' -> the tag S
                     twin["positions.weight"][cells + 2:2 * cells + 2]])    # solution cell k -> grid cell k
start = build_model(RECIPES["tiny-sudoku-from-ar"], lk.load("tiny-sudoku-ar").tokenizer)
print("AR positions read by the canvas:", ar_positions("sudoku")[:3], "...", ar_positions("sudoku")[-1])
print("by hand == labkit's initialisation:", torch.equal(by_hand, start.positions.weight))
print("attention opened:", not start.config.is_causal, "| logits shifted:", start.config.shift_logits)

# %%
# NBVAL_CHECK_OUTPUT
SD = R["sudoku"]
print(f"held-out puzzles; {SD['steps']} steps for the conversion, {SD['scratch_steps']} for tiny-sudoku "
      f"({SD['share_of_scratch_steps']:.0%})")
for model, by_rule in SD["rows"].items():
    for rule, r in by_rule.items():
        lo, hi = r["ci95"]
        print(f"  {model:<22}{rule:<20}{r['accuracy']:.3f} [{lo:.3f}, {hi:.3f}]  n {r['n']}")
conv = SD["rows"]["tiny-sudoku-from-ar"]["low-confidence"]["accuracy"]
print("converted twin >= 90% by confidence with <= 25% of the steps:",
      conv >= 0.90 and SD["share_of_scratch_steps"] <= 0.25)

# %%
# NBVAL_IGNORE_OUTPUT
fig, ax = plt.subplots(figsize=(6.5, 3.8), layout="constrained")
for label, pts in (("tiny-sudoku-from-ar (converted)", SD["curve"]), ("the same recipe from scratch", SD["control"])):
    ax.plot([p["step"] for p in pts], [p["accuracy"] for p in pts], marker="o", label=label)
ax.axhline(SD["rows"]["tiny-sudoku"]["low-confidence"]["accuracy"], color="black", ls=":",
           label=f"tiny-sudoku ({SD['scratch_steps']} steps)")
ax.axhline(SD["rows"]["tiny-sudoku-ar"]["AR (left to right)"]["accuracy"], color="grey", ls="--", label="tiny-sudoku-ar (AR)")
ax.set_xlabel("training steps (64 puzzles each)"); ax.set_ylabel("solved, by confidence order")
ax.legend(fontsize=7)
plt.show()

# %%
# NBVAL_CHECK_OUTPUT
control = {p["step"]: p["accuracy"] for p in SD["control"]}
for p in SD["curve"]:
    if p["step"] in control:
        print(f"step {p['step']:>5}: converted {p['accuracy']:.3f}, from scratch {control[p['step']]:.3f}")
behind = [s for s, a in control.items() if next(p for p in SD["curve"] if p["step"] == s)["accuracy"] <= a]
print("conversion ahead at every budget point:", not behind, *(["(not at steps", behind, ")"] if behind else []),
      "| labkit agrees:", behind == sudoku_behind(R))

# %% [markdown]
# ## 10 · A tiny LLaDA2.1 that decodes in parallel
#
# Section 5 left the block models under one token per pass. `tiny-llada21` puts the pieces of this
# notebook and notebook 04 together, in two stages (its card, `labkit/weights/tiny-llada21/README.md`,
# has the recipe): `tiny-ar` converted to blocks of 32 with the block grown over the first steps
# (section 8's LLaDA2.0 schedule), then distilled in its own blocks on `tiny-ar`'s own answers, with
# the two terms that made `tiny-cap` decode in parallel: CAP (sharpen what it already gets right) and
# T2T noise (undo swapped and stuttered tokens, so S and Q mode's edits mean something). The answers
# carry EOS after every speech, so it also learns where an answer ends. It decodes in its own blocks
# with the exact cache. First one prompt in S and Q mode, with the cache and without.

# %%
# NBVAL_CHECK_OUTPUT
l21 = lk.load("tiny-llada21")
prompt = sample_prompts(1)[0]
for mode in ("speed", "quality"):
    knobs = dict(gen_length=128, steps=128, seed=0)
    plain = lk.generate(l21, prompt, mode, **knobs)
    fast = lk.generate(BlockCache(l21), prompt, mode, **knobs)
    tr = fast.trace
    print(f"{mode}: blocks of {tr.meta['block_length']}, {len(tr)} passes for 128 tokens, TPF {128 / len(tr):.2f}, "
          f"{int(tr.edited().sum())} edits; same tokens without the cache: {torch.equal(plain.ids, fast.ids)}")
    print("   ", repr(fast.texts[0][:150]))

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap_matplotlib(fast.trace, l21, kind="state")

# %% [markdown]
# Each row of the heatmap is a pass, each column a position: a block's masks fall in a few passes,
# several at once; purple cells are tokens rewritten after they were written (orange: committed in that
# pass). Now the side by
# side run (`labkit bench llada21`, one thread, batch 1, each prompt decoded by every setting in turn):
# tokens per second, TPF, gen-PPL under `tiny-ar` of every token the passes wrote, with its interval
# and its paired ratio to the lab's default written one token per step (`tiny` greedy, no cache), at
# 128 and 224 answer tokens; then the EOS stop and the targets.

# %%
# NBVAL_CHECK_OUTPUT
from labkit.bench import llada21

L21 = json.loads((RESULTS / "llada21.json").read_text())
print(llada21.table(L21))

# %% [markdown]
# Reading it. At 128 tokens S mode writes 3.74 tokens per pass (Q mode 2.93), and with the cache its
# tokens come 9.39× as fast as `tiny` writing one per step; at 224 tokens, where the cache saves more
# of each pass, 15.68×. The cache changes no token. The text is not yet as good: S mode's gen-PPL is
# 1.72× `tiny`'s [1.36, 2.23], and Q mode, meant to buy quality with speed, writes no better than S
# mode here (8.64 against 8.34, their intervals overlapping). The gap is the model's more than the
# parallel decoding's: its own greedy decoding, one token per step, is already 1.43× `tiny`'s, and S
# mode against it is 1.21× [0.99, 1.44]. Longer training was not tried here (stage 1 stopped at half
# its schedule, stage 2 ran 600 steps, both on a CPU). The block-16 run beside it shows
# the other side of the choice: S mode there stays at 1.07× `tiny`'s gen-PPL but writes 2.41 tokens per
# pass. And the answers stop: on a 224-token canvas S mode takes 13.31 passes per row with
# `eos_early_stop` instead of 56.81, every answer unchanged.
#
# Here the edits pay, which they did not on Sudoku (notebook 12): the same commit thresholds without
# edits (`Threshold`) write more tokens per pass but far worse text: threshold 0.5 alone 5.02 tokens per
# pass at gen-PPL 63.53, S mode's 989 edits bring it to 8.34 at 3.74; threshold 0.7 alone 19.09, Q mode
# 8.64. Q mode edits less (348 edits, at 0.5 where S mode edits at any margin) and ends no better than
# S mode.

# %% [markdown]
# ## 11 · What to take away, and what is not here
#
# - The block-causal mask, with the token shift, is the difference: the same network, the same loss
#   per block, and the KV cache becomes exact and the answer length free. At block size 1 it is the AR
#   model. The shift is not a detail: exercise 3 reads `tiny-ar`'s weights without it at 10.277 bits
#   per token, with it at 5.224.
# - A converted run starts from what the AR model knows; sections 8 and 9 say, budget point by budget
#   point, whether that start is still ahead of training from scratch, and section 5's targets how
#   far the block models are from the published ratios.
# - `tiny-block4-edit`, block 4 with T2T noise, has LLaDA2.1's shape (blocks, and edits of written
#   tokens) but not its speed: section 5 runs its S and Q modes beside `tiny-cap`, and both decode at
#   under one token per forward pass (0.87 and 0.83), where LLaDA2.1's decode several. Section 10's
#   `tiny-llada21` does: blocks of 32, distilled with CAP and T2T noise, 3.74 tokens per pass in S mode
#   and 15.68× `tiny`'s tokens per second with the cache, at a gen-PPL still 1.72× `tiny`'s.
# - Not here: conversions at the scale where they pay most (Fast-dLLM v2 adapts Qwen2.5 with about 1B
#   tokens; the block runs here see 1200 steps of 16 × 256 tokens, 4.9M), and a block-1 model trained
#   as such (block size 1 is read from `tiny-ar`'s weights, which is the equality the mask must give).

# %% [markdown]
# ## Exercises
#
# Each has its solution just below it: try it in a new cell first.
#
# **1.** Attention annealing opens the causal mask a little more at each step. Draw `anneal_layout` at a
# ratio of 0.25 and 0.75 for 64 positions and check that the causal part is always open and that about
# that share of the future is.

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
g = torch.Generator().manual_seed(0)
future = ~torch.ones(64, 64, dtype=torch.bool).tril()
for ratio in (0.25, 0.75):
    m = anneal_layout(ratio, 64, g)
    print(f"ratio {ratio}: causal part open {bool(m[~future].all())}, future open {float(m[future].float().mean()):.2f}")

# %% [markdown]
# **2.** Decode 8 held-out prompts with decoding blocks of 4 and of 32 on `tiny-block4-from-ar` (a decoding
# block may hold several model blocks) and compare the gen-PPL; then try `block_length=6`, which is
# refused: why?

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
from labkit.eval.metrics import gen_nats, ppl_of

ps = sample_prompts(8)
for bl in (4, 32):
    out = lk.generate(BlockCache(blk), ps, "low_confidence", gen_length=64, block_length=bl, steps=64)
    print(f"decoding blocks of {bl}: gen-PPL {ppl_of(gen_nats(ar, ps, out.texts)):.1f}")
p = ps[0]
try:
    lk.generate(blk, p, gen_length=36, block_length=6, steps=36)
except lk.samplers.knobs.KnobError as e:
    print("refused:", e)

# %% [markdown]
# **3.** Without the token shift the converted model would have to learn a new head. Read `tiny-ar`'s
# weights as a block-1 model *without* the shift and compare its bits per token with the shifted one.

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
shifted = as_block_model(ar, 1)
plain = as_block_model(ar, 1)
plain.net.config.shift_logits = False
w2 = windows[:2]
print(f"with the shift {predicted_bits(shifted, w2)['bits_per_token']:.3f} bits/token, "
      f"without {predicted_bits(plain, w2)['bits_per_token']:.3f}")

# %% [markdown]
# **4.** From the command line: `make model-block` retrains the runs of section 8 and the committed
# block models (two queues of one thread; each run's training.json records its minutes), `labkit train
# --recipe tiny-block4-from-ar --out runs/mine --keep-steps 120,300,600` one of them with its curve
# snapshots, `make model-sudoku-from-ar` section 9's model, and `make bench-blocks` re-measures
# `blocks.json` and docs/models.md's tables.
