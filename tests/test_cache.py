"""labkit.models.kv_cache: a window pass with reused keys and values is exact when nothing changed, the
wrappers refresh at every block, and they work with any rule and control."""
import pytest
import torch

import labkit as lk
from labkit.models.kv_cache import CausalCache, DualCache, PrefixCache

KNOBS = dict(gen_length=32, block_length=8, steps=32)


@pytest.mark.parametrize("start, width", [(0, 10), (17, 8), (40, 24)])
def test_window_pass_with_the_cache_equals_the_full_pass(tiny, start, width):
    x = torch.randint(3, 2000, (2, 64))
    am = torch.ones(2, 64, dtype=torch.long)
    am[1, :5] = 0                                                     # a left-padded row
    raw, kv = tiny.net.run(x, am)
    window, _ = tiny.net.run(x[:, start:start + width], am, past=kv, start=start)
    assert torch.allclose(window, raw[:, start:start + width], atol=1e-4)
    full = tiny.net(input_ids=x, attention_mask=am).logits            # shifted, as the model serves it
    assert torch.allclose(full[:, 1:], raw[:, :-1], atol=1e-4)


@pytest.mark.parametrize("wrapper", [PrefixCache, DualCache])
def test_first_step_of_each_block_is_exact_and_blocks_refresh(tiny, wrapper):
    fast = wrapper(tiny)
    prompt = "MACBETH:\nWhat news, my lord?\n"
    base = lk.generate(tiny, prompt, lk.LowConfidence(), **KNOBS)
    out = lk.generate(fast, prompt, lk.LowConfidence(), **KNOBS)
    assert fast.full_passes == 4 and fast.window_passes == 28            # one refresh per block
    assert out.trace[0].tokens.equal(base.trace[0].tokens)              # step 0 ran the full canvas
    assert out.stats["nfe"] == 32 and not (out.ids == tiny.mask_id).any()


@pytest.mark.parametrize("rule", [lk.Threshold(threshold=0.7), lk.DraftEdit.quality(), lk.EntropyBound()],
                         ids=["threshold", "quality", "entropy_bound"])
def test_cache_works_with_rules_and_controls(tiny, rule):
    out = lk.generate(DualCache(tiny), ["ROMEO:\n", "KING:\nSpeak.\n"], rule,
                      controls=[lk.Pin(3, " crown"), lk.Keywords(["night"])], **KNOBS)
    P = out.trace.prompt_len
    assert (out.ids[:, P + 3] == tiny.encode(" crown")[0]).all()
    assert all("night" in t for t in out.texts)


def test_cache_wrappers_refuse_what_they_cannot_cache(tiny, toy):
    with pytest.raises(ValueError, match="for masked diffusion models"):
        PrefixCache(lk.load("tiny-ar"))
    fake = lk.DLM(net=torch.nn.Linear(2, 2), tokenizer=tiny.tokenizer, mask_id=tiny.mask_id, eos_id=1,
                        pad_id=0, name="linear")
    with pytest.raises(ValueError, match="needs a labkit TinyDLM network"):
        DualCache(fake)
    assert "PrefixCache" in repr(PrefixCache(toy)) and PrefixCache(toy).mask_id == toy.mask_id


@pytest.fixture(scope="module")
def ar():
    return lk.load("tiny-ar")


def test_causal_window_appended_to_a_shorter_cache_equals_the_full_pass(ar):
    x = torch.randint(3, 2000, (2, 40))
    am = torch.ones(2, 40, dtype=torch.long)
    am[1, :6] = 0                                                     # a left-padded row
    raw, kv = ar.net.run(x, am)
    head = [(k[:, :, :25], v[:, :, :25]) for k, v in kv]              # the cache ends where the window starts
    window, grown = ar.net.run(x[:, 25:], am, past=head, start=25)    # (2, 15, V)
    assert torch.allclose(window[1:], raw[1:, 25:], atol=1e-4) and torch.allclose(window[0], raw[0, 25:], atol=1e-4)
    assert grown[0][0].shape[2] == 40
    with pytest.raises(ValueError, match="leaves a gap"):
        ar.net.run(x[:, 30:], am, past=head, start=30)


def test_causal_cache_decodes_exactly_what_the_uncached_model_does(ar):
    prompts = ["KING HENRY:\nNow, lords, for France!\n", "ROMEO:\nBut soft\n"]
    knobs = dict(gen_length=24, block_length=8, steps=24)
    base = lk.generate(ar, prompts, lk.Autoregressive(), **knobs)
    fast = CausalCache(ar)
    out = lk.generate(fast, prompts, lk.Autoregressive(), **knobs)
    assert torch.equal(out.ids, base.ids) and out.stats["nfe"] == base.stats["nfe"] == 24
    P = base.trace.prompt_len
    assert fast.computed == P - 1 + 24 and fast.reused > 0        # one new position per step after the first
    again = lk.generate(fast, prompts[1], lk.Autoregressive(), **knobs)   # a new canvas: nothing stale reused
    assert again.texts == lk.generate(ar, prompts[1], lk.Autoregressive(), **knobs).texts
    sampled = dict(knobs, seed=3)
    assert lk.generate(fast, prompts, lk.Autoregressive(temperature=1.0), **sampled).texts == \
        lk.generate(ar, prompts, lk.Autoregressive(temperature=1.0), **sampled).texts


def test_causal_cache_refuses_diffusion_models(tiny):
    with pytest.raises(ValueError, match="for causal models"):
        CausalCache(tiny)
