"""The one list of rule names (labkit.samplers.registry) and the range checks every rule makes."""
import pytest
import torch

import labkit as lk
from labkit.samplers import registry


def test_rule_names_work_wherever_a_rule_does(toy):
    by_name = lk.generate(toy, "ROMEO:\n", "speed", gen_length=16, block_length=16)
    by_object = lk.generate(toy, "ROMEO:\n", lk.DraftEdit.speed(), gen_length=16, block_length=16)
    assert torch.equal(by_name.ids, by_object.ids) and by_name.trace.meta["sampler"] == repr(lk.DraftEdit.speed())
    recs = list(lk.stream(toy, "ROMEO:\n", "threshold", gen_length=16, block_length=16))
    assert len(recs) <= 16


@pytest.mark.parametrize("bad", ["nope", 3, lk.DraftEdit])
def test_unknown_rules_are_a_clear_error(toy, bad):
    with pytest.raises(ValueError, match="sampler must be a rule object .* or one of the names low_confidence"):
        lk.generate(toy, "ROMEO:\n", bad, gen_length=16, block_length=16, steps=16)


def test_every_name_builds_and_reads_what_it_says():
    for name in registry.NAMES:
        rule = registry.rule(name, temperature=0.5, top_p=0.9)
        assert rule.temperature == 0.5
        assert registry.budgeted(name) == getattr(rule, "uses_step_budget", True)
    assert registry.rule("speed") == lk.DraftEdit.speed() and registry.rule("quality") == lk.DraftEdit.quality()
    assert registry.rule("speed", threshold=0.6).threshold == 0.6
    assert registry.rule("random").remasking == "random"
    assert registry.rule("factor", factor=2.0) == lk.Threshold(threshold=None, factor=2.0)
    with pytest.raises(ValueError, match="threshold: not read by sampler 'low_confidence'"):
        registry.rule("low_confidence", threshold=0.5)


@pytest.mark.parametrize("make, word", [
    (lambda: lk.Threshold(threshold=1.5), "threshold must be in [0, 1]"),
    (lambda: lk.Threshold(threshold=-0.5), "threshold must be in [0, 1]"),
    (lambda: lk.Threshold(threshold=float("nan")), "threshold must be in [0, 1]"),
    (lambda: lk.Threshold(threshold="0.9"), "threshold must be in [0, 1]"),
    (lambda: lk.Threshold(threshold=0.5, score="margin", ), None),
    (lambda: lk.Threshold(threshold=0.5, score="neg_entropy"), "threshold must be <= 0 for score='neg_entropy'"),
    (lambda: lk.Threshold(threshold=None, factor=0), "factor must be a number > 0"),
    (lambda: lk.Threshold(threshold=None, factor=-1.0), "factor must be a number > 0"),
    (lambda: lk.EntropyBound(entropy_bound=-0.1), "entropy_bound must be a number >= 0"),
    (lambda: lk.DraftEdit(threshold=1.2), "threshold must be in [0, 1]"),
    (lambda: lk.DraftEdit(editing_threshold=-0.1), "editing_threshold must be in [0, 1]"),
])
def test_rule_knobs_are_range_checked(make, word):
    if word is None:
        make()
        return
    with pytest.raises(ValueError) as e:
        make()
    assert word in str(e.value)


def test_neg_entropy_thresholds_are_negative():
    assert lk.Threshold(threshold=-0.5, score="neg_entropy").threshold == -0.5


@pytest.mark.parametrize("seed", ["abc", 1.5, 3.0, True, 2**64, -2**63 - 1])
def test_a_bad_seed_is_a_clear_error(toy, seed):
    with pytest.raises(ValueError, match=r"seed must be an integer in \[-2\*\*63, 2\*\*64\)"):
        lk.generate(toy, "ROMEO:\n", gen_length=16, block_length=16, steps=16, seed=seed)


@pytest.mark.parametrize("seed", [-1, 2**64 - 1, -2**63])
def test_every_seed_torch_takes_is_a_seed(toy, seed):
    lk.generate(toy, "ROMEO:\n", lk.LowConfidence(temperature=1.0), gen_length=16, block_length=16, steps=16,
                seed=seed)


def test_numpy_numbers_are_numbers():
    import numpy as np
    assert lk.Threshold(threshold=np.float32(0.5)).threshold == np.float32(0.5)
    assert lk.EntropyBound(entropy_bound=np.float64(0.2)).entropy_bound == 0.2
    assert lk.Threshold(threshold=None, factor=np.int64(2)).factor == 2


def test_numpy_seeds_are_seeds(toy):
    import numpy as np
    a = lk.generate(toy, "ROMEO:\n", lk.LowConfidence(temperature=1.0), gen_length=16, block_length=16, steps=16,
                    seed=np.int64(3))
    b = lk.generate(toy, "ROMEO:\n", lk.LowConfidence(temperature=1.0), gen_length=16, block_length=16, steps=16,
                    seed=3)
    assert torch.equal(a.ids, b.ids)


def test_trace_save_refuses_a_folder_and_names_the_file(toy, tmp_path):
    out = lk.generate(toy, "ROMEO:\n", gen_length=16, block_length=16, steps=16)
    with pytest.raises(ValueError, match="is a folder"):
        out.trace.save(tmp_path)
    assert out.trace.save(tmp_path / "run") == tmp_path / "run.npz" and (tmp_path / "run.npz").is_file()


def test_generate_hands_over_its_trace_and_on_step_can_stop_it(toy):
    """on_start gets the run's trace, already with its prompt length, canvas and settings; it
    fills as the run goes on, and an exception in on_step stops the run there."""
    traces, seen = [], []

    def on_step(rec):
        seen.append(len(traces[0]))
        if len(seen) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        lk.generate(toy, "ROMEO:\n", gen_length=16, block_length=16, steps=16, on_start=traces.append,
                    on_step=on_step)
    (trace,) = traces
    assert seen == [1, 2, 3] and len(trace) == 3
    full = lk.generate(toy, "ROMEO:\n", gen_length=16, block_length=16, steps=16).trace
    assert trace.prompt_len == full.prompt_len == len(toy.encode("ROMEO:\n"))
    assert torch.equal(trace.init, full.init) and trace.meta == full.meta
    assert all(torch.equal(a.tokens, b.tokens) for a, b in zip(trace, full))
