"""The committed editor comparison read back: benchmarks/results/editor.json (`labkit bench editor`),
its rows against tasks.json and the recipes, and docs/models.md's section as the docgen writes it."""
import dataclasses
import json
from pathlib import Path

import pytest
from doc_common import committed_section
from docgen.editor import S_MODE_RATIO_TODAY, SECTION_END, SECTION_START, models_section, ratio, verdict

from labkit.bench import editor
from labkit.bench.tasks import EDIT_LABELS, RULES
from labkit.training.recipes import RECIPES

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


@pytest.fixture(scope="module")
def result():
    return json.loads((RESULTS / "editor.json").read_text())


def test_every_rule_ran_on_the_three_models_on_every_held_out_puzzle(result):
    assert list(result["models"]) == list(editor.MODELS)
    for rows in result["models"].values():
        assert [r["label"] for r in rows] == [label for label, _, _ in RULES]
        assert all(r["n"] == 600 for r in rows)
        assert all(("edits" in r) == (r["label"] in EDIT_LABELS) for r in rows)


def test_the_starting_model_rows_are_tasks_json_rows(result):
    tasks = {r["label"]: r["tasks"]["sudoku"] for r in json.loads((RESULTS / "tasks.json").read_text())
             ["pairs"]["sudoku"]["runs"] if r.get("model", "tiny-sudoku") == "tiny-sudoku"}
    for r in result["models"][editor.BASE]:
        t = tasks[r["label"]]
        assert (r["accuracy"], r["tpf"], r["ci95"]) == (t["accuracy"], t["tpf"], t["ci95"])
        if "edits" in r:
            assert {k: r["edits"][k] for k in ("fixed", "broke")} == {k: t["edits"][k] for k in ("fixed", "broke")}
    assert ratio(editor.row(result, editor.BASE, "S mode")) == pytest.approx(S_MODE_RATIO_TODAY, abs=0.05)


def test_the_runs_are_the_recipes_at_equal_steps_and_the_shares_are_the_recipes_knob(result):
    ed, control = RECIPES[editor.EDITOR], RECIPES[editor.CONTROL]
    assert dataclasses.replace(ed, self_error_share=0.0) == control and result["steps"] == ed.steps == control.steps
    assert ed.init_from == editor.BASE and ed.self_error_share in editor.SHARES
    assert list(result["shares"]) == [str(s) for s in editor.SHARES]
    for rows in result["shares"].values():
        assert [r["label"] for r in rows] == list(editor.KEY_RULES)
    mine = {r["label"]: r for r in result["models"][editor.EDITOR]}
    assert result["shares"][str(ed.self_error_share)] == [mine[k] for k in editor.KEY_RULES]


def test_the_breaks_add_up(result):
    for name, b in result["breaks"].items():
        s = editor.row(result, name, "S mode")["edits"]
        assert (b["fixed"], b["broken"]) == (s["fixed"], s["broke"])
        assert b["partner_fixed_same_pass"] <= b["in_conflict"] <= b["broken"]


def test_docs_models_holds_the_section_the_docgen_writes(result):
    assert committed_section(SECTION_START, SECTION_END) == models_section(result)
    v = verdict(result)
    got = ratio(editor.row(result, editor.EDITOR, "S mode"))
    assert ("met." in v) == (got >= 2 * S_MODE_RATIO_TODAY) and f"{got:.2f}" in v


def test_labkit_bench_editor_trains_only_the_missing_runs(tmp_path, monkeypatch):
    from labkit.cli import bench_training

    done = tmp_path / editor.CONTROL
    done.mkdir()
    (done / "training.json").write_text("{}")
    trained = []
    monkeypatch.setattr(bench_training, "train", lambda cfg, folder, **kw: trained.append((folder.name, cfg)))
    assert bench_training.train_editor_runs(tmp_path) == [tmp_path / name for name, _ in trained]
    names = dict(trained)
    assert set(names) == {editor.EDITOR} | {f"share-{s}" for s in editor.SHARES if s != RECIPES[editor.EDITOR].self_error_share}
    assert names[editor.EDITOR] == RECIPES[editor.EDITOR]
    assert all(cfg.self_error_share == float(n.removeprefix("share-")) for n, cfg in names.items() if n.startswith("share-"))
