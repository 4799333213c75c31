"""Where each task's characters sit on a model's canvas, and what each position knows.

Every task model is one pair (masked model, AR twin) trained on one task family. A training row
is one string (one token per character) and the position its answer starts at; the loss covers
the answer. The masked Sudoku model's canvas is the grid itself (the answer is all 36 cells:
clues are given in place, blanks are masks); every other layout is prompt then answer, the same
for both twins:

    sudoku, masked   S<36 digits>                      answer: the 36 cells
    sudoku, AR       S<36 cells, '.' blank>=<36 digits>   answer: the solution after '='
    sudoku, solver   S<36 cells, '.' blank>=<cell><digit>...   answer: the blanks in a solver's order
                                                          (labkit.tasks.solver), '.' fill
    addition         A<5 digits>+<5 digits>=<6 digits>  answer: the sum, most significant digit first
    reversal         R<name>><name>  (or R<name><<name>) answer: the whole fact after the tag
    mirror           C<10 letters>=<10 letters>         answer: the letters reversed

`structure(task, kind)` gives the model's structure tables (labkit.models.tiny_net): for Sudoku a
cell's row, column and 2×3 box (a puzzle cell and its answer cell share them in the AR layout);
for addition a digit's place value (shared by both operands and the sum). Id 0 means "none" (tags
and signs). Facts and mirror rows have learned positions only. The solver layout (kind "solver",
Sudoku only) keeps the puzzle's ids; its steps name their cells, so their positions carry none.
"""
from __future__ import annotations

from ..models.formats import PromptFormat
from . import addition, mirror, reversal, solver, sudoku

KINDS = ("masked", "ar", "solver")   # "solver": an AR layout, Sudoku only


def _cells(table) -> list[int]:
    """Ids 1.. of each cell under `table` (cell index → group)."""
    return [1 + table(i) for i in range(sudoku.CELLS)]


def _sudoku_tables() -> list:
    bh, bw = sudoku.BOX
    n = sudoku.N
    return [lambda i: i // n, lambda i: i % n, lambda i: (i // n) // bh * (n // bw) + (i % n) // bw]


def sudoku_structure(kind: str) -> list[list[int]]:
    """[rows, columns, boxes]: ids per position of the masked layout (tag + grid) or the AR one
    (tag + puzzle + '=' + solution, a puzzle cell and its solution cell sharing ids)."""
    if kind == "masked":
        return [[0, *_cells(t)] for t in _sudoku_tables()]
    if kind == "solver":
        return [[0, *_cells(t), 0, *[0] * solver.ANSWER] for t in _sudoku_tables()]
    return [[0, *_cells(t), 0, *_cells(t)] for t in _sudoku_tables()]


def addition_structure() -> list[list[int]]:
    """[place values]: 1 + the power of ten each digit counts (operand digit i of WIDTH: WIDTH-1-i;
    sum digit j of WIDTH+1: WIDTH-j); tags and signs 0."""
    w = addition.WIDTH
    operand = [1 + w - 1 - i for i in range(w)]
    total = [1 + w - j for j in range(w + 1)]
    return [[0, *operand, 0, *operand, 0, *total]]


def structure(task: str, kind: str) -> list[list[int]] | None:
    """The structure tables of `task`'s layout for a `kind` model, or None (positions only)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    _check_solver(task, kind)
    if task == "sudoku":
        return sudoku_structure(kind)
    if task == "addition":
        return addition_structure()
    return None


def _check_solver(task: str, kind: str) -> None:
    if kind == "solver" and task != "sudoku":
        raise ValueError(f"the solver layout is Sudoku's only, got task {task!r}")


def sudoku_row(grid: list[int], puzzle: list[int], kind: str) -> tuple[str, int]:
    """(row text, answer start) of one Sudoku training row."""
    if kind == "masked":
        return f"S{sudoku.encode_cells(grid)}", 1
    p = f"S{sudoku.encode_cells(puzzle)}="
    return p + sudoku.encode_cells(grid), len(p)


def prompt_formats(task: str, kind: str) -> list[PromptFormat]:
    """The questions a `kind` model of `task` reads (labkit.models.formats): the question typed
    plainly, or with its tag and '=' as the training rows have them.

    sudoku     36 cells, digits 1-6 and '.' for a blank, row by row: "..3.1.....6.." (masked:
               solved in place, the clues fixed in their cells; AR: the solution after the puzzle)
    addition   "12345+67890": the sum, 6 digits, most significant first
    reversal   "abcd>": the name after; "abcd<": the name before (reversed order); masked only,
               as an infill of the trained layout: "____>abcd" or "abcd>____"
    mirror     "qwertyuiop": the letters backwards"""
    _check_solver(task, kind)
    n, w, name, m = sudoku.N, addition.WIDTH, reversal.NAME, mirror.LENGTH
    if task == "sudoku":
        cells = rf"S?([1-{n}.]{{{sudoku.CELLS}}})=?"
        if kind == "solver":
            return [PromptFormat(cells, "S{}=", solver.ANSWER, reads="steps")]
        return [PromptFormat(cells, "S", sudoku.CELLS, blanks=".") if kind == "masked"
                else PromptFormat(cells, "S{}=", sudoku.CELLS)]
    if task == "addition":
        return [PromptFormat(rf"A?(\d{{{w}}}\+\d{{{w}}})=?", "A{}=", w + 1)]
    if task == "mirror":
        return [PromptFormat(rf"C?([a-z]{{{m}}})=?", "C{}=", m)]
    out = [PromptFormat(rf"R?([a-z]{{{name}}}[<>])", "R{}", name)]
    if kind == "masked":
        out.append(PromptFormat(rf"R?(_{{{name}}}>[a-z]{{{name}}}|[a-z]{{{name}}}>_{{{name}}})", "R",
                                2 * name + 1, blanks="_"))
    return out


def ar_positions(task: str) -> list[int]:
    """For each position of `task`'s masked layout, the AR twin's position that plays its part when
    the twin becomes a masked model (TrainConfig.init_from, a Dream-style conversion with shifted
    logits): the Sudoku grid canvas S<36 cells> takes the AR row's '=' and its 36 solution cells
    (there the twin's hidden state predicts the next solution cell, which is what a shifted masked
    model reads); every other task has one layout for both twins."""
    if task == "sudoku":
        start = 1 + sudoku.CELLS                        # the '=' after the puzzle
        return list(range(start, start + row_length(task, "masked")))
    return list(range(row_length(task, "masked")))


def row_length(task: str, kind: str) -> int:
    """Characters of a training row of `task` for a `kind` model (the model's context)."""
    _check_solver(task, kind)
    answer = {"masked": 0, "ar": 1 + sudoku.CELLS, "solver": 1 + solver.ANSWER}[kind]
    return {"sudoku": 1 + sudoku.CELLS + answer,
            "addition": 1 + 2 * addition.WIDTH + 2 + addition.WIDTH + 1,
            "reversal": 2 + 2 * reversal.NAME,
            "mirror": 2 + 2 * mirror.LENGTH}[task]
