"""Notebooks 03, 04 and 06 after their sweeps moved behind `labkit bench` (issue 33) and their Things to
try became exercises with solutions (issue 34): the benchmarks they read, the code those share with the
notebooks' live runs, and each figure's PNG twin."""
from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from labkit.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"

NAMES = ("03_parallel_decoding.ipynb", "04_draft_and_edit.ipynb", "06_controls.ipynb")
MAX_BYTES = 1_000_000                    # a stored notebook a repository should hold


def saved(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())


@pytest.mark.parametrize("name", NAMES)
def test_each_figure_has_its_png_and_each_exercise_its_solution(name):
    """(That no checked cell or figure was lost is tests/test_nb_listing.py's, for every notebook.)"""
    nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if "data" in o]
    assert all("image/png" in o.data for o in outputs if "application/vnd.plotly.v1+json" in o.data)
    assert not any("## Things to try" in c.source for c in nb.cells)
    solutions = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.source.startswith("# Solution")]
    assert len(solutions) == 3
    for n, i in enumerate(solutions, 1):            # each right after its exercise, run and checked by nbval
        assert nb.cells[i - 1].cell_type == "markdown" and f"**{n}.**" in nb.cells[i - 1].source
        assert "NBVAL_CHECK_OUTPUT" in nb.cells[i].source and nb.cells[i].outputs
    assert (ROOT / "notebooks" / name).stat().st_size < MAX_BYTES


@pytest.mark.parametrize("what, name, module", [("draft-edit", "draft_edit.json", "draft_edit"),
                                                ("steering", "steering.json", "steering")])
def test_bench_commands_write_the_json_the_notebooks_read(what, name, module, tmp_path, capsys, monkeypatch):
    """`labkit bench draft-edit` / `steering` write the file notebook 04 / 06 read and print its tables
    (the benchmark itself replaced by its committed result: running it takes minutes)."""
    import importlib

    mod = importlib.import_module(f"labkit.bench.{module}")
    committed = saved(name)
    monkeypatch.setattr(mod, f"bench_{module}", lambda log=None: committed)
    assert main(["bench", what, "--quiet", "--out", str(tmp_path)]) == 0
    assert json.loads((tmp_path / name).read_text()) == committed
    assert mod.table(committed) in capsys.readouterr().out
    notebook = {"draft_edit.json": "04_draft_and_edit.ipynb", "steering.json": "06_controls.ipynb"}[name]
    assert name in (ROOT / "notebooks" / notebook).read_text()


def test_the_correction_search_reproduces_its_saved_rows():
    """The saved search's first two greedy runs, rerun with the benchmark's code, as the notebook's
    live cell does: the same corrections, drafts and finals."""
    import labkit as lk
    from labkit.bench import draft_edit
    from labkit.training.prompts import sample_prompts

    rows = draft_edit.search(lk.load("tiny-cap"), sample_prompts(12)[:2], seeds=(0,))
    stored = [f for f in saved("draft_edit.json")["corrections"]["found"] if f["seed"] == 0 and f["prompt"] < 2]
    assert rows == stored and rows


def test_saved_sweeps_hold_the_rows_the_notebooks_print():
    d, s = saved("draft_edit.json"), saved("steering.json")
    from labkit.bench import draft_edit, steering

    assert list(d["modes"]) == list(draft_edit.mode_rules())
    assert [(r["m2t"], r["t2t"]) for r in d["sweep"]] == [(m, t) for t in draft_edit.T2T for m in draft_edit.M2T]
    assert d["sweep"][1] == {"m2t": 0.5, "t2t": 0.0, **d["modes"]["S"]}        # S mode is a point of the grid
    assert d["sweep"][6] == {"m2t": 0.7, "t2t": 0.5, **d["modes"]["Q"]}        # and so is Q mode
    assert d["corrections"]["runs"] == 36 and len(d["corrections"]["found"]) == 13
    assert list(s["rows"]) == [name for name, *_ in steering.settings()]
    assert steering.table(s).count("\n") == 1 + len(s["rows"])
