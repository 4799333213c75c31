"""benchmarks/test_times.py: a pytest log with --durations=0 summed per notebook and per test file, and
the tables docs/benchmarks.md shows from the sums (benchmarks/docgen/benchmarks_md.py)."""
from __future__ import annotations

import pytest
from doc_common import ROOT
from docgen.benchmarks_md import before_after, times_tables
from notebook_cells import script

LOG = """\
........                                                                 [100%]
============================= slowest durations ==============================
30.10s call     notebooks/03_parallel_decoding.ipynb::Cell 4
2.50s setup    notebooks/03_parallel_decoding.ipynb::Cell 0
1.25s call     tests/test_serve.py::test_bad_input[n=0 too small]
0.75s teardown tests/test_serve.py::test_bad_input[n=0 too small]
0.40s call     tests/test_model.py::test_shapes
5.00s call     notebooks/01_quickstart.ipynb::Cell 1
======================= 7 passed, 1 failed in 21.50s (0:00:21) =======================
"""


def module():
    return script("test_times")


def test_seconds_are_summed_per_notebook_and_per_file_with_the_summary():
    r = module().parse(LOG)
    assert r["notebooks"] == {"notebooks/03_parallel_decoding.ipynb": 32.6, "notebooks/01_quickstart.ipynb": 5.0}
    assert r["unit_files"] == {"tests/test_serve.py": 2.0, "tests/test_model.py": 0.4}
    assert r["counts"] == {"passed": 7, "failed": 1} and r["wall_seconds"] == 21.5
    assert r["summed_seconds"] == 40.0 and r["unit_summed_seconds"] == 2.4
    table = times_tables(r)
    assert "| 03_parallel_decoding.ipynb | 32.6 |" in table and "7 passed, 1 failed in 22 s" in table


@pytest.mark.parametrize("log, message", [("3 passed in 1.0s\n", "durations"), ("0.1s call  tests/a.py::t\n", "summary")])
def test_a_log_without_durations_or_summary_is_refused(log, message):
    with pytest.raises(ValueError, match=message):
        module().parse(log)


def test_the_before_after_table_has_every_notebook_and_the_run():
    r = module().parse(LOG)
    table = before_after(r)
    assert "| 03_parallel_decoding.ipynb | 330.0 | 32.6 |" in table
    assert "| 01_quickstart.ipynb | 13.5 | 5.0 |" in table
    assert "| make test: tests passed | 999 | 7 |" in table


def test_docs_benchmarks_shows_the_recorded_run():
    import json
    r = json.loads((ROOT / "benchmarks" / "results" / "test_times.json").read_text())
    docs = (ROOT / "docs" / "benchmarks.md").read_text()
    for table in (before_after(r), times_tables(r)):
        assert table in docs, "docs/benchmarks.md: python -m benchmarks.docgen writes test_times.json's tables"
