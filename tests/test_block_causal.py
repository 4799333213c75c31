"""Block-causal attention in labkit's TinyDLM (config block_size > 0; LLaDA2.x, BD3-LM): the mask
entry by entry, the independence of a block from every later one, and the exact prefix / dual KV
cache it gives (decoding with the cache token-identical to decoding without)."""
from __future__ import annotations

import pytest
import torch
from block_common import shared_char_model

import labkit as lk
from labkit.models.kv_cache import DualCache, PrefixCache
from labkit.models.tiny_net import TinyDLM, TinyDLMConfig, block_causal_mask


def small(block_size: int, **kw) -> TinyDLM:
    torch.manual_seed(0)
    cfg = TinyDLMConfig(vocab_size=40, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                        max_position_embeddings=64, block_size=block_size, mask_token_id=2, pad_token_id=0,
                        eos_token_id=1, **kw)
    return TinyDLM(cfg).eval()


def test_the_mask_entry_by_entry():
    m = block_causal_mask(0, 7, 7, 3)
    want = [[1, 1, 1, 0, 0, 0, 0]] * 3 + [[1, 1, 1, 1, 1, 1, 0]] * 3 + [[1] * 7]
    assert m.int().tolist() == want
    assert block_causal_mask(4, 3, 7, 3).int().tolist() == want[4:]        # a window at 4 sees the same keys
    assert block_causal_mask(0, 5, 5, 1).int().tolist() == torch.ones(5, 5).tril().int().tolist()   # block 1: causal


def test_a_block_never_sees_a_later_one():
    net = small(4)
    x = torch.randint(3, 40, (2, 12))
    y = x.clone()
    y[:, 8:] = torch.randint(3, 40, (2, 4))                                 # change the last block only
    with torch.no_grad():
        a, b = net(x).logits, net(y).logits
    assert torch.allclose(a[:, :8], b[:, :8], atol=1e-6) and not torch.allclose(a[:, 8:], b[:, 8:])
    full = small(0)
    with torch.no_grad():
        assert not torch.allclose(full(x).logits[:, :8], full(y).logits[:, :8])   # full attention does see it


@pytest.mark.parametrize("bad", [-1, 1.5])
def test_bad_block_size_is_refused(bad):
    with pytest.raises(ValueError, match="block_size must be"):
        TinyDLMConfig(block_size=bad)
    with pytest.raises(ValueError, match="block_size must be"):
        TinyDLMConfig(block_size=4, is_causal=True)


@pytest.mark.parametrize("cache", [PrefixCache, DualCache])
def test_the_cache_is_exact_for_a_block_model_only(cache):
    """A block's second step through the cache against the full forward: equal logits on a block
    model; on a full-attention model the reused K/V are stale (the control that this test can fail)."""
    from labkit.models.handle import DLM
    for block_size, exact in ((4, True), (0, False)):
        net = small(block_size)
        with torch.no_grad():
            for p in net.parameters():
                p.mul_(20)                                                   # attention that is far from uniform
        lm = DLM(net=net, tokenizer=None, mask_id=2, eos_id=1, pad_id=0, kind="masked", name=f"b{block_size}")
        x = torch.randint(3, 40, (2, 16))
        x[:, 8:] = 2                                                         # blocks 3 and 4 masked
        wrapped = cache(lm)
        wrapped.begin_block(8, 12)
        wrapped(x)                                                           # the block's first (full) pass
        x[:, 8:10] = torch.randint(3, 40, (2, 2))                            # two commits in the block
        got = wrapped(x)[:, 8:12].clone()
        with torch.no_grad():
            want = net(x).logits[:, 8:12]
        assert torch.allclose(got, want, atol=1e-4) == exact, (block_size, (got - want).abs().max())


@pytest.mark.parametrize("cache", [PrefixCache, DualCache])
def test_cached_block_decoding_is_token_identical(cache):
    """Every rule, draft-and-edit included, decodes the same tokens with the cache as without on a
    block model; on the same network with full attention the cache changes S mode's answer (the
    control that this test can fail)."""
    prompts = ["abcdefgh", "12345678"]                                       # 8 characters: two whole blocks
    knobs = dict(gen_length=16, block_length=4, steps=16, seed=0)
    rules = ("low_confidence", "threshold", "speed")
    same = {bs: [torch.equal(lk.generate(lm, prompts, r, **knobs).ids, lk.generate(cache(lm), prompts, r, **knobs).ids)
                 for r in rules] for bs, lm in ((4, shared_char_model(4)), (0, shared_char_model(0)))}
    assert all(same[4]) and not all(same[0]), same


def test_two_streams_equal_a_plain_pass_per_block():
    """Block k of the one-pass training forward is the model run on the clean blocks before k then
    noisy block k: the training mask is the inference mask."""
    net = small(4)
    with torch.no_grad():
        for p in net.parameters():
            p.mul_(10)
    clean = torch.randint(3, 40, (2, 12))
    noisy = torch.where(torch.rand(2, 12) < 0.5, torch.full_like(clean, 2), clean)
    with torch.no_grad():
        both = net.run_two_streams(noisy, clean)
        for k in range(3):
            x = torch.cat([clean[:, :4 * k], noisy[:, 4 * k:4 * k + 4]], 1)
            assert torch.allclose(both[:, 4 * k:4 * k + 4], net.run(x)[0][:, 4 * k:], atol=1e-4), k


def test_block_size_one_loss_is_the_causal_nll_in_expectation():
    """With blocks of one token a masked token is scored from the clean tokens before it only, and
    E[mask / t] = 1: the loss averages to the model's autoregressive NLL of x0 (checked by Monte Carlo)."""
    from labkit.training.losses import block_diffusion_loss
    net = small(1)
    x0 = torch.randint(3, 40, (4, 10))
    with torch.no_grad():
        masked_all = torch.full_like(x0, 2)
        logits = net.run_two_streams(masked_all, x0)                           # every token masked
        exact = torch.nn.functional.cross_entropy(logits.flatten(0, 1), x0.flatten()).item()
        g = torch.Generator().manual_seed(0)
        mc = sum(block_diffusion_loss(net, x0, 2, generator=g).item() for _ in range(400)) / 400
    assert abs(mc - exact) < 0.05 * exact, (mc, exact)


def test_two_streams_refuse_a_full_model():
    with pytest.raises(ValueError, match="block model"):
        small(0).run_two_streams(torch.zeros(1, 4, dtype=torch.long), torch.zeros(1, 4, dtype=torch.long))
