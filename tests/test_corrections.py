"""labkit.eval.corrections on hand-made traces: a word-per-token vocabulary, one block of 4."""
from types import SimpleNamespace

import pytest
import torch

from labkit.eval.corrections import corrections
from labkit.samplers.base import StepRecord
from labkit.trace import Trace

VOCAB = ["<mask>", "ROMEO:", " I", " know", " not", " nott", ",", " sir", " lord", "."]
MASK = 0
PLAYS = frozenset({"romeo", "i", "know", "not", "sir", "lord"})


class WordLM:
    def decode(self, ids):
        return "".join(VOCAB[i] for i in ids)


def _out(*canvases):
    """A one-row trace whose steps leave the canvas as the given word lists (prompt 'ROMEO:')."""
    ids = lambda words: torch.tensor([[VOCAB.index(w) for w in ["ROMEO:", *words]]])
    init = ids(["<mask>"] * len(canvases[0]))
    tr, before = Trace(prompt_len=1, mask_id=MASK, init=init), init
    for s, words in enumerate(canvases):
        x = ids(words)
        tr.append(StepRecord(step=s, block=0, tokens=x, candidates=x, confidence=torch.ones(x.shape),
                             committed=(before == MASK) & (x != MASK), edited=(before != MASK) & (before != x)))
        before = x
    return SimpleNamespace(trace=tr)


def test_a_non_word_in_the_draft_edited_into_a_word_is_found():
    out = _out([" I", "<mask>", " not", ","], [" I", " nott", " not", ","], [" I", " know", " not", ","])
    (c,) = corrections(out, WordLM(), 4, PLAYS)
    assert (c.before, c.after, c.why, c.draft_step) == ("nott", "know", "not a word in the plays", 1)
    assert c.draft == " I nott not," and c.final == " I know not,"


def test_a_doubled_word_edited_away_is_found_but_a_new_double_is_not_a_fix():
    fixed = _out([" I", " not", " not", ","], [" I", " know", " not", ","])
    (c,) = corrections(fixed, WordLM(), 4, PLAYS)
    assert (c.before, c.after, c.why) == ("not", "know", "doubled word")
    moved = _out([" I", " not", " not", ","], [" I", " know", " know", ","])
    assert corrections(moved, WordLM(), 4, PLAYS) == []


def test_edits_before_the_block_is_full_and_word_to_word_edits_are_not_corrections():
    early = _out([" nott", "<mask>", "<mask>", "<mask>"], [" I", " know", " not", ","])
    assert corrections(early, WordLM(), 4, PLAYS) == []       # the non-word never stood in a full draft
    swap = _out([" I", " know", " sir", "."], [" I", " know", " lord", "."])
    assert corrections(swap, WordLM(), 4, PLAYS) == []        # sir -> lord: both words


def test_blocks_are_read_separately_and_block_length_is_checked():
    out = _out([" I", " nott", " sir", ","], [" I", " know", " sir", ","])
    (c,) = corrections(out, WordLM(), 2, PLAYS)
    assert (c.block, c.before, c.after) == (0, "nott", "know")
    with pytest.raises(ValueError, match="block_length"):
        corrections(out, WordLM(), 0, PLAYS)
