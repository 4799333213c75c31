"""Nothing checked less than before issue 33 made the notebooks fast: for every notebook, its code
cells, the cells whose text output nbval compares, and its stored figures (plotly or PNG), against
the same counts at the end of round 3 (commit 1b2b358, read with `git show 1b2b358:notebooks/NAME`);
and the recorded `make test-times` run passed at least the 999 tests of that round."""
from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from notebook_cells import counts

ROOT = Path(__file__).resolve().parents[1]
# notebook → (code cells, cells nbval compares, stored figures) at commit 1b2b358
BEFORE = {
    "01_quickstart.ipynb": (15, 6, 5), "02_step_through.ipynb": (15, 7, 7),
    "03_parallel_decoding.ipynb": (7, 4, 2), "04_draft_and_edit.ipynb": (11, 6, 3),
    "05_lab_panel.ipynb": (9, 5, 0), "06_controls.ipynb": (15, 7, 5), "07_profiling.ipynb": (13, 7, 2),
    "08_real_models.ipynb": (18, 6, 4), "09_serving.ipynb": (25, 20, 0),
    "10_train_from_scratch.ipynb": (25, 10, 8), "11_where_diffusion_wins.ipynb": (18, 15, 3),
    "12_rewards.ipynb": (17, 17, 3), "13_block_diffusion.ipynb": (28, 20, 6),   # added in round 5: their counts when added
}
TESTS_BEFORE = 999


def test_every_notebook_is_listed():
    assert sorted(BEFORE) == sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_no_notebook_has_fewer_cells_checked_cells_or_figures_than_before(name):
    now = counts(nbformat.read(ROOT / "notebooks" / name, as_version=4))
    assert all(n >= b for n, b in zip(now, BEFORE[name])), f"{name}: (code, compared, figures) {now} < {BEFORE[name]}"


def test_the_recorded_test_run_passed_at_least_as_many_tests_as_before():
    r = json.loads((ROOT / "benchmarks" / "results" / "test_times.json").read_text())
    assert r["counts"]["passed"] >= TESTS_BEFORE
    assert sorted(Path(f).name for f in r["notebooks"]) == sorted(BEFORE)
