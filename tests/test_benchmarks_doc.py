"""docs/benchmarks.md's generated tables as benchmarks/docgen writes them from the committed results:
the doc regenerates byte-identical, and the lm-eval table says what lm_eval.json holds."""
import json
import shutil

import pytest
from doc_common import ROOT
from docgen import benchmarks_md
from docgen.markdown import replace_table

from labkit.bench.lm_eval import MODELS, RULES

DOC = ROOT / "docs" / "benchmarks.md"


@pytest.fixture(scope="module")
def lm_eval_result():
    return json.loads((ROOT / "benchmarks" / "results" / "lm_eval.json").read_text())


def test_docs_benchmarks_regenerates_byte_identical(tmp_path):
    copy = tmp_path / "benchmarks.md"
    shutil.copy(DOC, copy)
    benchmarks_md.write(doc=copy)
    assert copy.read_bytes() == DOC.read_bytes(), "docs/benchmarks.md: python -m benchmarks.docgen"


def test_a_table_replaced_is_the_new_one_and_the_text_around_it_stays(tmp_path, lm_eval_result):
    copy = tmp_path / "benchmarks.md"
    shutil.copy(DOC, copy)
    rows = lm_eval_result["rows"]
    replace_table(benchmarks_md.lm_eval_table({"rows": rows[:2]}), copy)
    text = copy.read_text()
    assert benchmarks_md.lm_eval_table({"rows": rows[:2]}) + "\n\nOn a task this open" in text
    assert benchmarks_md.lm_eval_table(lm_eval_result) not in text
    assert len(text.splitlines()) == len(DOC.read_text().splitlines()) - (len(rows) - 2)
    with pytest.raises(ValueError, match="not once"):
        replace_table("| no such header |\n|---|", copy)


def test_docs_benchmarks_shows_the_committed_lm_eval_table(lm_eval_result):
    result = lm_eval_result
    assert [(r["model"], r["label"]) for r in result["rows"]] == [(m, label) for m in MODELS for label, _, _ in RULES]
    docs = DOC.read_text()
    assert benchmarks_md.lm_eval_table(result) in docs, "docs/benchmarks.md: python -m benchmarks.docgen"
    rows = {(r["model"], r["label"]): r for r in result["rows"]}
    assert "exact match 0 for\nevery rule" in docs and all(r["exact_match"] == 0 for r in result["rows"])
    assert max(r["tpf"] for (m, _), r in rows.items() if m == "tiny") < 1.2       # "about one token per forward pass"
    s, base = rows[("tiny", "S mode")], rows[("tiny", "low-confidence, 1 token/step")]
    assert s["tpf"] < 1 and s["word_f1"] < base["word_f1"]
    cap = [r for (m, _), r in rows.items() if m == "tiny-cap"]
    assert max(r["tpf"] for r in cap) > 2 and max(r["word_f1"] for r in cap) - min(r["word_f1"] for r in cap) < 0.01
