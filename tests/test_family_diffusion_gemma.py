"""DiffusionGemma through transformers' own class: a tiny random checkpoint loads through labkit's family, its
own generate() runs with labkit's draft recorder, and the result is a labkit Trace whose noised positions the
views draw as undecided and whose last step equals the generated sequence."""
from __future__ import annotations

import pytest
import torch
from families_common import save_tokenizer

pytest.importorskip("transformers.models.diffusion_gemma")

import labkit as lk  # noqa: E402
from labkit.models.families import detect  # noqa: E402
from labkit.models.families.diffusion_gemma import DIFFUSION_GEMMA  # noqa: E402
from labkit.models.load import load, toy  # noqa: E402
from labkit.recorded import DraftRecorder, generate_recorded  # noqa: E402

V, CANVAS = 64, 4
SPECIALS = {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<mask>": 4}
TEXT = dict(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
            num_key_value_heads=1, head_dim=8, global_head_dim=8, max_position_embeddings=128, sliding_window=8,
            layer_types=["sliding_attention", "full_attention"], num_experts=2, top_k_experts=1,
            moe_intermediate_size=8, pad_token_id=0, eos_token_id=1, bos_token_id=2)
VISION = dict(model_type="gemma4_vision", hidden_size=16, intermediate_size=32, num_hidden_layers=1,
              num_attention_heads=2, num_key_value_heads=1, head_dim=8)
# few steps, an entropy bound a random model's flat logits can pass for a few tokens, no early stop
SETTINGS = dict(max_new_tokens=2 * CANVAS, max_denoising_steps=5, sampler_config=None, stability_threshold=0,
                confidence_threshold=1e-9)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    from transformers import DiffusionGemmaConfig, DiffusionGemmaForBlockDiffusion
    from transformers.models.diffusion_gemma.generation_diffusion_gemma import EntropyBoundSamplerConfig

    SETTINGS["sampler_config"] = EntropyBoundSamplerConfig(entropy_bound=6.0)
    path = tmp_path_factory.mktemp("diffusion_gemma") / "ckpt"
    config = DiffusionGemmaConfig(text_config=TEXT, vision_config=VISION, canvas_length=CANVAS)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        net = DiffusionGemmaForBlockDiffusion(config).eval()
    net.save_pretrained(path)
    save_tokenizer(path, SPECIALS, V, mask="<mask>", eos="<eos>", pad="<pad>")
    return path


@pytest.fixture(scope="module")
def lm(folder):
    return load(str(folder))


def test_the_family_claims_it_and_builds_the_class_with_the_head(lm):
    assert detect({"model_type": "diffusion_gemma"}) is DIFFUSION_GEMMA
    assert lm.family is DIFFUSION_GEMMA and DIFFUSION_GEMMA.noise == "uniform"
    assert type(lm.net).__name__ == "DiffusionGemmaForBlockDiffusion" and hasattr(lm.net, "lm_head")
    assert lm.mask_id == -1                        # the tokenizer's <mask> is not a canvas mask
    assert lm.max_length == 128
    assert lm(torch.tensor([[2, 5, 6]])).shape == (1, 3, V)


def test_lk_generate_runs_the_recorder_and_the_mask_loop_refuses_it(lm):
    out = lk.generate(lm, "to be or not", gen_length=2 * CANVAS, block_length=CANVAS, steps=10, seed=3)
    same = generate_recorded(lm, "to be or not", seed=3, max_new_tokens=2 * CANVAS, max_denoising_steps=5)
    assert torch.equal(out.ids, same.ids) and out.texts == same.texts and len(out.trace) == len(same.trace)
    for knobs, word in ((dict(block_length=2 * CANVAS), "block_length must be 4"), (dict(steps=9), "steps must be"),
                        (dict(cfg_scale=1.0), "cfg_scale cannot be honoured"),
                        (dict(sampler="threshold"), "sampler cannot be honoured")):
        with pytest.raises(ValueError, match=word):
            lk.generate(lm, "to be", **{"gen_length": 2 * CANVAS, "block_length": CANVAS, "steps": 8, **knobs})
    with pytest.raises(ValueError, match="generate_recorded"):
        lk.stream(lm, "to be or not", gen_length=8, block_length=4, steps=8)


def test_recorded_run_equals_generate(lm):
    out = generate_recorded(lm, "to be or not", seed=3, **SETTINGS)
    with torch.random.fork_rng():
        torch.manual_seed(3)
        plain = lm.net.generate(out.trace.init[:, :out.trace.prompt_len].long(), **SETTINGS)
    assert torch.equal(out.sequences, plain.sequences)
    assert torch.equal(out.trace.final.long(), plain.sequences)             # the last step is the sequence
    assert torch.equal(out.ids, plain.sequences)
    assert len(out.trace) == SETTINGS["max_denoising_steps"] * 2 == out.drafts.shape[0]
    assert [r.block for r in out.trace] == [0] * 5 + [1] * 5


def test_records_match_the_drafts_received(lm):
    recorder = DraftRecorder()
    from labkit.recorded import _records, _run

    ids = torch.tensor([lm.encode("to be or not")])
    with torch.random.fork_rng():
        torch.manual_seed(5)
        _run(lm.net, recorder, ids, dict(SETTINGS))
    assert recorder.ended and len(recorder.canvases) == 2
    init, P, records, drafts = _records(recorder, V)
    assert len(records) == len(recorder.drafts) == drafts.shape[0]
    for rec, (b, draft, seen) in zip(records, recorder.drafts):
        s = P + b * CANVAS
        assert torch.equal(drafts[rec.step, :, s:s + CANVAS], draft)
        if rec.step % 5 != 4:                      # not a read-out step: noise shown as the sentinel
            region = rec.tokens[:, s:s + CANVAS]
            assert torch.equal(region == V, ~seen.accepted)
            assert torch.equal(rec.candidates[:, s:s + CANVAS], seen.canvas)


def test_noised_state_and_views(lm):
    out = generate_recorded(lm, "to be or not", seed=3, **SETTINGS)
    t = out.trace
    masked = t.masked()[:, 0, t.prompt_len:]                               # (S, N)
    assert masked[0].any() and not masked[-1].any()                        # noise first, none at the end
    assert t.committed().any() and t.meta["noise"] == "uniform"
    fig = lk.viz.heatmap(t, lm, "state")
    assert fig.data and "masked" in list(fig.data[0].colorbar.ticktext)
    grid = lk.viz.token_grid(t, lm, step=0)
    assert "▢" in grid and "▢" not in lk.viz.token_grid(t, lm)
    assert lk.viz.token_grid_steps(t, lm)
    assert lk.viz.heatmap(t, lm, "confidence").data


def test_a_batch_and_a_wrong_model(lm):
    out = generate_recorded(lm, ["to be or not", "the mind"], seed=1, **SETTINGS)
    assert out.ids.shape[0] == 2 and torch.equal(out.trace.final.long(), out.sequences)
    with pytest.raises(ValueError, match="use labkit.generate"):
        generate_recorded(toy(), "to be")


def test_the_published_configs_end_of_turn_stops_and_its_text_config_pad_id_is_read(folder, tmp_path):
    """The published config.json keeps eos_token_id [1, 106] (106: end of turn) at the top level and pad_token_id
    only in text_config; with a tokenizer that names no pad token, both come from there. (106 lies outside this
    tiny vocabulary: what is checked is which ids the handle stops at.)"""
    import json
    import shutil

    published = tmp_path / "published"
    shutil.copytree(folder, published)
    for f in published.glob("*token*"):
        f.unlink()
    save_tokenizer(published, SPECIALS, V, mask="<mask>", eos="<eos>")
    cfg = json.loads((published / "config.json").read_text())
    assert "pad_token_id" not in cfg and cfg["text_config"]["pad_token_id"] == 0
    (published / "config.json").write_text(json.dumps({**cfg, "eos_token_id": [1, 106]}))
    lm = load(str(published))
    assert lm.tokenizer.pad_token_id is None and lm.pad_id == 0
    assert lm.eos_id == 1 and lm.stop_ids == (1, 106)
    assert lm.decode([5, 106, 6]) == lm.decode([5, 6])
