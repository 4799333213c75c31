"""Sudoku written in a logic solver's order: the layout of the AR twin `tiny-sudoku-ar-solver`.

An AR model that writes a grid left to right must name cell 1 before it knows it; a model that
writes the cells in the order a solver fills them (Shah et al. 2024; Kim et al., ICML 2025) only
ever writes a cell that the cells before it force. The answer is a list of steps, each a cell
name and its digit, then '.' up to a fixed length:

    S<36 cells, '.' blank>=<cell><digit><cell><digit>...<'.' fill>     answer: ANSWER characters

Cell i is named by STEP_CHARS[i] (a-z then A-J: one token each). The order is the solver's
`solver_order`: at every step, the first blank in reading order that one step of logic forces (a
naked single: one candidate left; or a hidden single: the only blank of a unit that can hold a
digit); where no blank is forced, the blank with the fewest candidates (first in reading order),
written with its true digit: a guess that search would confirm. Computed for a batch at once on
digit one-hots (B, 36, 6), so training draws stay cheap.
"""
from __future__ import annotations

import string

import torch

from . import sudoku

STEP_CHARS = (string.ascii_lowercase + string.ascii_uppercase)[:sudoku.CELLS]
FILL = "."
ANSWER = 2 * (sudoku.CELLS - sudoku.TRAIN_CLUES[0])   # characters: room for every blank of a puzzle


def _tables() -> tuple[torch.Tensor, torch.Tensor]:
    units = torch.zeros(len(sudoku.UNITS), sudoku.CELLS)                   # (U, 36): cell in unit
    for u, cells in enumerate(sudoku.UNITS):
        units[u, list(cells)] = 1
    peers = torch.zeros(sudoku.CELLS, sudoku.CELLS)                        # (36, 36): peer of
    for i, ps in enumerate(sudoku.PEERS):
        peers[i, list(ps)] = 1
    return units, peers


def solver_order(puzzles: torch.Tensor, grids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(order (B, 36) long: the blanks' cell indices in the order filled, -1 after the last;
    guessed (B,) long: steps where no blank was forced) for puzzles (B, 36) (0 = blank) and their
    solution grids (B, 36)."""
    units, peers = _tables()
    B, n = puzzles.shape
    cells = puzzles.clone().long()
    order = torch.full((B, n), -1, dtype=torch.long)
    guessed = torch.zeros(B, dtype=torch.long)
    rows = torch.arange(B)
    position = torch.arange(n).float()
    for step in range(n):
        blank = cells == 0                                                 # (B, 36)
        if not blank.any():
            break
        filled = torch.nn.functional.one_hot(cells, sudoku.N + 1)[..., 1:].float()   # (B, 36, N)
        cand = (torch.einsum("ij,bjd->bid", peers, filled) == 0) & blank[..., None]   # (B, 36, N)
        count = cand.sum(-1)                                               # (B, 36)
        per_unit = torch.einsum("uj,bjd->bud", units, cand.float())        # (B, U, N) blanks able to hold d
        lone = torch.einsum("uj,bud->bjd", units, (per_unit == 1).float()) > 0          # (B, 36, N)
        forced = blank & ((count == 1) | (lone & cand).any(-1))
        # first forced blank in reading order; else the blank with the fewest candidates
        key = torch.where(forced, position, n + count.float() * n + position)
        key = torch.where(blank, key, torch.full_like(key, float("inf")))
        pick = key.argmin(-1)                                              # (B,)
        live = blank.any(-1)
        guessed += (live & ~forced[rows, pick]).long()
        order[:, step] = torch.where(live, pick, -1)
        cells[rows, pick] = torch.where(live, grids[rows, pick].long(), cells[rows, pick])
    return order, guessed


def steps_text(puzzle: list[int], grid: list[int], order: list[int]) -> str:
    """The answer of one row: its blanks as (cell, digit) steps in `order`, '.' fill to ANSWER."""
    text = "".join(f"{STEP_CHARS[i]}{grid[i]}" for i in order if i >= 0)
    if len(text) > ANSWER:
        raise ValueError(f"a puzzle with {len(text) // 2} blanks does not fit the solver layout's "
                         f"{ANSWER // 2} steps (it needs at least {sudoku.TRAIN_CLUES[0]} clues)")
    return text + FILL * (ANSWER - len(text))


def rows(puzzles: list[list[int]], grids: list[list[int]]) -> list[tuple[str, int]]:
    """(row text, answer start) of each Sudoku training row in the solver layout."""
    order, _ = solver_order(torch.tensor(puzzles), torch.tensor(grids))
    out = []
    for p, g, o in zip(puzzles, grids, order.tolist()):
        prompt = f"S{sudoku.encode_cells(p)}="
        out.append((prompt + steps_text(p, g, o), len(prompt)))
    return out


def read_steps(cells: str, text: str) -> str:
    """The grid a solver-layout answer writes: the puzzle `cells` (36 characters, '.' blank) with
    each step's digit in its cell. A step is read only while it is a cell name and a digit 1..N
    naming a blank not yet written; reading stops at the first step that is not (the fill, a clue's
    cell, a cell written twice), so unwritten blanks stay '.'."""
    grid = list(cells)
    for k in range(0, len(text) - 1, 2):
        name, digit = text[k], text[k + 1]
        i = STEP_CHARS.find(name)
        if i < 0 or not digit.isdigit() or not 1 <= int(digit) <= sudoku.N or grid[i] != ".":
            break
        grid[i] = digit
    return "".join(grid)
