"""Verifiable rewards for policy optimisation (`labkit.training.rl`): exact checks, no learned judge.

Every reward has one shape, so curves of different tasks read alike: the share of the answer's
scored characters that are right, plus 1 when the whole answer is right (range [0, 2]).

    sudoku      the blanks of the puzzle (clues are fixed in place, never scored); solved = the
                grid is a valid solution that keeps every clue (the puzzles have one solution)
    addition    the digits of the sum (MSB first); exact = the sum
    reversal    the letters of the asked name (or of the whole fact, for an infill); exact = it
    mirror      the letters written backwards; exact = all of them
    keywords    (text) the share of the keywords present as whole words, as the keyword controls
                measure it (`labkit.controls.contains_word`), plus 1 when all of them are

`training_question(task, rng)` draws a question of the training split (never a held-out key), the
RL counterpart of `labkit.tasks.heldout`.
"""
from __future__ import annotations

import functools
import random

from ..controls import contains_word
from ..tasks import TASKS, Item, addition, is_heldout, mirror, reversal, sudoku
from ..tasks.data import TASK_SEED, sudoku_puzzle
from .prompts import has_opening, opening, speeches

REWARD_TASKS = (*TASKS, "keywords")


def exact_reward(prediction: str, answer: str, scored: list[bool] | None = None) -> float:
    """Share of the `scored` characters of `answer` that `prediction` has right (all of them when
    scored is None) + 1 if prediction is the answer. A prediction of another length is scored
    character by character up to the shorter one, and is never exact."""
    prediction, answer = prediction.strip(), answer.strip()
    scored = [True] * len(answer) if scored is None else list(scored)
    if len(scored) != len(answer):
        raise ValueError(f"scored must have one flag per answer character ({len(answer)}), got {len(scored)}")
    n = sum(scored)
    right = sum(1 for p, a, s in zip(prediction, answer, scored) if s and p == a)
    return (right / n if n else 1.0) + float(prediction == answer)


def sudoku_reward(prediction: str, item: Item) -> float:
    """Blanks right (share) + 1 if solved: a valid grid that keeps the puzzle's clues."""
    puzzle = item.prompt.strip().removeprefix("S").removesuffix("=")
    if len(puzzle) != sudoku.CELLS:
        raise ValueError(f"a Sudoku question has {sudoku.CELLS} cells, got {item.prompt!r}")
    pred = prediction.strip()
    blanks = [c == "." for c in puzzle]
    right = sum(1 for p, a, b in zip(pred, item.answer, blanks) if b and p == a)
    solved = (len(pred) == sudoku.CELLS and pred.isdigit() and sudoku.is_solution(pred)
              and sudoku.consistent(sudoku.decode_cells(puzzle), sudoku.decode_cells(pred)))
    return right / max(1, sum(blanks)) + float(solved)


def keyword_reward(text: str, words) -> float:
    """Share of `words` present in `text` as whole words (any case) + 1 if all of them are."""
    words = tuple(words)
    if not words:
        raise ValueError("words must name at least one keyword")
    hits = sum(contains_word(text, w) for w in words)
    return hits / len(words) + float(hits == len(words))


def reward(prediction: str, item: Item) -> float:
    """The exact reward of `prediction` for question `item` (a task Item, or a keywords Item whose
    answer is the comma-separated words)."""
    if item.task == "sudoku":
        return sudoku_reward(prediction, item)
    if item.task == "keywords":
        return keyword_reward(prediction, item.answer.split(","))
    if item.task not in TASKS:
        raise ValueError(f"task must be one of {', '.join(REWARD_TASKS)}, got {item.task!r}")
    return exact_reward(prediction, item.answer)


def rewards(predictions: list[str], items: list[Item]) -> list[float]:
    """reward() of each prediction against its item (the two lists in the same order)."""
    if len(predictions) != len(items):
        raise ValueError(f"{len(predictions)} predictions for {len(items)} items")
    return [reward(p, it) for p, it in zip(predictions, items)]


# --- training questions ------------------------------------------------------------------------

def _sudoku_question(rng: random.Random, clues: tuple[int, int]) -> Item:
    puzzle, grid = sudoku_puzzle(rng, *clues, held_out=False)
    return Item("sudoku", f"S{sudoku.encode_cells(puzzle)}=", sudoku.encode_cells(grid),
                f"{sudoku.clue_count(puzzle)} clues")


@functools.lru_cache(maxsize=2)
def _openings(split: str) -> list[str]:
    """Every speech opening of a split's plays ("SPEAKER:\\nfirst line\\n"), the form the text
    benchmarks prompt with."""
    return [opening(s) for s in speeches(split) if has_opening(s)]


def valid_keywords(words) -> bool:
    """One or more words, each of letters only (what the keyword reward can find as whole words)."""
    return bool(words) and all(isinstance(w, str) and w.isalpha() for w in words)


def keyword_items(prompts: list[str], keywords, split: str = "heldout") -> list[Item]:
    """Keyword questions on given prompts: each answer should hold `keywords`."""
    return [Item("keywords", p, ",".join(keywords), split) for p in prompts]


def keyword_question(rng: random.Random, keywords, split: str = "train") -> Item:
    """A Shakespeare prompt (a speech opening of the split's plays) whose answer should hold `keywords`."""
    words = tuple(keywords)
    if not valid_keywords(words):
        raise ValueError(f"keywords must be one or more words of letters, got {keywords!r}")
    pool = _openings(split)
    return keyword_items([pool[rng.randrange(len(pool))]], words, split)[0]


def training_question(task: str, rng: random.Random, clues: tuple[int, int] = (10, 16), keywords=()) -> Item:
    """One question of the training split of `task`: a Sudoku with a clue count in `clues` (its
    grid not a held-out one), a sum or a mirror whose key is not held out, or a two-way fact asked
    forwards or backwards (both directions are trained; the held-out questions are the one-way
    facts' backward ones)."""
    if task == "keywords":
        return keyword_question(rng, keywords)
    if task == "sudoku":
        lo, hi = clues
        if not sudoku.N <= lo <= hi < sudoku.CELLS:
            raise ValueError(f"clues must be (low, high) with {sudoku.N} <= low <= high < {sudoku.CELLS}, got {clues!r}")
        return _sudoku_question(rng, clues)
    if task in ("addition", "mirror"):
        mod = {"addition": addition, "mirror": mirror}[task]
        while True:
            args = mod.make(rng)
            args = args if isinstance(args, tuple) else (args,)
            if not is_heldout(repr(args)):
                return Item(task, mod.prompt(*args), mod.answer(*args))
    if task == "reversal":
        _, two_way = reversal.facts(TASK_SEED)
        a, b = two_way[rng.randrange(len(two_way))]
        ask = reversal.forward if rng.random() < 0.5 else reversal.backward
        return Item(task, *ask(a, b), "two-way")
    raise ValueError(f"task must be one of {', '.join(REWARD_TASKS)}, got {task!r}")


__all__ = ["REWARD_TASKS", "exact_reward", "keyword_items", "keyword_question", "keyword_reward", "reward", "rewards",
           "sudoku_reward", "training_question", "valid_keywords"]
