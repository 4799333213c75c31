"""The LLaDA rule with hand-built logits: no model involved."""
import math

import pytest
import torch

import labkit as lk
from labkit.samplers import DecodeState, LowConfidence
from labkit.samplers.base import ceil_div, sample_tokens, topk_mask

MASK, EOS, V = 0, 1, 8


def llada_schedule(m: int, steps: int) -> list[int]:
    """LLaDA's get_num_transfer_tokens for one row: m // steps each, the first m % steps one more."""
    return [m // steps + (1 if i < m % steps else 0) for i in range(steps)]


def test_ceil_schedule_equals_llada_remainder_first_split():
    masks = torch.arange(300)                                   # every mask count 0..299 at once, as a batch
    for steps in range(1, 80):
        left, got = masks.clone(), []
        for i in range(steps):
            k = ceil_div(left, steps - i)                           # (300,)
            got.append(k)
            left = left - k
        got = torch.stack(got, 1).tolist()                          # (300, steps)
        for m in range(300):
            assert got[m] == llada_schedule(m, steps), (m, steps)


def state(x, steps, step=0, start=0, end=None, frozen=None):
    x = torch.as_tensor(x)
    end = x.shape[1] if end is None else end
    frozen = torch.zeros_like(x, dtype=torch.bool) if frozen is None else frozen
    return DecodeState(x=x, frozen=frozen, block_start=start, block_end=end, block=0, step=step,
                       steps=steps, global_step=step, mask_id=MASK, stop_ids=(EOS,))


def rising_logits(L, B=1):
    """Position j proposes token 2 + j % 6 with confidence rising in j."""
    logits = torch.zeros(B, L, V)
    for j in range(L):
        logits[:, j, 2 + j % 6] = 1.0 + j
    return logits


def test_low_confidence_commits_most_confident_first():
    L = 6
    x = torch.full((1, L), MASK)
    rule = LowConfidence()
    order = []
    for step in range(L):
        rec = rule.step(rising_logits(L), state(x, steps=L, step=step))
        assert rec.committed.sum() == 1
        order.append(int(rec.committed[0].nonzero()))
        x = rec.tokens
    assert order == [5, 4, 3, 2, 1, 0]
    assert x.tolist() == [[2 + j % 6 for j in range(L)]]


def test_commit_count_follows_schedule_and_only_masked_in_block():
    L = 10
    x = torch.full((1, L), MASK)
    x[0, 0] = 5                                          # already filled: must not be touched
    frozen = torch.zeros(1, L, dtype=torch.bool)
    frozen[0, 1] = True                                  # frozen position: never committed
    x[0, 1] = 6
    rec = LowConfidence().step(rising_logits(L), state(x, steps=3, start=0, end=8, frozen=frozen))
    masked_in_block = 6                                  # positions 2..7
    assert int(rec.committed.sum()) == math.ceil(masked_in_block / 3)
    assert not rec.committed[0, :2].any() and not rec.committed[0, 8:].any()
    assert rec.tokens[0, :2].tolist() == [5, 6]
    assert torch.isnan(rec.confidence[0, 8:]).all()      # outside the block: not scored
    assert not rec.edited.any()


def test_confidence_is_probability_of_proposed_token():
    logits = torch.randn(2, 5, V, generator=torch.Generator().manual_seed(0))
    cand, prob = sample_tokens(logits, 0.0)
    assert torch.equal(cand, logits.argmax(-1))
    assert torch.allclose(prob, logits.softmax(-1).max(-1).values)


def test_gumbel_sampling_matches_softmax_over_temperature():
    logits = torch.tensor([[[0.0, 1.0, 2.0, 0.5]]]).expand(1, 20000, 4)
    g = torch.Generator().manual_seed(1)
    cand, _ = sample_tokens(logits, 0.7, g)
    freq = torch.bincount(cand.flatten(), minlength=4).float() / cand.numel()
    assert torch.allclose(freq, torch.softmax(logits[0, 0] / 0.7, -1), atol=0.015)


def test_random_remasking_is_seeded():
    L = 12
    x = torch.full((1, L), MASK)
    rule = LowConfidence(remasking="random")
    a = rule.step(rising_logits(L), state(x, steps=4), torch.Generator().manual_seed(3))
    b = rule.step(rising_logits(L), state(x, steps=4), torch.Generator().manual_seed(3))
    assert torch.equal(a.committed, b.committed)
    assert int(a.committed.sum()) == 3
    picks = {tuple(rule.step(rising_logits(L), state(x, steps=4), torch.Generator().manual_seed(s))
                   .committed[0].nonzero().flatten().tolist()) for s in range(6)}
    assert len(picks) > 1                                 # the order is random, not confidence


def test_eos_options():
    L = 4
    logits = torch.full((1, L, V), -5.0)
    logits[0, 0, EOS] = 9.0                              # position 0: a very confident EOS
    logits[0, 1, EOS] = 8.0                              # position 1: a confident EOS
    logits[0, 2, 3] = 2.0                                # positions 2, 3: less confident words
    logits[0, 3, 4] = 1.0
    x = torch.full((1, L), MASK)
    plain = LowConfidence().step(logits, state(x, steps=2))
    assert plain.committed[0].tolist() == [True, True, False, False]       # EOS first
    demoted = LowConfidence(confidence_eos_eot_inf=True).step(logits, state(x, steps=2))
    assert demoted.committed[0].tolist() == [False, False, True, True]     # EOS last
    banned = LowConfidence(logits_eos_inf=True).step(logits, state(x, steps=2))
    assert not (banned.candidates == EOS).any()
    eot = DecodeState(x=x, frozen=torch.zeros_like(x, dtype=torch.bool), block_start=0, block_end=L, block=0,
                      step=0, steps=2, global_step=0, mask_id=MASK, stop_ids=(EOS, 5))
    logits[0, 2, 5] = 7.0                                # an end-of-turn proposal is demoted too
    rec = LowConfidence(confidence_eos_eot_inf=True).step(logits, eot)
    # the one word first, then the demoted stop tokens in position order
    assert rec.committed[0].tolist() == [True, False, False, True]


def test_topk_mask_is_per_row():
    score = torch.tensor([[0.1, 0.9, 0.5, 0.7], [0.9, 0.1, 0.2, 0.3]])
    allowed = torch.tensor([[True, True, True, False], [True, True, True, True]])
    got = topk_mask(score, allowed, torch.tensor([2, 1]))
    assert got.tolist() == [[False, True, True, False], [True, False, False, False]]


@pytest.mark.parametrize("kw, word", [({"temperature": -0.1}, "temperature"),
                                      ({"remasking": "lowest"}, "remasking")])
def test_bad_sampler_knobs(kw, word):
    with pytest.raises(ValueError, match=word):
        LowConfidence(**kw)


def test_step_does_not_modify_logits():
    """Regression: logits_eos_inf once wrote -inf into the caller's logits tensor."""
    logits = torch.randn(1, 4, V)
    before = logits.clone()
    LowConfidence(logits_eos_inf=True).step(logits, state(torch.full((1, 4), MASK), steps=4))
    assert torch.equal(logits, before)


def test_truncation_keeps_top_k_and_the_top_p_nucleus():
    from labkit.samplers.base import truncate
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    assert torch.isinf(truncate(logits, 2, None)[0, 2:]).all() and torch.isfinite(truncate(logits, 2, None)[0, :2]).all()
    kept = torch.isfinite(truncate(logits, None, 0.75))[0].tolist()
    assert kept == [True, True, False, False]                  # 0.5 + 0.3 >= 0.75
    assert torch.isfinite(truncate(logits, None, 0.81))[0].tolist() == [True, True, True, False]
    g = torch.Generator().manual_seed(0)
    cand, prob = sample_tokens(logits.expand(1, 500, 4), 1.0, g, top_p=0.75)
    assert set(cand.flatten().tolist()) == {0, 1}
    assert torch.allclose(prob[cand == 1], torch.tensor(0.3))  # score stays the untruncated p(x0)


@pytest.mark.parametrize("kw, word", [({"top_k": 0}, "top_k"), ({"top_p": 0.0}, "top_p"), ({"top_p": 1.5}, "top_p")])
def test_bad_truncation_knobs(kw, word):
    with pytest.raises(ValueError, match=word):
        LowConfidence(**kw)


def test_dream_scores_and_alg_temp():
    from labkit.samplers.base import DecodeState
    x = torch.full((1, 4), 0)
    st = DecodeState(x=x, frozen=torch.zeros_like(x, dtype=torch.bool), block_start=0, block_end=4, block=0,
                     step=3, steps=4, global_step=0, mask_id=0)       # last step of 4: all commit
    p = torch.tensor([[[0.1, 0.5, 0.4, 0.0], [0.1, 0.8, 0.1, 0.0], [0.1, 0.3, 0.3, 0.3], [0.1, 0.6, 0.3, 0.0]]])
    logits = p.clamp_min(1e-9).log()
    st1 = DecodeState(**{**st.__dict__, "step": 0})                    # 1 of 4 commits
    margin = LowConfidence(score="margin").step(logits, st1)
    assert margin.committed[0].tolist() == [False, True, False, False]
    assert torch.allclose(margin.confidence[0], torch.tensor([0.1, 0.7, 0.0, 0.3]))
    # alg_temp: a seeded random choice of position, spread over the masked ones
    picks = {int(LowConfidence(alg_temp=1.0).step(logits, st1, torch.Generator().manual_seed(s)).committed[0]
                 .int().argmax()) for s in range(40)}
    assert len(picks) > 1
    sharp = {int(LowConfidence(alg_temp=1e-4).step(logits, st1, torch.Generator().manual_seed(s)).committed[0]
                 .int().argmax()) for s in range(10)}
    assert sharp == {1}
    with pytest.raises(ValueError, match="alg_temp"):
        LowConfidence(alg_temp=-1.0)
    with pytest.raises(ValueError, match="score"):
        LowConfidence(score="bogus")


@pytest.mark.parametrize("order", ["left_to_right", "right_to_left"])
def test_the_fixed_orders_commit_in_reading_order_or_its_reverse_and_record_the_models_confidence(order):
    lm = lk.toy(seed=1)
    out = lk.generate(lm, ["to be", "or not to be, that"], order, gen_length=8, block_length=8, steps=8)
    P = out.trace.prompt_len
    steps = out.trace.commit_step()[:, P:]                                  # (B, 8)
    expect = torch.arange(8) if order == "left_to_right" else torch.arange(7, -1, -1)
    assert torch.equal(steps, expect.expand_as(steps))
    greedy = lk.generate(lm, ["to be", "or not to be, that"], "low_confidence", gen_length=8, block_length=8, steps=8)
    conf = out.trace.confidence()[0][:, P:].float()                        # step 0: every mask scored
    assert torch.isfinite(conf).all() and (conf <= 1).all() and (conf > 0).all()
    assert not torch.equal(steps, greedy.trace.commit_step()[:, P:])       # another order than confidence's
    two = lk.generate(lm, "to be", order, gen_length=8, block_length=8, steps=4)   # two per step, still in order
    s2 = two.trace.commit_step()[0, two.trace.prompt_len:]
    assert torch.equal(s2, expect // 2)
