"""Making a diffusion LM from an AR one (labkit.training.convert and the recipes that use it): the
block-size warm-up, the attention annealing, the token shift of a converted block model, and the
checks on the new TrainConfig knobs."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from labkit.models.tiny_net import TinyDLM, TinyDLMConfig
from labkit.training.convert import anneal_layout, anneal_ratio, block_at
from labkit.training.recipes import CURVE_STEPS, RECIPES, TrainConfig, curve_steps


def test_block_warmup_doubles_from_one():
    got = [block_at(4, 120, s) for s in (0, 59, 60, 119, 120, 1199)]
    assert got == [1, 1, 2, 2, 4, 4]
    assert [block_at(16, 60, s) for s in (0, 14, 15, 30, 45, 59, 60)] == [1, 1, 2, 4, 8, 8, 16]
    assert block_at(16, 0, 0) == 16 and block_at(6, 30, 29) == 4          # not a power of two: 1, 2, 4 then 6
    with pytest.raises(ValueError, match="block_size must be >= 1"):
        block_at(0, 10, 0)


def test_anneal_opens_the_causal_mask():
    assert anneal_ratio(300, 0) == 0 and anneal_ratio(300, 150) == 0.5 and anneal_ratio(300, 300) == 1
    g = torch.Generator().manual_seed(0)
    closed = anneal_layout(0.0, 8, g)
    assert torch.equal(closed, torch.ones(8, 8, dtype=torch.bool).tril())   # ratio 0: the AR model's mask
    half = anneal_layout(0.5, 200, g)
    future = ~torch.ones(200, 200, dtype=torch.bool).tril()
    assert half[~future].all() and 0.45 < half[future].float().mean() < 0.55
    assert anneal_layout(1.0, 8, g) is None                                 # full attention


def small(**kw) -> TinyDLM:
    torch.manual_seed(0)
    net = TinyDLM(TinyDLMConfig(vocab_size=40, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=64, max_position_embeddings=64, mask_token_id=2, pad_token_id=0,
                                eos_token_id=1, **kw)).eval()
    with torch.no_grad():
        for p in net.parameters():
            p.mul_(10)
    return net


@pytest.mark.parametrize("block", [1, 4])
def test_shifted_two_streams_equal_the_decoding_forward(block):
    """With the token shift (a converted AR model), block k of the training pass is what decoding
    reads: the shifted forward over the clean blocks before k and noisy block k. At block 1 every
    masked token is read from the clean hidden state before it: the AR model itself."""
    net = small(block_size=block, shift_logits=True)
    clean = torch.randint(3, 40, (2, 12))
    noisy = torch.where(torch.rand(2, 12, generator=torch.Generator().manual_seed(1)) < 0.5,
                        torch.full_like(clean, 2), clean)
    with torch.no_grad():
        both = net.run_two_streams(noisy, clean)
        for k in range(0, 12, block):
            x = torch.cat([clean[:, :k], noisy[:, k:k + block]], 1)
            assert torch.allclose(both[:, k:k + block], net(x).logits[:, k:], rtol=1e-4, atol=1e-3), k


def test_layout_is_an_attention_pattern():
    net = small()
    x = torch.randint(3, 40, (1, 10))
    causal = torch.ones(10, 10, dtype=torch.bool).tril()
    with torch.no_grad():
        a = net(x, layout=causal).logits
        y = x.clone()
        y[:, 7:] = 5
        b = net(y, layout=causal).logits
        assert torch.allclose(a[:, :7], b[:, :7], atol=1e-5)                  # causal: the future is not seen
        assert not torch.allclose(net(x).logits[:, :7], net(y).logits[:, :7])  # full attention sees it
        with pytest.raises(ValueError, match="KV cache"):
            _, past = net.run(x)
            net.run(x[:, :2], past=past, start=0, layout=causal[:2])


@pytest.mark.parametrize("kw, match", [
    (dict(block_size=-1), "block_size must be an integer >= 0"),
    (dict(block_size=4, objective="ar"), "block_size trains a block-diffusion LM"),
    (dict(block_size=512), "block_size must be at most seq_len"),
    (dict(block_warmup=10), "set block_size > 0 too"),
    (dict(block_size=4, block_warmup=5000), "block_warmup must be at most steps"),
    (dict(attn_anneal=100), "attn_anneal opens an AR model's attention"),
    (dict(attn_anneal=9000, init_from="tiny-ar"), "attn_anneal must be at most steps"),
])
def test_bad_conversion_knobs_are_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig(**kw)


def test_the_conversion_recipes():
    for name in ("tiny-block4", "tiny-block4-from-ar", "tiny-anneal", "tiny-scratch"):
        cfg = RECIPES[name]
        assert cfg.steps == 1200 and curve_steps(cfg) == CURVE_STEPS, name
    assert curve_steps(RECIPES["tiny"]) == (*CURVE_STEPS, 2400)               # tiny's own recipe: 5% .. 50%, then its end
    assert RECIPES["tiny-block4-from-ar"].init_from == "tiny-ar" and not RECIPES["tiny-block4"].init_from
    assert RECIPES["tiny-block4-from-ar"].block_warmup == RECIPES["tiny-block4-from-ar"].steps // 10


def test_a_block_run_trains_snapshots_and_resumes(tmp_path):
    """Two steps of a block model from tiny-ar with a snapshot after the first: the snapshot and
    the final model load, the block size is kept, and a second call resumes (nothing retrained)."""
    import dataclasses
    import json

    import labkit as lk
    from labkit.training.loop import train
    cfg = dataclasses.replace(RECIPES["tiny-block4-from-ar"], steps=2, block_warmup=1, batch_size=2, seq_len=32,
                              warmup=1)
    out = train(cfg, tmp_path / "run", progress=False, log=lambda *a: None, keep_steps=[1])
    snap = json.loads((tmp_path / "run" / "step-1" / "snapshot.json").read_text())
    assert snap["step"] == 1 and snap["config"]["block_size"] == 4
    lm = lk.load(str(out))
    assert lm.net.config.block_size == 4 and lm.net.config.shift_logits
    assert lk.load(str(tmp_path / "run" / "step-1")).net.config.block_size == 4
    again = train(cfg, tmp_path / "run", progress=False, log=lambda *a: None)
    assert again == out


def test_store_16bit_halves_the_file_and_records_the_check(tmp_path):
    import json

    import labkit as lk
    from labkit.bench.storage import store_16bit
    from labkit.models.load import weights_dir
    from labkit.models.tokenizer import load_tokenizer
    from labkit.training.loop import build_model
    tok = load_tokenizer(weights_dir() / "tiny")
    net = build_model(TrainConfig(block_size=4, hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64), tok)
    net.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    (tmp_path / "training.json").write_text(json.dumps({"config": {}}))
    size = (tmp_path / "model.safetensors").stat().st_size
    rec = store_16bit(tmp_path, windows=4)
    assert rec["bits"] == 16 and abs(rec["bits_per_token_16"] - rec["bits_per_token_32"]) <= 0.005
    assert (tmp_path / "model.safetensors").stat().st_size < 0.6 * size
    assert json.loads((tmp_path / "training.json").read_text())["stored"] == rec
    assert next(lk.load(str(tmp_path)).net.parameters()).dtype == torch.float32
    with pytest.raises(ValueError, match="16 bits already"):
        store_16bit(tmp_path)


def test_the_card_of_a_converted_block_model(tmp_path):
    import dataclasses
    import json

    import doc_common  # noqa: F401  (benchmarks/ on sys.path: the cards are written by benchmarks/docgen)
    from docgen.cards import card

    from labkit.models.load import weights_dir
    from labkit.models.tokenizer import load_tokenizer
    from labkit.training.card import save_eval
    from labkit.training.loop import build_model
    tok = load_tokenizer(weights_dir() / "tiny")
    cfg = dataclasses.replace(RECIPES["tiny-block4-from-ar"], init_from="")
    build_model(dataclasses.replace(cfg, hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64),
                tok).save_pretrained(tmp_path)
    stored = {"bits": 16, "bits_per_token_32": 5.7012, "bits_per_token_16": 5.7019, "windows": 16, "bytes_32": 2,
              "bytes": 1e6}
    (tmp_path / "training.json").write_text(json.dumps({"config": {**dataclasses.asdict(cfg), "init_from": "tiny-ar"},
                                                        "train_seconds": 60.0, "device": "cpu", "stored": stored,
                                                        "heldout_plays": ["macbeth"]}))
    save_eval(str(tmp_path), {"elbo_bits_per_token": 5.7, "elbo_estimator": "block ELBO"})
    text = card(str(tmp_path))
    assert "Block diffusion (LLaDA2.x, BD3-LM): block-causal attention over blocks of 4" in text
    assert "blocks of 1, 2, 4 ... up to 4 over the first 120 steps" in text
    assert "Initialised from the causal `tiny-ar`" in text and "elbo_bits_per_token: the block ELBO." in text
    assert "Stored at 16 bits (1.0 MB)" in text and "5.7012 at 32 bits, 5.7019 at 16" in text


def test_the_sudoku_twin_on_the_grid_canvas():
    """tiny-sudoku-from-ar starts as tiny-sudoku-ar's weights: each grid position takes the learned
    position vector of the AR row's '=' and solution cells (37..73), the structure ids are the grid's
    own, every other weight is the twin's, attention opened and logits shifted."""
    from safetensors.torch import load_file

    from labkit.models.load import load, model_folder
    from labkit.tasks.layouts import ar_positions, structure
    from labkit.training.loop import build_model

    cfg = RECIPES["tiny-sudoku-from-ar"]
    assert cfg.init_from == "tiny-sudoku-ar" and cfg.shift_logits and cfg.steps * 4 <= RECIPES["tiny-sudoku"].steps
    assert ar_positions("sudoku") == list(range(37, 74)) and ar_positions("mirror") == list(range(22))
    twin = load_file(model_folder("tiny-sudoku-ar") / "model.safetensors")
    net = build_model(cfg, load("tiny-sudoku-ar").tokenizer)
    state = net.state_dict()
    assert torch.equal(state["positions.weight"], twin["positions.weight"][37:74])
    assert state["structure_ids"].tolist() == structure("sudoku", "masked")
    same = [k for k in twin if k not in ("positions.weight", "structure_ids")]
    assert same and all(torch.equal(state[k], twin[k]) for k in same)
    assert not net.config.is_causal and net.config.shift_logits and net.config.max_position_embeddings == 37


@pytest.mark.parametrize("kw, match", [
    (dict(objective="ar"), "converts one task's AR twin"),
    (dict(tasks=(("reversal", 0.8), ("mirror", 0.2)), seq_len=22), "converts one task's AR twin"),
    (dict(cap_weight=0.5), "takes no distill, cap_weight, edit_stutter or eos_every_speech"),
    (dict(eos_every_speech=True), "takes no distill, cap_weight, edit_stutter or eos_every_speech"),
])
def test_bad_task_conversions_are_refused(kw, match):
    base = dict(data="tasks", init_from="tiny-sudoku-ar", tasks=(("sudoku", 1.0),), seq_len=37)
    with pytest.raises(ValueError, match=match):
        TrainConfig(**{**base, **kw})


def test_a_twin_that_does_not_fit_the_canvas_is_refused():
    from labkit.models.load import load
    from labkit.training.loop import build_model

    cfg = dataclasses.replace(RECIPES["tiny-sudoku-from-ar"], init_from="tiny-facts-ar")
    with pytest.raises(ValueError, match="init_from='tiny-facts-ar'"):
        build_model(cfg, load("tiny-facts-ar").tokenizer)
