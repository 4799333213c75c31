# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 11 · Where diffusion wins, measured exactly
#
# *About 30 minutes to read and run, exercises apart · needs: notebook 04 · Draft and edit · next: notebook 12 · Rewards.*
#
# **The question:** on Shakespeare a small diffusion LM is sure of itself only where the text repeats,
# so parallel decoding looks like a trick. The research teaches otherwise on tasks with one right
# answer: the *order* in which a model fills its canvas decides how many Sudokus it solves (Kim et al.,
# ICML 2025, on 9×9: a masked model 6.9% in random order and 89.5% by top-probability margin; an AR model
# 9.7% left to right, and about 87% when trained to write the cells in a logic solver's order), a masked model
# can be asked a fact backwards (Kitouni et al. 2024; LLaDA's reversed poems), and an answer fixed by
# the prompt can be written in one forward pass. Here you measure each on small models this project
# trained and ships, **one pair per task**, each pair trained the way its task is learned:
#
# | task | masked diffusion model | its AR twin | what the positions know |
# |---|---|---|---|
# | 6×6 Sudoku | `tiny-sudoku`: the canvas *is* the grid | `tiny-sudoku-ar`: puzzle, then solution | a cell's row, column and box |
# | Sudoku, a third model | | `tiny-sudoku-ar-solver`: puzzle, then (cell, digit) steps | the puzzle's cells only |
# | facts `A>B`, and mirror | `tiny-facts` | `tiny-facts-ar` | their position |
# | addition, most-significant digit first | `tiny-add` | `tiny-add-ar` | each digit's place value |
#
# A twin has the same shape, parameter count, data, batch and number of training steps; it predicts the
# next token instead of masked ones. Sudoku has a third model, a second AR twin that names each cell it
# writes (`b4` = cell 2 gets a 4), in the order a solver that always fills a forced cell first would. Words used below:
#
# - **canvas**: the answer positions, masks at the start; **commit**: a mask replaced by a token;
# - **decoding order**: which masked position a rule commits next: random, **left to right** (the AR
#   order), the most **confident** (low-confidence remasking), the largest **margin** between the two
#   likeliest tokens;
# - **parallel rules** commit several positions per forward pass (a confidence **threshold**, a
#   **factor**); LLaDA2.1's **S** and **Q** modes also **edit** tokens already written; **NFE** = forward
#   passes, **TPF** = answer tokens written per forward pass;
# - **exact match**: the whole answer right; each accuracy has a **95% interval** (Wilson).
#
# The tables come from `benchmarks/results/tasks.json` (`labkit bench tasks`: every held-out item, every
# rule) and `task_seeds.json` (the Sudoku pair trained with three seeds); the live cells decode with the
# committed models in seconds. Every item is **held out**: no solution grid, sum or mirror string of it
# was ever trained on (the facts are the exception by design: a question asks a trained fact in a new
# direction).

# %%
# NBVAL_CHECK_OUTPUT
# Parameters
import json
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch

import labkit as lk
from labkit.bench import task_tables as tables
from labkit.bench import tasks as bench
from labkit.eval.exact import edit_outcomes, wilson
from labkit.eval.intervals import overlap
from labkit.models.load import model_folder
from labkit.tasks import addition, heldout, mirror, reversal, sudoku

sys.path.insert(0, "../benchmarks")      # benchmarks/docgen: docs/models.md's tables, printed here too
from docgen import tasks as doc_tables

SEED = 0
LIVE = 50                      # held-out items per live cell below (the tables use every item)
RESULTS = Path("../benchmarks/results")
result = json.loads((RESULTS / "tasks.json").read_text())       # labkit bench tasks
seeds = json.loads((RESULTS / "task_seeds.json").read_text())   # labkit bench task-seeds
models, records = {}, {}
for masked, twin, tasks in bench.PAIRS.values():
    for name in (masked, twin):
        models[name] = lk.load(name)
        records[name] = json.loads((model_folder(name) / "training.json").read_text())
        cfg = records[name]["config"]
        params = sum(p.numel() for p in models[name].net.parameters())
        print(f"{name:<15} {models[name].kind:<7} {params / 1e6:.2f}M parameters · {', '.join(tasks):<16} · "
              f"{cfg['steps']} steps x {cfg['batch_size']} rows · {records[name]['train_seconds'] / 60:.0f} min of "
              "training on one thread")

# %% [markdown]
# ## 1 · Sudoku: the order of decoding
#
# A 6×6 Sudoku (digits 1–6; each row, column and 2×3 box holds every digit once) is typed as its 36
# cells row by row, `.` for a blank. `lk.generate(lk.load("tiny-sudoku"), puzzle)` lays the puzzle on
# the canvas: clues fixed in their cells, blanks masked, and the rule fills the blanks one forward pass
# at a time. The AR twin reads the same 36 characters and writes the 36 digits of the solution after
# them, left to right, the only order it has. Every held-out puzzle has exactly one solution; the
# **hard** ones have 10–12 clues.
#
# The first `LIVE` hard puzzles, in four orders on the same masked weights, and by the AR twin:

# %%
# NBVAL_CHECK_OUTPUT
sd, sd_ar = models["tiny-sudoku"], models["tiny-sudoku-ar"]
hard = [it for it in heldout("sudoku") if it.group == "hard"][:LIVE]
puzzles = [it.prompt[1:-1] for it in hard]                       # 36 cells, '.' = blank
print("the first:", puzzles[0])
print(sudoku.format_grid(puzzles[0]))
ORDERS = {"random order": "random", "left to right": "left_to_right", "low-confidence": "low_confidence",
          "margin": lk.LowConfidence(score="margin")}
runs = {k: lk.generate(sd, puzzles, rule, seed=SEED) for k, rule in ORDERS.items()}
runs[bench.AR_LABEL] = lk.generate(sd_ar, puzzles, seed=SEED)
solved = {k: np.array([t == it.answer for t, it in zip(out.texts, hard)]) for k, out in runs.items()}
print()
for k, s in solved.items():
    print(f"{k:<24} solved {s.sum():>3} of {len(hard)} hard puzzles")


# %% [markdown]
# Why does the order matter so much? When a blank is written, look at the grid as it is then (the clues
# and every cell written before it): how many digits do the rules of Sudoku still allow there (its
# **candidates**), and is it **forced** by one step of logic (one candidate left, or a digit no other
# blank of its row, column or box can take)? A forced cell is a safe commit; any other is a guess, and
# these rules never take a guess back.

# %%
# NBVAL_CHECK_OUTPUT
def commits(out, puzzles):
    """Per puzzle, one (candidates, forced, right) triple per blank, in the order the blanks were written."""
    P = out.trace.prompt_len
    steps = out.trace.commit_step()[:, P:P + sudoku.CELLS]                   # (B, 36), -1 for clues
    found = []
    for row, (p, it) in enumerate(zip(puzzles, hard)):
        grid, final = sudoku.decode_cells(p), sudoku.decode_cells(out.texts[row].ljust(sudoku.CELLS, "."))
        truth, mine = sudoku.decode_cells(it.answer), []
        for _, i in sorted((int(steps[row, i]), i) for i in range(sudoku.CELLS) if grid[i] == 0):
            mine.append((len(sudoku.candidates(grid, i)), sudoku.is_single(grid, i), final[i] == truth[i]))
            grid[i] = final[i]
        found.append(mine)
    return found

for k, out in runs.items():
    c = np.array([t for mine in commits(out, puzzles) for t in mine])      # (commits, 3)
    forced, right = c[:, 1].astype(bool), c[:, 2].astype(bool)
    print(f"{k:<24} {c[:, 0].mean():.2f} candidates per blank when written · {100 * forced.mean():4.1f}% forced · "
          f"guesses right {100 * right[~forced].mean():4.1f}%")

# %% [markdown]
# One run seen whole: the first hard puzzle the margin order solves, each cell coloured by the step it
# was written at (dark = early, white = a clue), in margin order and in left-to-right order; below, the
# margin run's first commits with the candidates each cell had left and whether it was forced. The
# rule was never told the rules of Sudoku: the printout shows how often its surest cell is a forced one.

# %%
# NBVAL_IGNORE_OUTPUT
pick = int(np.flatnonzero(solved["margin"])[0])
fig, axes = plt.subplots(1, 2, figsize=(8.5, 3.6), layout="constrained")
for ax, k in zip(axes, ("margin", "left to right")):
    lk.viz.commit_grid(runs[k].trace, sd, columns=sudoku.N, row=pick, ax=ax,
                       title=f"{k}: {'solved' if solved[k][pick] else 'not solved'}")
plt.close(fig)
fig

# %%
# NBVAL_CHECK_OUTPUT
first = commits(runs["margin"], puzzles)[pick]
steps = runs["margin"].trace.commit_step()[pick, runs["margin"].trace.prompt_len:]
order = sorted((int(s), i) for i, s in enumerate(steps.tolist()) if s >= 0)
print(f"puzzle {pick}: {len(order)} blanks; the first ten written:")
for (step, i), (n, forced, _) in list(zip(order, first))[:10]:
    print(f"  step {step:>2}: row {i // sudoku.N + 1}, column {i % sudoku.N + 1} <- {runs['margin'].texts[pick][i]}"
          f"  ({n} candidate{'s' if n > 1 else ''} left, {'forced' if forced else 'a guess'})")

# %% [markdown]
# Over every held-out puzzle (easy 17–20 clues, medium 13–16, hard 10–12) and every rule, from
# `tasks.json`; the last two rows are the AR twins (in a solver's order, and left to right):

# %%
# NBVAL_CHECK_OUTPUT
print(tables.table(result, "sudoku", "sudoku"))

# %%
# NBVAL_CHECK_OUTPUT
acc = lambda label, group=None: tables.accuracy(result, "sudoku", label, "sudoku", group)["accuracy"]
best = tables.best_order(result, "sudoku", "sudoku")
for group in (None, "hard"):
    where = "hard puzzles" if group else "all puzzles"
    m, a, r = acc(best, group), acc(bench.AR_LABEL, group), acc("random order", group)
    print(f"{where}: {best} {100 * m:.1f}% · random order {100 * r:.1f}% (same weights) · AR twin {100 * a:.1f}% "
          f"-> the masked model is {'ahead of' if m > a else 'level with' if m == a else 'behind'} its twin")
print("\ntwo effects, apart (all puzzles · hard ones; percentage points):")
for what, (x, y) in (("objective: one order (left to right), masked weights - AR", ("left to right", bench.AR_LABEL)),
                     ("order, same masked weights: its best - left to right", (best, "left to right")),
                     ("order, AR trained in it: solver's order - left to right", (bench.SOLVER_LABEL, bench.AR_LABEL)),
                     ("what is left: masked, its own order - AR, solver's order", (best, bench.SOLVER_LABEL))):
    print(f"  {what:<58} " + " · ".join(f"{100 * acc(x, g):.1f} - {100 * acc(y, g):.1f} = {100 * (acc(x, g) - acc(y, g)):+.1f}"
                                         for g in (None, "hard")))

# %% [markdown]
# Read the four lines: the first is the training objective's share of the lead (one order for both),
# the second the order's share on the same masked weights. The third is the published control, an AR
# model taught a solver's order: at the twins' size and budget it gains little over left to right here,
# so this lab does not reproduce that control's recovery on 9×9 (it had the same steps as the other two,
# and its step positions carry no row, column or box embedding: it learns each cell's place from its
# name). The fourth line is what the masked model's own choice of order still holds over it.

# %% [markdown]
# ## 2 · Draft and edit, where every edit can be checked
#
# `tiny-sudoku` was also trained to **repair** a written cell: during training some written cells were
# replaced by wrong digits, and the model learned the right digit there too (as `tiny-cap` was for
# Shakespeare in notebook 04). So LLaDA2.1's draft-and-edit can run on it: **S mode** commits every
# blank whose confidence is above 0.5 at once and rewrites any written cell whose prediction changed
# (editing threshold 0), **Q mode** uses 0.7 and 0.5. On Sudoku every edit is checkable: did it turn a
# wrong cell right, or a right one wrong?

# %%
# NBVAL_CHECK_OUTPUT
s_mode = lk.generate(sd, puzzles, "speed", seed=SEED)
P = s_mode.trace.prompt_len
truth = torch.tensor([sd.encode(it.answer) for it in hard])             # (B, 36) token ids of the solutions
outcomes = edit_outcomes(s_mode.trace, truth)
right = np.array([t == it.answer for t, it in zip(s_mode.texts, hard)])
blanks = sum(p.count(".") for p in puzzles)
print(f"S mode on the {len(hard)} hard puzzles: solved {right.sum()}, {blanks / s_mode.trace.row_nfe().sum().item():.2f} "
      f"cells per forward pass; edits fixed {sum(o['fixed'] for o in outcomes)} cells, broke "
      f"{sum(o['broke'] for o in outcomes)}, moved {sum(o['other'] for o in outcomes)} from one wrong digit to another")


# %% [markdown]
# One edit that fixed a cell, seen on the grid: the draft at the step before the edit (the edited cell
# marked), and what the edit wrote. A digit repeated in a row, column or box is a **conflict**: the
# printout says whether the drafted digit was one.

# %%
# NBVAL_CHECK_OUTPUT
def conflicts(cells, i):
    return [j for j in sudoku.PEERS[i] if cells[j] == cells[i] and cells[i]]

fixed_rows = [b for b, o in enumerate(outcomes) if o["fixed"]]
row = next((b for b in fixed_rows if right[b]), fixed_rows[0])          # a solved one if there is one
edited = s_mode.trace.edited()[:, row, P:P + sudoku.CELLS]                       # (S, 36)
tokens = s_mode.trace.tokens()[:, row, P:P + sudoku.CELLS]
answer = sudoku.decode_cells(hard[row].answer)
for step in range(len(s_mode.trace)):
    before = (s_mode.trace.init[row, P:P + sudoku.CELLS] if step == 0 else tokens[step - 1]).tolist()
    fixes = [i for i in np.flatnonzero(edited[step].numpy()) if int(sd.decode([tokens[step, i]])) == answer[i]]
    if fixes:
        break
draft = "".join("." if t == sd.mask_id else sd.decode([t]) for t in before)   # masks as '.'
cells = sudoku.decode_cells(draft)
print(f"puzzle {row}, step {step}: the draft before the edit (the edited cell in brackets)")
for r in range(sudoku.N):
    print("  " + " ".join(f"[{draft[r * 6 + c]}]" if r * 6 + c in fixes else f" {draft[r * 6 + c]} "
                          for c in range(sudoku.N)))
for i in fixes:
    clash = conflicts(cells, i)
    print(f"row {i // 6 + 1}, column {i % 6 + 1}: {draft[i]} -> {answer[i]} (right); the drafted {draft[i]} "
          + (f"clashed with the same digit at {', '.join(f'r{j // 6 + 1}c{j % 6 + 1}' for j in clash)}"
             if clash else "clashed with no written digit: the model saw it would block the solution"))
print("final:", "solved" if s_mode.texts[row] == hard[row].answer else "not solved")

# %% [markdown]
# Every held-out puzzle, every rule that commits several cells per pass or edits, with what the edits
# did (cells fixed / cells broken; `tasks.json`). Compare their solved share and TPF with the
# one-cell-per-pass orders at the top of the table:

# %%
# NBVAL_CHECK_OUTPUT
print(doc_tables.markdown_pair(result, "sudoku"))

# %% [markdown]
# ## 3 · Addition: where the order does not matter, and what still fails
#
# `12345+67890` asks for the 6-digit sum `080235`, first digit first. The first digit depends on every
# carry to its right, the last only on the operands' last digits, so one might expect a left-to-right
# writer to struggle with long carry chains. `tiny-add` and its twin know each digit's place value (the
# units of both operands and of the sum share an embedding). Which order does the masked model take
# when left to choose, does the order change anything here, and where are the errors?

# %%
# NBVAL_CHECK_OUTPUT
ad, ad_ar = models["tiny-add"], models["tiny-add-ar"]
items = heldout("addition")[:2 * LIVE]
sums = [it.prompt[1:-1] for it in items]                         # "12345+67890"
n = addition.WIDTH + 1
add_runs = {k: lk.generate(ad, sums, rule, seed=SEED)
            for k, rule in (("low-confidence", "low_confidence"), ("left to right", "left_to_right"),
                            ("right to left", "right_to_left"))}
add_runs[bench.AR_LABEL] = lk.generate(ad_ar, sums, seed=SEED)
out = add_runs["low-confidence"]
order = out.trace.commit_step()[:, out.trace.prompt_len:].float().mean(0)
print("sum digit (1 = most significant)   " + " ".join(f"{i + 1:>5}" for i in range(n)))
print("mean step written, low-confidence  " + " ".join(f"{s:>5.2f}" for s in order.tolist()))
for k, o in add_runs.items():
    digits = np.array([[p == a for p, a in zip(t.ljust(n), it.answer)] for t, it in zip(o.texts, items)])
    print(f"{k:<24} digits right " + " ".join(f"{d:.2f}" for d in digits.mean(0))
          + f" · whole sum right {100 * digits.all(1).mean():.1f}%")

# %% [markdown]
# One sum step by step (▢ = still masked), then every held-out sum by the length of its longest carry
# chain (`tasks.json`):

# %%
# NBVAL_CHECK_OUTPUT
print(sums[0], "=", items[0].answer)
lk.viz.token_grid_steps(add_runs["low-confidence"].trace, ad, row=0)

# %%
# NBVAL_CHECK_OUTPUT
print(doc_tables.markdown_pair(result, "add"))
one = [*bench.ONE_PER_STEP, bench.AR_LABEL]
worst = min(one, key=lambda k: tables.accuracy(result, "add", k, "addition")["accuracy"])
w = tables.accuracy(result, "add", worst, "addition")
print(f"\nevery one-token-per-step order and the AR twin: the lowest is {worst}, {100 * w['accuracy']:.1f}% "
      f"[{100 * w['ci95'][0]:.1f}, {100 * w['ci95'][1]:.1f}]")
for label in bench.EDIT_LABELS[:2]:
    pooled = {}
    for name, chains in (("chains 0-2", range(3)), ("chains 3-5", range(3, 6))):
        rows = [tables.accuracy(result, "add", label, "addition", f"carry {c}") for c in chains]
        right, n = sum(r["correct"] for r in rows), sum(r["n"] for r in rows)
        pooled[name] = (right / n, wilson(right, n))
    (a, ca), (b, cb) = pooled.values()
    print(f"{label}: chains 0-2 {100 * a:.1f}% [{100 * ca[0]:.1f}, {100 * ca[1]:.1f}] · chains 3-5 {100 * b:.1f}% "
          f"[{100 * cb[0]:.1f}, {100 * cb[1]:.1f}] -> {'within noise' if overlap(ca, cb) else 'apart'}")

# %% [markdown]
# Read the three lines under the table. Left to choose, the masked model writes the sum most significant
# digit first (the mean step of each digit, above): the order an AR model has. Every one-token-per-step
# order and the AR twin get every held-out sum right, so at this size the carry chain does not make left
# to right hard. Order matters on Sudoku, where many cells are forced only once others are written; here
# each digit can be worked out from the operands in one forward pass (the threshold rules write all six
# at once, TPF 6.00 in the table, and are right). The only misses are S and Q mode's; whether long carry
# chains cause them, the last line says.

# %% [markdown]
# ## 4 · Facts asked backwards
#
# Each fact is a pair of made-up names `A>B` ("A's partner is B"). Some facts were trained in both
# directions (`A>B` and `B<A`); the questions are about facts trained **one way only**, asked:
#
# - **forward** (`abcd>` → the partner): as trained;
# - **backward, as an infill** of the training layout: `____>efgh`, fill the name on the left. Only a
#   model that reads in both directions can be asked this; a left-to-right model has no gap to fill;
# - **backward, reversed**: `efgh<` → the name, the only form a left-to-right model can be asked.

# %%
# NBVAL_CHECK_OUTPUT
fa, fa_ar = models["tiny-facts"], models["tiny-facts-ar"]
one_way, _ = reversal.facts(0)
a, b = one_way[0]
for label, question in (("forward", f"{a}>"), ("backward, infill", f"{'_' * reversal.NAME}>{b}"),
                        ("backward, reversed", f"{b}<")):
    for lm in (fa, fa_ar):
        if lm.kind == "causal" and "_" in question:
            print(f"{lm.name:<14} {label:<19} {question!r:<12} cannot be asked: no gap to fill left to right")
            continue
        got = lk.generate(lm, question, seed=SEED).texts[0]
        want = b if label == "forward" else (f"{a}>{b}" if "_" in question else a)
        print(f"{lm.name:<14} {label:<19} {question!r:<12} -> {got!r:<12} {'right' if got == want else 'wrong'}")

# %%
# NBVAL_CHECK_OUTPUT
print(doc_tables.markdown_pair(result, "facts"))
f = {lab: {g: tables.accuracy(result, "facts", lab, "reversal", g)["accuracy"] for g in tables.REVERSAL_MODES
           if g in tables.run_of(result, "facts", lab)["tasks"]["reversal"]["groups"]}
     for lab in ("low-confidence", bench.AR_LABEL)}
m = f["low-confidence"]
print(f"\nmasked: backward by infill {100 * m['backward_infill']:.1f}% against {100 * m['forward']:.1f}% forward; "
      f"reversed order {100 * m['backward_reversed']:.1f}%")
a = f[bench.AR_LABEL]
print(f"AR twin: forward {100 * a['forward']:.1f}%, reversed order {100 * a['backward_reversed']:.1f}%")
print("reversed order: the masked model is " + ("ahead of" if m["backward_reversed"] > a["backward_reversed"] else
      "level with" if m["backward_reversed"] == a["backward_reversed"] else "behind") + " its twin")

# %% [markdown]
# Read the last two lines together. The AR twin, trained on the one-way facts only as `A>B`, cannot
# answer them reversed (the **reversal curse**). The masked model was trained on exactly the same rows,
# but its objective predicts every position from both sides, so it learns each fact in both directions:
# it answers by infill in the layout it was trained on, and the two-way facts taught it what the
# reversed layout `B<` asks, so it can be asked that way too; the printout says how often it is right
# each way. Kitouni et al. (2024) report this for a masked objective trained from scratch.
#
# ## 5 · Mirror: parallel decoding's best case, and the frontier
#
# `qwertyuiop` asks for the letters backwards (`tiny-facts` learned mirror beside the facts). Every
# answer letter is fixed by the prompt, so a model that learned the task is sure of all of them, and a
# confidence threshold writes the whole answer in very few forward passes:

# %%
# NBVAL_CHECK_OUTPUT
items = heldout("mirror")[:LIVE]
words = [it.prompt[1:-1] for it in items]
for name, rule in (("low-confidence", "low_confidence"), ("threshold 0.5", lk.Threshold(threshold=0.5))):
    out = lk.generate(fa, words, rule, seed=SEED)
    right = np.mean([t == it.answer for t, it in zip(out.texts, items)])
    nfe = out.trace.row_nfe().float().mean().item()
    print(f"{name:<15} exact {100 * right:.1f}% · {nfe:.2f} forward passes per answer · TPF {mirror.LENGTH / nfe:.2f}")

# %% [markdown]
# Now the rules on every task against their speed (left), beside the same rules on the Shakespeare
# models (right: gen-PPL as a multiple of one-token-per-step decoding, `benchmarks/results/samplers.json`).
# Where the answer is determined, speed is free; where the model is unsure, every extra token per
# forward pass can cost quality. Confidence follows predictability.

# %%
# NBVAL_IGNORE_OUTPUT
fig = tables.frontier_figure(result)
plt.close(fig)
fig

# %%
# NBVAL_CHECK_OUTPUT
print(tables.table(result, "facts", "mirror", groups=False))

# %% [markdown]
# ## 6 · How sure are these numbers?
#
# The intervals above cover the held-out sample, not the training run: another seed trains another
# model. The Sudoku pair was trained again with two more seeds at its full recipe, and each seed
# evaluated on every held-out puzzle:

# %%
# NBVAL_CHECK_OUTPUT
print(f"seeds {seeds['seeds']}, every held-out puzzle; training minutes: " +
      ", ".join(f"{k} {v}" for k, v in seeds["train_minutes"].items()))
print(doc_tables.markdown_seeds(seeds))


# %%
# NBVAL_CHECK_OUTPUT
def seed_acc(label, seed):
    return next(r["tasks"]["sudoku"]["accuracy"] for r in seeds["runs"] if r["label"] == label and r["seed"] == seed)
confident, others = ("low-confidence", "margin"), ("random order", "left to right", bench.AR_LABEL)
for seed in seeds["seeds"]:
    worst, best = min(seed_acc(c, seed) for c in confident), max(seed_acc(o, seed) for o in others)
    print(f"seed {seed}: the weaker confident order {worst:.1%}, the best of random, left to right and the AR twin "
          f"{best:.1%}: confident ahead by {100 * (worst - best):.1f} points")

# %% [markdown]
# ## 7 · The targets, and the training curves
#
# The task models were trained for targets set before training. Each row is computed from `tasks.json`,
# `task_seeds.json` and the model files; a missed target says by how much. Below, every model's training
# loss (the masked and AR losses measure different things, so compare each curve's shape, not heights).

# %%
# NBVAL_CHECK_OUTPUT
from docgen.targets import task_targets
for row in task_targets(result, seeds, tables.sizes_mb()):
    print(f"{'met ' if row['met'] else 'MISS'}  {row['target']:<92} {row['measured']}"
          + (f"  ({row['note']})" if row["note"] else ""))

# %%
# NBVAL_IGNORE_OUTPUT
from labkit.ui.training_views import loss_figure
fig = loss_figure({name: rec["loss_history"] for name, rec in records.items()}, smooth=5, every=50,
                  title="training loss (running mean every 50 steps)")
plt.close(fig)
fig

# %% [markdown]
# ## 8 · What these models still do not do
#
# Small models, each trained on one CPU thread for the minutes printed at the top, know exactly one
# layout. The cells above show where they are strong; this one lists, from the same files, where they
# are not, or where diffusion brings nothing:

# %%
# NBVAL_CHECK_OUTPUT
worst = min(("random order", "left to right"),
            key=lambda k: tables.accuracy(result, "sudoku", k, "sudoku", "hard")["accuracy"])
print(f"- Sudoku in a fixed or random order: {worst} solves "
      f"{100 * tables.accuracy(result, 'sudoku', worst, 'sudoku', 'hard')['accuracy']:.1f}% of hard puzzles: "
      "the model is only as good as the order it is decoded in.")
s = tables.accuracy(result, "sudoku", "S mode", "sudoku")
print(f"- S mode's edits also break cells: {s['edits']['broke']} right cells made wrong over {s['n']} puzzles "
      f"(and {s['edits']['fixed']} fixed).")
r = tables.accuracy(result, "facts", "low-confidence", "reversal", "backward_reversed")["accuracy"]
i = tables.accuracy(result, "facts", "low-confidence", "reversal", "backward_infill")["accuracy"]
print(f"- Facts in reversed order (`efgh<`): {100 * r:.1f}% for the masked model, against {100 * i:.1f}% by infill in "
      "the trained layout: a form it met only on other facts is answered less often.")
m = tables.accuracy(result, "add", tables.best_order(result, "add", "addition"), "addition")["accuracy"]
a = tables.accuracy(result, "add", bench.AR_LABEL, "addition")["accuracy"]
print(f"- Addition: the masked model's best order {100 * m:.1f}% against the AR twin's {100 * a:.1f}%: "
      + ("no win for diffusion here" if a >= m else "the masked model is ahead"))
try:
    lk.generate(sd, "." * 81)                                     # a 9x9 puzzle: not this model's layout
except ValueError as e:
    print(f"- Only its own layout: a 9x9 puzzle is refused: {e}")

# %% [markdown]
# ## Exercises
#
# Each has a solution just below it; try before you read it.
#
# **1.** Does the order matter as much on **easy** puzzles (17–20 clues)? Decode the first `LIVE` easy
# puzzles in random order and by margin, and compare with the hard ones of section 1.

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
easy = [it for it in heldout("sudoku") if it.group == "easy"][:LIVE]
for k in ("random order", "margin"):
    out = lk.generate(sd, [it.prompt[1:-1] for it in easy], ORDERS[k], seed=SEED)
    print(f"{k:<13} solved {sum(t == it.answer for t, it in zip(out.texts, easy))} of {len(easy)} easy puzzles "
          f"(hard: {solved[k].sum()} of {len(hard)})")

# %% [markdown]
# **2.** A threshold rule writes every cell above it at once. With threshold 0.9 on the hard puzzles, how
# many forward passes does a solved puzzle take on average, and an unsolved one?

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
out = lk.generate(sd, puzzles, lk.Threshold(threshold=0.9), seed=SEED)
ok = np.array([t == it.answer for t, it in zip(out.texts, hard)])
nfe = out.trace.row_nfe().numpy()
print(f"solved {ok.sum()} of {len(hard)}; forward passes: solved {nfe[ok].mean():.2f}"
      + (f", unsolved {nfe[~ok].mean():.2f}" if (~ok).any() else ", none unsolved"))

# %% [markdown]
# **3.** Ask `tiny-facts` for the partner of the *second* one-way fact both ways round: forwards, and
# backwards as an infill. Then ask the AR twin backwards in reversed order.

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
a, b = one_way[1]
print(f"fact {a}>{b}")
print("tiny-facts, forward:          ", lk.generate(fa, f"{a}>").texts[0])
print("tiny-facts, backward infill:  ", lk.generate(fa, f"____>{b}").texts[0])
print("tiny-facts-ar, reversed order:", lk.generate(fa_ar, f"{b}<").texts[0])

# %% [markdown]
# **4.** From the command line: `labkit generate --model tiny-sudoku --sampler low_confidence PUZZLE` prints
# the grid; `labkit eval --model tiny-add --sampler right_to_left` scores an order on every held-out sum.
# In notebook 05's panel, pick `tiny-sudoku` from the model menu and switch the rule between `random` and
# `low_confidence` to watch the commit order. Retrain every task model with `make model-tasks`
# (docs/models.md gives the time it took).
