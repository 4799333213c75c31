# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 06 · Content controls: telling a diffusion LM what to write
#
# *About 15 minutes to read and run, exercises apart · needs: notebook 02 · Step through · next: notebook 07 · Profiling.*
#
# **The question:** a diffusion LM's canvas is complete at every step, so we can write into it and
# shape its logits before each step. How far does that go? This notebook puts fixed text at fixed
# offsets, makes chosen words appear where they fit, fills gaps in a template, rewrites one span
# of an existing line, and bans words, and for each one it checks the result and shows the steps.
#
# Every control is a hook in `labkit.controls` that works with every sampler rule. A position a
# control fixes is **frozen**: no rule may commit or edit it, and the loop restores it if a rule
# tried. The heatmaps show frozen positions in green (**pinned**).

# %%
# Parameters: CI runs this notebook on a CPU with these values.
MODEL, AR_MODEL, CAP_MODEL = "tiny", "tiny-ar", "tiny-cap"
PROMPT = "MACBETH:\nWhat news, my lord?\n"
KNOBS = dict(gen_length=64, block_length=32, steps=64)

import json, pathlib
import torch
import labkit as lk
from labkit.controls import contains_word
from labkit.eval.metrics import gen_ppl
lk.viz.notebook_mode()
lm, ar = lk.load(MODEL), lk.load(AR_MODEL)
rule = lk.defaults.sampler()        # low-confidence remasking, temperature 1.0, top-p 0.9
def first_pinned(trace, row=0):
    """{answer position: step it was first pinned at} for one row."""
    pin = trace.pinned()[:, row, trace.prompt_len:]
    return {int(p): int(pin[:, p].int().argmax()) for p in pin[-1].nonzero().flatten()}


# %% [markdown]
# ## 1 · Pin: fixed text at a fixed offset
#
# `Pin(position, text)` writes `text` at answer offset `position` (in tokens) before the first step,
# the way LLaDA's demo pins words. The model then writes around it.

# %%
# NBVAL_CHECK_OUTPUT
out = lk.generate(lm, PROMPT, rule, controls=[lk.Pin(12, " the crown")], seed=0, **KNOBS)
print(out.text)
ids = lm.encode(" the crown")
P = out.trace.prompt_len
held = (out.trace.tokens()[:, 0, P + 12:P + 12 + len(ids)] == torch.tensor(ids)).all()
print("pinned tokens unchanged at every step:", bool(held), "| NFE", out.stats["nfe"])

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(out.trace, lm, kind="state")

# %% [markdown]
# The green column is the pin: it is on the canvas from step 0, and the model's 62 steps fill the
# other 62 positions (one step fewer per pinned token, since LLaDA's rule commits
# `ceil(masks left / steps left)` per step).
#
# ## 2 · Keywords: the words must appear, where they fit
#
# `Keywords(words)` promises that every word appears somewhere in the answer, as a word of its own
# ("crowns" does not count; "crown's" does), at a place the model chooses. Three methods:
#
# - **place** (default): at the first steps, each word is placed at the free span where the model's
#   logits give its tokens the highest log-probability, one word per step so the next placement sees
#   the last. Then the model writes around them.
# - **boost**: each step adds a logit bonus to each missing word's first token at the masked positions,
#   growing from 0 to `strength` (4.0) as the answer fills up; a word already begun gets its next token
#   boosted. A word the model still has not written when half the answer is decided (`deadline` 0.5)
#   is placed as above.
# - **boost_only**: the bonus without placement, so no guarantee; it shows what boosting alone does.
#
# Whatever the method, a keyword the model writes or that gets placed is frozen, the token after it
# may not glue letters on ("crown" + "s"), and no end of text is written while a word is missing.

# %%
# NBVAL_CHECK_OUTPUT
WORDS = ("crown", "night", "sword")
runs = {}
for method in ("place", "boost", "boost_only"):
    o = lk.generate(lm, [PROMPT] * 2, rule, controls=[lk.Keywords(WORDS, method=method)], seed=0, **KNOBS)
    runs[method] = o
    hits = [sum(contains_word(t, w) for w in WORDS) for t in o.texts]
    where = first_pinned(o.trace)
    print(f"{method:<10} words found per sample {hits} | row 0 pinned positions (step): "
          + ", ".join(f"{p} ({s})" for p, s in sorted(where.items())))
print()
print("place, row 0:\n" + runs["place"].texts[0])
print("\nboost, row 0:\n" + runs["boost"].texts[0])

# %% [markdown]
# With **place** the words are pinned at steps 0-2, at the spans the nearly empty canvas makes
# likeliest. With **boost** they arrive late: the first block is written freely, and what is still
# missing at the deadline is placed into the second block (pinned at steps 32-33, the first steps
# after block 1 is complete). **boost_only** shows why placement is needed: the bonus makes the words
# likelier, but this model rarely writes all three by itself (neither sample here does; 7.5% of the
# 120 samples of the benchmark below). Frozen spans of `boost_only` are words it wrote itself.

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(runs["place"].trace, lm, kind="state")

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.token_grid(runs["boost"].trace, lm)

# %% [markdown]
# ### The methods at scale
#
# `labkit bench controls` runs 30 keyword triples drawn from nouns of the held-out plays, 4 samples
# each, 64 tokens, and compares each method with unconstrained samples from the same prompts and
# seeds. gen-PPL is the perplexity of the answers under the autoregressive twin, so a method that
# just stuffs the words in pays for it there. The saved run:

# %%
# NBVAL_CHECK_OUTPUT
bench = json.loads((pathlib.Path("..") / "benchmarks" / "results" / "controls.json").read_text())
print(f"{bench['triples']} triples x {bench['samples'] // bench['triples']} samples; targets: >= 2 of 3 in 95%, "
      f"all 3 in 85%, gen-PPL <= 1.5x unconstrained")
print(f"{'method':<12}{'>=2 of 3':>10}{'all 3':>8}{'gen-PPL':>9}{'free':>7}{'ratio':>7}  95% interval")
for m, r in bench["methods"].items():
    lo, hi = r["gen_ppl_ratio_ci95"]          # bootstrap over the samples, each paired with its free one
    print(f"{m:<12}{r['hit_at_least_2']:>10.3f}{r['hit_all_3']:>8.3f}{r['gen_ppl']:>9.2f}"
          f"{r['gen_ppl_unconstrained']:>7.2f}{r['gen_ppl_ratio']:>7.2f}  [{lo:.2f}, {hi:.2f}]")

# %% [markdown]
# Both placing methods land all three words in all 120 samples. They differ in what that costs:
# placing the words first gives 1.34× the gen-PPL of unconstrained samples from the same prompts and
# seeds, within the 1.5× target (its 95% interval, [1.24, 1.45], lies under it); boosting and placing
# late gives 1.53×, just over it, but within noise of the target ([1.40, 1.66] holds 1.5): by the deadline
# the first block is written, and the words go into whatever span the second block has left. Boosting
# alone lands all three words in 7.5% of the samples (two or more in 36%) and costs the most (2.06×):
# a bonus that pulls a word in pulls it into odd places too. That is why `place` is the default.

# %% [markdown]
# ## 3 · Infill: fill the gaps of a template
#
# `Infill(template)` fixes the whole answer: the template's text is pinned token for token, each
# `___` is a gap of 4 tokens (`___{n}` for n), and the answer ends after the template. The
# template's text must survive the tokenizer's round trip, so it comes back byte for byte.

# %%
# NBVAL_CHECK_OUTPUT
template = "Good my lord, ___ is come, and ___{6} tonight."
fill = lk.Infill(template)
o = lk.generate(lm, [PROMPT] * 3, rule, controls=[fill], seed=0, **KNOBS)
print("template:", template, f"({len(fill.layout(lm))} tokens, {fill.layout(lm).count(None)} to write)")
for t in o.texts:
    kept = t.startswith("Good my lord, ") and " is come, and " in t and t.endswith(" tonight.")
    print(f"kept {kept}: {t!r}")
infill_out = o

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(infill_out.trace, lm, kind="state")

# %% [markdown]
# Only the gap positions were ever masked; everything else is green from step 0, and the positions
# after the template are end-of-text, also pinned. The template came back byte for byte in all three samples. What went into the gaps is a 5M
# model's guess: the first gap became a name (Norfolk, and two that do not exist), the second a word
# and a line break, so "tonight." starts a new line.
#
# ## 4 · ReNoise: rewrite one span, keep the rest
#
# `ReNoise(text, spans=[...])` puts an existing text on the canvas, masks the tokens that touch the
# given spans (character ranges or substrings) again, and denoises only those. `ratio=0.3` instead
# re-masks 30% of the tokens at random (seeded). `pattern(lm)` is the check: a result keeps the text
# if it matches the kept runs verbatim with anything in between.

# %%
# NBVAL_CHECK_OUTPUT
line = "Come, you spirits that tend on mortal thoughts, unsex me here."
for edit in (lk.ReNoise(line, spans=["that tend on mortal thoughts"]), lk.ReNoise(line, ratio=0.3, seed=0)):
    ids, noise = edit.noised(lm)
    o = lk.generate(lm, [PROMPT] * 2, rule, controls=[edit], seed=0, gen_length=32, block_length=32, steps=32)
    print(f"re-masked {sum(noise)} of {len(ids)} tokens; kept runs: {edit.kept_text(lm)}")
    for t in o.texts:
        print(f"  kept {edit.pattern(lm).fullmatch(t) is not None}: {t!r}")
    print(f"  gen-PPL {gen_ppl(ar, [PROMPT] * 2, o.texts):.1f} (original line {gen_ppl(ar, [PROMPT], [line]):.1f})")
renoise_out = o
r, f = bench["renoise"], bench["infill"]                          # controls.json, read above
print(f"{r['samples']} held-out lines (labkit bench controls): re-noise {r['ratio']:.0%} gen-PPL {r['gen_ppl']:.1f}, "
      f"infill {f['gen_ppl']:.1f}, the original lines {r['gen_ppl_original']:.1f}")

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(renoise_out.trace, lm, kind="state")

# %% [markdown]
# Both edits keep every kept run exactly (`kept True`). With the span re-masked, the model replaced
# "that tend on mortal thoughts" with its favourite move: a question mark and a new speaker. Its gen-PPL
# is lower than the original line's (39.6 against 106.2), which does not make it better verse: the AR
# judge simply finds common words likelier than Shakespeare's. The random 30% cut words in half ("spir"
# + "its"), and the model patched around the halves as best it could, at a gen-PPL above the original
# line's (198.4 against 106.2). A lower gen-PPL than the original is not the rule: on the 24 held-out
# lines of `labkit bench controls` (the last line of the output), re-noise and infill both scored above
# the original lines (104.9 and 92.5 against 60.1).
#
# ## 5 · Ban, and controls together
#
# `Ban(words, eos=True)` keeps words out (every casing, with or without a leading space; a word of
# several tokens is banned when its last missing token would complete it, and a parallel step that
# completes one anyway has its later token replaced) and, with `eos=True`, the end of text.
#
# Controls compose, with every rule. Here the keywords and a pinned opening go through LLaDA2.1's Q
# mode on the distilled model, a rule that **edits** tokens it already wrote: the edits never touch
# a frozen position.

# %%
# NBVAL_CHECK_OUTPUT
o = lk.generate(lm, [PROMPT] * 2, rule, controls=[lk.Ban(["lord", "my", "sir"], eos=True)], seed=0, **KNOBS)
print("banned words found:", sum(contains_word(t, w) for t in o.texts for w in ("lord", "my", "sir")),
      "| end-of-text tokens:", int(torch.isin(o.ids[:, o.trace.prompt_len:], torch.tensor(lm.stop_ids)).sum()))
print(o.texts[0])
cap = lk.load(CAP_MODEL)
both = [lk.Pin(0, "\nSEYTON:\n"), lk.Keywords(("crown", "sword")), lk.Ban(["lord"])]
o = lk.generate(cap, [PROMPT] * 2, lk.DraftEdit.quality(temperature=0.8), controls=both, seed=0, **KNOBS)
edits, pinned = o.trace.edits(), o.trace.pinned()
print(f"\nQ mode: {int(edits.sum())} edits, {int((edits[1:] & pinned[:-1]).sum())} of them on frozen positions")
for t in o.texts:
    print(repr(t))
combo = o

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(combo.trace, cap, kind="state")

# %% [markdown]
# None of the 8 edits touched the pinned speaker line or a keyword. Look at where the words went,
# though: into speakers' names ("CYM crown:", "C sword willA:"), spans the model's logits liked at
# the first steps, when the canvas was still nearly empty. Placement is only as good as the model's
# view at that step.

# %% [markdown]
# ## 5b · Soft steering: a topic bias and classifier-free guidance
#
# Both steer by adjusting the logits at every step, and neither forces a word:
#
# - `lk.Topic(words, strength)` adds `strength` (in logit units) to the first token of each way of writing
#   each topic word, at masked positions, and to a word's next token right after its begun part. It composes
#   with every rule and control, like the others.
# - **Classifier-free guidance** (`cfg_scale`, a loop knob like `steps`): each step also runs the model with
#   the prompt masked, and moves the logits away from that unconditional prediction:
#   `logits = uncond + (1 + cfg_scale) · (cond − uncond)`. It costs a second forward pass per step.
#
# Measured like the keyword table: the same 8 samples (the same prompt and seed) at each setting; a
# sample *hits* when it contains a topic word; gen-PPL under the AR twin and distinct-2 say what it costs.
# Six settings of 8 samples take minutes, so `labkit bench steering` saved the table
# (`benchmarks/results/steering.json`); the cell runs one setting live on 2 samples with the same code, then
# prints the saved table.

# %%
# NBVAL_CHECK_OUTPUT
import sys

from labkit.eval.metrics import distinct_n, words
sys.path.insert(0, "../benchmarks")      # benchmarks/docgen writes the saved table into docs/benchmarks.md
from docgen.benchmarks_md import steering_table
TOPIC = ("crown", "king", "blood")
prompts = [PROMPT] * 2                                   # live: 2 samples (the saved table: 8)
settings = [("Topic strength 4", {}, [lk.Topic(TOPIC, strength=4)])]
print("live, 2 samples:\n| setting | samples with a topic word | topic words per sample | gen-PPL | distinct-2 |")
for name, loop, controls in settings:
    o = lk.generate(lm, prompts, rule, controls=controls, seed=0, **KNOBS, **loop)
    hits = sum(any(contains_word(t, w) for w in TOPIC) for t in o.texts)
    per_sample = sum(words(t).count(w) for t in o.texts for w in TOPIC) / len(prompts)
    d2 = sum(distinct_n(o.ids[r, o.trace.prompt_len:].tolist()) for r in range(len(prompts))) / len(prompts)
    print(f"| {name} | {hits}/{len(prompts)} | {per_sample:.2f} | {gen_ppl(ar, prompts, o.texts):.1f} | {d2:.2f} |")
saved = json.loads((pathlib.Path("..") / "benchmarks" / "results" / "steering.json").read_text())
print(f"\nsaved, {saved['samples']} samples:")
print(steering_table(saved))

# %% [markdown]
# In the saved table (each gen-PPL with its 95% bootstrap interval over the 8 samples), a small strength
# (2) tips a topic word into a few samples at little cost in gen-PPL: its interval overlaps the unsteered
# one's, so the cost is within noise; 4 gets one into most samples,
# at a gen-PPL many times the unsteered one; 8 overwhelms the model: the text collapses into repeats (distinct-2 falls) without more hits.
# Guidance at these scales moves gen-PPL and distinct-2 only a little on this 5M model: both `cfg_scale`
# rows are within noise of the unsteered one. The table is also in docs/benchmarks.md ("Content controls").

# %% [markdown]
# ## 6 · In the lab panel
#
# The panel's **keywords** box takes comma-separated words and runs them through `Keywords` with any
# sampler; the state heatmap shows where and when each word was pinned.

# %%
# NBVAL_IGNORE_OUTPUT
lk.widgets.Lab(lm, PROMPT, keywords="crown, night", temperature=1.0)


# %% [markdown]
# ## Exercises
#
# Each has its solution just below it: try it in a new cell first.
#
# **1.** Give `boost` a later deadline or a stronger bonus (`lk.Keywords(WORDS, method="boost", deadline=0.8)`,
# or `strength=8.0`): do the words come earlier or later, does the model write them itself, and what does it
# cost in gen-PPL?

# %% tags=["solution"]
# Solution
# NBVAL_CHECK_OUTPUT
def where(o, row=0):
    return ", ".join(f"{p} ({s})" for p, s in sorted(first_pinned(o.trace, row).items()))
print(f"{'boost (deadline 0.5, strength 4)':<33} frozen (step): {where(runs['boost'])}  (section 2, row 0)")
for name, kw in (("deadline 0.8", dict(deadline=0.8)), ("strength 8", dict(strength=8.0))):
    o = lk.generate(lm, PROMPT, rule, controls=[lk.Keywords(WORDS, method="boost", **kw)], seed=0, **KNOBS)
    print(f"{name:<33} frozen (step): {where(o)} | words {sum(contains_word(o.text, w) for w in WORDS)}"
          f" | gen-PPL {gen_ppl(ar, [PROMPT], [o.text]):.1f}")

# %% [markdown]
# **2.** Write a template with a long gap (`___{12}`) and fill it with `rule` and with Q mode
# (`lk.DraftEdit.quality(temperature=0.8)`, as in section 5) on `tiny-cap` (`cap`, loaded there), and with
# `rule` on `tiny`: can editing make a gap fit both sides better?

# %% tags=["solution"]
# Solution
# NBVAL_CHECK_OUTPUT
long_gap = lk.Infill("Good my lord, ___{12} tonight.")
for name, model, r in (("tiny, rule", lm, rule), ("tiny-cap, rule", cap, rule),
                       ("tiny-cap, Q mode", cap, lk.DraftEdit.quality(temperature=0.8))):
    o = lk.generate(model, [PROMPT] * 2, r, controls=[long_gap], seed=0, **KNOBS)
    print(f"{name:<17} edits {int(o.trace.edits().sum())} | gen-PPL {gen_ppl(ar, [PROMPT] * 2, o.texts):.1f}")
    for t in o.texts:
        print(f"  {t!r}")

# %% [markdown]
# **3.** Re-noise the same line with `ratio` 0.1, 0.3 and 0.6 and watch gen-PPL: how much of a line can a
# 5M-parameter model rewrite before it stops sounding like Shakespeare?

# %% tags=["solution"]
# Solution
# NBVAL_CHECK_OUTPUT
print(f"the original line: gen-PPL {gen_ppl(ar, [PROMPT], [line]):.1f}")
for ratio in (0.1, 0.3, 0.6):
    edit = lk.ReNoise(line, ratio=ratio, seed=0)
    ids, noise = edit.noised(lm)
    o = lk.generate(lm, [PROMPT] * 2, rule, controls=[edit], seed=0, gen_length=32, block_length=32, steps=32)
    print(f"ratio {ratio}: re-masked {sum(noise)} of {len(ids)} tokens, gen-PPL {gen_ppl(ar, [PROMPT] * 2, o.texts):.1f}"
          f" | {o.texts[0]!r}")
