"""Training small masked and continuous diffusion LMs from scratch (labkit.training.scratch)."""
import pytest
import torch

import labkit as lk
from labkit.models.continuous_net import ContinuousDenoiser
from labkit.training.scratch import ScratchConfig, train_scratch

SMALL = dict(hidden_size=64, num_layers=1, num_heads=2, intermediate_size=128, embed_dim=32, seq_len=32,
             batch_size=8, steps=30, warmup=5)


@pytest.fixture(scope="module")
def runs():
    out = {}
    for objective in ("masked", "continuous"):
        steps, samples = [], []
        res = train_scratch(ScratchConfig(objective=objective, sample_every=15, **SMALL),
                            on_step=lambda s, loss, acc=steps: acc.append((s, loss)),
                            on_sample=lambda s, text, acc=samples: acc.append((s, text)))
        out[objective] = (res, steps, samples)
    return out


@pytest.mark.parametrize("objective", ["masked", "continuous"])
def test_a_short_run_makes_the_loss_fall(runs, objective):
    res, steps, samples = runs[objective]
    losses = [loss for _, loss in res.history]
    assert len(losses) == 30 and steps == res.history and [s for s, _ in steps] == list(range(30))
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    assert last < 0.9 * first, (objective, first, last)
    assert [s for s, _ in samples] == [14, 29] and all(isinstance(t, str) for _, t in samples)


def test_the_masked_model_decodes_with_the_lab_and_saves(runs, tmp_path):
    res = runs["masked"][0]
    out = res.generate("ROMEO:\n", length=16, steps=16)
    assert out.stats["gen_tokens"] == 16 and len(out.trace) == 16
    lk.viz.heatmap(out.trace, res.lm, "state")
    again = lk.load(str(res.save(tmp_path / "m")))
    assert lk.generate(again, "ROMEO:\n", gen_length=16, block_length=16, steps=16).texts == out.texts


def test_the_continuous_model_samples_and_saves(runs, tmp_path):
    res = runs["continuous"][0]
    out = res.generate("ROMEO:\n", length=16, steps=8, seed=2)
    assert out.ids.shape[1] == out.trace.prompt_len + 16 and out.trace.meta["schedule"] == "cosine"
    lk.viz.continuous_heatmap(out.trace, res.lm)
    again = ContinuousDenoiser.load(res.save(tmp_path / "c"))
    x = torch.randn(1, 8, 32)
    assert torch.equal(again(x, 0.4), res.model(x, 0.4))


def test_a_seed_gives_the_same_run():
    cfg = ScratchConfig(objective="continuous", **{**SMALL, "steps": 3})
    assert train_scratch(cfg).history == train_scratch(cfg).history


def test_a_seconds_budget_stops_the_run():
    res = train_scratch(ScratchConfig(objective="masked", **{**SMALL, "steps": 100_000}, seconds=0.5))
    assert 1 <= len(res.history) < 100_000 and res.seconds < 20


@pytest.mark.parametrize("field, value, match", [
    ("lr", 0.0, "lr must be"), ("lr", -1e-3, "lr must be"), ("lr", float("nan"), "lr must be"),
    ("steps", 0, "steps must be"), ("steps", -5, "steps must be"),
    ("seq_len", 256, r"seq_len must be in \[8, context=128\]"),
    ("schedule", "quadratic", r"schedule must be one of \('linear', 'cosine', 'log-linear'\)"),
    ("objective", "autoregressive", r"objective must be one of \('masked', 'continuous'\)"),
    ("seconds", 0, "seconds must be"), ("batch_size", 0, "batch_size must be"),
])
def test_bad_settings_are_refused_by_name(field, value, match):
    with pytest.raises(ValueError, match=match):
        ScratchConfig(**{field: value})


def test_a_corpus_shorter_than_one_sequence_is_refused():
    with pytest.raises(ValueError, match=r"texts: the corpus has \d+ tokens, fewer than one training sequence"):
        train_scratch(ScratchConfig(**SMALL), texts=["ROMEO:\nHi."])


def test_live_loss_records_every_step_and_draws_one_panel_per_run(runs):
    live = lk.viz.LiveLoss(("masked", "continuous"), every=1e9)
    for name in ("masked", "continuous"):
        cb = live.on_step(name)
        for step, loss in runs[name][0].history:
            cb(step, loss)
    assert live.history["masked"] == runs["masked"][0].history and len(live.history["continuous"]) == 30
    fig = live.figure()
    assert len(fig.axes) == 2 and fig.axes[0].get_title() == "masked (30 steps)"
    assert fig._repr_png_()[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="unknown run 'ar'"):
        live.on_step("ar")
    with pytest.raises(ValueError, match="histories is empty"):
        lk.viz.loss_figure({})
