"""Task layouts: what each position of a task model knows (structure tables), the questions it
reads (prompt formats), and the decoding loop laying a question on the canvas."""
import pytest
import torch

import labkit as lk
from labkit.models.formats import PromptFormat, fit, fit_knobs
from labkit.models.handle import DLM
from labkit.models.tiny_net import TinyDLM, TinyDLMConfig
from labkit.tasks import addition, char_tokenizer, heldout, sudoku
from labkit.tasks.layouts import prompt_formats, row_length, structure


def test_sudoku_cells_share_row_column_and_box_ids_and_the_ar_answer_cell_its_puzzle_cells():
    rows, cols, boxes = structure("sudoku", "masked")
    assert len(rows) == row_length("sudoku", "masked") == 1 + sudoku.CELLS and rows[0] == cols[0] == boxes[0] == 0
    for unit_ids, units in ((rows, sudoku.UNITS[:6]), (cols, sudoku.UNITS[6:12]), (boxes, sudoku.UNITS[12:])):
        for unit in units:                          # each unit: one id, and a different one per unit
            assert len({unit_ids[1 + i] for i in unit}) == 1
        assert len({unit_ids[1 + unit[0]] for unit in units}) == 6
    ar = structure("sudoku", "ar")
    assert len(ar[0]) == row_length("sudoku", "ar") == 2 + 2 * sudoku.CELLS
    for table, mine in zip(ar, (rows, cols, boxes)):
        assert table[1:1 + sudoku.CELLS] == table[2 + sudoku.CELLS:] == mine[1:]   # puzzle cell i ~ answer cell i
        assert table[0] == table[1 + sudoku.CELLS] == 0                            # "S" and "="


def test_addition_digits_of_one_place_value_share_an_id():
    (place,) = structure("addition", "masked")
    assert structure("addition", "ar") == [place]
    row = "A12345+67890=080235"
    assert len(place) == len(row) == row_length("addition", "masked")
    w = addition.WIDTH
    units = [i for i, ch in enumerate(row) if ch.isdigit() and place[i] == 1]
    assert units == [w, 2 * w + 1, len(row) - 1]                  # the units of a, b and the sum
    assert place[1] == place[w + 2] == place[len(row) - w] == w   # the ten-thousands: a, b and the sum
    assert place[len(row) - w - 1] == w + 1                       # the sum's carry digit stands alone
    assert structure("reversal", "masked") is None and structure("mirror", "ar") is None
    with pytest.raises(ValueError, match="kind must be one of"):
        structure("sudoku", "both")


def test_questions_are_read_plain_or_tagged():
    (s,) = prompt_formats("sudoku", "masked")
    puzzle = heldout("sudoku", 3)[0].prompt[1:-1]
    assert s.match(puzzle) == s.match(f"S{puzzle}=") == ("S", puzzle)
    (s_ar,) = prompt_formats("sudoku", "ar")
    assert s_ar.match(puzzle) == (f"S{puzzle}=", None)
    (a,) = prompt_formats("addition", "ar")
    assert a.match("12345+67890") == a.match("A12345+67890=") == ("A12345+67890=", None)
    assert a.match("1234+67890") is None and a.match("ROMEO:") is None
    fwd, infill = prompt_formats("reversal", "masked")
    assert fwd.match("abcd<") == ("Rabcd<", None) and infill.match("____>abcd") == ("R", "____>abcd")
    assert len(prompt_formats("reversal", "ar")) == 1                # an AR model cannot fill a gap
    with pytest.raises(ValueError, match="must have a group"):
        PromptFormat("S.*", "S", 36)
    with pytest.raises(ValueError, match="answer must be a token count"):
        PromptFormat("(S.*)", "S", 0)


def _model(task: str, kind: str, seed: int = 0) -> DLM:
    tok = char_tokenizer()
    cfg = TinyDLMConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=48, max_position_embeddings=row_length(task, kind), is_causal=kind == "ar",
                        absolute_positions=True, structure=structure(task, kind),
                        prompt_formats=[f.to_dict() for f in prompt_formats(task, kind)],
                        mask_token_id=tok.mask_token_id, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
    torch.manual_seed(seed)
    net = TinyDLM(cfg).eval()
    fmts = tuple(PromptFormat(**f) for f in cfg.prompt_formats)
    return DLM(net=net, tokenizer=tok, mask_id=tok.mask_token_id, eos_id=tok.eos_token_id, pad_id=tok.pad_token_id,
               name=f"random-{task}-{kind}", kind="causal" if kind == "ar" else "masked",
               max_length=cfg.max_position_embeddings, formats=fmts)


def test_a_left_padded_row_sees_the_positions_it_sees_alone():
    lm = _model("addition", "masked")
    ids = torch.tensor([lm.encode("A12345+67890=080235")])
    alone = lm(ids)
    padded = torch.cat([torch.full((1, 3), lm.pad_id), ids], 1)
    attn = torch.cat([torch.zeros(1, 3, dtype=torch.long), torch.ones_like(ids)], 1)
    assert torch.allclose(lm(padded, attn)[:, 3:], alone, atol=1e-5)


def test_an_in_place_question_keeps_its_clues_and_a_batch_decodes_as_each_alone():
    lm = _model("sudoku", "masked")
    items = heldout("sudoku", 6)[:2]
    puzzles = [it.prompt[1:-1] for it in items]
    out = lk.generate(lm, puzzles, "low_confidence")
    assert out.trace.meta["gen_length"] == out.trace.meta["block_length"] == sudoku.CELLS
    for p, ids in zip(puzzles, out.ids[:, out.trace.prompt_len:]):
        canvas = lm.decode(ids.tolist())
        assert len(ids) == sudoku.CELLS and all(c == q for c, q in zip(canvas, p) if q != ".")
    blanks = [p.count(".") for p in puzzles]
    assert out.trace.row_nfe().tolist() == blanks                 # one step per blank, the clues never written
    for p, row in zip(puzzles, out.ids):
        assert torch.equal(lk.generate(lm, p, "low_confidence").ids[0], row[-len(row):])


def test_a_prompt_then_answer_question_fits_the_canvas_to_its_answer():
    lm = _model("addition", "ar")
    out = lk.generate(lm, "12345+67890")
    assert out.trace.meta["gen_length"] == addition.WIDTH + 1 and lm.decode(out.ids[0, :13].tolist()) == "A12345+67890="
    fitted = fit(lm, ["12345+67890", "A00001+00002="])
    assert fitted.prompts == ["A12345+67890=", "A00001+00002="] and fitted.canvases is None and fitted.answer == 6
    with pytest.raises(ValueError, match="is not a question model"):
        fit(lm, ["12345+67890", "ROMEO:"])
    assert fit(lm, ["ROMEO:"]) is None                            # no question at all: a plain prompt
    assert fit_knobs(36, 32, 64) == (36, 36, 36) and fit_knobs(36, 1, 64) == (36, 1, 36)
    assert fit_knobs(6, 2, 4) == (6, 2, 3) and fit_knobs(36, 12, 10) == (36, 12, 9)
