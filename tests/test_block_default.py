"""A block-diffusion model decodes in its own blocks when no block length is given (issue 53, item
3): `lk.generate` (and through the exact cache), `labkit generate`, the server and the panel; any
other model keeps the lab's default of 32; the block models' cards say so."""
import pytest

import labkit as lk
from labkit import defaults
from labkit.decode import DEFAULT_BLOCK, block_for
from labkit.models.handle import model_block
from labkit.models.kv_cache import BlockCache
from labkit.models.load import model_folder

BLOCK_MODEL = "tiny-block4-from-ar"


@pytest.fixture(scope="module")
def block_lm():
    return lk.load(BLOCK_MODEL)


def test_generate_reads_the_models_own_block_when_none_is_given(block_lm):
    assert model_block(block_lm) == 4 and block_for(block_lm) == 4 and block_for(lk.load("tiny")) == DEFAULT_BLOCK == 32
    assert defaults.BLOCK_LENGTH == DEFAULT_BLOCK
    out = lk.generate(block_lm, "ROMEO:\n", "low_confidence", gen_length=8, steps=8, seed=0)
    assert out.trace.meta["block_length"] == 4                      # the old default (32) would not even divide 8
    cached = lk.generate(BlockCache(block_lm), "ROMEO:\n", "low_confidence", gen_length=8, steps=8, seed=0)
    assert cached.trace.meta["block_length"] == 4 and cached.texts == out.texts
    given = lk.generate(block_lm, "ROMEO:\n", "low_confidence", gen_length=8, block_length=8, steps=8, seed=0)
    assert given.trace.meta["block_length"] == 8                    # a block length given is kept
    plain = lk.generate(lk.load("tiny"), "ROMEO:\n", "low_confidence", gen_length=64, steps=64, seed=0)
    assert plain.trace.meta["block_length"] == 32


def test_labkit_generate_takes_the_models_block_after_loading(block_lm):
    from labkit.cli import generate
    from labkit.cli.main import build_parser

    a = build_parser().parse_args(["generate", "ROMEO:", "--model", BLOCK_MODEL, "--gen-length", "8", "--steps", "8"])
    name, sampler, notes = generate.rule_before_load(a)
    generate.rule_after_load(a, block_lm, name, sampler, notes)
    assert a.block_length == 4
    a = build_parser().parse_args(["generate", "ROMEO:", "--model", BLOCK_MODEL, "--block-length", "8",
                                   "--gen-length", "8", "--steps", "8"])
    name, sampler, notes = generate.rule_before_load(a)
    generate.rule_after_load(a, block_lm, name, sampler, notes)
    assert a.block_length == 8


def test_the_server_decodes_a_block_model_in_its_own_blocks(block_lm):
    from labkit.serve.schemas import _block

    assert _block(block_lm, {}, max_tokens=10, longest_prompt=5) == (4, 12)      # 10 tokens: three blocks of 4
    assert _block(block_lm, {"block_length": 8}, max_tokens=10, longest_prompt=5) == (8, 16)
    assert _block(lk.load("tiny"), {}, max_tokens=10, longest_prompt=5) == (10, 10)


def test_the_panel_and_compare_start_in_the_models_blocks(block_lm):
    pytest.importorskip("ipywidgets")
    from labkit.ui.compare import Compare
    from labkit.ui.panel import Lab

    lab = Lab(block_lm, run=False)
    assert lab.block_length.value == 4
    lab.select_model("tiny")                                        # out of a block model: the lab's default
    assert lab.block_length.value == 32
    assert Lab(lk.load("tiny"), run=False).block_length.value == 32
    assert Compare(block_lm, run=False).canvas["block_length"] == 4


@pytest.mark.parametrize("name", ["tiny-block4-from-ar", "tiny-block4", "tiny-block16", "tiny-block4-edit"])
def test_each_block_models_card_says_its_default_block(name):
    block = model_block(lk.load(name))
    assert f"Decodes in its own blocks of {block} by default" in (model_folder(name) / "README.md").read_text()
