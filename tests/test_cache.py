"""labkit.models.kv_cache: a window pass with reused keys and values is exact when nothing changed, the
wrappers refresh at every block, and they work with any rule and control."""
import re

import pytest
import torch
from records_common import assert_same_record

import labkit as lk
from labkit.models.kv_cache import CausalCache, DualCache, PrefixCache

KNOBS = dict(gen_length=32, block_length=8, steps=32)


def ids(*shape, seed=0):
    """Token ids in [3, 2000) from a seeded generator: the same canvas on every run."""
    return torch.randint(3, 2000, shape, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("start, width", [(0, 10), (17, 8), (40, 24)])
def test_window_pass_with_the_cache_equals_the_full_pass(tiny, start, width):
    x = ids(2, 64)
    am = torch.ones(2, 64, dtype=torch.long)
    am[1, :5] = 0                                                     # a left-padded row
    raw, kv = tiny.net.run(x, am)
    window, _ = tiny.net.run(x[:, start:start + width], am, past=kv, start=start)
    assert torch.allclose(window, raw[:, start:start + width], atol=1e-4)
    full = tiny.net(input_ids=x, attention_mask=am).logits            # shifted, as the model serves it
    assert torch.allclose(full[:, 1:], raw[:, :-1], atol=1e-4)


def test_seeded_canvas_is_the_same_every_run():
    assert torch.equal(ids(2, 64), ids(2, 64)) and not torch.equal(ids(2, 64), ids(2, 64, seed=1))


class FirstStepsUncached:
    """The cache wrapper `fast`, except that each block's first call answers with the plain model's
    logits. The wrapper still runs (and keeps its K/V from) that first call, so the block's other
    steps go exactly as in a run with `fast` alone whenever the first step's record is the same."""

    def __init__(self, fast, lm):
        self.fast, self.lm, self.first = fast, lm, False

    def __getattr__(self, name):
        return getattr(self.__dict__["fast"], name)

    def begin_block(self, start, end):
        self.fast.begin_block(start, end)
        self.first = True

    def __call__(self, x, attention_mask=None):
        cached = self.fast(x, attention_mask)
        if not self.first:
            return cached
        self.first = False
        return self.lm(x, attention_mask)


@pytest.mark.parametrize("wrapper", [PrefixCache, DualCache])
def test_first_step_of_each_block_is_exact_and_blocks_refresh(tiny, wrapper):
    """Reused K/V make a block's later steps approximate, so a cached run may drift from the
    uncached one (docstring of labkit.models.kv_cache); but the first step of every block runs the
    full canvas and must give the record the uncached model gives on that same canvas. Step 0 is
    compared with a plain uncached run; the first step of each later block with the cached run
    whose block-first logits come from the plain model (see FirstStepsUncached)."""
    prompt = "MACBETH:\nWhat news, my lord?\n"
    base = lk.generate(tiny, prompt, lk.LowConfidence(), **KNOBS)
    fast = wrapper(tiny)
    out = lk.generate(fast, prompt, lk.LowConfidence(), **KNOBS)
    assert fast.full_passes == 4 and fast.window_passes == 28            # one refresh per block
    assert out.stats["nfe"] == 32 and not (out.ids == tiny.mask_id).any()
    assert_same_record(out.trace[0], base.trace[0], "step 0")
    mixed = lk.generate(FirstStepsUncached(wrapper(tiny), tiny), prompt, lk.LowConfidence(), **KNOBS)
    firsts = [i for i, r in enumerate(out.trace) if i == 0 or r.block != out.trace[i - 1].block]
    assert firsts == [0, 8, 16, 24]                                      # 32 steps, 4 blocks of 8
    assert [out.trace[i].block for i in firsts] == [0, 1, 2, 3]
    for i in firsts:
        assert_same_record(out.trace[i], mixed.trace[i], f"block {out.trace[i].block}'s first step")


def has_word(text, word):
    """`word` as a whole word of `text` ("knight" is not "night"; "night's" is)."""
    return re.search(rf"(?<![A-Za-z]){re.escape(word)}(?![A-Za-z])", text, re.IGNORECASE) is not None


def test_has_word_is_a_whole_word_match():
    assert has_word("Good night, sir", "night") and has_word("The night's end", "night")
    assert not has_word("a knight rode", "night") and not has_word("nights and nightly", "night")


@pytest.mark.parametrize("rule", [lk.Threshold(threshold=0.7), lk.DraftEdit.quality(), lk.EntropyBound()],
                         ids=["threshold", "quality", "entropy_bound"])
def test_cache_works_with_rules_and_controls(tiny, rule):
    out = lk.generate(DualCache(tiny), ["ROMEO:\n", "KING:\nSpeak.\n"], rule,
                      controls=[lk.Pin(3, " crown"), lk.Keywords(["night"])], **KNOBS)
    P = out.trace.prompt_len
    assert (out.ids[:, P + 3] == tiny.encode(" crown")[0]).all()
    assert all(has_word(t, "night") for t in out.texts)
    forms = [tiny.encode(f) for f in (" night", " Night")]
    for row in out.ids[:, P:].tolist():                                # token level: a whole-word token run
        strings = tiny.token_strings(row) + [""]
        starts = [(i, len(f)) for f in forms for i in range(len(row) - len(f) + 1) if row[i:i + len(f)] == f]
        assert any(not strings[i + n][:1].isalpha() for i, n in starts), tiny.token_strings(row)


def test_cache_wrappers_refuse_what_they_cannot_cache(tiny, toy):
    with pytest.raises(ValueError, match="for masked diffusion models"):
        PrefixCache(lk.load("tiny-ar"))
    fake = lk.DLM(net=torch.nn.Linear(2, 2), tokenizer=tiny.tokenizer, mask_id=tiny.mask_id, eos_id=1,
                        pad_id=0, name="linear")
    with pytest.raises(ValueError, match="needs a network with a KV-cache pass"):
        DualCache(fake)
    assert "PrefixCache" in repr(PrefixCache(toy)) and PrefixCache(toy).mask_id == toy.mask_id


@pytest.fixture(scope="module")
def ar():
    return lk.load("tiny-ar")


def test_causal_window_appended_to_a_shorter_cache_equals_the_full_pass(ar):
    x = ids(2, 40)
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
