"""The start-here path and each notebook's place (labkit.course.guide): every notebook's first cell
states the time its stored cells measure, what it needs first and where to go next, in both
languages; the path is at most four notebooks and about 45 minutes; README.md (both languages),
notebook 01, the course and the handouts name the same path and order."""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from labkit.course import guide

ROOT = Path(__file__).resolve().parents[1]
NB = {p.name[:2]: p for p in (ROOT / "notebooks").glob("*.ipynb")}


def read(k: str, lang: str = "en"):
    path = NB[k] if lang == "en" else ROOT / "notebooks" / "zh-CN" / NB[k].name
    return nbformat.read(path, as_version=4)


def first_markdown(nb) -> str:
    return next(c.source for c in nb.cells if c.cell_type == "markdown")


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_the_order_visits_every_notebook_once_after_what_it_needs():
    assert sorted(guide.ORDER) == sorted(NB) and len(guide.ORDER) == len(NB)
    assert guide.ORDER[:len(guide.START_HERE)] == guide.START_HERE and len(guide.START_HERE) <= 4
    for k in guide.ORDER:
        assert all(guide.ORDER.index(n) < guide.ORDER.index(k) for n in guide.NEEDS[k]), k


@pytest.mark.parametrize("k", sorted(NB))
def test_each_notebooks_top_states_its_measured_time_needs_and_next(k):
    minutes = guide.stated_minutes(read(k))
    for lang in ("en", "zh-CN"):
        assert guide.header(k, minutes, lang) in first_markdown(read(k, lang)), (k, lang)


def test_the_path_fits_about_45_minutes_and_every_page_names_it():
    minutes = {k: guide.stated_minutes(read(k)) for k in guide.START_HERE}
    total = sum(minutes.values())
    assert 35 <= total <= 45, minutes
    chain = " → ".join(guide.ORDER)
    for name, lang in (("README.md", "en"), ("docs/README.zh-CN.md", "zh-CN")):
        text = (ROOT / name).read_text()
        start = text.index("## Start here" if lang == "en" else "## 从这里开始")
        section = text[start:text.index("\n## ", start + 3)]
        assert text.index("## Two commands" if lang == "en" else "## 两条命令") > start    # the first screen
        rows = re.findall(r"^\| `(\d\d)_\w+\.ipynb` \| .+ \| (\d+) \|$", section, re.M)
        assert rows == [(k, str(minutes[k])) for k in guide.START_HERE], (name, rows)
        assert f"{total} 分钟" in section if lang == "zh-CN" else f"about {total} minutes" in section
        assert chain in flat(text), name
    path = " → ".join(guide.START_HERE)
    for name in ("docs/course.md", "docs/course.zh-CN.md", "docs/handout.md", "docs/handout.zh-CN.md"):
        text = flat((ROOT / name).read_text())
        assert path in text, name
        assert f"{total} minutes" in text or f"{total} 分钟" in text, name
    for lang in ("en", "zh-CN"):
        top = flat(first_markdown(read("01", lang)))
        top = top[top.index("**New here?**" if lang == "en" else "**第一次来？**"):]
        assert re.findall(r"(\d\d)（" if lang == "zh-CN" else r"(\d\d) \(", top)[:4] == list(guide.START_HERE), lang
        assert f"{total} minutes" in top or f"{total} 分钟" in top
