"""Decoding a block-diffusion model: the prompt padded onto the model's blocks, decoding blocks made
of whole model blocks, and BlockCache, the exact KV cache (token-identical to uncached decoding for
every rule, multi-block editing, guidance and batches of uneven prompts), and the EOS stop."""
from __future__ import annotations

import pytest
import torch
from block_common import random_char_model, shared_char_model

import labkit as lk
from labkit.decode import padded_length
from labkit.models.kv_cache import BlockCache, DualCache
from labkit.samplers.knobs import KnobError
from labkit.samplers.registry import NAMES

PROMPTS = ["abcdef", "123456789"]                                          # 6 and 9 characters: padded to 12
RULES = [r for r in NAMES if r != "autoregressive"]


@pytest.mark.parametrize("shift", [False, True])
@pytest.mark.parametrize("rule", RULES)
def test_block_cache_is_token_identical(rule, shift):
    lm = shared_char_model(4, shift)
    knobs = dict(gen_length=16, block_length=8, steps=16, seed=0)
    want = lk.generate(lm, PROMPTS, rule, **knobs)
    cached = BlockCache(lm)
    got = lk.generate(cached, PROMPTS, rule, **knobs)
    assert torch.equal(got.ids, want.ids), rule
    assert cached.reused > 0 and cached.computed < got.stats["nfe"] * want.ids.shape[1]   # it did reuse


@pytest.mark.parametrize("knobs", [dict(mbe_blocks=2), dict(temperature=0.8), dict()])
def test_identical_with_multi_block_editing_sampling_and_guidance(knobs):
    lm = shared_char_model(4, True)
    sampler = lk.DraftEdit.speed(**knobs) if knobs else "low_confidence"
    extra = dict(cfg_scale=1.0) if not knobs else {}
    kw = dict(gen_length=24, block_length=4, steps=24, seed=3, **extra)
    assert torch.equal(lk.generate(BlockCache(lm), PROMPTS, sampler, **kw).ids,
                       lk.generate(lm, PROMPTS, sampler, **kw).ids)


def test_the_control_full_attention_differs_and_is_refused():
    """On the same network with full attention an approximate cache changes answers (so the
    equality above could fail), and BlockCache refuses a model it would not be exact for."""
    lm = shared_char_model(0)
    kw = dict(gen_length=16, block_length=4, steps=16, seed=0)
    assert not all(torch.equal(lk.generate(DualCache(lm), PROMPTS, r, **kw).ids, lk.generate(lm, PROMPTS, r, **kw).ids)
                   for r in ("low_confidence", "speed", "threshold"))
    with pytest.raises(ValueError, match="block-diffusion"):
        BlockCache(lm)


def test_prompt_is_padded_onto_the_blocks():
    lm = shared_char_model(4)
    assert [padded_length(lm, n) for n in (1, 4, 6, 9)] == [4, 4, 8, 12]
    assert padded_length(shared_char_model(0), 9) == 9
    out = lk.generate(lm, PROMPTS, "low_confidence", gen_length=8, block_length=4, steps=8)
    assert out.trace.prompt_len == 12
    with pytest.raises(KnobError, match="block_length must be a multiple of .* block size"):
        lk.generate(lm, PROMPTS, gen_length=12, block_length=6, steps=12)


def test_the_cache_computes_only_the_block():
    """Greedy decoding of 2 blocks of 4 with 4 steps each: the first pass computes the prompt and
    the first block, every other one block only (plus the finished block at a block's first step)."""
    lm = shared_char_model(4)
    cached = BlockCache(lm)
    lk.generate(cached, ["abcdefgh"], "low_confidence", gen_length=8, block_length=4, steps=8)
    assert cached.passes == 8
    assert cached.computed == 12 + 3 * 4 + 8 + 3 * 4                           # 44 positions, against 8 x 16


def test_eos_stop_ends_at_the_first_block_holding_eos():
    """A model whose every prediction is EOS: with eos_early_stop the run ends inside the first
    block (once an EOS has everything before it decided); without, it fills the whole canvas (the
    NFE a fixed length spends)."""
    lm = random_char_model(4)                                               # its own: the head is replaced
    _constant_head(lm, lm.eos_id)
    kw = dict(gen_length=32, block_length=4, steps=32)
    stop = lk.generate(BlockCache(lm), PROMPTS, "low_confidence", eos_early_stop=True, **kw)
    fixed = lk.generate(BlockCache(lm), PROMPTS, "low_confidence", **kw)
    assert stop.stats["nfe"] <= 4 and fixed.stats["nfe"] == 32             # inside the first block
    assert all(t == "" for t in stop.texts)


def _constant_head(lm, token: int):
    net = lm.net

    class Head(torch.nn.Module):
        def forward(self, h):
            out = torch.zeros(*h.shape[:-1], net.config.vocab_size)
            out[..., token] = 1.0
            return out
    net.lm_head = Head()
    return lm


@pytest.mark.parametrize("block_size", [4, 0])
def test_stop_strings_end_the_answer(block_size):
    """A model that always writes 'x': stop="xx" ends each row once two x are decided (two steps of
    one token), the text cut before it; a stop that is never written changes nothing."""
    lm = random_char_model(block_size)
    _constant_head(lm, lm.encode("x")[0])
    kw = dict(gen_length=32, block_length=4, steps=32)
    out = lk.generate(lm, PROMPTS, "low_confidence", stop="xx", **kw)
    assert out.stats["nfe"] == 2 and out.texts == ["", ""] and out.trace.meta["stop"] == ["xx"]
    out = lk.generate(lm, PROMPTS, "low_confidence", stop=["zz", "xxx"], **kw)
    assert out.stats["nfe"] == 3
    never = lk.generate(lm, PROMPTS, "low_confidence", stop="zz", **kw)
    assert never.stats["nfe"] == 32 and never.texts == ["x" * 32] * 2
    for bad in ("", [""], 3, ["a", 1]):
        with pytest.raises(ValueError, match="stop must be"):
            lk.generate(lm, PROMPTS, stop=bad, **kw)


def test_only_labkit_block_models_count_as_block_models():
    from labkit.models.handle import TINY_MODEL_TYPE, model_block
    from labkit.models.tiny_net import TinyDLMConfig
    assert TINY_MODEL_TYPE == TinyDLMConfig.model_type
    assert model_block(shared_char_model(4)) == 4 and model_block(shared_char_model(0)) == 0
