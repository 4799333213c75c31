# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 04 · Draft and edit: can a diffusion LM fix what it already wrote?
#
# *About 20 minutes to read and run, exercises apart · needs: notebook 03 · Parallel decoding · next: notebook 11 · Where diffusion wins.*
#
# **The question:** masked diffusion commits a token and never looks back. LLaDA2.1 adds **editing**:
# each step may also rewrite a token already on the canvas (token → token, **T2T**) when the model now
# prefers another with probability above `editing_threshold`, besides committing masks (mask → token,
# **M2T**) above `threshold`. A block keeps stepping after it is full, up to `max_post_steps`, until a
# step changes nothing. Two presets come from LLaDA2.1's model card:
#
# | mode | threshold | editing_threshold | max_post_steps |
# |---|---|---|---|
# | S (speed) | 0.5 | 0.0 | 16 |
# | Q (quality) | 0.7 | 0.5 | 16 |
#
# Editing needs a model trained for it: a plain masked-diffusion model is never trained on filled
# positions, so its proposals there are noise. `tiny-cap` was also trained with T2T noise (20% of the
# visible tokens swapped for others, to be corrected; half of those are copies of a neighbour, the
# collision a parallel draft makes), so this notebook uses it.

# %%
# Parameters: CI runs this notebook on a CPU with these values.
MODEL, AR_MODEL = "tiny-cap", "tiny-ar"
PROMPT = "MACBETH:\n"
import json, pathlib
import labkit as lk
from labkit.bench import draft_edit
from labkit.bench.samplers import per_prompt, run_one
from labkit.eval.evaluate import sample_prompts
from labkit.eval.intervals import paired_ratio
from labkit.eval.metrics import gen_ppl
lk.viz.notebook_mode()
lm, ar = lk.load(MODEL), lk.load(AR_MODEL)
KW = dict(gen_length=128, block_length=32, steps=128)
RESULTS = pathlib.Path("..") / "benchmarks" / "results"
SAVED = json.loads((RESULTS / "draft_edit.json").read_text())     # `labkit bench draft-edit`: the sweeps below

# %% [markdown]
# ## S and Q mode side by side

# %%
# NBVAL_CHECK_OUTPUT
runs = {"S": lk.DraftEdit.speed(), "Q": lk.DraftEdit.quality()}
outs = {}
for mode, rule in runs.items():
    out = outs[mode] = lk.generate(lm, PROMPT, rule, **KW)
    tr = out.trace
    print(f"--- {mode} mode: NFE {out.stats['nfe']}, TPF {out.stats['tpf']:.2f}, "
          f"commits {int(tr.committed().sum())}, edits {int(tr.edits().sum())}")
    print(PROMPT + out.text)


# %% [markdown]
# Both modes draft 4 to 5 tokens per forward pass. The text is as repetitive as its teacher's greedy
# decoding (`No, no, no` again and again: greedy decoding of a 5M model loops), with small breaks
# where parallel drafts collide (`no more more`, and a speaker name twice in a row,
# `CRESSIDA` / `CRESSIDA:`, in S mode). Those collisions are what editing is meant to repair. Q mode's
# higher thresholds make fewer of them: its run above has neither, at 4.13 tokens per forward pass
# against 4.92, with 8 edits against S mode's 35.
#
# ## Real edit events
#
# Every T2T edit in the S-mode run: the step, the position in the answer, the token that was there and
# the token that replaced it, with the model's probability for the new one. Look for the low-p edits
# (p 0.2 to 0.6): with `editing_threshold=0.0`, S mode lets any proposal that differs overwrite a token,
# and what Q mode's 0.5 guards against. (LLaDA2.1's card warns that a low threshold may cause
# "stuttering", repeated n-grams.) On the plain `tiny` model, which was never trained to edit, S mode
# commits 0.77 tokens per forward pass, fewer than one, and its gen-PPL is 1651: the `draft_edit_speed`
# row of `tiny` in notebook 03's saved benchmark table; exercise 2 below runs it and prints its edits.

# %%
# NBVAL_CHECK_OUTPUT
def edit_events(out, model=lm):
    tr, P = out.trace, out.trace.prompt_len
    before = tr.init.long()
    events = []
    for rec in tr:
        for pos in rec.edited[0].nonzero().flatten().tolist():
            old, new = model.token_strings([before[0, pos], rec.tokens[0, pos]])
            events.append((rec.step, pos - P, old, new, round(float(rec.confidence[0, pos]), 2)))
        before = rec.tokens.long()
    return events
ev = edit_events(outs["S"])
print(len(ev), "edits; the first ten (step, position, old → new, p):")
for step, pos, old, new, p in ev[:10]:
    print(f"  step {step:>3}  pos {pos:>3}  {old!r} → {new!r}  p={p}")

# %% [markdown]
# The **edits heatmap** marks every rewrite (steps × positions); the state heatmap next to it shows
# where each block's post-edit steps begin (rows with no new commits).

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(outs["S"].trace, lm, kind="edits")

# %%
# NBVAL_IGNORE_OUTPUT
first_edit = ev[0][0] if ev else 0
lk.viz.token_grid(outs["S"].trace, lm, step=first_edit)

# %% [markdown]
# ## A readable correction
#
# The edits above swap one sub-word piece for another mid-draft, which is hard to read as "fixing a
# mistake". To see one that is, compare each block's **draft** (the canvas at the step its last mask
# was committed) with its **final** text (after the post-edit steps), word by word. A replaced span is
# a *readable correction* when the draft held a word the training plays never use (or a word written
# twice in a row) and the final text holds only words the plays use
# (`labkit.eval.corrections.corrections`). The search runs S mode on 12 held-out prompts with 3 seeds
# (seed 0 greedy, seeds 1 and 2 sampled at temperature 0.8; 64 tokens, blocks of 32). Its 36 runs are
# saved by `labkit bench draft-edit` (`benchmarks/results/draft_edit.json`); the cell below runs the
# same code live for seed 0 on the first 2 prompts, checks that it finds what the saved search found
# there, and lists every correction of the full search.

# %%
# NBVAL_CHECK_OUTPUT
from labkit.eval.corrections import corrections
SEARCH = dict(gen_length=64, block_length=32, steps=64)
search_prompts = sample_prompts(12)
rules = {seed: lk.DraftEdit.speed(temperature=0.0 if seed == 0 else 0.8) for seed in range(3)}
found = []                                              # (seed, prompt index, Correction)
for seed in (0,):                                       # live: seed 0 on the first 2 prompts (the saved run: all 36)
    for i, p in enumerate(search_prompts[:2]):
        out = lk.generate(lm, p, rules[seed], seed=seed, **SEARCH)
        found += [(seed, i, c) for c in corrections(out, lm, SEARCH["block_length"])]
print(f"live, seed 0, prompts 0-1: {len(found)} readable corrections")
for seed, i, c in found:
    print(f"  seed {seed}  prompt {i:>2}  block {c.block}  {c.before!r} → {c.after!r}  ({c.why})")
saved = SAVED["corrections"]["found"]
same = [(s, i, c.before, c.after) for s, i, c in found] == \
    [(f["seed"], f["prompt"], f["before"], f["after"]) for f in saved if f["seed"] == 0 and f["prompt"] < 2]
print("the same as the saved search's:", same)
print("\nthe saved search:")
print(draft_edit.corrections_table(SAVED))

# %% [markdown]
# The one with the longest misspelling, run again: its block as drafted and as finished, and every
# edit the post-edit steps made in that block (step, position in the answer, old → new piece, p).

# %%
# NBVAL_CHECK_OUTPUT
import re
longest = max(saved, key=lambda f: len(f["before"]))             # the first of the longest
seed, i = longest["seed"], longest["prompt"]
run = lk.generate(lm, search_prompts[i], rules[seed], seed=seed, **SEARCH)
best = next(c for c in corrections(run, lm, SEARCH["block_length"]) if c.before == longest["before"])
lo = best.block * SEARCH["block_length"]
fix = [e for e in edit_events(run) if lo <= e[1] < lo + SEARCH["block_length"] and e[0] > best.draft_step]
mark = lambda text, span: re.sub(r"\s*".join(map(re.escape, span.split())), lambda m: f"[{m.group()}]", text, count=1)
print(f"seed {seed}, prompt {i} (…{search_prompts[i][-40:]!r}), block {best.block}, full at step {best.draft_step}")
print("draft:", repr(mark(best.draft, best.before)))
print("final:", repr(mark(best.final, best.after)))
for step, pos, old, new, p in fix:
    print(f"  step {step:>3}  pos {pos:>3}  {old!r} → {new!r}  p={p}")

# %%
# NBVAL_IGNORE_OUTPUT
import matplotlib.pyplot as plt
fig, (ax_map, ax_text) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained", width_ratios=(1.3, 1))
lk.viz.heatmap_matplotlib(run.trace, lm, kind="edits", ax=ax_map)
ax_map.axvspan(lo - 0.5, lo + SEARCH["block_length"] - 0.5, color="gold", alpha=0.15)
ax_map.axhline(best.draft_step + 0.5, color="black", lw=0.8, ls="--")       # the block is full below it
ax_map.set_title(f"edits (block {best.block} shaded; dashed: block full)")
ax_text.axis("off")
for y, (label, text, colour) in zip((0.95, 0.45), (("draft", mark(best.draft, best.before), "firebrick"),
                                                    ("final", mark(best.final, best.after), "darkgreen"))):
    ax_text.text(0, y, label, fontweight="bold", color=colour, va="top", transform=ax_text.transAxes)
    ax_text.text(0, y - 0.07, text, family="monospace", fontsize=9, va="top", transform=ax_text.transAxes)
plt.close(fig)
fig

# %% [markdown]
# The search found 13 readable corrections in 36 runs, 7 of them in speaker names, where one wrong
# piece shows at once. The longest comes from the greedy run of prompt 1: its first block was full at
# step 3 with the next speaker named `OMERINIUS`, a name the plays never use. In the post-edit steps S
# mode rewrote two pieces, `'OM'` → `'C'` (p 0.71) and then `'ER'` → `'OM'` (p 0.79), and the name
# became `COMINIUS`, a speaker the model saw in training; nothing else in the block changed. This is
# what T2T is for: the draft's pieces were committed side by side, each sure enough given masks around
# it, and only once the whole name stood on the canvas did the model prefer another first piece. The
# list also shows the limits of the test: a word-by-word comparison catches misspellings and doubled
# words, not a wrong but real word.

# %% [markdown]
# ## Does it help? Editing and multi-block editing on several prompts
#
# Multi-block editing (MBE) lets T2T also rewrite the previous block, but only above its own
# threshold (0.9) and at most one token per step (see `labkit/samplers/draft_edit.py`). We compare
# gen-PPL, TPF and distinct-2 with and without it, and against no editing at all (threshold decoding
# with the same τ), on the same 6 held-out prompts (saved by `labkit bench draft-edit`; the cell runs
# two of the rules live on the first 2). Read gen-PPL together with distinct-2: text that loops (or is
# mostly blank lines) is easy to predict, so a low gen-PPL with a low distinct-2 is not fluency.

# %%
# NBVAL_CHECK_OUTPUT
prompts = sample_prompts(6)
rules = {"threshold 0.5 (no edits)": lk.Threshold(threshold=0.5), "S": lk.DraftEdit.speed(),
         "S + MBE": lk.DraftEdit.speed(mbe_blocks=1), "threshold 0.7 (no edits)": lk.Threshold(threshold=0.7),
         "Q": lk.DraftEdit.quality(), "Q + MBE": lk.DraftEdit.quality(mbe_blocks=1)}
print("live, the first 2 prompts:")
for name in ("threshold 0.5 (no edits)", "S"):
    row, texts = run_one(lm, rules[name], prompts[:2], steps=128, gen_length=128, block_length=32, tps_prompts=0)
    print(f"{name:<26} NFE {row['nfe']:6.1f}  TPF {row['tpf']:.2f}  gen-PPL {gen_ppl(ar, prompts[:2], texts):6.2f}"
          f"  distinct-2 {row['distinct_2']:.3f}")
print(f"\nsaved, all {SAVED['prompts']} prompts:")
print(draft_edit.modes_table(SAVED))
cap96 = json.loads((RESULTS / "samplers.json").read_text())["cap"]
print("\ngen-PPL ratios on the same prompts, 95% bootstrap interval (1 inside = within noise):")
for n, res, a, b in ((6, SAVED["modes"], "threshold 0.5 (no edits)", "S"), (6, SAVED["modes"], "threshold 0.7 (no edits)", "Q"),
                     (6, SAVED["modes"], "S + MBE", "S"), (6, SAVED["modes"], "Q + MBE", "Q"),
                     (96, cap96, "draft_edit_speed_mbe", "draft_edit_speed"), (96, cap96, "draft_edit_quality_mbe", "draft_edit_quality")):
    r, lo, hi = paired_ratio(per_prompt(res[a]), per_prompt(res[b]))
    print(f"  {n:>2} prompts  {a} / {b}: {r:.3f} [{lo:.3f}, {hi:.3f}]")

# %% [markdown]
# Editing is what makes low thresholds usable. In the saved run, at τ 0.5 without edits, gen-PPL is 35.9; S mode commits
# at the same τ and edits, and lands at 6.6 with 5.8 tokens per forward. Q mode against τ 0.7 alone:
# 6.6 against 13.4, at 4.0 tokens per forward instead of 5.1. Both gaps are beyond noise even on 6
# prompts: τ 0.5 alone scores 5.478 [3.388, 9.032] times S mode's gen-PPL, τ 0.7 alone 2.021 [1.541, 2.978]
# times Q mode's.
#
# Multi-block editing moved S mode's gen-PPL on these prompts from 6.56 to 6.36 (at 5.9 tokens per
# forward against 5.8), a ratio of 0.970 [0.913, 1.000]: within noise. It changed nothing in Q mode:
# the same figures to the last digit, so no Q-mode proposal for an earlier block cleared its 0.9 bar.
# On the 96-prompt benchmark (`benchmarks/results/samplers.json`, `cap`) it moved S mode's gen-PPL from
# 7.38 to 7.36 and Q mode's from 6.62 to 6.59, with tokens per forward within 0.01: both within noise
# (0.997 [0.991, 1.001] and 0.996 [0.986, 1.003]). A model distilled from its own
# greedy answers rarely changes its mind about a finished block with p > 0.9.

# %% [markdown]
# ## The spectrum between S and Q: a sweep of both thresholds
#
# LLaDA2.1 presents S and Q as two settings of one dial, not two algorithms: the mask threshold τ_M2T
# decides how sure a draft token must be to be committed, the editing threshold τ_T2T how sure the model
# must be of another token to rewrite a written one. S mode is τ_M2T 0.5 / τ_T2T 0.0, Q mode 0.7 / 0.5.
# `labkit bench draft-edit` swept both on the same 6 prompts (128 tokens, blocks of 32): tokens per forward
# against gen-PPL, one line per editing threshold, S and Q marked on the grid. The cell runs two points of
# the grid live on the first 2 prompts, then prints the saved grid.

# %%
# NBVAL_CHECK_OUTPUT
M2T, T2T = (0.3, 0.5, 0.7, 0.9), (0.0, 0.5, 0.9)
for m2t, t2t in ((0.3, 0.9), (0.7, 0.9)):                     # live: two points, the first 2 prompts
    rule = lk.DraftEdit(threshold=m2t, editing_threshold=t2t)
    row, texts = run_one(lm, rule, prompts[:2], steps=128, gen_length=128, block_length=32, tps_prompts=0)
    print(f"live, 2 prompts: tau M2T {m2t} tau T2T {t2t}: TPF {row['tpf']:.2f}, gen-PPL {gen_ppl(ar, prompts[:2], texts):.2f}")
sweep = {(s["m2t"], s["t2t"]): (s["tpf"], s["gen_ppl"]) for s in SAVED["sweep"]}    # (τ_M2T, τ_T2T) → (TPF, gen-PPL)
print(f"\nsaved, all {SAVED['prompts']} prompts:")
print(draft_edit.sweep_table(SAVED))

# %%
# NBVAL_IGNORE_OUTPUT
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(6, 3.8), layout="constrained")
for t2t in T2T:
    pts = [sweep[m2t, t2t] for m2t in M2T]
    ax.plot(*zip(*pts), "o-", label=f"τ_T2T {t2t}")
    for m2t, (x, y) in zip(M2T, pts):
        ax.annotate(f"{m2t}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
for name, key in (("S", (0.5, 0.0)), ("Q", (0.7, 0.5))):
    ax.scatter(*sweep[key], s=220, facecolors="none", edgecolors="black")
    ax.annotate(f"{name} mode", sweep[key], textcoords="offset points", xytext=(8, -14), fontweight="bold")
ax.set(xlabel="tokens per forward pass (TPF)", ylabel="gen-PPL (AR twin)", yscale="log",
       title="tiny-cap: mask threshold (labels) × editing threshold (lines)")
ax.legend(); ax.grid(alpha=0.3)
plt.close(fig)
fig

# %% [markdown]
# Read the lines against each other. With few edits (τ_T2T 0.9) a low mask threshold is fast and poor (the
# point furthest right is also the highest), and raising τ_M2T trades speed for quality. With edits allowed at
# any confidence (τ_T2T 0.0, S mode's line) gen-PPL stays low at every mask threshold: the edits repair what
# the drafts get wrong, and at the lowest τ_M2T they take so many extra passes that TPF falls again. S and Q
# are two points of this surface, and any other point is one `lk.DraftEdit(threshold=..., editing_threshold=...)`
# away; the panel (notebook 05) has both sliders.

# %% [markdown]
# Where do S and Q sit on it? The cell below reads both off the grid, with the point of lowest gen-PPL,
# and the same two modes from the 96-prompt benchmark of notebook 03 (`benchmarks/results/samplers.json`).

# %%
# NBVAL_CHECK_OUTPUT
s, q = sweep[0.5, 0.0], sweep[0.7, 0.5]
low = min(sweep, key=lambda k: sweep[k][1])
print(f"{SAVED['prompts']} prompts: S mode TPF {s[0]:.2f}, gen-PPL {s[1]:.2f} | Q mode TPF {q[0]:.2f}, gen-PPL {q[1]:.2f}"
      f" | faster: {'S' if s[0] > q[0] else 'Q'}, lower gen-PPL: {'S' if s[1] < q[1] else 'Q'}")
print(f"  lowest gen-PPL of the grid: tau M2T {low[0]} / tau T2T {low[1]}, TPF {sweep[low][0]:.2f}, gen-PPL {sweep[low][1]:.2f}")
bench = json.loads((RESULTS / "samplers.json").read_text())["cap"]
s96, q96 = bench["draft_edit_speed"], bench["draft_edit_quality"]
print(f"{s96['prompts']} prompts: S mode TPF {s96['tpf']:.2f}, gen-PPL {s96['gen_ppl']:.2f} | Q mode TPF {q96['tpf']:.2f}, "
      f"gen-PPL {q96['gen_ppl']:.2f} | faster: {'S' if s96['tpf'] > q96['tpf'] else 'Q'}, "
      f"lower gen-PPL: {'S' if s96['gen_ppl'] < q96['gen_ppl'] else 'Q'}")
by_point = {(r["m2t"], r["t2t"]): r for r in SAVED["sweep"]}
for n, (srow, qrow) in ((SAVED["prompts"], (by_point[0.5, 0.0], by_point[0.7, 0.5])), (s96["prompts"], (s96, q96))):
    r, lo, hi = paired_ratio(per_prompt(srow), per_prompt(qrow))      # the same prompts, resampled together
    print(f"{n} prompts: gen-PPL S / Q {r:.3f}, 95% interval [{lo:.3f}, {hi:.3f}] -> "
          + ("within noise" if lo <= 1 <= hi else "S lower" if hi < 1 else "Q lower"))

# %% [markdown]
# On these 6 prompts S mode is the faster of the two (5.77 tokens per forward against 3.98) and its
# gen-PPL is slightly lower (6.56 against 6.61), within noise: S over Q 0.992 [0.793, 1.160]. τ_M2T 0.7 /
# τ_T2T 0.9 has the lowest gen-PPL of the grid (6.06), at 4.17 tokens per forward: faster than Q mode,
# slower than S mode, and on 6 prompts not told apart from either preset. "S faster, Q better",
# LLaDA2.1's ordering, shows on the 96 prompts of notebook 03's benchmark (gen-PPL 7.38 for S mode,
# 6.62 for Q mode: S over Q 1.116 [1.028, 1.217], beyond noise), not on these 6. On a model this
# small, which preset reads better depends on the prompts; the grid says where to look.

# %% [markdown]
# ## Exercises
#
# Each has its solution just below it: try it in a new cell first.
#
# **1.** Run S mode with `editing_threshold=0.9` (`lk.DraftEdit.speed(editing_threshold=0.9)`) on `PROMPT`:
# how many edits does it make, how sure is the least sure of them, and what happens to the collisions?

# %% tags=["solution"]
# Solution
# NBVAL_CHECK_OUTPUT
sure = lk.generate(lm, PROMPT, lk.DraftEdit.speed(editing_threshold=0.9), **KW)
for name, o in (("S mode", outs["S"]), ("S, editing_threshold 0.9", sure)):
    ps = [p for *_, p in edit_events(o)]
    print(f"{name:<25} NFE {o.stats['nfe']}, TPF {o.stats['tpf']:.2f}, {len(ps)} edits, "
          f"the least sure at p={min(ps, default=float('nan'))}")
print(PROMPT + sure.text)

# %% [markdown]
# **2.** Run S mode on the plain `tiny` model, never trained to edit: what do its edits look like?

# %% tags=["solution"]
# Solution
# NBVAL_CHECK_OUTPUT
plain = lk.load("tiny")                        # the same tokenizer as tiny-cap
o = lk.generate(plain, PROMPT, lk.DraftEdit.speed(), **SEARCH)          # 64 tokens, to keep it quick
ev_plain = edit_events(o, plain)
print(f"tiny, S mode, 64 tokens: NFE {o.stats['nfe']}, TPF {o.stats['tpf']:.2f}, {len(ev_plain)} edits; the first ten:")
for step, pos, old, new, p in ev_plain[:10]:
    print(f"  step {step:>3}  pos {pos:>3}  {old!r} → {new!r}  p={p}")
print(PROMPT + o.text)


# %% [markdown]
# **3.** Give multi-block editing more reach (`mbe_blocks=3`, `mbe_threshold=0.7`) and count the edits that
# land in a block before the one being drafted, on `PROMPT` and on the first held-out prompt; then find them
# in the edits heatmap.

# %% tags=["solution"]
# Solution
# NBVAL_CHECK_OUTPUT
def earlier_block_edits(out, row=0, block=32):
    """Edits to a block before the one the latest commit went to: what only MBE may do."""
    tr, P = out.trace, out.trace.prompt_len
    committed, edits = tr.committed()[:, row, P:], tr.edits()[:, row, P:]
    current, n = 0, 0
    for step in range(len(committed)):
        if committed[step].any():
            current = int(committed[step].nonzero().max()) // block
        n += sum(int(pos) // block < current for pos in edits[step].nonzero().flatten())
    return n
print("S mode, edits into an earlier block (PROMPT, held-out prompt 0):")
for name, r in (("MBE: 1 block, p > 0.9", lk.DraftEdit.speed(mbe_blocks=1)),
                ("MBE: 3 blocks, p > 0.7", lk.DraftEdit.speed(mbe_blocks=3, mbe_threshold=0.7))):
    reach = lk.generate(lm, [PROMPT, prompts[0]], r, **KW)              # each row decodes as it would alone
    print(f"  {name:<23} {earlier_block_edits(reach, 0)}, {earlier_block_edits(reach, 1)}")

# %% tags=["solution"]
# NBVAL_IGNORE_OUTPUT
# Solution (continued)
lk.viz.heatmap(reach.trace, lm, kind="edits", row=1)       # held-out prompt 0, 3 blocks at p > 0.7
