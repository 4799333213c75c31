"""The task suite (labkit.tasks): deterministic, exact, and with held-out items training never shows."""
import random

import pytest
import torch

from labkit.tasks import (
    TASKS,
    TaskData,
    addition,
    answer_length,
    char_tokenizer,
    heldout,
    is_heldout,
    mirror,
    reversal,
    sudoku,
    task_of,
)
from labkit.tasks.data import sudoku_symmetry

N = 30          # held-out items per task in these tests (the full split is HELDOUT_ITEMS)


@pytest.fixture(scope="module")
def tok():
    return char_tokenizer()


ALL = tuple((t, 0.25) for t in TASKS)


@pytest.fixture(scope="module")
def data(tok):
    return TaskData(tok, seed=0, batch_size=112, tasks=ALL, kind="masked")


@pytest.fixture(scope="module")
def data_ar(tok):
    return TaskData(tok, seed=0, batch_size=16, tasks=ALL, kind="ar")


@pytest.mark.parametrize("task", TASKS)
def test_the_held_out_items_are_the_same_every_time(task):
    assert heldout(task, N) == heldout(task, N)


@pytest.mark.parametrize("kind", ["masked", "ar"])
def test_training_batches_are_a_function_of_seed_and_step(tok, data, data_ar, kind):
    data = data if kind == "masked" else data_ar
    other = TaskData(tok, seed=0, batch_size=data.rows["sudoku"] * 4, tasks=ALL, kind=kind)
    for task, (x, loss) in data.batch(7).items():
        y, loss2 = other.batch(7)[task]
        assert torch.equal(x, y) and torch.equal(loss, loss2), task
    assert not torch.equal(data.batch(8)["sudoku"][0][:, :37], data.batch(7)["sudoku"][0][:, :37])
    assert not torch.equal(TaskData(tok, seed=1, batch_size=112, tasks=ALL).batch(7)["addition"][0],
                           data.batch(7)["addition"][0])


def test_task_data_refuses_unknown_tasks_and_kinds(tok):
    with pytest.raises(ValueError, match="tasks"):
        TaskData(tok, 0, 8, tasks=(("chess", 1.0),))
    with pytest.raises(ValueError, match="kind must be one of"):
        TaskData(tok, 0, 8, kind="both")


def test_every_held_out_sudoku_has_exactly_one_solution_and_its_level_of_clues():
    items = heldout("sudoku", N)
    assert {it.group for it in items} == set(sudoku.LEVELS)
    for it in items:
        puzzle = sudoku.decode_cells(it.prompt[1:-1])
        grid = sudoku.decode_cells(it.answer)
        assert sudoku.count_solutions(puzzle, limit=3) == 1
        assert sudoku.is_solution(grid) and sudoku.consistent(puzzle, grid)
        lo, hi = sudoku.LEVELS[it.group]
        assert lo <= sudoku.clue_count(puzzle) <= hi


def test_the_solution_counter_sees_a_second_solution():
    grid = sudoku.random_grid(random.Random(3))
    assert sudoku.count_solutions(grid) == 1
    assert sudoku.count_solutions([0] * sudoku.CELLS) == 2            # stops at the limit
    assert sudoku.count_solutions([0] * sudoku.CELLS, limit=5) == 5
    bad = list(grid)
    bad[0], bad[1] = bad[1], bad[0]                                   # a row still fine, columns broken
    assert not sudoku.is_solution(bad) and sudoku.count_solutions(bad) == 0


def test_training_grids_are_valid_and_the_ar_twins_puzzles_unique(data, data_ar):
    rng = random.Random(0)
    for _ in range(20):
        text, start = data._sudoku(rng)                     # masked: the complete grid, all of it answer
        assert start == 1 and sudoku.is_solution(sudoku.decode_cells(text[1:]))
        text, start = data_ar._sudoku(rng)                  # AR: puzzle, '=', solution
        puzzle, grid = sudoku.decode_cells(text[1:start - 1]), sudoku.decode_cells(text[start:])
        assert start == sudoku.CELLS + 2 and text[start - 1] == "="
        assert sudoku.is_solution(grid) and sudoku.consistent(puzzle, grid)
        assert sudoku.count_solutions(puzzle) == 1
        lo, hi = sudoku.TRAIN_CLUES
        assert lo <= sudoku.clue_count(puzzle) <= hi
    g = sudoku.random_grid(rng)
    (h,) = sudoku_symmetry(rng, g)
    assert sudoku.is_solution(h) and h != g


def test_train_and_held_out_share_no_puzzle(tok, data, data_ar):
    held = {task: {it.answer if task == "sudoku" else it.prompt for it in heldout(task)} for task in TASKS
            if task != "reversal"}
    for d, grid_at in ((data, slice(1, None)), (data_ar, slice(sudoku.CELLS + 2, None))):
        for step in range(40):
            for task, (x, _) in d.batch(step).items():
                for row in x.tolist():
                    text = tok.decode(row)
                    if task == "sudoku":
                        assert text[grid_at] not in held[task]
                    elif task != "reversal":
                        assert text[:text.index("=") + 1] not in held[task]
    assert all(is_heldout(it.answer) for it in heldout("sudoku", N))
    assert all(is_heldout(repr((it.prompt[1:-1],))) for it in heldout("mirror", N))
    assert sum(is_heldout(str(i)) for i in range(1000)) in range(60, 140)     # about one bucket in ten


def test_reversal_questions_are_never_trained_in_their_asked_layout(data):
    one_way, two_way = reversal.facts(0)
    trained = set(p + a for p, a in data.facts)
    rows = {tuple(r) for step in range(10) for r in data.batch(step)["reversal"][0].tolist()}
    assert rows <= {tuple(data.ids(t)) for t in trained}       # training shows facts in these layouts only
    assert len(one_way) == reversal.ONE_WAY and len(two_way) == reversal.TWO_WAY
    assert len({x for pair in one_way + two_way for x in pair}) == 2 * (reversal.ONE_WAY + reversal.TWO_WAY)
    items = heldout("reversal", N)
    assert {it.group for it in items} == {"forward", "backward_infill", "backward_reversed"}
    for it in items:
        if it.group == "forward":
            assert it.prompt + it.answer in trained                   # recall of a trained fact
        elif it.group == "backward_reversed":
            assert it.prompt + it.answer not in trained               # never seen in this layout
        else:
            assert it.infill.endswith(">" + it.infill.split(">")[1]) and it.prompt == "R"


def test_answers_are_right_by_construction():
    for it in heldout("addition", N):
        a, b = it.prompt[1:-1].split("+")
        assert int(it.answer) == int(a) + int(b) and len(it.answer) == addition.WIDTH + 1
    for it in heldout("mirror", N):
        assert it.answer == it.prompt[1:-1][::-1] and len(it.answer) == mirror.LENGTH
    assert addition.carry_chain(10 ** addition.WIDTH - 1, 1) == addition.WIDTH and addition.carry_chain(1, 1) == 0


def test_the_tokenizer_is_one_token_per_character(tok):
    for task in TASKS:
        for it in heldout(task, 3):
            assert len(tok(it.prompt + it.answer)["input_ids"]) == len(it.prompt + it.answer)
            assert tok.decode(tok(it.prompt + it.answer)["input_ids"]) == it.prompt + it.answer
    assert (tok.pad_token_id, tok.eos_token_id, tok.mask_token_id) == (0, 1, 2)


def test_a_prompt_tells_its_task_and_answer_length():
    for task in TASKS:
        for it in heldout(task, 3):
            if it.infill is None:
                assert task_of(it.prompt) == task and answer_length(it.prompt) == len(it.answer)
    assert task_of("ROMEO:\n") is None and answer_length("S123=") is None


def test_heldout_refuses_bad_arguments():
    with pytest.raises(ValueError, match="task must be one of"):
        heldout("chess")
    with pytest.raises(ValueError, match="n must be a positive integer"):
        heldout("mirror", 0)


def test_the_exact_match_scorer_on_hand_built_cases():
    from labkit.eval.exact import exact_match, summarise, wilson

    assert exact_match("241635", "241635") and exact_match(" 0391475\n", "0391475")
    assert not exact_match("24163", "241635") and not exact_match("241636", "241635")
    assert not exact_match("", "abcd") and not exact_match("ABCD", "abcd")
    lo, hi = wilson(0, 10)
    assert lo == 0.0 and abs(hi - 0.2775) < 1e-3                       # the textbook Wilson bound
    lo, hi = wilson(10, 10)
    assert hi == 1.0 and abs(lo - 0.7225) < 1e-3
    lo, hi = wilson(50, 100)
    assert abs(lo - 0.4038) < 1e-3 and abs(hi - 0.5962) < 1e-3
    rows = [{"correct": c, "nfe": 4, "tokens": 8} for c in (True, True, False, True)]
    s = summarise(rows)
    assert s["n"] == 4 and s["accuracy"] == 0.75 and s["tpf"] == 2.0 and s["nfe_mean"] == 4.0
    with pytest.raises(ValueError, match="n must be a positive count"):
        wilson(0, 0)
