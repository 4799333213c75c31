"""The committed task models answer questions typed as a person types them, through
lk.generate and the command line, with any rule (labkit.tasks.layouts lists the formats)."""
import pytest
import torch

import labkit as lk
from labkit.cli.main import main
from labkit.samplers import registry
from labkit.tasks import heldout, reversal, sudoku


@pytest.fixture(scope="module")
def easy():
    return [it for it in heldout("sudoku") if it.group == "easy"][:4]


@pytest.fixture(scope="module")
def sd():
    return lk.load("tiny-sudoku")


@pytest.mark.parametrize("rule", registry.names_for("masked"))
def test_any_rule_solves_a_sudoku_in_place_with_its_clues_kept(sd, easy, rule):
    puzzles = [it.prompt[1:-1] for it in easy]                     # 36 cells, '.' for a blank
    out = lk.generate(sd, puzzles, rule, seed=0)
    for p, text in zip(puzzles, out.texts):
        assert len(text) == sudoku.CELLS and text.isdigit()
        assert all(c == q for c, q in zip(text, p) if q != ".")     # every clue in its cell
    P = out.trace.prompt_len
    assert not (out.trace.committed()[:, :, P:] & (out.trace.init[:, P:] != sd.mask_id)).any()   # clues never written
    if rule in ("low_confidence", "threshold", "draft_edit", "quality"):
        assert [t == it.answer for t, it in zip(out.texts, easy)] == [True] * len(easy), rule
    assert out.stats["gen_tokens"] == sum(p.count(".") for p in puzzles)   # the model wrote the blanks only


def test_the_ar_twin_solves_the_same_question_typed_the_same_way(easy):
    ar = lk.load("tiny-sudoku-ar")
    out = lk.generate(ar, easy[0].prompt[1:-1])
    assert len(out.texts[0]) == sudoku.CELLS and out.texts[0].isdigit()
    assert out.trace.meta["gen_length"] == sudoku.CELLS
    assert sudoku.consistent(sudoku.decode_cells(easy[0].prompt[1:-1]), sudoku.decode_cells(out.texts[0]))


def test_the_command_line_solves_a_sudoku(easy, capsys):
    assert main(["generate", "--model", "tiny-sudoku", "--sampler", "low_confidence", easy[0].prompt[1:-1]]) == 0
    out, err = capsys.readouterr()
    assert easy[0].answer in out and sudoku.format_grid(easy[0].answer).splitlines()[0] in err


def test_a_sum_and_a_fact_are_asked_plainly():
    add = lk.load("tiny-add")
    it = heldout("addition", 5)[0]
    out = lk.generate(add, it.prompt[1:-1])                        # "12345+67890"
    assert len(out.texts[0]) == 6 and out.texts[0].isdigit()
    facts = lk.load("tiny-facts")
    a, b = reversal.facts(0)[0][0]
    filled = lk.generate(facts, f"____>{b}").texts[0]              # the gap filled around the given name
    assert len(filled) == 2 * reversal.NAME + 1 and filled.endswith(f">{b}")
    assert torch.equal(lk.generate(facts, f"R{a}>").ids, lk.generate(facts, f"{a}>").ids)   # tag or not, one question


def test_tiny_adds_confident_order_writes_the_sum_most_significant_digit_first():
    """docs/models.md and notebook 11 say so: the mean step each sum digit is written at rises left to right."""
    add = lk.load("tiny-add")
    sums = [it.prompt[1:-1] for it in heldout("addition", 40)]
    out = lk.generate(add, sums, "low_confidence")
    steps = out.trace.commit_step()[:, out.trace.prompt_len:].float().mean(0)        # (6,)
    assert bool((steps[1:] > steps[:-1]).all()), steps
