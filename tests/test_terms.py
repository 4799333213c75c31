"""The Chinese term sheet (docs/terms.zh-CN.md): one rendering per term in every Chinese markdown
cell and document; an English term may stand only in a full-width parenthetical gloss."""
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "docs" / n for n in ("README.zh-CN.md", "course.zh-CN.md", "handout.zh-CN.md")]
GLOSS = re.compile(r"（[^（）]*）")


def sheet() -> list[tuple[str, str, list[str]]]:
    text = (ROOT / "docs" / "terms.zh-CN.md").read_text()
    rows = re.findall(r"^\| ([^|]+?) \| ([^|]+?) \| ([^|]+?) \|$", text, re.M)
    return [(en, zh, [x.strip() for x in avoid.split("、")]) for en, zh, avoid in rows if en not in ("English", "---")]


def chinese_texts() -> dict[str, str]:
    """Every Chinese markdown text, its parenthetical glosses left out."""
    out = {p.name: p.read_text() for p in DOCS}
    for p in sorted((ROOT / "notebooks" / "zh-CN").glob("*.ipynb")):
        nb = nbformat.read(p, as_version=4)
        out[f"zh-CN/{p.name}"] = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    return {k: GLOSS.sub("", v) for k, v in out.items()}


def test_the_sheet_lists_the_terms_the_native_readers_found_rendered_several_ways():
    names = {en.split(" (")[0] for en, _, _ in sheet()}
    assert {"family", "stand-in", "trace", "fixed-count rule", "attention annealing", "block ELBO", "mirror task",
            "mask token"} <= names


@pytest.mark.parametrize("en, zh, avoid", sheet(), ids=[row[0] for row in sheet()])
def test_each_term_has_one_chinese_rendering(en, zh, avoid):
    texts = chinese_texts()
    assert any(zh in t for t in texts.values()), f"{zh} ({en}) is used nowhere"
    found = {name: [a for a in avoid if a in t] for name, t in texts.items()}
    assert not {k: v for k, v in found.items() if v}, f"{en}: use {zh}"
