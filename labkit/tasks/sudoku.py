"""6×6 Sudoku with exactly one solution: the task where the order of decoding matters most.

A grid is 36 digits 1..6 read row by row; rows, columns and the six 2×3 boxes each hold every
digit once. A puzzle keeps some cells (the clues) and blanks the rest ('.'). Puzzles are made
by `make_puzzle`: a random full grid (`random_grid`, backtracking with shuffled digits), cells
removed in a random order while the solution stays unique (`count_solutions` stops at 2), which
leaves a minimal puzzle; then removed cells are given back, at random, up to the clue count
asked for (giving a clue back never breaks uniqueness).

    S..3.1.....=<36 digits>      prompt: "S" + 36 cells ('.' = blank) + "="; answer: the grid
"""
from __future__ import annotations

import random

N = 6                        # digits 1..N; grid N × N
BOX = (2, 3)                 # box height × width
CELLS = N * N
FULL = (1 << N) - 1          # bit d-1 set: digit d still possible
EASY, MEDIUM, HARD = (17, 20), (13, 16), (10, 12)   # clue-count ranges of the held-out levels
LEVELS = {"easy": EASY, "medium": MEDIUM, "hard": HARD}
TRAIN_CLUES = (8, 24)        # training puzzles: a clue count drawn from this range (minimal count at least)


def _units() -> tuple[tuple[int, ...], ...]:
    rows = [tuple(r * N + c for c in range(N)) for r in range(N)]
    cols = [tuple(r * N + c for r in range(N)) for c in range(N)]
    bh, bw = BOX
    boxes = [tuple((br + r) * N + bc + c for r in range(bh) for c in range(bw))
             for br in range(0, N, bh) for bc in range(0, N, bw)]
    return tuple(rows + cols + boxes)


UNITS = _units()
PEERS = tuple(tuple(sorted({j for u in UNITS if i in u for j in u} - {i})) for i in range(CELLS))


def is_solution(grid: list[int] | str) -> bool:
    """Every row, column and box holds 1..N once."""
    g = [int(v) for v in grid]
    return len(g) == CELLS and all(sorted(g[i] for i in u) == list(range(1, N + 1)) for u in UNITS)


def consistent(puzzle: list[int], grid: list[int]) -> bool:
    """The grid keeps every clue of the puzzle (0 = blank)."""
    return all(p == 0 or p == g for p, g in zip(puzzle, grid))


def count_solutions(puzzle: list[int], limit: int = 2) -> int:
    """Number of completions of `puzzle` (0 = blank), counted up to `limit`: depth-first search
    on the cell with the fewest candidates. Clues that clash (a digit twice in a unit) have none."""
    cells = list(puzzle)
    for unit in UNITS:
        given = [cells[i] for i in unit if cells[i]]
        if len(given) != len(set(given)):
            return 0
    return _count(cells, limit)


def _candidates(cells: list[int], i: int) -> int:
    used = 0
    for j in PEERS[i]:
        if cells[j]:
            used |= 1 << (cells[j] - 1)
    return FULL & ~used


def _count(cells: list[int], limit: int) -> int:
    best, best_bits, best_n = -1, 0, N + 1
    for i in range(CELLS):
        if cells[i] == 0:
            bits = _candidates(cells, i)
            n = bin(bits).count("1")
            if n == 0:
                return 0
            if n < best_n:
                best, best_bits, best_n = i, bits, n
                if n == 1:
                    break
    if best < 0:
        return 1
    found = 0
    for d in range(1, N + 1):
        if best_bits >> (d - 1) & 1:
            cells[best] = d
            found += _count(cells, limit - found)
            cells[best] = 0
            if found >= limit:
                break
    return found


def candidates(cells: list[int], i: int) -> list[int]:
    """The digits cell i may still hold: none of its row, column and box peers holds them (0 = blank)."""
    bits = _candidates(cells, i)
    return [d for d in range(1, N + 1) if bits >> (d - 1) & 1]


def is_single(cells: list[int], i: int) -> bool:
    """Blank cell i is forced by one step of logic: one candidate left (a naked single), or a
    digit that no other blank of one of its units can hold (a hidden single)."""
    mine = candidates(cells, i)
    if len(mine) == 1:
        return True
    for unit in UNITS:
        if i in unit:
            others = set()
            for j in unit:
                if j != i and cells[j] == 0:
                    others.update(candidates(cells, j))
            if any(d not in others and d not in (cells[j] for j in unit) for d in mine):
                return True
    return False


def random_grid(rng: random.Random) -> list[int]:
    """A uniformly shuffled valid full grid (backtracking fill, digits tried in random order)."""
    cells = [0] * CELLS

    def fill(i: int) -> bool:
        if i == CELLS:
            return True
        bits = _candidates(cells, i)
        digits = [d for d in range(1, N + 1) if bits >> (d - 1) & 1]
        rng.shuffle(digits)
        for d in digits:
            cells[i] = d
            if fill(i + 1):
                return True
        cells[i] = 0
        return False

    fill(0)
    return cells


def minimal_puzzle(grid: list[int], rng: random.Random) -> list[int]:
    """Blank the grid's cells in a random order, each only if the puzzle keeps one solution."""
    puzzle = list(grid)
    order = list(range(CELLS))
    rng.shuffle(order)
    for i in order:
        d, puzzle[i] = puzzle[i], 0
        if count_solutions(puzzle) != 1:
            puzzle[i] = d
    return puzzle


def with_clues(grid: list[int], minimal: list[int], clues: int, rng: random.Random) -> list[int]:
    """The minimal puzzle with blanked cells given back at random until it has `clues` clues."""
    puzzle = list(minimal)
    blanks = [i for i in range(CELLS) if puzzle[i] == 0]
    rng.shuffle(blanks)
    for i in blanks[:max(0, clues - (CELLS - len(blanks)))]:
        puzzle[i] = grid[i]
    return puzzle


def clue_count(puzzle: list[int]) -> int:
    return sum(1 for v in puzzle if v)


def encode_cells(cells: list[int]) -> str:
    return "".join(str(v) if v else "." for v in cells)


def decode_cells(text: str) -> list[int]:
    return [int(ch) if ch.isdigit() else 0 for ch in text]


def format_grid(cells: list[int] | str) -> str:
    """The grid as N lines with box borders, for reading ('.' for a blank)."""
    s = cells if isinstance(cells, str) else encode_cells(cells)
    bh, bw = BOX
    lines = []
    for r in range(N):
        if r and r % bh == 0:
            lines.append("-" * (2 * N + N // bw - 1 + (N // bw - 1)))
        row = s[r * N:(r + 1) * N]
        lines.append(" | ".join(" ".join(row[c:c + bw]) for c in range(0, N, bw)))
    return "\n".join(lines)
