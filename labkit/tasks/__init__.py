"""Puzzles with exact answers, built in code: where diffusion's strengths can be measured.

A wing of the lab, like the Shakespeare corpus: the task model pairs' recipes and
`labkit.eval.exact` read it; the core never does.

- `sudoku`: 6×6 Sudoku, every puzzle with one solution (decoding order);
- `addition`: 5-digit addition, the sum written most-significant digit first (the carry);
- `reversal`: facts "A>B" asked forwards and backwards (the reversal curse);
- `mirror`: letters written backwards (parallel decoding's best case).

The task models, one pair (masked model, AR twin) per task family, and the questions each reads
(`layouts.prompt_formats`: typed plainly, or with the tag and '=' of the training rows):

    tiny-sudoku, tiny-sudoku-ar   36 cells row by row, digits 1-6, '.' blank: "2...3.356241.24.1.5...62.6..."
                                  (the masked model solves it in place, clues fixed; the twin writes
                                  the 36-digit solution after it)
    tiny-facts, tiny-facts-ar     "abcd>" (who is abcd's partner), "abcd<" (whose partner is abcd),
                                  masked only: "____>abcd" / "abcd>____" (fill the gap); mirror:
                                  10 letters, "qwertyuiop" (written backwards)
    tiny-add, tiny-add-ar         "12345+67890": the 6-digit sum, most-significant digit first

`layouts` also holds each layout's rows and the structure tables its positions know.
"""
import json

from ..models.load import model_folder
from .data import (
    HELDOUT_ITEMS,
    REVERSAL_MODES,
    TASKS,
    Item,
    TaskData,
    answer_length,
    exact_match,
    example_prompt,
    grid_columns,
    heldout,
    is_heldout,
    task_of,
)
from .tokenizer import char_tokenizer


def model_tasks(name: str) -> tuple[str, ...]:
    """The tasks a model name or folder was trained on (its training.json), read without loading
    it; () for a model that is not a task model."""
    record = model_folder(name) / "training.json"
    try:
        cfg = json.loads(record.read_text())["config"]
    except (OSError, ValueError, KeyError, TypeError):
        return ()
    if cfg.get("data") != "tasks":
        return ()
    return tuple(t for t, _ in cfg.get("tasks") or ()) or TASKS


def is_task_model(name: str) -> bool:
    """Whether a model name or folder is a task model (its training.json says data 'tasks')."""
    return bool(model_tasks(name))

__all__ = ["HELDOUT_ITEMS", "REVERSAL_MODES", "TASKS", "Item", "TaskData", "answer_length", "char_tokenizer", "exact_match",
           "example_prompt", "grid_columns", "heldout", "is_heldout", "is_task_model", "model_tasks", "task_of"]
