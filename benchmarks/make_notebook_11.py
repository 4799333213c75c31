"""Writes notebooks/11_where_diffusion_wins.ipynb (unexecuted); `make notebooks` executes it.

    python benchmarks/make_notebook_11.py

Prose here holds no measured number: every figure the notebook states is printed by a cell
(from the live run or from benchmarks/results/tasks.json and task_seeds.json), so nbval checks it.
"""
from pathlib import Path

import nbformat as nbf

CELLS = []


def md(text: str) -> None:
    CELLS.append(nbf.v4.new_markdown_cell(text.strip()))


def code(text: str, check: bool = True) -> None:
    tag = "# NBVAL_CHECK_OUTPUT\n" if check else "# NBVAL_IGNORE_OUTPUT\n"
    CELLS.append(nbf.v4.new_code_cell(tag + text.strip()))


md("""
# 11 · Where diffusion wins, measured exactly

**The question:** on Shakespeare a small diffusion LM is only sure of itself where the text repeats,
so fast parallel decoding looks like a trick. The papers teach the opposite on tasks with one right
answer: the *order* a masked model fills its canvas in can solve a Sudoku that left-to-right cannot,
a masked model can be asked a fact backwards, and an answer fully fixed by the prompt can be written
in one forward pass. Here you measure each of these on two models this project trained and ships:

- **`tiny-task`**: a masked diffusion LM (LLaDA's objective);
- **`tiny-task-ar`**: its autoregressive **twin**: the same Transformer shape and parameter count,
  the same data, steps and batch, trained to predict the next token instead.

Both were trained on four puzzle families built in code (`labkit.tasks`), with a **held-out split**
that shares no puzzle with training. Words used below:

- **canvas**: the answer positions, all masks at the start; **commit**: a mask replaced by a token;
- **decoding order**: which masked position a rule commits next (random, the most **confident**,
  the largest **margin** between the top two tokens, the lowest **entropy**);
- **parallel rules**: commit several positions per forward pass (a confidence **threshold**, a
  **factor**, LLaDA2.1's **S** and **Q** modes); **NFE** = forward passes, **TPF** = answer tokens
  per forward pass;
- **exact match**: the decoded answer equals the true answer character for character; each accuracy
  has a **95% interval** (Wilson) that says how far the held-out sample size lets you trust it.

The tables come from `benchmarks/results/tasks.json` (`labkit bench tasks`, every held-out item,
every rule) and `task_seeds.json` (three training seeds at a reduced budget); the live cells
decode with the committed models in a few seconds.
""")

code("""
# Parameters
import json
from pathlib import Path

import numpy as np
import torch

import labkit as lk
from labkit.bench import tasks as bench
from labkit.models.load import weights_dir
from labkit.tasks import addition, heldout, mirror, reversal, sudoku
from labkit.eval.exact import run_items
from labkit.samplers import registry

SEED = 0
LIVE = 60                      # held-out items per task decoded live below (the tables use all of them)
RESULTS = Path("../benchmarks/results")
result = json.loads((RESULTS / "tasks.json").read_text())       # labkit bench tasks
seeds = json.loads((RESULTS / "task_seeds.json").read_text())   # labkit bench task-seeds
lm, ar = lk.load("tiny-task"), lk.load("tiny-task-ar")
for model in (lm, ar):
    rec = json.loads((weights_dir() / model.name / "training.json").read_text())
    params = sum(p.numel() for p in model.net.parameters())
    print(f"{model.name:<13} {model.kind:<9} {params / 1e6:.2f}M parameters · {rec['config']['steps']} steps × "
          f"{rec['config']['batch_size']} rows · objective {rec['config']['objective']} · "
          f"{rec['train_seconds'] / 60:.1f} min of training on {rec['device']}")
print("tasks:", ", ".join(f"{t} ({len(heldout(t))} held-out items)" for t in bench.TASKS))
""")

md("""
## 1 · Sudoku: the order of decoding

A 6×6 Sudoku (digits 1–6; every row, column and 2×3 box holds each once) is written as one line:
`S` + 36 cells (`.` = blank) + `=`; the answer is the full grid, clues included. Every puzzle has
exactly one solution. A left-to-right writer must fill the top-left blank first, however
undetermined it still is. A masked model can fill *any* cell first, and a rule that commits the
cell it is most sure of tends to pick the cells the clues already force, which in turn force
others. Kim et al. (ICML 2025) report this lifting a masked model from a few percent solved to
most puzzles solved.

Below, the first `LIVE` **hard** held-out puzzles (the fewest clues) decoded one cell per forward
pass, in random order and in low-confidence order (surest first); then every hard puzzle's result
from `tasks.json`, the AR twin's too:
""")

code("""
hard = [it for it in heldout("sudoku") if it.group == "hard"][:LIVE]
prompts = [it.prompt for it in hard]
kw = dict(gen_length=sudoku.CELLS, block_length=sudoku.CELLS, steps=sudoku.CELLS, seed=SEED)
runs = {"random order": lk.generate(lm, prompts, "random", **kw),
        "low-confidence": lk.generate(lm, prompts, "low_confidence", **kw)}
solved = {k: np.array([t.strip() == it.answer for t, it in zip(out.texts, hard)]) for k, out in runs.items()}
for k, s in solved.items():
    print(f"live: {k:<15} solved {s.sum():>3} of {len(hard)} hard puzzles")
for k in ("random order", "low-confidence", bench.AR_LABEL):
    s = bench.accuracy(result, k, "sudoku", "hard")
    print(f"tasks.json: {k:<24} {100 * s['accuracy']:.1f}% of {s['n']} hard puzzles")
""")

md("""
Why does the order matter so much? For each blank cell, count how many digits the rules still
allow there (its **candidates**, given the clues and every cell committed before it) at the moment
it is committed. A cell with one candidate is forced: a safe commit. A cell with four is a guess,
and a wrong guess is never taken back by these rules.
""")

code("""
def candidates_at_commit(out, items):
    \"\"\"Mean candidates of a blank cell when it was committed, and the share committed while forced.\"\"\"
    counts = []
    steps = out.trace.commit_step()[:, out.trace.prompt_len:]          # (B, 36)
    for row, it in enumerate(items):
        final = sudoku.decode_cells(out.texts[row].strip().ljust(sudoku.CELLS, "."))
        grid = sudoku.decode_cells(it.prompt[1:-1])                   # the clues; blanks 0
        for i in sorted(range(sudoku.CELLS), key=lambda i: int(steps[row, i])):
            if grid[i] == 0:
                counts.append(bin(sudoku._candidates(grid, i)).count("1"))
                grid[i] = final[i]
    counts = np.array(counts)
    return counts.mean(), (counts == 1).mean()

for k in ("random order", "low-confidence"):
    mean, forced = candidates_at_commit(runs[k], hard)
    print(f"{k:<15} a blank cell had {mean:.2f} candidates when committed; {100 * forced:.0f}% were forced")
""")

md("""
The view of one run: the first hard puzzle that low-confidence solves, with the step each cell was
committed at as its colour (dark = early), and the same puzzle in random order beside it. The
answer canvas holds the whole grid, clues included, so the model also has to copy the clues: the
printout says how early each order did that.
""")

code("""
pick = int(np.flatnonzero(solved["low-confidence"])[0])
print("puzzle", hard[pick].prompt)
print(sudoku.format_grid(hard[pick].prompt[1:-1]))
clues = [i for i, ch in enumerate(hard[pick].prompt[1:-1]) if ch != "."]
for k in ("low-confidence", "random order"):
    text = runs[k].texts[pick].strip()
    wrong = sum(a != b for a, b in zip(text.ljust(sudoku.CELLS), hard[pick].answer))
    steps = runs[k].trace.commit_step()[pick, runs[k].trace.prompt_len:]
    print(f"{k}: {'solved' if text == hard[pick].answer else f'{wrong} cells wrong'}; its {len(clues)} clues "
          f"copied at steps {sorted(int(steps[i]) for i in clues)}")
""")

code("""
import matplotlib.pyplot as plt
fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), layout="constrained")
for ax, k in zip(axes, ("low-confidence", "random order")):
    lk.viz.commit_grid(runs[k].trace, lm, columns=sudoku.N, row=pick, ax=ax, title=f"{k}: commit step")
plt.close(fig)
fig
""", check=False)

md("""
Over every held-out Sudoku (easy, medium, hard) and every rule, from `tasks.json`: the decoding
orders, then the parallel rules, then the AR twin (left to right, the only order it has).
""")

code("""
print(bench.table(result, "sudoku"))
""")

md("""
Two things to read there. The confident orders (low-confidence, margin, entropy) against random
order is the effect of *order alone*: same model, same weights. And the parallel rules pay for
their speed: a threshold commits every cell above it at once, including guesses the next forward
pass would have got right. S and Q modes (LLaDA2.1's draft-and-edit) also *edit* written tokens,
which needs a model trained to correct them (the `edit_prob` objective of `tiny-cap`); `tiny-task`
was trained on masked positions only, so its predictions at written positions are untrained and
its edits spoil answers. Compare notebook 04, where the model was trained to edit.

## 2 · Addition: the carry, written most-significant digit first

`A24537+11598=` asks for the 6-digit sum `036135`, first digit first. The first digit depends on
every carry to its right, so left to right is the hardest order; the last digit depends only on
the two last digits of the operands. Which order does the masked model choose on its own, and how
often is each digit right?
""")

code("""
items = heldout("addition")[:LIVE]
n = addition.WIDTH + 1
dl = lk.generate(lm, [it.prompt for it in items], "low_confidence", gen_length=n, block_length=n, steps=n, seed=SEED)
al = lk.generate(ar, [it.prompt for it in items], "autoregressive", gen_length=n, block_length=n, steps=n, seed=SEED)
order = dl.trace.commit_step()[:, dl.trace.prompt_len:].float().mean(0)       # (6,)
def digit_accuracy(out):
    return np.array([[p == a for p, a in zip(t.strip().ljust(n), it.answer)] for t, it in zip(out.texts, items)]).mean(0)
print("sum digit (1 = most significant)  " + " ".join(f"{i + 1:>5}" for i in range(n)))
print("mean commit step, tiny-task       " + " ".join(f"{s:>5.2f}" for s in order.tolist()))
print("digit right, tiny-task            " + " ".join(f"{a:>5.2f}" for a in digit_accuracy(dl)))
print("digit right, AR twin              " + " ".join(f"{a:>5.2f}" for a in digit_accuracy(al)))
print(f"whole sum right: tiny-task {100 * np.mean([t.strip() == it.answer for t, it in zip(dl.texts, items)]):.1f}%, "
      f"AR twin {100 * np.mean([t.strip() == it.answer for t, it in zip(al.texts, items)]):.1f}%")
""")

md("""
Read the commit steps first: which digits does the masked model write before the middle ones? Then
the digit accuracies: both models get the leading digits right far more often than the low ones,
though the last digit needs no carry at all. The leading digits follow from the operands' leading
digits (up to a carry); the low ones need exact digit-by-digit addition. These models learned how
big a sum is, not how to add. One sum, step by step (▢ = still masked):
""")

code("""
print(items[0].prompt, "→", items[0].answer)
lk.viz.token_grid_steps(dl.trace, lm, row=0)
""")

code("""
print(bench.table(result, "addition"))
""")

md("""
## 3 · Reversal: a fact asked backwards

Each fact is a pair of made-up names `A>B` ("A's partner is B"). Some facts are trained in both
layouts (`A>B` and `B<A`); the held-out questions are about facts trained **one way only**, asked:

- **forward** (`Resas>` → `olkf`): as trained;
- **backward, as an infill** of the training layout: `▢▢▢▢>olkf`, fill the name on the left. Only a
  model that reads both ways can even be asked this; the AR twin writes left to right and cannot;
- **backward, reversed**: `Rolkf<` → `esas`, the form a left-to-right model can be asked.

LLaDA's paper reports its 8B model ahead of GPT-4o on reversed poem lines; Shin et al. (2026)
explain why a masked model escapes the reversal curse only in part.
""")

code("""
fact = heldout("reversal", 1)
rule = {lm.name: registry.rule("low_confidence"), ar.name: registry.rule("autoregressive")}
for model in (lm, ar):
    rows = run_items(model, fact, rule[model.name], seed=SEED)
    asked = {r["group"] for r in rows}
    for it in fact:
        r = next((r for r in rows if r["group"] == it.group), None)
        shown = it.infill or it.prompt
        print(f"{model.name:<13} {it.group:<18} {shown!r:<14} → " +
              (f"{r['prediction']!r} ({'right' if r['correct'] else 'wrong'}; answer {it.answer!r})" if r
               else "cannot be asked (a left-to-right model has no gap to fill)"))
""")

code("""
print(bench.table(result, "reversal"))
""")

md("""
Read the forward rows before the backward ones: a backward question can only be answered if the
fact was learned at all. The AR twin's table has no infill row: it has no way to take the question.

## 4 · Mirror: parallel decoding's best case, and the frontier

`Cfaxnobyitw=` asks for the 10 letters written backwards. Every answer letter is fixed by the
prompt, so a model that has learned the task is sure of all of them at once, and a confidence
threshold commits the whole answer in one forward pass:
""")

code("""
items = heldout("mirror")[:LIVE]
for name, knobs in (("low_confidence", {}), ("threshold", {"threshold": 0.5})):
    out = lk.generate(lm, [it.prompt for it in items], registry.rule(name, **knobs), gen_length=mirror.LENGTH,
                      block_length=mirror.LENGTH, steps=mirror.LENGTH, seed=SEED)
    right = np.mean([t.strip() == it.answer for t, it in zip(out.texts, items)])
    nfe = out.trace.row_nfe().float().mean().item()
    print(f"{name:<15} {knobs!s:<20} exact {100 * right:.1f}% · {nfe:.2f} forward passes per answer · "
          f"TPF {mirror.LENGTH / nfe:.2f}")
""")

md("""
Now every rule that only commits (one token per step, thresholds, factor) on every task against its
speed (left; S and Q mode are left out: their edits need a model trained to edit, section 1), beside
the same rules on the Shakespeare models (right: gen-PPL as a multiple of one-token-per-step decoding,
from `benchmarks/results/samplers.json`). Where the answer is determined (mirror), speed is free; where
the model is unsure (Sudoku, Shakespeare), every extra token per forward costs quality. Confidence
follows predictability: the same rule is fast and right on one task, fast and wrong on another.
""")

code("""
fig = bench.frontier_figure(result)
plt.close(fig)
fig
""", check=False)

code("""
print(bench.table(result, "mirror", groups=False))
print()
print(bench.markdown_shakespeare(result))
""")

md("""
## 5 · How sure are these numbers?

The intervals above cover the held-out sample, not the training run: another seed trains another
model. Both twins were trained again with three seeds at a reduced budget (their recipe scaled
down, curriculum alike) and evaluated on a smaller held-out sample; the range across seeds:
""")

code("""
print(f"{seeds['steps']} steps per run, {seeds['items_per_task']} held-out items per task, seeds {seeds['seeds']}")
print(bench.markdown_seeds(seeds))
""")

md("""
## 6 · What these models show, and what they do not

The summary below is computed from `tasks.json`. It shows where the masked model's order beats
random order and where the AR twin is ahead. These are small models (their size and training time are printed at the
top of this notebook): addition and the reversal facts are only
partly learned, so those rows measure the model's limits more than the method's. The published
results (Sudoku ≈ 90% with adaptive order, diffusion ahead on reversed poems) come from models
thousands of times larger and longer trained; docs/models.md records how these were trained and
what did not work.
""")

code("""
def acc(label, task, group=None):
    return bench.accuracy(result, label, task, group)["accuracy"]

best = max(("low-confidence", "margin", "entropy"), key=lambda k: acc(k, "sudoku"))
print(f"Sudoku, order alone: {best} {100 * acc(best, 'sudoku'):.1f}% vs random order "
      f"{100 * acc('random order', 'sudoku'):.1f}% on the same weights")
for task, group in (("sudoku", None), ("addition", None), ("reversal", "forward"),
                    ("reversal", "backward_reversed"), ("mirror", None)):
    name = task + (f" ({group})" if group else "")
    print(f"{name:<30} tiny-task ({best}) {100 * acc(best, task, group):5.1f}%   "
          f"AR twin {100 * acc(bench.AR_LABEL, task, group):5.1f}%")
print(f"{'reversal (backward_infill)':<30} tiny-task ({best}) {100 * acc(best, 'reversal', 'backward_infill'):5.1f}%"
      "   AR twin: cannot be asked")
""")

md("""
## 7 · The targets, and by how much they were missed

The task models were built to reach targets set before training (a Sudoku solver in confidence
order, facts answered backwards, parallel decoding at no cost). The table is computed from
`tasks.json` and the training records; below it, both models' training loss.
""")

code("""
minutes = {m.name: json.loads((weights_dir() / m.name / "training.json").read_text())["train_seconds"] / 60
           for m in (lm, ar)}
for row in bench.targets(result, minutes):
    print(f"{'met ' if row['met'] else 'MISS'}  {row['target']:<66} {row['measured']}"
          + (f"  ({row['note']})" if row['note'] else ""))
""")

code("""
from labkit.ui.training_views import loss_figure
records = {m.name: json.loads((weights_dir() / m.name / "training.json").read_text()) for m in (lm, ar)}
histories = {name: rec["loss_history"] for name, rec in records.items()}
print("curriculum (from step: tasks):", records[lm.name]["config"]["task_phases"])
fig = loss_figure(histories, smooth=1, every=50, title="training loss (running mean every 50 steps)")
plt.close(fig)
fig
""", check=False)

md("""
The jumps in both curves come where the curriculum adds tasks (the phases are printed above the
figure). The two losses measure different things (the masked one is over the masked answer tokens at
a random mask rate), so compare each curve's shape, not their heights. docs/models.md records what was
tried to get the masked model off its plateau sooner.
""")

md("""
## Things to try

1. In notebook 05's panel, pick `tiny-task` from the model menu: the canvas starts on a held-out
   Sudoku and shows as a grid. Switch the rule between `random` and `low_confidence` and watch the
   commit order.
2. `labkit generate --model tiny-task --sampler low_confidence "S2...3.356241.24.1.5...62.623.4.3....="`
   solves one from the command line; `labkit eval --model tiny-task --tasks sudoku --sampler
   threshold --threshold 0.9` scores a rule on the held-out split.
3. Change `hard` in section 1 to the `easy` puzzles: does the order still matter as much?
4. In section 4, lower the threshold on Sudoku instead of mirror: how many forward passes does a
   solved puzzle take, and how many does an unsolved one?
5. Retrain the twins with `make model-task` (docs/models.md gives the time it took), or one seed of each at
   the reduced budget with `labkit bench task-seeds`.
""")

nb = nbf.v4.new_notebook()
nb.cells = CELLS
nb.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
               "language_info": {"name": "python", "version": "3.11.7"}}
out = Path(__file__).resolve().parents[1] / "notebooks" / "11_where_diffusion_wins.ipynb"
nbf.write(nb, out)
print("written", out)
