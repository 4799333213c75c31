"""The committed block-diffusion results read back: benchmarks/results/blocks.json's targets
recomputed from its rows (benchmarks/docgen/targets.py), docs/models.md's section as
benchmarks/make_blocks_section.py writes it (benchmarks/docgen), the curves against their recipes,
and the block and converted models' records and cards."""
import json
from pathlib import Path

import pytest
from doc_common import committed_section
from docgen.blocks import SECTION_END, SECTION_START, misses, models_section
from docgen.models_md import write_blocks
from docgen.targets import PPL_RATIO, judge_blocks

from labkit.bench.block_tables import PAIRS, behind_points
from labkit.bench.blocks import CURVES, LIKELIHOOD_MODELS, PARTS, QUALITY_MODELS
from labkit.bench.task_convert import CONVERTED, RULES
from labkit.models.load import EMBEDDED, model_folder
from labkit.training.recipes import RECIPES, SUDOKU_CURVE_STEPS, curve_steps

ROOT = Path(__file__).resolve().parent.parent
BLOCK_MODELS = ("tiny-block4-from-ar", "tiny-block4", "tiny-block16", "tiny-block4-edit")


@pytest.fixture(scope="module")
def blocks():
    return json.loads((ROOT / "benchmarks" / "results" / "blocks.json").read_text())


def test_every_part_was_measured(blocks):
    assert all(part in blocks for part in PARTS)
    assert list(blocks["likelihood"]["rows"]) == ["tiny-ar", "tiny-ar as block 1", *LIKELIHOOD_MODELS]
    assert list(blocks["quality"]["rows"]) == [*QUALITY_MODELS, "tiny-ar"]
    assert blocks["likelihood"]["windows"] == 32 and blocks["likelihood"]["scored_tokens"] == 255


def test_the_targets_are_the_rows_read_again(blocks):
    assert json.loads(json.dumps(judge_blocks(blocks))) == blocks["targets"]


def test_docs_models_holds_the_section_the_script_writes(blocks):
    assert committed_section(SECTION_START, SECTION_END) == models_section(blocks)


def test_the_script_judges_the_targets_into_blocks_json_then_writes_the_section(blocks, tmp_path):
    """As `make bench-blocks` runs it: labkit bench blocks writes the rows without targets."""
    committed = (ROOT / "benchmarks" / "results" / "blocks.json").read_bytes()
    section = committed_section(SECTION_START, SECTION_END)
    doc = tmp_path / "models.md"
    doc.write_text(f"# models\n\n{section}\n")
    (tmp_path / "blocks.json").write_text(json.dumps({k: v for k, v in blocks.items() if k != "targets"}))
    write_blocks(tmp_path, doc)
    assert (tmp_path / "blocks.json").read_bytes() == committed and doc.read_text() == f"# models\n\n{section}\n"
    (tmp_path / "blocks.json").write_text(json.dumps({k: v for k, v in blocks.items() if k != "sudoku"}))
    with pytest.raises(ValueError, match="lacks the parts"):
        write_blocks(tmp_path, doc)


def test_every_missed_target_says_by_how_much_and_why(blocks):
    missed = [k for k, v in blocks["targets"].items() if not v["met"]]
    said = misses(blocks)
    assert len(said) == len(missed)
    for sentence in said:
        assert "at equal steps" in sentence or "at step 0" in sentence or f"{PPL_RATIO}×" in sentence, sentence


def test_the_block1_reading_of_tiny_ar_is_its_exact_likelihood(blocks):
    rows = blocks["likelihood"]["rows"]
    assert abs(rows["tiny-ar as block 1"]["bits_per_token"] - rows["tiny-ar"]["bits_per_token"]) < 1e-3


def test_the_curves_are_their_recipes_at_the_kept_steps(blocks):
    curves = blocks["curves"]["curves"]
    assert set(curves) == set(CURVES)
    for label, c in curves.items():
        cfg = RECIPES[c["recipe"]]
        steps = [p["step"] for p in c["points"]]
        assert steps == ([0] if cfg.init_from else []) + list(curve_steps(cfg)), label
        assert c["finished"] and c["block_size"] == cfg.block_size
        minutes = [p["train_minutes"] for p in c["points"] if p["step"] < cfg.steps]    # one run's snapshots
        assert minutes == sorted(minutes), label                       # time only grows along a run
    for pair in PAIRS:
        assert isinstance(behind_points(blocks, pair), list)


def test_the_speed_rows_cover_tinys_context_and_the_cache_is_exact(blocks):
    rows = blocks["speed"]["rows"]
    assert [r["canvas"] for r in rows] == [64, 128, 256]
    assert all(r["block_identical"] for r in rows)


def test_the_sudoku_conversion_rows_and_curve(blocks):
    sd = blocks["sudoku"]
    assert sd["steps"] == RECIPES[CONVERTED].steps and sd["scratch_steps"] == RECIPES["tiny-sudoku"].steps
    assert list(sd["rows"][CONVERTED]) == [label for label, _, _ in RULES]
    assert [p["step"] for p in sd["curve"]] == [0, *SUDOKU_CURVE_STEPS, sd["steps"]]
    assert sd["curve"][-1]["accuracy"] == sd["rows"][CONVERTED]["low-confidence"]["accuracy"]
    assert all(r["n"] == 600 for rows in sd["rows"].values() for r in rows.values())
    tasks = json.loads((ROOT / "benchmarks" / "results" / "tasks.json").read_text())["pairs"]["sudoku"]["runs"]
    by = {r["label"]: r["tasks"]["sudoku"]["accuracy"] for r in tasks}
    assert sd["rows"]["tiny-sudoku"]["low-confidence"]["accuracy"] == by["low-confidence"]     # the same model, measured twice
    assert sd["rows"]["tiny-sudoku-ar"]["AR (left to right)"]["accuracy"] == by["AR twin (left to right)"]


@pytest.mark.parametrize("name", [*BLOCK_MODELS, CONVERTED])
def test_the_new_models_are_embedded_with_their_recipe_record_and_card(name):
    assert name in EMBEDDED
    folder = model_folder(name)
    record = json.loads((folder / "training.json").read_text())
    cfg = RECIPES[name]
    assert record["config"]["steps"] == cfg.steps and record["config"]["init_from"] == cfg.init_from
    assert record["config"]["block_size"] == cfg.block_size
    assert f"--recipe {name}" in (folder / "README.md").read_text()
