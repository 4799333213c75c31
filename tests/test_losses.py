"""labkit.training.losses on hand-made cases: a perfect model, the 1/t weight, the prompt never
masked, the SFT form's per-answer-length normalisation, a uniform model's log V."""
import math

import pytest
import torch
import torch.nn.functional as F

from labkit.training.losses import ar_loss, masked_diffusion_loss, masked_sft_loss

V, MASK = 5, 5
X0 = torch.tensor([[0, 1, 2, 3, 4, 0, 1, 2], [4, 4, 3, 2, 1, 0, 0, 1]])     # (B, L) = (2, 8)
FIXED = torch.randn(2, 8, V, generator=torch.Generator().manual_seed(0))  # a model ignoring its input
CE = -F.log_softmax(FIXED, -1).gather(-1, X0[..., None]).squeeze(-1)      # (B, L): its CE per token


def perfect(x0):
    return lambda xt: 1e4 * F.one_hot(x0, V).float()                     # huge logit at the true token


class Capture:
    """A logits function that records what it is shown and answers `logits` (B, L, V)."""

    def __init__(self, logits):
        self.logits, self.seen = logits, []

    def __call__(self, xt):
        self.seen.append(xt.clone())
        return self.logits[:, :xt.shape[1]]


def uniforms(seed, shape=X0.shape):
    """The (B, L) uniforms the losses draw after t (t given: nothing drawn before them)."""
    return torch.rand(shape, generator=torch.Generator().manual_seed(seed))


def test_a_perfect_model_has_zero_loss():
    g = torch.Generator().manual_seed(0)
    assert float(masked_diffusion_loss(perfect(X0), X0, MASK, generator=g)) == pytest.approx(0, abs=1e-6)
    sft = masked_sft_loss(perfect(X0), X0, MASK, prompt_lengths=torch.tensor([2, 5]), generator=g)
    assert float(sft) == pytest.approx(0, abs=1e-6)
    assert float(ar_loss(lambda x: perfect(X0[:, 1:])(x), X0)) == pytest.approx(0, abs=1e-6)


def test_the_loss_is_the_hand_weighted_sum_and_doubling_t_halves_it():
    t = torch.tensor([0.2, 0.3])
    seed = next(s for s in range(10_000)                      # a draw where t and 2t mask the same tokens
                if not ((uniforms(s) >= t[:, None]) & (uniforms(s) < 2 * t[:, None])).any())
    masked = uniforms(seed) < t[:, None]
    assert masked.any()
    hand = float((CE * masked / t[:, None]).sum() / X0.numel())
    fn = Capture(FIXED)
    loss = masked_diffusion_loss(fn, X0, MASK, generator=torch.Generator().manual_seed(seed), t=t)
    loss2 = masked_diffusion_loss(fn, X0, MASK, generator=torch.Generator().manual_seed(seed), t=2 * t)
    assert torch.equal(fn.seen[0], fn.seen[1]) and torch.equal(fn.seen[0] == MASK, masked)
    assert float(loss) == pytest.approx(hand, rel=1e-5)
    assert float(loss2) == pytest.approx(hand / 2, rel=1e-5)


def test_the_prompt_is_never_masked():
    fn = Capture(FIXED)
    for seed in range(40):
        g = torch.Generator().manual_seed(seed)
        masked_diffusion_loss(fn, X0, MASK, prompt_len=3, generator=g)
        masked_sft_loss(fn, X0, MASK, prompt_lengths=torch.tensor([3, 6]), generator=g)
    pre, sft = torch.stack(fn.seen[::2]), torch.stack(fn.seen[1::2])    # (40, B, L) each
    assert not (pre[:, :, :3] == MASK).any() and (pre[:, :, 3:] == MASK).any()
    assert not (sft[:, 0, :3] == MASK).any() and not (sft[:, 1, :6] == MASK).any()
    assert (sft[:, 0, 3:] == MASK).any() and (sft[:, 1, 6:] == MASK).any()


def test_the_sft_loss_is_normalised_by_each_rows_answer_length():
    t, seed = torch.tensor([0.6, 0.9]), 3
    prompt = torch.tensor([2, 5])                                       # answers of 6 and 3 tokens
    answer = torch.arange(8)[None, :] >= prompt[:, None]
    masked = (uniforms(seed) < t[:, None]) & answer
    rows = [float((CE[b] * masked[b]).sum() / t[b] / answer[b].sum()) for b in range(2)]
    got = masked_sft_loss(Capture(FIXED), X0, MASK, prompt_lengths=prompt, t=t,
                          generator=torch.Generator().manual_seed(seed))
    assert masked.sum() > 0 and float(got) == pytest.approx(sum(rows) / 2, rel=1e-5)
    by_mask = masked_sft_loss(Capture(FIXED), X0, MASK, answer=answer, t=t,
                              generator=torch.Generator().manual_seed(seed))
    assert float(by_mask) == pytest.approx(float(got), rel=1e-6)


def test_with_equal_prompts_the_sft_form_is_the_pre_training_form():
    """Same draws in the same order: the same masks, and with equal answer lengths the same value."""
    for seed in range(5):
        a = masked_diffusion_loss(Capture(FIXED), X0, MASK, prompt_len=3, generator=torch.Generator().manual_seed(seed))
        b = masked_sft_loss(Capture(FIXED), X0, MASK, prompt_lengths=torch.tensor([3, 3]),
                            generator=torch.Generator().manual_seed(seed))
        assert float(a) == pytest.approx(float(b), rel=1e-5)


def test_a_uniform_model_pays_log_v_per_masked_token():
    t, seed = torch.tensor([0.5, 0.7]), 1
    fn = Capture(torch.zeros(2, 8, V))
    loss = masked_diffusion_loss(fn, X0, MASK, t=t, generator=torch.Generator().manual_seed(seed))
    n = (fn.seen[0] == MASK).sum(1)                                      # (B,) masked per row
    assert n.sum() > 0
    assert float(loss) == pytest.approx(float((n / t).sum()) * math.log(V) / X0.numel(), rel=1e-5)
    sft = masked_sft_loss(fn, X0, MASK, prompt_lengths=torch.tensor([0, 4]), t=t,
                          generator=torch.Generator().manual_seed(seed))
    n = (fn.seen[1] == MASK).sum(1)
    assert float(sft) == pytest.approx(float((n / t / torch.tensor([8, 4])).mean()) * math.log(V), rel=1e-5)
    assert float(ar_loss(lambda x: torch.zeros(*x.shape, V), X0)) == pytest.approx(math.log(V), rel=1e-6)


@pytest.mark.parametrize("kw, words", [
    (dict(prompt_lengths=torch.tensor([2, 8])), "at least one answer token"),
    (dict(prompt_lengths=torch.tensor([2])), "prompt_lengths"),
    (dict(), "exactly one"),
    (dict(prompt_lengths=torch.tensor([2, 2]), answer=torch.ones(2, 8, dtype=torch.bool)), "exactly one"),
    (dict(answer=torch.ones(2, 7, dtype=torch.bool)), "answer"),
])
def test_sft_bad_input_names_the_parameter(kw, words):
    with pytest.raises(ValueError, match=words):
        masked_sft_loss(Capture(FIXED), X0, MASK, **kw)
