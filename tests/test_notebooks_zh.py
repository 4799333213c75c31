"""The Chinese notebooks (notebooks/zh-CN/): a twin of every English notebook, its markdown in
Chinese with the course's terms, its code cells and stored outputs equal to the English ones cell
by cell (so nbval runs the English notebooks only), and a first cell that runs it from notebooks/."""
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from sync_notebooks import SETUP, TAG, body  # noqa: E402

EN = sorted((ROOT / "notebooks").glob("*.ipynb"))
CJK = re.compile(r"[\u4e00-\u9fff]")
BANNED = ("遮盖", "遮住", "草稿与编辑", "草拟—编辑", "块大小", "步数滑块")     # the native reader's list (issue 40)


def numbers(text: str) -> list[str]:
    return sorted(re.findall(r"\d+(?:\.\d+)?", text))


def glossed(zh: str, en: str) -> str:
    """The Chinese cell with the numbers its headings' glosses repeat from the English heading kept
    verbatim before them ("## 6 · What 400 steps did（400 步做了什么）") left out once: a gloss may
    carry the heading's numbers without counting them twice."""
    for level, heading in re.findall(r"^(#+) (.*)$", en, re.M):
        line = next((ln for ln in zh.splitlines() if ln.startswith(f"{level} {heading}")), None)
        if line is None:
            continue
        gloss = line[len(f"{level} {heading}"):]
        for n in set(re.findall(r"\d+(?:\.\d+)?", heading)):
            gloss = re.sub(rf"(?<![\d.]){re.escape(n)}(?![\d.])", "", gloss)
        zh = zh.replace(line, f"{level} {heading}{gloss}", 1)
    return zh


def test_every_english_notebook_has_a_chinese_twin():
    assert sorted(p.name for p in (ROOT / "notebooks" / "zh-CN").glob("*.ipynb")) == [p.name for p in EN]


@pytest.mark.parametrize("path", EN, ids=lambda p: p.name)
def test_the_twin_has_the_same_code_and_outputs_and_chinese_prose(path):
    en = nbformat.read(path, as_version=4)
    zh = nbformat.read(ROOT / "notebooks" / "zh-CN" / path.name, as_version=4)
    first = zh.cells[0]
    assert TAG in first.metadata.get("tags", []) and first.source == SETUP, "the setup cell comes first"
    cells = body(zh)
    assert [c.cell_type for c in cells] == [c.cell_type for c in en.cells]
    for i, (e, z) in enumerate(zip(en.cells, cells)):
        if e.cell_type == "code":
            assert (z.source, z.outputs) == (e.source, e.outputs), f"code cell {i} differs from the English one"
            continue
        assert CJK.search(z.source), f"markdown cell {i} is not translated: {z.source[:60]!r}"
        assert numbers(glossed(z.source, e.source)) == numbers(e.source), f"markdown cell {i}: the numbers differ"
        for level, heading in re.findall(r"^(#+) (.*)$", e.source, re.M):
            assert any(ln.startswith(f"{level} {heading}") for ln in z.source.splitlines()), heading
        for word in BANNED:
            assert word not in z.source, f"markdown cell {i} uses {word}"
