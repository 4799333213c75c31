# ruff: noqa: E501  (the section's markdown table rows are one line each)
"""docs/models.md's section on the task model pairs ("Where diffusion wins"), from the committed
results: the tables read from benchmarks/results/tasks.json and task_seeds.json, the training
minutes from each model's training.json (benchmarks/make_models_section.py writes it;
tests/test_task_results.py reads the tables and the section's claims back)."""
from __future__ import annotations

import json

from labkit.bench.task_tables import REVERSAL_MODES, SUDOKU_LEVELS, accuracy, pct, seed_rows, sizes_mb
from labkit.models.load import model_folder
from labkit.tasks import addition, reversal, sudoku

from .markdown import markdown_table
from .targets import task_targets
from .weights import parameters

HEADING = "## Where diffusion wins"      # the section runs from this heading to the next section
MODELS = ("tiny-sudoku", "tiny-sudoku-ar", "tiny-facts", "tiny-facts-ar", "tiny-add", "tiny-add-ar")


def shakespeare_table(r: dict) -> str:
    """The parallel rules on the Shakespeare models (rows of samplers.json that tasks.json carries)."""
    return markdown_table(["model · rule", "TPF", "gen-PPL", "× one token per step", "distinct-2"],
                          [(f"{x['model']} · {x['label']}", f"{x['tpf']:.2f}", f"{x['gen_ppl']:.2f}",
                            f"{x['gen_ppl_x_1tok']:.2f}", f"{x['distinct_2']:.3f}") for x in r["shakespeare"]])


def accuracy_cell(s: dict) -> str:
    """Exact match with its 95% interval, in percent: `98.8% [97.6, 99.4]` (the RL section's cells too)."""
    lo, hi = s["ci95"]
    return f"{100 * s['accuracy']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"


def _edits(s: dict) -> str:
    e = s.get("edits")
    return "—" if not e else f"{e['fixed']} / {e['broke']}"


def markdown_pair(result: dict, pair: str) -> str:
    """The pair's table: every rule's exact match (95% interval) per group, TPF, and on Sudoku
    what the edits did (cells fixed / cells broken)."""
    rows = []
    for run in result["pairs"][pair]["runs"]:
        t = run["tasks"]
        if pair == "sudoku":
            s = t["sudoku"]
            rows.append([run["label"], accuracy_cell(s), *(pct(s["groups"][g]["accuracy"]) for g in SUDOKU_LEVELS),
                         f"{s['tpf']:.2f}", _edits(s)])
        elif pair == "facts":
            r, m = t["reversal"]["groups"], t["mirror"]
            rows.append([run["label"], *(accuracy_cell(r[g]) if g in r else "—" for g in REVERSAL_MODES), accuracy_cell(m),
                         f"{m['tpf']:.2f}"])
        else:
            s = t["addition"]
            carries = sorted(s["groups"], key=lambda g: int(g.split()[-1]))
            rows.append([run["label"], accuracy_cell(s), *(pct(s["groups"][g]["accuracy"]) for g in carries), f"{s['tpf']:.2f}"])
    if pair == "sudoku":
        head = ["rule", "solved [95% interval]", *SUDOKU_LEVELS, "TPF", "edits: cells fixed / broken"]
    elif pair == "facts":
        head = ["rule", "forward", "backward, infill", "backward, reversed order", "mirror", "TPF (mirror)"]
    else:
        s = result["pairs"][pair]["runs"][0]["tasks"]["addition"]
        head = ["rule", "exact [95% interval]", *sorted(s["groups"], key=lambda g: int(g.split()[-1])), "TPF"]
    return markdown_table(head, rows)


def markdown_targets(rows: list[dict]) -> str:
    """The task targets' rows (targets.task_targets) as a table: this section shows all of them,
    each model's card its pair's."""
    return markdown_table(["target", "measured", "met", "by how much, or why"],
                          [(r["target"], r["measured"], "yes" if r["met"] else "no", r["note"] or "—") for r in rows])


def markdown_seeds(seeds: dict) -> str:
    """Sudoku solved per rule and training seed, overall and on the hard level."""
    return markdown_table(["rule", *(f"seed {s}" for s in seeds["seeds"]), "spread"], seed_rows(seeds))


def models_section(r: dict, seeds: dict) -> str:
    """The section from tasks.json (`r`) and task_seeds.json (`seeds`), up to the next heading."""
    runs = {m: json.loads((model_folder(m) / "training.json").read_text()) for m in MODELS}
    mins = {m: run["train_seconds"] / 60 for m, run in runs.items()}
    rows = {m: f"{run['config']['steps']:,} × {run['config']['batch_size']}" for m, run in runs.items()}
    n = {task: accuracy(r, pair, "low-confidence", task)["n"] for pair, task in (("sudoku", "sudoku"), ("facts", "mirror"),
                                                                                  ("add", "addition"))}
    facts = accuracy(r, "facts", "low-confidence", "reversal", "forward")["n"]
    levels = ", ".join(f"{k} {lo}–{hi}" + " clues" * (i == 0) for i, (k, (lo, hi)) in enumerate(sudoku.LEVELS.items()))
    cfg = json.loads((model_folder("tiny-sudoku") / "config.json").read_text())
    params = parameters(model_folder("tiny-sudoku"))
    return f"""## Where diffusion wins: the task model pairs

Six small models ship for tasks with exact answers (`labkit.tasks`, built in code from a seed, one
token per character, a held-out split by key hash that training never draws): one pair per task
family, a masked diffusion LM and its autoregressive twin of the same shape
({params / 1e6:.2f}M parameters: {cfg['num_hidden_layers']} layers, d_model {cfg['hidden_size']}, SwiGLU {cfg['intermediate_size']}, RoPE plus learned absolute
positions, {cfg['vocab_size']} character tokens), data, batch, optimiser and step count:

| pair | task | what the positions know | steps × rows | training minutes (masked / AR) |
|---|---|---|---|---|
| `tiny-sudoku` / `tiny-sudoku-ar` | {sudoku.N}×{sudoku.N} Sudoku; the masked model's canvas is the grid itself (clues fixed in place) and it also learned to repair written cells; the twin writes the solution after the puzzle | a cell's row, column and box (the twin's answer cell shares its puzzle cell's) | {rows['tiny-sudoku']} | {mins['tiny-sudoku']:.1f} / {mins['tiny-sudoku-ar']:.1f} |
| `tiny-facts` / `tiny-facts-ar` | facts `A>B` between made-up names ({reversal.ONE_WAY} one-way, {reversal.TWO_WAY} two-way), and mirror | their position | {rows['tiny-facts']} | {mins['tiny-facts']:.1f} / {mins['tiny-facts-ar']:.1f} |
| `tiny-add` / `tiny-add-ar` | {addition.WIDTH}-digit addition, the sum most-significant digit first | a digit's place value, shared by both operands and the sum | {rows['tiny-add']} | {mins['tiny-add']:.1f} / {mins['tiny-add-ar']:.1f} |

The recipe (`labkit.training.recipes`, `make model-tasks`): AdamW 1e-3 with a 300-step warm-up and
cosine decay, the masked loss with the number of masks drawn uniformly over the answer and each row's
loss divided by it (`losses.masked_count_loss`), next-token loss on the answer for the twins. The
minutes are those recorded in each `training.json`: one thread per model, the masked models in one
queue and the twins in another, on a 2-core machine that also ran evaluations and notebooks at the
time, so they are longer than the same runs take on a quiet machine. How the recipe was found: the row, column and box embeddings
follow calibration runs in which a Sudoku model with cell positions only stayed on its loss plateau;
the place-value embedding is the same idea for digits; the AR twin of the facts recalled every
one-way fact forwards after 3,000 steps of this recipe in a calibration run here (24 min on one
thread), so the facts pair trains {runs['tiny-facts']['config']['steps']:,}.
Their cards (`labkit/weights/tiny-*/README.md`) have each recipe, training time, loss and targets.
Notebook 11 (`notebooks/11_where_diffusion_wins.ipynb`) teaches what the tables show.

Exact match on every held-out item (95% Wilson interval), every rule on the masked model, then the
AR twin (`labkit bench tasks --out benchmarks/results` → `benchmarks/results/tasks.json`). Sudoku
({n['sudoku']} puzzles: {levels}; TPF counts the blanks written; the last
column is what the T2T edits did, cells made right / cells made wrong):

{markdown_pair(r, 'sudoku')}

Facts ({facts} one-way facts, each asked three ways; the AR twin cannot be asked an infill) and mirror
({n['mirror']} items):

{markdown_pair(r, 'facts')}

Addition ({n['addition']} sums, by the length of the longest carry chain):

{markdown_pair(r, 'add')}

The same parallel rules on the Shakespeare models (rows of `benchmarks/results/samplers.json`):
the cost of each extra token per forward is gen-PPL as a multiple of one token per step.

{shakespeare_table(r)}

What the tables say, and what they do not:

- **Decoding order** decides Sudoku: the same weights solve far more puzzles in the confident orders
  (low-confidence, margin, entropy) than in random order or left to right, and the gap is widest on
  the hard puzzles; the AR twin, which can only go left to right, solves the fewest. Notebook 11 shows
  why: a confident order writes forced cells far more often, and its guesses are mostly right.
- **Parallel decoding** is free where the answer is fixed by the prompt (mirror and addition: one
  forward pass per answer at thresholds down to 0.5) and costs accuracy where cells are uncertain
  (Sudoku below threshold 0.9).
- **Draft and edit** on Sudoku, where every edit is checkable: S mode's edits made many more cells
  right than wrong, but its 0.5 draft threshold commits guesses the edits do not all repair, so it
  solves fewer puzzles than the confident one-cell-per-pass orders (the editing target below is
  missed). The
  facts and addition models were not trained to edit, and S and Q mode lose accuracy there.
- **Facts backwards**: the AR twin recalls every one-way fact forwards and none in reversed order
  (the reversal curse); the masked model, trained on the same rows, answers backwards by infill of
  the trained layout as well as forwards, and also answers most of them in the reversed order it
  met only on the two-way facts.
- **Addition** is where diffusion brings nothing here: with place-value positions both the masked
  model (in every order) and the AR twin are exact, and the masked model's own confident order
  writes the sum most-significant digit first.

{seeds_part(seeds)}

The targets the task models were trained for, against what they reached (`task_targets` in
benchmarks/docgen/targets.py; each model's card shows its pair's rows and notebook 11 all of them):

{markdown_targets(task_targets(r, seeds, sizes_mb()))}

"""


def seeds_part(seeds: dict) -> str:
    """The seeds' table with its lead-in and what it shows."""
    m = seeds["train_minutes"]
    minutes = "; ".join(f"{name} " + " and ".join(f"{m[f'{name} seed {k}']}" for k in seeds["seeds"] if k)
                        for name in seeds["models"])
    return f"""The spread over training seeds (`labkit bench task-seeds`: the Sudoku pair trained again with
seeds 1 and 2 at its full recipe, every held-out puzzle, `benchmarks/results/task_seeds.json`; the new
seeds' training minutes, one thread each beside other work: {minutes}):

{markdown_seeds(seeds)}

In each of the three seeds, both confident orders (low-confidence, margin) solve more puzzles than
random order, left to right and the AR twin, on all puzzles and on the hard ones: the order effect
is not one training run's luck."""
