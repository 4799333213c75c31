"""The GPU path's options (labkit.accel, in-place KV caches, the LLaDA family's cache pass, compiled
forwards) each leave what is decoded unchanged, and the loop reads the device as little as claimed.
On the CPU the host reads a GPU would wait for are counted with a TorchFunctionMode."""
import pytest
import test_family_dream as dream_fixture
import test_family_llada_moe as moe_fixture
import torch
from test_family_llada import tiny_config, tiny_weights, write_checkpoint
from torch.overrides import TorchFunctionMode

import labkit as lk
from labkit.accel import Accel, compiled
from labkit.models.kv_cache import DualCache, PrefixCache

PROMPTS = ["ROMEO:\n", "JULIET: O Romeo, Romeo"]            # two lengths: a left-padded batch
KNOBS = dict(gen_length=64, block_length=32, steps=64)


def same_run(a: lk.Output, b: lk.Output) -> None:
    assert torch.equal(a.ids, b.ids) and a.texts == b.texts
    assert a.stats["nfe"] == b.stats["nfe"] and a.stats["row_nfe"] == b.stats["row_nfe"]
    for name in ("tokens", "committed", "edits", "active"):
        assert torch.equal(getattr(a.trace, name)(), getattr(b.trace, name)()), name
    assert torch.equal(a.trace.confidence().nan_to_num(-7), b.trace.confidence().nan_to_num(-7))


CASES = {
    "low confidence": dict(sampler=lk.LowConfidence()),
    "low confidence, 4 blocks": dict(sampler=lk.LowConfidence(), gen_length=64, block_length=16, steps=32),
    "random remasking, seeded": dict(sampler=lk.LowConfidence(temperature=0.8, remasking="random"), seed=3),
    "threshold": dict(sampler=lk.Threshold(threshold=0.7)),
    "factor": dict(sampler=lk.Threshold(threshold=None, factor=1.0)),
    "entropy bound": dict(sampler=lk.EntropyBound(entropy_bound=0.5)),
    "speed (LLaDA2.1 S mode)": dict(sampler="speed"),
    "quality, eos stop": dict(sampler="quality", eos_early_stop=True),
    "low confidence, eos stop": dict(sampler=lk.LowConfidence(), eos_early_stop=True),
    "keywords": dict(sampler=lk.LowConfidence(), controls=[lk.Keywords(["love"])]),
    "guidance": dict(sampler=lk.LowConfidence(), cfg_scale=1.0),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_gpu_options_decode_the_same_tokens_as_the_default(tiny, case):
    kw = {**KNOBS, **CASES[case]}
    base = lk.generate(tiny, PROMPTS, **kw)
    fast = lk.generate(tiny, PROMPTS, accel=Accel.GPU, **kw)
    same_run(base, fast)
    assert all(r.seconds == r.seconds for r in base.trace)           # timed per step by default
    assert all(r.seconds != r.seconds for r in fast.trace)           # nan: only the run is timed


def test_gpu_options_on_the_causal_twin():
    ar = lk.load("tiny-ar")
    same_run(lk.generate(ar, PROMPTS, **KNOBS), lk.generate(ar, PROMPTS, accel=Accel.GPU, **KNOBS))


HOST_READS = {"__bool__", "__int__", "__float__", "__index__", "item", "tolist", "cpu", "numpy"}


class HostReads(TorchFunctionMode):
    """Counts the tensor operations that hand a value to Python (on a GPU: wait for the device)."""

    def __init__(self):
        super().__init__()
        self.n = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        to_cpu = name == "to" and any(str(a) == "cpu" for a in [*args[1:], *kwargs.values()])
        self.n += name in HOST_READS or to_cpu
        return func(*args, **kwargs)


def host_reads(lm, sampler, accel, **kw) -> tuple[int, int]:
    """(steps, host reads while they ran) for one stream."""
    steps = lk.stream(lm, PROMPTS, sampler, accel=accel, **{**KNOBS, **kw})
    with HostReads() as reads:
        n = sum(1 for _ in steps)
    return n, reads.n


def test_the_counter_sees_a_host_read():
    with HostReads() as reads:
        torch.ones(3).any().item()
        bool(torch.ones(1))
    assert reads.n == 2


def test_fixed_count_decoding_reads_the_device_once_per_block(tiny):
    steps, reads = host_reads(tiny, lk.LowConfidence(), None)
    assert steps == 64 and reads >= steps                          # default: every step is checked
    steps, reads = host_reads(tiny, lk.LowConfidence(), Accel.GPU, block_length=16, steps=32)
    assert steps == 32 and reads == 4                              # one per block: are all rows done?


def test_threshold_decoding_reads_one_stop_bit_per_step(tiny):
    steps, reads = host_reads(tiny, lk.Threshold(threshold=0.7), Accel.GPU)
    blocks = KNOBS["gen_length"] // KNOBS["block_length"]
    assert reads <= steps + 2 * blocks                             # the stop test, plus a block's last check
    _, default = host_reads(tiny, lk.Threshold(threshold=0.7), None)
    assert default >= 2 * steps                                    # stop test, live rows, timing


def test_accel_options_are_checked():
    with pytest.raises(ValueError, match="sync must be one of"):
        Accel(sync="never")
    with pytest.raises(ValueError, match="trace must be one of"):
        Accel(trace="disk")
    with pytest.raises(ValueError, match="accel must be an lk.Accel"):
        lk.generate(lk.toy(), "a", accel="gpu")


# ------------------------------------------------------------------------------------ KV caches
@pytest.mark.parametrize("wrapper", [PrefixCache, DualCache])
@pytest.mark.parametrize("sampler", [lk.LowConfidence(), lk.Threshold(threshold=0.7)])
def test_in_place_caches_decode_as_the_allocating_ones(tiny, wrapper, sampler):
    kw = dict(gen_length=64, block_length=16, steps=64)
    same_run(lk.generate(wrapper(tiny, inplace=False), PROMPTS, sampler, **kw),
             lk.generate(wrapper(tiny), PROMPTS, sampler, **kw))


def test_in_place_cache_keeps_its_buffers_for_the_whole_run(tiny):
    fast, seen = DualCache(tiny), set()
    for _ in lk.stream(fast, PROMPTS, lk.LowConfidence(), gen_length=64, block_length=16, steps=64):
        seen.add(tuple(t.data_ptr() for kv in fast._kv for t in kv))
    assert len(seen) == 1 and fast.full_passes == 4 and fast.window_passes == 60


@pytest.fixture(scope="module")
def llada(tmp_path_factory):
    """A tiny LLaDA checkpoint in the published format, with grouped-query attention."""
    cfg = tiny_config(n_kv_heads=2, max_sequence_length=128)
    return lk.load(str(write_checkpoint(tmp_path_factory.mktemp("llada"), cfg, tiny_weights(cfg, seed=2))))


@pytest.fixture(scope="module")
def dream(tmp_path_factory):
    """A tiny Dream checkpoint in the published format (grouped-query attention, shifted logits)."""
    cfg = {**dream_fixture.CONFIG, "max_position_embeddings": 128}
    folder = dream_fixture.write_checkpoint(tmp_path_factory.mktemp("dream"), cfg, dream_fixture.random_weights(cfg))
    return lk.load(str(folder))


@pytest.fixture(scope="module")
def llada_moe(tmp_path_factory):
    """A tiny LLaDA-MoE checkpoint in the published format (routed experts, q/k norms)."""
    cfg = moe_fixture.tiny_config(max_position_embeddings=128)
    folder = moe_fixture.write_checkpoint(tmp_path_factory.mktemp("moe"), cfg, moe_fixture.tiny_weights(cfg, seed=0))
    return lk.load(str(folder))


@pytest.fixture(params=["llada", "llada_moe", "dream"])
def family_lm(request):
    return request.getfixturevalue(request.param)


@pytest.mark.parametrize("write", [False, True])
def test_family_window_pass_with_its_cache_equals_the_full_pass(family_lm, write):
    x = torch.randint(6, 86, (2, 40), generator=torch.Generator().manual_seed(0))
    am = torch.ones(2, 40, dtype=torch.long)
    am[1, :5] = 0                                                     # a left-padded row
    run = lk.cache.cache_pass(family_lm)
    full, _ = run(x, am)                                             # (B, L, V), unshifted
    assert torch.allclose(full[:, 5:], family_lm.net(x, am)[:, 5:] if family_lm.family.shift_logits
                          else family_lm(x, am)[:, 5:], atol=1e-5)
    _, kv = run(x, am)
    kv = [(k.clone(), v.clone()) for k, v in kv]
    window, _ = run(x[:, 17:25], am, past=kv, start=17, write=write)
    assert torch.allclose(window, full[:, 17:25], atol=1e-5)


@pytest.mark.parametrize("wrapper", [PrefixCache, DualCache])
def test_families_decode_with_the_caches(family_lm, wrapper):
    """The first step is exact (the reused K/V are the block's first step's, Fast-dLLM's
    approximation, so later steps may differ from an uncached run); in-place equals allocating."""
    prompts = ["to be or not", "that is the question whether tis"]
    kw = dict(gen_length=32, block_length=8, steps=32)
    base = lk.generate(family_lm, prompts, **kw)
    fast = wrapper(family_lm)
    cached = lk.generate(fast, prompts, **kw)
    same_run(cached, lk.generate(wrapper(family_lm, inplace=False), prompts, **kw))
    assert torch.equal(base.trace[0].tokens, cached.trace[0].tokens)
    assert cached.stats["nfe"] == 32 and not (cached.ids == family_lm.mask_id).any()
    assert fast.full_passes == 4 and fast.window_passes == 28


def test_a_network_without_a_cache_pass_is_refused(toy):
    with pytest.raises(ValueError, match="needs a network with a KV-cache pass"):
        DualCache(lk.DLM(net=torch.nn.Linear(2, 2), tokenizer=toy.tokenizer, mask_id=toy.mask_id, eos_id=None,
                         pad_id=0, name="linear"))


# ------------------------------------------------------------------------------------ compile
def test_compiled_forward_decodes_the_same_tokens(tiny):
    """torch.compile of the whole forward as one graph (fullgraph: it captures without a break);
    the aot_eager backend traces what inductor would compile, without a C compiler."""
    fast = compiled(tiny, backend="aot_eager")
    for sampler in (lk.LowConfidence(), lk.Threshold(threshold=0.7)):
        same_run(lk.generate(tiny, PROMPTS, sampler, **KNOBS),
                 lk.generate(fast, PROMPTS, sampler, accel=Accel.GPU, **KNOBS))


@pytest.mark.parametrize("wrapper", [PrefixCache, DualCache])
def test_compiled_caches_decode_the_same_tokens(tiny, wrapper):
    """The cache passes compiled as whole graphs: the K/V buffers written in place inside them
    (static addresses), the window's start a symbolic int after its first change (no graph per block)."""
    kw = dict(gen_length=64, block_length=16, steps=64)
    fast = wrapper(tiny, compile="default", backend="aot_eager")
    same_run(lk.generate(wrapper(tiny), PROMPTS, **kw), lk.generate(fast, PROMPTS, accel=Accel.GPU, **kw))
    with pytest.raises(ValueError, match="compile must be None or one of"):
        wrapper(tiny, compile="fastest")


def test_compile_options_are_checked(tiny):
    with pytest.raises(ValueError, match="mode must be one of"):
        compiled(tiny, mode="fastest")
    with pytest.raises(ValueError, match="compile the model itself"):
        compiled(DualCache(tiny))
