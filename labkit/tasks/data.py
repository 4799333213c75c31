"""The task suite as data: held-out items with exact answers, and training batches.

Splits. Every generated item has a key (a Sudoku's solution grid, an addition's operands, a
mirror's letters); a key whose CRC-32 falls in HELDOUT_BUCKET of BUCKETS is held-out only and
training draws skip it, so no puzzle (not even a solution grid) is shared. Reversal is different
by design: its questions are about trained facts; the held-out part is the asked layout, which
training never shows for the one-way facts (see `reversal`).

Training batches are a pure function of (seed, step), like the Shakespeare corpus: each step has
one group of rows per task (one canvas length per group, no padding, no EOS: a task model's
canvas is always exactly its answer), and `loss` marks the positions the loss covers.
"""
from __future__ import annotations

import functools
import random
import re
import zlib
from dataclasses import dataclass

import torch

from . import addition, mirror, reversal, solver, sudoku
from .layouts import KINDS, sudoku_row

TASKS = ("sudoku", "addition", "reversal", "mirror")
BUCKETS, HELDOUT_BUCKET = 10, 0
HELDOUT_ITEMS = 600            # per task (Sudoku: 200 per level; reversal: 600 facts × 3 queries)
TASK_SEED = 0                  # the task suite's own seed (facts, held-out items); training seeds vary
SUDOKU_POOL = 20_000          # backtracking fills per training run; each draw is a random symmetry of one
REVERSAL_MODES = ("forward", "backward_infill", "backward_reversed")


@dataclass(frozen=True)
class Item:
    """One held-out question: prompt → answer, exact match. `infill` is a masked-model-only
    layout (the answer canvas with gaps: decode with labkit.Infill(infill))."""
    task: str
    prompt: str
    answer: str
    group: str = ""               # Sudoku level, reversal mode, ...
    infill: str | None = None


def exact_match(prediction: str, answer: str) -> bool:
    """The prediction is the answer, character for character (outer whitespace ignored): how every
    task's answer is scored (evaluation, RL's held-out checks)."""
    return prediction.strip() == answer.strip()


def task_of(prompt: str) -> str | None:
    """The task a question asks (by its shape, with or without its tag and '='; a Sudoku or a
    reversal infill may have blanks), or None for anything else."""
    p = prompt.strip()
    w, name = addition.WIDTH, reversal.NAME
    shapes = {"sudoku": rf"S?[1-{sudoku.N}.]{{{sudoku.CELLS}}}=?", "addition": rf"A?\d{{{w}}}\+\d{{{w}}}=?",
              "mirror": rf"C?[a-z]{{{mirror.LENGTH}}}=?",
              "reversal": rf"R?([a-z]{{{name}}}[<>]|_{{{name}}}>[a-z]{{{name}}}|[a-z]{{{name}}}>_{{{name}}})"}
    return next((task for task, shape in shapes.items() if re.fullmatch(shape, p)), None)


def answer_length(prompt: str) -> int | None:
    """Characters (= tokens) of the canvas a task question fills; None for a prompt of no task."""
    task = task_of(prompt)
    if task == "reversal" and "_" in prompt:              # an infill: the whole fact is the canvas
        return 2 * reversal.NAME + 1
    return {"sudoku": sudoku.CELLS, "addition": addition.WIDTH + 1, "mirror": mirror.LENGTH,
            "reversal": reversal.NAME, None: None}[task]


def grid_columns(prompt: str) -> int | None:
    """How wide a task's answer reads as a grid (a Sudoku: 6), None where a line reads best."""
    return sudoku.N if task_of(prompt) == "sudoku" else None


def example_prompt(task: str = "sudoku") -> str:
    """A held-out question of `task` (the first), e.g. the panel's starting prompt for a task model."""
    return next(it.prompt for it in heldout(task, 3) if it.infill is None)


def is_heldout(key: str) -> bool:
    return zlib.crc32(key.encode()) % BUCKETS == HELDOUT_BUCKET


def sudoku_puzzle(rng: random.Random, lo: int, hi: int, held_out: bool) -> tuple[list[int], list[int]]:
    """(puzzle, grid): a puzzle with one solution and lo..hi clues, its grid drawn from the
    held-out split (held_out) or from the training split."""
    while True:
        grid = sudoku.random_grid(rng)
        if is_heldout(sudoku.encode_cells(grid)) != held_out:
            continue
        minimal = sudoku.minimal_puzzle(grid, rng)
        m = sudoku.clue_count(minimal)
        if m > hi:
            continue
        return sudoku.with_clues(grid, minimal, rng.randint(max(lo, m), hi), rng), grid


def _sudoku_items(rng: random.Random, n: int) -> list[Item]:
    items = []
    per = n // len(sudoku.LEVELS)
    for level, (lo, hi) in sudoku.LEVELS.items():
        for _ in range(per):
            puzzle, grid = sudoku_puzzle(rng, lo, hi, held_out=True)
            items.append(Item("sudoku", f"S{sudoku.encode_cells(puzzle)}=", sudoku.encode_cells(grid), level))
    return items


def _keyed_items(task: str, rng: random.Random, n: int) -> list[Item]:
    items, seen = [], set()
    mod = {"addition": addition, "mirror": mirror}[task]
    while len(items) < n:
        args = mod.make(rng)
        args = args if isinstance(args, tuple) else (args,)
        key = repr(args)
        if key in seen or not is_heldout(key):
            continue
        seen.add(key)
        group = f"carry {addition.carry_chain(*args)}" if task == "addition" else ""
        items.append(Item(task, mod.prompt(*args), mod.answer(*args), group))
    return items


def _reversal_items(n: int) -> list[Item]:
    one_way, _ = reversal.facts(TASK_SEED)
    items = []
    for a, b in one_way[:n]:
        items.append(Item("reversal", *reversal.forward(a, b), "forward"))
        items.append(Item("reversal", "R", a, "backward_infill", infill=reversal.infill_template(b)))
        items.append(Item("reversal", *reversal.backward(a, b), "backward_reversed"))
    return items


def heldout(task: str, n: int = HELDOUT_ITEMS) -> list[Item]:
    """The held-out items of `task` (deterministic: the suite's seed, not a training seed)."""
    if task not in TASKS:
        raise ValueError(f"task must be one of {', '.join(TASKS)}, got {task!r}")
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    return list(_heldout(task, n))


@functools.lru_cache(maxsize=16)
def _heldout(task: str, n: int) -> tuple[Item, ...]:
    """Built once per (task, n) in a process: the Sudoku items search for unique puzzles."""
    rng = random.Random(f"heldout-{task}-{TASK_SEED}")
    if task == "sudoku":
        return tuple(_sudoku_items(rng, n))
    if task == "reversal":
        return tuple(_reversal_items(min(n, reversal.ONE_WAY)))
    return tuple(_keyed_items(task, rng, n))


# --- training ---------------------------------------------------------------------------------

def _bands(rng: random.Random, groups: int, size: int) -> list[int]:
    """A permutation of groups·size lines: the groups shuffled, the lines within each shuffled."""
    order = list(range(groups))
    rng.shuffle(order)
    out = []
    for g in order:
        inner = list(range(g * size, (g + 1) * size))
        rng.shuffle(inner)
        out += inner
    return out


def sudoku_symmetry(rng: random.Random, *grids: list[int]) -> list[list[int]]:
    """The same random validity-preserving transformation of each grid (digits relabelled, bands
    and the rows within them, stacks and the columns within them permuted); 0 stays blank."""
    bh, bw = sudoku.BOX
    n = sudoku.N
    rows = _bands(rng, n // bh, bh)
    cols = _bands(rng, n // bw, bw)
    digits = list(range(1, n + 1))
    rng.shuffle(digits)
    relabel = [0, *digits]
    return [[relabel[g[r * n + c]] for r in rows for c in cols] for g in grids]


class TaskData:
    """Training rows of one model's tasks for a run seed: `batch(step)` → {task: (x0, loss)}.

    `tasks`: ((task, share of batch_size), ...); `kind`: "masked" or "ar", which picks each task's
    layout (labkit.tasks.layouts). Sudoku grids come from a pool of SUDOKU_POOL backtracking fills
    of the run seed, each draw a random symmetry of one (held-out grids skipped): every grid the
    masked model sees is complete, with no puzzle; the AR twin gets the same grids as puzzles (a
    pool grid's minimal puzzle, made once per pool grid when first drawn, under the same symmetry,
    with clues given back up to a count drawn from sudoku.TRAIN_CLUES); kind "solver" gets the AR
    twin's puzzles, answered in a solver's order (labkit.tasks.solver)."""

    def __init__(self, tokenizer, seed: int, batch_size: int, tasks: tuple = (("sudoku", 1.0),),
                 kind: str = "masked"):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        if not tasks or any(t not in TASKS or not 0 < float(share) <= 1 for t, share in tasks):
            raise ValueError(f"tasks: ((task, share in (0, 1]), ...) with tasks from {', '.join(TASKS)}, "
                             f"got {tasks!r}")
        self.kind = kind
        self.vocab = tokenizer.get_vocab()
        self.seed = seed
        self.rows = {t: max(1, round(batch_size * float(share))) for t, share in tasks}
        self._pool: list[list[int]] | None = None
        self._minimal: dict[int, list[int]] = {}
        one_way, two_way = reversal.facts(TASK_SEED)
        self.facts = [reversal.forward(a, b) for a, b in one_way + two_way] + \
                     [reversal.backward(a, b) for a, b in two_way]

    def ids(self, text: str) -> list[int]:
        return [self.vocab[ch] for ch in text]

    @property
    def pool(self) -> list[list[int]]:
        """The run's Sudoku grids (built on first use: a few seconds)."""
        if self._pool is None:
            rng = random.Random(f"sudoku-pool-{self.seed}")
            self._pool = [sudoku.random_grid(rng) for _ in range(SUDOKU_POOL)]
        return self._pool

    def minimal(self, i: int) -> list[int]:
        """Pool grid i's minimal puzzle (its own seed: the same whatever the order of draws)."""
        if i not in self._minimal:
            self._minimal[i] = sudoku.minimal_puzzle(self.pool[i], random.Random(f"minimal-{self.seed}-{i}"))
        return self._minimal[i]

    def _sudoku(self, rng: random.Random) -> tuple[str, int]:
        grid, puzzle = self._sudoku_pair(rng)
        return sudoku_row(grid, puzzle, self.kind)

    def _sudoku_pair(self, rng: random.Random) -> tuple[list[int], list[int]]:
        """(grid, puzzle) of one training row (the masked layout's puzzle is the grid itself)."""
        while True:
            i = rng.randrange(len(self.pool))
            if self.kind == "masked":
                (grid,) = sudoku_symmetry(rng, self.pool[i])
                puzzle = grid
            else:
                grid, minimal = sudoku_symmetry(rng, self.pool[i], self.minimal(i))
                lo, hi = sudoku.TRAIN_CLUES
                puzzle = sudoku.with_clues(grid, minimal, rng.randint(max(lo, sudoku.clue_count(minimal)), hi), rng)
            if not is_heldout(sudoku.encode_cells(grid)):
                return grid, puzzle

    def _keyed(self, task: str, rng: random.Random) -> tuple[str, str]:
        mod = {"addition": addition, "mirror": mirror}[task]
        while True:
            args = mod.make(rng)
            args = args if isinstance(args, tuple) else (args,)
            if not is_heldout(repr(args)):
                return mod.prompt(*args), mod.answer(*args)

    def example(self, task: str, rng: random.Random) -> tuple[str, int]:
        """(row text, first loss position) of one training row."""
        if task == "sudoku" and self.kind == "solver":
            grid, puzzle = self._sudoku_pair(rng)
            return solver.rows([puzzle], [grid])[0]
        if task == "sudoku":
            return self._sudoku(rng)
        if task == "reversal":                       # a fact, trained whole (after its tag)
            p, a = self.facts[rng.randrange(len(self.facts))]
            return p + a, 1
        p, a = self._keyed(task, rng)
        return p + a, len(p)

    def batch(self, step: int) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        """{task: (x0 (R, L) long, loss (R, L) bool)} for this step, one group per task."""
        out = {}
        for task, n in self.rows.items():
            rng = random.Random(f"{self.seed}-{step}-{task}")
            if task == "sudoku" and self.kind == "solver":     # the solver's orders, one call per batch
                pairs = [self._sudoku_pair(rng) for _ in range(n)]
                examples = solver.rows([p for _, p in pairs], [g for g, _ in pairs])
            else:
                examples = [self.example(task, rng) for _ in range(n)]
            rows = [self.ids(text) for text, _ in examples]
            starts = [start for _, start in examples]
            x0 = torch.tensor(rows, dtype=torch.long, device="cpu")         # the trainer moves it to its device
            loss = torch.arange(x0.shape[1], device="cpu")[None, :] >= torch.tensor(starts, device="cpu")[:, None]
            out[task] = (x0, loss)
        return out
