"""Parallel-decoding rules with hand-built logits."""
import math

import pytest
import torch

from labkit.samplers.base import DecodeState
from labkit.samplers.threshold import EntropyBound, Threshold, score_block

MASK, V = 0, 6


def state(x, frozen=None):
    x = torch.as_tensor(x)
    frozen = torch.zeros_like(x, dtype=torch.bool) if frozen is None else frozen
    return DecodeState(x=x, frozen=frozen, block_start=0, block_end=x.shape[1], block=0, step=0,
                       steps=x.shape[1], global_step=0, mask_id=MASK)


def logits_with_conf(confs, B=1):
    """Position j proposes token 1 + j % 5 with probability confs[j] (rest spread evenly)."""
    L = len(confs)
    p = torch.empty(B, L, V)
    for j, c in enumerate(confs):
        p[:, j] = (1 - c) / (V - 1)
        p[:, j, 1 + j % 5] = c
    return p.log()


def test_threshold_commits_all_above_and_always_the_best():
    confs = [0.95, 0.5, 0.92, 0.3]
    rec = Threshold(threshold=0.9).step(logits_with_conf(confs), state(torch.full((1, 4), MASK)))
    assert rec.committed[0].tolist() == [True, False, True, False]
    rec = Threshold(threshold=0.99).step(logits_with_conf(confs), state(torch.full((1, 4), MASK)))
    assert rec.committed[0].tolist() == [True, False, False, False]      # fallback: the top one


def test_threshold_commits_at_least_one_per_row_and_rows_are_independent():
    confs = torch.tensor([[0.95, 0.93, 0.2], [0.3, 0.25, 0.5]])
    logits = torch.stack([logits_with_conf(c.tolist())[0] for c in confs])
    rec = Threshold(threshold=0.9).step(logits, state(torch.full((2, 3), MASK)))
    assert rec.committed.sum(-1).tolist() == [2, 1]
    assert rec.committed[1].tolist() == [False, False, True]
    for b in range(2):
        single = Threshold(threshold=0.9).step(logits[b:b + 1], state(torch.full((1, 3), MASK)))
        assert torch.equal(single.committed[0], rec.committed[b])


def test_threshold_touches_only_masked_unfrozen_positions():
    x = torch.tensor([[MASK, 4, MASK, MASK]])
    frozen = torch.tensor([[False, False, True, False]])
    rec = Threshold(threshold=0.1).step(logits_with_conf([0.9] * 4), state(x, frozen))
    assert rec.committed[0].tolist() == [True, False, False, True]
    assert rec.tokens[0, 1] == 4 and rec.tokens[0, 2] == MASK


def test_factor_rule_paper_variant():
    # sorted confidences 0.9, 0.8, 0.7, 0.5: rank r (1-based) needs c >= 1 - 1/(r+1)
    # r=2: 0.8 >= 0.667 ok; r=3: 0.7 < 0.75 stop -> accept 2
    confs = [0.7, 0.9, 0.5, 0.8]
    paper = dict(threshold=None, factor_rule="paper")
    rec = Threshold(factor=1.0, **paper).step(logits_with_conf(confs), state(torch.full((1, 4), MASK)))
    assert rec.committed[0].tolist() == [False, True, False, True]
    rec = Threshold(factor=2.0, **paper).step(logits_with_conf(confs), state(torch.full((1, 4), MASK)))
    # factor 2: r=2 needs 0.333, r=3 needs 0.5, r=4 needs 0.6 -> 0.5 fails at r=4: accept 3
    assert rec.committed[0].tolist() == [True, True, False, True]


def test_factor_rule_follows_fast_dllm_code_by_default():
    """Fast-dLLM's get_transfer_index_dynamic: when the first failing rank is the block's last
    masked position, that token is committed too."""
    masks = lambda n: state(torch.full((1, n), MASK))
    rule = Threshold(threshold=None, factor=1.0)
    assert rule.factor_rule == "official"
    # 0.986 / 0.721 / 0.444: r=2 needs 0.667 ok, r=3 needs 0.75: fails at the last rank -> all 3
    assert rule.step(logits_with_conf([0.986, 0.721, 0.444]), masks(3)).committed.sum() == 3
    assert Threshold(threshold=None, factor=1.0, factor_rule="paper").step(
        logits_with_conf([0.986, 0.721, 0.444]), masks(3)).committed.sum() == 2
    # fails at r=3 of 4: not the last rank, so 2 as in the paper
    assert rule.step(logits_with_conf([0.7, 0.9, 0.5, 0.8]), masks(4)).committed[0].tolist() == [False, True, False, True]
    # fails at r=4 of 4 (the last): all 4
    assert Threshold(threshold=None, factor=2.0).step(logits_with_conf([0.7, 0.9, 0.5, 0.8]), masks(4)).committed.all()
    # two masks left: they always go together, however unsure the second
    assert rule.step(logits_with_conf([0.9, 0.2]), masks(2)).committed.all()
    assert rule.step(logits_with_conf([0.3]), masks(1)).committed.all()


def _official_count(confs, factor):
    """How many Fast-dLLM's code commits, written from its loop: thresholds 1 - factor / (n + 1)
    for n = 1..m with the first replaced by -1, scan the sorted confidences to the first failure
    (or the last index), and step past it when it is index 0 or the last index."""
    c = sorted(confs, reverse=True)
    thresholds = [-1.0] + [1 - factor / (n + 1) for n in range(2, len(c) + 1)]
    top = 0
    for top in range(len(c)):
        if c[top] < thresholds[top]:
            break
    return top + 1 if top in (0, len(c) - 1) else top


@pytest.mark.parametrize("factor", [0.5, 1.0, 2.0, 4.0])
def test_factor_rule_matches_the_official_loop_on_random_confidences(factor):
    g = torch.Generator().manual_seed(int(factor * 10))
    for _ in range(40):
        m = int(torch.randint(1, 9, (1,), generator=g))
        confs = (0.25 + 0.75 * torch.rand(m, generator=g)).tolist()
        got = Threshold(threshold=None, factor=factor).step(logits_with_conf(confs), state(torch.full((1, m), MASK)))
        assert int(got.committed.sum()) == _official_count(confs, factor), confs


def test_scores():
    logits = torch.log(torch.tensor([[[0.1, 0.6, 0.3]]]))
    cand, prob = torch.tensor([[1]]), torch.tensor([[0.6]])
    assert score_block(logits, cand, prob, "probability").item() == pytest.approx(0.6)
    assert score_block(logits, cand, prob, "margin").item() == pytest.approx(0.3)
    want = sum(p * math.log(p) for p in (0.1, 0.6, 0.3))
    assert score_block(logits, cand, prob, "neg_entropy").item() == pytest.approx(want, abs=1e-5)


def test_margin_score_changes_the_choice():
    # position 0: p = (0.5, 0.45, ...) high prob, tiny margin; position 1: p = 0.4 with margin 0.3
    p = torch.tensor([[[0.0, 0.5, 0.45, 0.05, 0.0, 0.0], [0.0, 0.1, 0.4, 0.1, 0.1, 0.3]]]).clamp_min(1e-9)
    by_prob = Threshold(threshold=1.0).step(p.log(), state(torch.full((1, 2), MASK)))
    by_margin = Threshold(threshold=1.0, score="margin").step(p.log(), state(torch.full((1, 2), MASK)))
    assert by_prob.committed[0].tolist() == [True, False]
    assert by_margin.committed[0].tolist() == [False, True]


def test_entropy_bound_accepts_low_entropy_prefix():
    confs = [0.999, 0.99, 0.6, 0.98]                   # entropies: tiny, small, large, small
    logits = logits_with_conf(confs)
    p = logits.softmax(-1)
    H = -(p * p.log()).sum(-1)[0]
    # ascending: H0 < H1 < H3 < H2. k=3 costs H0 + H1 (sum minus max); k=4 costs H0 + H1 + H3
    gamma = float(H[0] + H[1]) + 1e-4
    assert float(H[0] + H[1] + H[3]) > gamma
    rec = EntropyBound(entropy_bound=gamma).step(logits, state(torch.full((1, 4), MASK)))
    assert rec.committed[0].tolist() == [True, True, False, True]
    tight = EntropyBound(entropy_bound=0.0).step(logits, state(torch.full((1, 4), MASK)))
    assert tight.committed[0].tolist() == [True, False, False, False]   # only the surest one


@pytest.mark.parametrize("make, word", [
    (lambda: Threshold(threshold=None), "exactly one"),
    (lambda: Threshold(threshold=0.9, factor=1.0), "exactly one"),
    (lambda: Threshold(threshold=None, factor=0.0), "factor"),
    (lambda: Threshold(score="surprise"), "score"),
    (lambda: Threshold(temperature=-1), "temperature"),
    (lambda: EntropyBound(entropy_bound=-0.1), "entropy_bound"),
])
def test_bad_knobs(make, word):
    with pytest.raises(ValueError, match=word):
        make()


@pytest.mark.parametrize("rule", [Threshold(threshold=0.5), Threshold(threshold=None, factor=1.0),
                                  EntropyBound(entropy_bound=0.5)])
def test_threshold_rules_fill_every_block_in_the_loop(toy, rule):
    import labkit as lk
    out = lk.generate(toy, ["ROMEO:\n", "KING:\nMy lord\n"], rule, gen_length=32, block_length=16, steps=2)
    P = out.trace.prompt_len
    assert not (out.ids[:, P:] == toy.mask_id).any()
    assert 2 <= out.stats["nfe"] <= 32
    c = out.trace.committed()
    assert (c.sum(0)[:, P:] == 1).all()                   # every position committed exactly once
    blocks = [r.block for r in out.trace]
    assert blocks == sorted(blocks) and set(blocks) == {0, 1}
