"""The notebooks' text sources (notebook_sources/, paired by jupytext.toml; CONTRIBUTING.md): one source
per notebook, English and Chinese, holding the same cells as its .ipynb; each Chinese source's code
equal to the English source's; and the one-edit typo fix of benchmarks/sync_notebooks.py (what
`make notebook-sync` runs) shown on a copy: the markdown moves into the .ipynb, every output stays."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest

from labkit.cli import student

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from sync_notebooks import TAG, SyncError, body, paths, sync  # noqa: E402

NAMES = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
PAIRS = [(n, lang) for n in NAMES for lang in ("en", "zh-CN")]


def cells(nb) -> list:
    return [(c.cell_type, c.source, c.metadata.get("tags", [])) for c in nb.cells]


def test_one_source_per_notebook_and_nothing_else():
    for sub in ("", "zh-CN"):
        sources = {p.name for p in (ROOT / "notebook_sources" / sub).iterdir() if p.name != "zh-CN"}
        assert sources == {f"{n}.py" for n in NAMES}, sub or "English"
        assert sorted(p.stem for p in (ROOT / "notebooks" / sub).glob("*.ipynb")) == NAMES


def test_jupytext_toml_pairs_each_notebook_with_the_source_the_sync_reads():
    """`jupytext --sync notebooks/NAME.ipynb` (the way back from an edit made in JupyterLab) and the
    Makefile's sync must agree on which file is a notebook's source."""
    for name in (NAMES[0], NAMES[-1]):
        p = paths(name)
        for nb, src in ((p["nb"], p["src"]), (p["zh_nb"], p["zh_src"])):
            out = subprocess.run([sys.executable, "-m", "jupytext", "--paired-paths", str(nb.relative_to(ROOT))],
                                 cwd=ROOT, capture_output=True, text=True, timeout=60).stdout   # (its exit status is 1)
            assert out.split() == [str(src.relative_to(ROOT))]


@pytest.mark.parametrize("name,lang", PAIRS, ids=[f"{lang}/{n}" for n, lang in PAIRS])
def test_the_source_and_its_notebook_hold_the_same_cells(name, lang):
    p = paths(name)
    src, nb = (p["src"], p["nb"]) if lang == "en" else (p["zh_src"], p["zh_nb"])
    stored = nbformat.read(nb, as_version=4)
    assert cells(jupytext.read(src)) == cells(stored), f"{src.name}: `make notebook-sync NB={name[:2]}` brings it in"
    assert "jupytext" not in stored.metadata, "the pairing lives in jupytext.toml"


@pytest.mark.parametrize("name", NAMES)
def test_the_chinese_source_has_the_english_code(name):
    p = paths(name)
    en, zh = jupytext.read(p["src"]), jupytext.read(p["zh_src"])
    assert TAG in zh.cells[0].metadata.get("tags", []), "the setup cell comes first"
    assert [c.cell_type for c in body(zh)] == [c.cell_type for c in en.cells]
    assert [c.source for c in body(zh) if c.cell_type == "code"] == [c.source for c in en.cells if c.cell_type == "code"]


# ------------------------------------------------------------------ the edit paths, on a copy

NAME = "05_lab_panel"          # markdown, checked outputs, widget state and a twin


@pytest.fixture
def copy_of(tmp_path):
    """NAME's four files and jupytext.toml copied into tmp_path, the sources written last (the
    freshest, as after an edit)."""
    shutil.copy(ROOT / "jupytext.toml", tmp_path)
    here, there = paths(NAME), paths(NAME, tmp_path)
    for key in ("nb", "zh_nb", "src", "zh_src"):
        there[key].parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(here[key], there[key])
    return there


def snapshot(p) -> dict:
    """The bytes of the notebook's four files (its sources, its notebook and its twin)."""
    return {key: p[key].read_bytes() for key in ("src", "nb", "zh_src", "zh_nb")}


def test_a_typo_fixed_in_the_source_reaches_the_notebook_with_every_output_kept(copy_of):
    p = copy_of
    before = snapshot(p)
    text = p["src"].read_text(encoding="utf-8")
    old = "is the whole lab in one panel"
    assert text.count(old) == 1, "the markdown line this test edits"
    p["src"].write_text(text.replace(old, "is the entire lab in one panel"), encoding="utf-8")

    done = sync(NAME, root=p["src"].parents[1])

    assert done == [f"notebooks/{NAME}.ipynb: updated"]
    was, now = (json.loads(b) for b in (before["nb"], p["nb"].read_bytes()))
    changed = [i for i, (a, b) in enumerate(zip(was["cells"], now["cells"])) if a != b]
    assert len(changed) == 1 and now["cells"][changed[0]]["cell_type"] == "markdown"
    assert "is the entire lab in one panel" in "".join(now["cells"][changed[0]]["source"])
    assert [c.get("outputs") for c in now["cells"]] == [c.get("outputs") for c in was["cells"]]
    assert now["metadata"] == was["metadata"]                    # the widget state among it
    assert {k: p[k].read_bytes() for k in ("zh_nb", "zh_src")} == {k: before[k] for k in ("zh_nb", "zh_src")}
    assert sync(NAME, root=p["src"].parents[1]) == []            # done once: nothing left to bring in


def test_a_code_edit_without_a_run_is_refused_and_nothing_is_written(copy_of):
    p = copy_of
    text = p["src"].read_text(encoding="utf-8").replace("lab.steps.value = 64", "lab.steps.value = 32")
    p["src"].write_text(text, encoding="utf-8")
    before = snapshot(p)
    with pytest.raises(SyncError, match="make notebook NB=05"):
        sync(NAME, root=p["src"].parents[1])
    assert snapshot(p) == before
    # before the run (make notebook's first step) the code goes into the copy make executes; the
    # notebook and its twin wait for a run that succeeds, so a failed one leaves them (and the refusal) as they were
    assert sync(NAME, root=p["src"].parents[1], before_run=True) == [f"notebooks/{NAME}.run.ipynb: updated"]
    assert "lab.steps.value = 32" in p["run"].read_text(encoding="utf-8")
    assert snapshot(p) == before
    with pytest.raises(SyncError, match="make notebook NB=05"):
        sync(NAME, root=p["src"].parents[1])


def test_a_twin_whose_cells_no_longer_line_up_is_refused(copy_of):
    p = copy_of
    p["zh_src"].write_text(p["zh_src"].read_text(encoding="utf-8") + "\n# %% [markdown]\n# 多出来的一格\n",
                           encoding="utf-8")
    before = snapshot(p)
    with pytest.raises(SyncError, match="no longer line up"):
        sync(NAME, root=p["src"].parents[1])
    assert snapshot(p) == before


def test_a_notebook_edited_after_its_source_is_not_overwritten(copy_of):
    p = copy_of
    nb = nbformat.read(p["nb"], as_version=4)
    nb.cells[0].source += " (edited in JupyterLab)"
    nbformat.write(nb, p["nb"])
    later = p["src"].stat().st_mtime + 10
    os.utime(p["nb"], (later, later))
    with pytest.raises(SyncError, match="jupytext --sync"):
        sync(NAME, root=p["src"].parents[1])


def test_make_notebook_brings_the_source_in_runs_that_notebook_only_then_its_twin():
    """`make notebook NB=12` and `make notebooks` take the same three steps (a dry run: nothing executes)."""
    def steps(*args):
        out = subprocess.run(["make", "-n", *args, "BIN=.venv/bin", "STAMP=/dev/null"], cwd=ROOT,
                             capture_output=True, text=True, timeout=60).stdout
        return [ln for ln in out.splitlines() if "sync_notebooks.py" in ln or "nbconvert" in ln]
    one, every = steps("notebook", "NB=12"), steps("notebooks")
    assert [ln.split()[-1] for ln in (one[0], one[2])] == ["12", "12"] and "--before-run" in one[0]
    assert "--list 12)" in one[1] and "--execute --inplace" in one[1] and "store_widget_state=True" in one[1]
    assert [ln.replace(" 12", " ").rstrip() for ln in one] == [ln.rstrip() for ln in every]
    sync_only = steps("notebook-sync", "NB=12")
    assert len(sync_only) == 1 and "nbconvert" not in sync_only[0] and sync_only[0].endswith("sync_notebooks.py 12")


def test_contributing_states_the_notebook_times_test_times_json_measured():
    """CONTRIBUTING.md's seconds per notebook are the range benchmarks/results/test_times.json holds,
    and notebook 10's budget the one its source and the Makefile's nbval use."""
    text = " ".join((ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8").split())
    seconds = json.loads((ROOT / "benchmarks" / "results" / "test_times.json").read_text())["notebooks"].values()
    assert f"each notebook took {min(seconds):.0f} to {max(seconds):.0f} s" in text
    assert "notebook 10 trains its two models 30 s each, not nbval's 20" in text
    assert 'os.environ.get("LABKIT_SCRATCH_SECONDS", "30")' in paths("10_train_from_scratch")["src"].read_text()
    assert "LABKIT_SCRATCH_SECONDS=20 $(BIN)/python -m pytest -q notebooks --nbval" in (ROOT / "Makefile").read_text()


def test_a_new_notebook_gets_its_notebook_and_a_twin_to_translate(copy_of):
    """CONTRIBUTING.md's "Add a notebook": only the English source exists; make notebook's first step
    writes the copy to execute and starts the twin's source (the setup cell, then the English cells),
    and after the run (the copy moved over the notebook, as make does) the sync writes the twin."""
    p = copy_of
    for key in ("nb", "zh_nb", "zh_src"):
        p[key].unlink()
    root = p["src"].parents[1]
    done = sync(NAME, root=root, before_run=True)
    assert done == [f"notebook_sources/zh-CN/{NAME}.py: new, its markdown still English: translate it",
                    f"notebooks/{NAME}.run.ipynb: updated"]
    en, zh = jupytext.read(p["src"]), jupytext.read(p["zh_src"])
    assert TAG in zh.cells[0].metadata["tags"] and cells(nbformat.from_dict({"cells": body(zh)})) == cells(en)
    assert not p["nb"].exists() and not p["zh_nb"].exists()
    p["run"].rename(p["nb"])                                    # what make does once every cell ran
    assert sync(NAME, root=root) == [f"notebooks/zh-CN/{NAME}.ipynb: updated"]
    assert cells(nbformat.read(p["zh_nb"], as_version=4)) == cells(jupytext.read(p["zh_src"]))


def test_contributing_says_what_labkit_student_does_with_a_solution_cell():
    """The tag and the stub are labkit.cli.student's (tests/test_student.py: the stub replaces the code, no outputs)."""
    text = " ".join((ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8").split())
    assert f'`# %% tags=["{student.TAG}"]` a worked solution' in text
    assert f"replaces its code with a stub, `{student.STUB.split(':')[0]}: ...`, and drops its outputs" in text
