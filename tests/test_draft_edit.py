"""LLaDA2.1 draft-and-edit with hand-built logits: M2T, T2T, frozen positions, multi-block editing."""
import pytest
import torch

from labkit.samplers.base import DecodeState
from labkit.samplers.draft_edit import DraftEdit

MASK, V = 0, 8


def state(x, frozen=None, start=0, end=None):
    x = torch.as_tensor(x)
    frozen = torch.zeros_like(x, dtype=torch.bool) if frozen is None else torch.as_tensor(frozen)
    return DecodeState(x=x, frozen=frozen, block_start=start, block_end=x.shape[1] if end is None else end,
                       block=0, step=0, steps=x.shape[1], global_step=0, mask_id=MASK)


def logits_for(tokens, confs):
    """Position j proposes tokens[j] with probability confs[j] (the rest spread evenly)."""
    L = len(tokens)
    p = torch.empty(1, L, V)
    for j, (t, c) in enumerate(zip(tokens, confs)):
        p[0, j] = (1 - c) / (V - 1)
        p[0, j, t] = c
    return p.log()


def test_m2t_commits_above_threshold_else_falls_back_to_the_top_one():
    x = torch.full((1, 4), MASK)
    rec = DraftEdit(threshold=0.5).step(logits_for([1, 2, 3, 4], [0.6, 0.4, 0.9, 0.2]), state(x))
    assert rec.committed[0].tolist() == [True, False, True, False]
    rec = DraftEdit(threshold=0.95).step(logits_for([1, 2, 3, 4], [0.6, 0.4, 0.9, 0.2]), state(x))
    assert rec.committed[0].tolist() == [False, False, True, False]          # fallback: top-1
    rec = DraftEdit(threshold=0.95, num_to_transfer=2).step(
        logits_for([1, 2, 3, 4], [0.6, 0.4, 0.9, 0.2]), state(x))
    assert rec.committed[0].tolist() == [True, False, True, False]


def test_t2t_edits_only_filled_changed_confident_unfrozen_positions():
    # position: 0 frozen, 1 same token, 2 differs+confident, 3 differs+unsure, 4 mask
    x = torch.tensor([[5, 3, 4, 6, MASK]])
    frozen = torch.tensor([[True, False, False, False, False]])
    logits = logits_for([7, 3, 2, 1, 1], [0.99, 0.99, 0.8, 0.3, 0.2])
    rec = DraftEdit(threshold=0.9, editing_threshold=0.5).step(logits, state(x, frozen))
    assert rec.edited[0].tolist() == [False, False, True, False, False]
    assert rec.committed[0].tolist() == [False, False, False, False, True]   # fallback commit
    assert rec.tokens[0].tolist() == [5, 3, 2, 6, 1]
    assert not (rec.committed & rec.edited).any()


def test_edits_stay_inside_the_block_without_mbe_and_respect_its_budget_with_it():
    # block is positions 3..5; 0..2 an earlier block the model would like to rewrite
    x = torch.tensor([[1, 2, 3, MASK, MASK, MASK]])
    logits = logits_for([4, 5, 6, 1, 1, 1], [0.97, 0.99, 0.6, 0.3, 0.3, 0.3])
    plain = DraftEdit(threshold=0.9, editing_threshold=0.0).step(logits, state(x, start=3))
    assert not plain.edited.any()
    mbe = DraftEdit(threshold=0.9, editing_threshold=0.0, mbe_blocks=1, mbe_threshold=0.9,
                    mbe_edits_per_step=1).step(logits, state(x, start=3))
    assert mbe.edited[0].tolist() == [False, True, False, False, False, False]   # most confident only
    two = DraftEdit(threshold=0.9, mbe_blocks=1, mbe_edits_per_step=2).step(logits, state(x, start=3))
    assert two.edited[0].tolist() == [True, True, False, False, False, False]    # 0.6 < mbe_threshold


def test_mbe_never_edits_the_prompt():
    x = torch.tensor([[1, 2, 3, MASK, MASK, MASK]])
    frozen = torch.tensor([[True, True, True, False, False, False]])
    logits = logits_for([4, 5, 6, 1, 1, 1], [0.99, 0.99, 0.99, 0.3, 0.3, 0.3])
    rec = DraftEdit(mbe_blocks=4, mbe_edits_per_step=3).step(logits, state(x, frozen, start=3))
    assert not rec.edited.any()


def test_presets_match_the_llada21_card():
    s, q = DraftEdit.speed(), DraftEdit.quality()
    assert (s.threshold, s.editing_threshold, s.max_post_steps) == (0.5, 0.0, 16)
    assert (q.threshold, q.editing_threshold, q.max_post_steps) == (0.7, 0.5, 16)
    assert DraftEdit.speed(mbe_blocks=1).mbe_blocks == 1


@pytest.mark.parametrize("kw, word", [({"threshold": 1.5}, "threshold"), ({"editing_threshold": -0.1}, "editing_threshold"),
                                      ({"max_post_steps": -1}, "max_post_steps"), ({"num_to_transfer": 0}, "num_to_transfer"),
                                      ({"mbe_blocks": 1.5}, "mbe_blocks"), ({"temperature": -1}, "temperature")])
def test_bad_knobs(kw, word):
    with pytest.raises(ValueError, match=word):
        DraftEdit(**kw)
