"""The one masking forward process (labkit.training.masking.mask_tokens) and what it replaced.

Rate and count masking by hand; the block count; and the estimators that now mask through it
giving, seed for seed, the figures they gave before it (measured with the code of d7056b3, the
last commit with the nine separate copies: the same draws in the same order, so the committed
likelihood figures are unchanged)."""
import pytest
import torch

import labkit as lk
from labkit.eval.evaluate import elbo_bits_and_se, heldout_windows, masked_accuracy
from labkit.eval.likelihood import answer_log_likelihood, predicted_bits
from labkit.training.masking import mask_tokens, stratified_counts, stratified_t

X0 = torch.arange(1, 25).view(3, 8)             # (B, L) = (3, 8)
MASK = 0


def test_rate_masking_is_one_uniform_draw_below_t_and_weights_one_over_t():
    t = torch.tensor([0.2, 0.5, 0.9])
    where = torch.ones(3, 8, dtype=torch.bool)
    where[:, :2] = False                                                 # a prompt of 2, never masked
    n = mask_tokens(X0, MASK, rate=t, where=where, generator=torch.Generator().manual_seed(4))
    u = torch.rand(3, 8, generator=torch.Generator().manual_seed(4))
    assert torch.equal(n.masked, (u < t[:, None]) & where)
    assert torch.equal(n.canvas, X0.masked_fill(n.masked, MASK))
    assert torch.equal(n.weight, torch.where(n.masked, 1 / t[:, None], 0.0))
    per_pos = mask_tokens(X0, MASK, rate=t[:, None].expand(3, 8), generator=torch.Generator().manual_seed(4))
    assert torch.equal(per_pos.masked, u < t[:, None])                   # a (B, L) rate reads the same


def test_count_masking_masks_exactly_k_allowed_positions_and_weights_n_over_k():
    where = torch.ones(3, 8, dtype=torch.bool)
    where[0, :3] = False                                                 # row 0: 5 allowed
    k = torch.tensor([2, 8, 1])
    n = mask_tokens(X0, MASK, count=k, where=where, generator=torch.Generator().manual_seed(0))
    assert n.masked.sum(-1).tolist() == [2, 8, 1] and not (n.masked & ~where).any()
    assert n.weight[n.masked].tolist() == [5 / 2] * 2 + [1.0] * 8 + [8.0]
    with pytest.raises(ValueError, match="exactly one of rate"):
        mask_tokens(X0, MASK, generator=None)


def test_block_counts_mask_k_per_block():
    counts = torch.tensor([[1, 4], [3, 2], [4, 1]])                      # (B, blocks) blocks of 4
    n = mask_tokens(X0, MASK, count=counts, block=4, generator=torch.Generator().manual_seed(1))
    assert n.masked.view(3, 2, 4).sum(-1).tolist() == counts.tolist()
    assert torch.equal(n.weight, torch.where(n.masked, (4 / counts.float()).repeat_interleave(4, 1), 0.0))


def test_a_large_draw_masks_at_the_rate_on_average():
    x0 = torch.ones(4000, 16, dtype=torch.long)
    n = mask_tokens(x0, MASK, rate=stratified_t(4000, generator=torch.Generator().manual_seed(0)),
                    generator=torch.Generator().manual_seed(1))
    assert float(n.masked.float().mean()) == pytest.approx(0.5, abs=0.01)   # E[t] = (1 + EPS) / 2
    assert sorted(stratified_counts(5, 10, torch.Generator().manual_seed(0)).tolist()) == [1, 3, 5, 7, 9]   # spaced evenly


@pytest.fixture(scope="module")
def tiny():
    lm = lk.load("tiny")
    return lm, heldout_windows(lm)[:4]


def test_the_estimators_give_the_figures_they_gave_before_one_masking_function(tiny):
    lm, w = tiny
    assert predicted_bits(lm, w, mc_num=4)["bits_per_token"] == pytest.approx(6.08290958404541, abs=1e-5)
    est = answer_log_likelihood(lm, lm.encode("ROMEO:\n"), lm.encode("But soft, what light"), mc_num=16)
    assert (est.value, est.se) == pytest.approx((-27.80667495727539, 1.3776921033859253), abs=1e-5)
    assert elbo_bits_and_se(lm, w, samples=2) == pytest.approx((7.116351012066436, 0.6626900240695788), abs=1e-5)
    assert masked_accuracy(lm, w, 0.15) == 0.4090909090909091


def test_the_block_estimator_gives_the_figure_it_gave_before_one_masking_function(tiny):
    _, w = tiny
    blk = lk.load("tiny-block4-from-ar")
    r = predicted_bits(blk, w, mc_num=4)
    assert (r["bits_per_token"], r["mc_se"]) == pytest.approx((6.450517177581787, 0.1002243310213089), abs=1e-5)
