"""The solver layout of the third Sudoku twin (labkit.tasks.solver): the order, the answer text,
reading it back, the training rows and the evaluation path."""
from __future__ import annotations

import random

import pytest
import torch

from labkit.eval.exact import run_items
from labkit.models.formats import PromptFormat
from labkit.tasks import TaskData, char_tokenizer, heldout, solver, sudoku
from labkit.training.loop import build_model
from labkit.training.recipes import RECIPES, TrainConfig

ITEMS = heldout("sudoku")[:60]


def grids(items=ITEMS):
    return [sudoku.decode_cells(it.prompt[1:37]) for it in items], [sudoku.decode_cells(it.answer) for it in items]


def test_every_step_is_forced_unless_counted_as_a_guess():
    puzzles, sols = grids()
    order, guessed = solver.solver_order(torch.tensor(puzzles), torch.tensor(sols))
    for p, g, o, k in zip(puzzles, sols, order.tolist(), guessed.tolist()):
        blanks = [i for i in range(sudoku.CELLS) if p[i] == 0]
        steps = [i for i in o if i >= 0]
        assert sorted(steps) == blanks                       # each blank once, nothing else
        cells, unforced = list(p), 0
        for i in steps:
            forced = sudoku.is_single(cells, i)
            unforced += not forced
            if forced:      # the first forced blank in reading order
                assert not any(sudoku.is_single(cells, j) for j in range(i) if cells[j] == 0)
            cells[i] = g[i]
        assert unforced == k


def test_where_no_blank_is_forced_the_solver_guesses_the_fewest_candidates():
    """8 of the 600 held-out puzzles need a guess (the figure the closing note states); each guess is
    the blank with the fewest candidates, first in reading order among ties."""
    puzzles, sols = grids(heldout("sudoku"))
    order, guessed = solver.solver_order(torch.tensor(puzzles), torch.tensor(sols))
    assert int((guessed > 0).sum()) == 8
    for p, g, o, k in zip(puzzles, sols, order.tolist(), guessed.tolist()):
        if not k:
            continue
        cells = list(p)
        for i in (i for i in o if i >= 0):
            if not sudoku.is_single(cells, i):
                counts = {j: len(sudoku.candidates(cells, j)) for j in range(sudoku.CELLS) if cells[j] == 0}
                assert (counts[i], i) == min((n, j) for j, n in counts.items())
            cells[i] = g[i]


def test_steps_round_trip_and_fill():
    puzzles, sols = grids()
    order, _ = solver.solver_order(torch.tensor(puzzles), torch.tensor(sols))
    for it, p, g, o in zip(ITEMS, puzzles, sols, order.tolist()):
        text = solver.steps_text(p, g, o)
        assert len(text) == solver.ANSWER and text.endswith(solver.FILL)
        assert solver.read_steps(it.prompt[1:37], text) == it.answer


def test_read_steps_stops_at_the_first_bad_step():
    cells = "." * 35 + "1"
    assert solver.read_steps(cells, "a2b3") == "23" + "." * 33 + "1"
    assert solver.read_steps(cells, "a2a3b4") == "2" + "." * 34 + "1"          # a cell twice
    assert solver.read_steps(cells, "J5a2") == cells                             # a clue's cell (J = 35)
    assert solver.read_steps(cells, "a7b1") == cells                             # not a digit 1..6
    assert solver.read_steps(cells, "a") == cells


def test_too_many_blanks_is_refused():
    with pytest.raises(ValueError, match="does not fit the solver layout"):
        solver.steps_text([0] * 36, [1] * 36, list(range(36)))


def test_training_rows_are_the_twins_puzzles_in_the_solver_layout():
    cfg = RECIPES["tiny-sudoku-ar-solver"]
    assert cfg.kind == "solver" and cfg.seq_len == 1 + 36 + 1 + solver.ANSWER
    data = TaskData(char_tokenizer(), 3, 8, cfg.tasks, cfg.kind)
    x0, loss = data.batch(0)["sudoku"]
    assert x0.shape == (8, cfg.seq_len) and loss[:, :38].sum() == 0 and loss[:, 38:].all()
    tok = char_tokenizer()
    ar = TaskData(char_tokenizer(), 3, 8, cfg.tasks, "ar").batch(0)["sudoku"][0]     # the AR twin's rows
    for row, twin in zip(x0.tolist(), ar.tolist()):
        text, other = tok.decode(row), tok.decode(twin)
        assert text[:38] == other[:38]                                 # the same puzzle
        assert solver.read_steps(text[1:37], text[38:]) == other[38:]   # answered with the same grid
    text, start = data.example("sudoku", random.Random("3-0-sudoku"))
    assert tok.decode(x0[0].tolist()) == text and start == 38          # one row drawn alone: the same


@pytest.mark.parametrize("knobs, match", [
    (dict(objective="diffusion"), "order='solver'"),
    (dict(objective="ar", tasks=(("addition", 1.0),), seq_len=19), "solver layout is Sudoku's only"),
    (dict(objective="ar", order="spiral"), "order must be"),
])
def test_bad_orders_are_refused(knobs, match):
    base = dict(data="tasks", vocab_size=77, tasks=(("sudoku", 1.0),), seq_len=94, order="solver")
    with pytest.raises(ValueError, match=match):
        TrainConfig(**{**base, **knobs})


def test_prompt_format_reads_is_checked():
    with pytest.raises(ValueError, match="reads must be"):
        PromptFormat(r"(x)", "{}", 2, reads="grid")


def test_a_solver_model_is_scored_on_the_grid_it_writes():
    from labkit.models.load import load
    cfg = RECIPES["tiny-sudoku-ar-solver"]
    model = build_model(cfg, char_tokenizer())
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        char_tokenizer().save_pretrained(tmp)
        lm = load(tmp)
    rows = run_items(lm, ITEMS[:4], __import__("labkit").Autoregressive())
    for r, it in zip(rows, ITEMS[:4]):
        assert len(r["prediction"]) == 36 and r["nfe"] == solver.ANSWER
        clues = [(i, ch) for i, ch in enumerate(it.prompt[1:37]) if ch != "."]
        assert all(r["prediction"][i] == ch for i, ch in clues)       # the question's clues stay
