"""`labkit slides`: decks built from the notebooks' own cells, cut to be readable (tested without a
browser; `tests/slides_check.py` opens them in chromium under `make browser-check`)."""
from __future__ import annotations

import base64
import gzip
import hashlib
import io
import re
import tarfile

import nbformat
import pytest

from labkit import checkout
from labkit.course import slides, vendor
from labkit.course.route import ROUTE, SESSIONS, notebook, session_stops


def stored_text(name: str, folder=None) -> str:
    nb = notebook(name) if folder is None else notebook(name, folder)
    return "\n".join(o.get("text", "") if o.output_type == "stream" else str(o.get("data", {}).get("text/plain", ""))
                   for c in nb.cells if c.cell_type == "code" for o in c.outputs)


@pytest.fixture(scope="module")
def decks():
    return {s: slides.session_notebook(s) for s in SESSIONS}


def test_every_session_has_a_deck_with_its_stops(decks):
    for s, deck in decks.items():
        first = deck.cells[0].source
        stops = [k for k in ROUTE if k.startswith(s + ".")]
        assert all(f"**{k}**" in first for k in stops)
        shown = [k for k in stops if ROUTE[k].notebook]
        assert [c.source.split(" · ")[0] for c in deck.cells if c.source.startswith("## ") and " · " in
                c.source.splitlines()[0] and c.source[3:6] in shown] == [f"## {k}" for k in shown]
        assert all(c.metadata["slideshow"]["slide_type"] in ("slide", "notes") for c in deck.cells)


@pytest.mark.parametrize("lang, say", [("en", "**Say:**"), ("zh-CN", "**讲：**")])
def test_each_stops_say_and_ask_lines_are_its_speaker_notes(lang, say, tmp_path):
    """course.md's Show / Say / Ask bullets of a stop, whole and in order, as the notes of its title slide."""
    from labkit.course.route import COURSES, course_stops

    titles = course_stops((checkout.root("test") / "docs" / COURSES[lang]).read_text())
    deck = slides.session_notebook("1", lang)
    for i, c in enumerate(deck.cells):
        if c.metadata["slideshow"]["slide_type"] != "notes":
            continue
        stop = deck.cells[i - 1].source[3:6]                         # the title slide just before: "## 1.2 · ..."
        body = titles[stop][3]
        says = [ln for ln in c.source.splitlines() if ln.startswith(f"- {say}")]
        assert says and len(says) == body.count(f"- {say}"), stop
        first = next(ln for ln in body.splitlines() if ln.startswith(f"- {say}"))
        assert says[0].startswith(first.rstrip()), stop              # the bullet's first line, then its continuation
        assert "  " not in c.source and (lang == "en" or not re.search(r"[\u4e00-\u9fff] [\u4e00-\u9fff]", c.source))
    shown = [k for k in session_stops("1") if ROUTE[k].notebook]
    assert sum(c.metadata["slideshow"]["slide_type"] == "notes" for c in deck.cells) == len(shown)
    html = slides.export(deck, tmp_path / "deck.html").read_text()
    assert html.count('<aside class="notes">') == len(shown)


def test_slides_hold_at_most_max_rows_and_lines(decks):
    for deck in decks.values():
        for c in deck.cells:
            if c.cell_type == "markdown":
                rows = [ln for ln in c.source.splitlines() if slides.TABLE_ROW.match(ln.strip())
                        and not slides.SEPARATOR.match(ln.strip())]
                assert len(rows) <= slides.MAX_ROWS + 1          # the header and at most MAX_ROWS rows
            else:
                for o in c.outputs:
                    if o.output_type == "stream":
                        assert len(o.text.rstrip("\n").splitlines()) <= slides.MAX_LINES


def test_printed_numbers_are_the_stored_outputs(decks):
    """Every printed line on a slide is a line of its notebook's stored outputs (the same numbers)."""
    for s, deck in decks.items():
        stored = "\n".join(stored_text(ROUTE[k].notebook) for k in ROUTE if k.startswith(s + ".") and ROUTE[k].notebook)
        lines = set(stored.splitlines())
        for c in deck.cells:
            for o in c.get("outputs", []):
                if o.output_type == "stream" and not o.text.startswith("(a live widget"):
                    assert set(o.text.rstrip("\n").splitlines()) <= lines


def test_tables_split_with_their_header():
    table = "| a | b |\n|---|---|\n" + "\n".join(f"| {i} | {i * i} |" for i in range(19))
    parts = slides.split_table(table)
    assert len(parts) == 3 and all(p.startswith("| a | b |\n|---|---|\n") for p in parts)
    assert sum(len(p.splitlines()) - 2 for p in parts) == 19
    text = "head\n" + "\n".join(str(i) for i in range(20)) + "\n"
    pieces = slides.split_lines(text)
    assert all(p.startswith("head\n") and len(p.splitlines()) <= slides.MAX_LINES for p in pieces)
    assert [ln for p in pieces for ln in p.splitlines()[1:]] == [str(i) for i in range(20)]


def test_long_prose_is_cut_between_sentences_and_items():
    para = " ".join(f"Sentence {i} has five words." for i in range(40))
    parts = slides.markdown_slides(para)
    assert len(parts) > 1 and " ".join(parts) == para
    assert all(slides.units(p) <= slides.MAX_WORDS for p in parts)
    zh = "这是一个很长的中文句子，用来检查切分。" * 30
    assert len(slides.markdown_slides(zh)) > 1


def test_wide_code_gets_a_smaller_font():
    assert slides._width_state("x" * 80) == {}
    assert slides._width_state("x" * 120) == {"data": {"state": "narrow"}}
    assert slides._width_state("x" * 400) == {"data": {"state": "narrower"}}


def test_chinese_decks_use_the_twins_cells():
    deck = slides.session_notebook("1", "zh-CN")
    assert any(re.search(r"[\u4e00-\u9fff]", c.source) for c in deck.cells if c.cell_type == "markdown")
    en = slides.session_notebook("1")
    outs = lambda d: [o.get("text") for c in d.cells if c.cell_type == "code" for o in c.outputs]   # noqa: E731
    assert outs(deck) == outs(en)                  # the twins' outputs are the English ones


def test_exported_deck_loads_its_libraries_locally(tmp_path):
    path = slides.export(slides.session_notebook("1"), tmp_path / "session-1.html")
    html = path.read_text()
    srcs = re.findall(r'<(?:script|link)[^>]+(?:src|href)="([^"]+)"', html)
    assert srcs and all(not s.startswith("http") for s in srcs), [s for s in srcs if s.startswith("http")]
    assert "vendor/reveal.js/dist/reveal.js" in html and "vendor/mathjax/es5/tex-chtml-full.js" in html
    deck = slides.session_notebook("1")
    shown = [c for c in deck.cells if c.metadata["slideshow"]["slide_type"] != "notes"]    # notes sit inside a slide
    assert html.count("<section") == 2 * len(shown)                 # each slide: outer and inner section


def _tarball(files: dict) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_vendor_checks_integrity_and_keeps_only_what_decks_load(tmp_path):
    data = _tarball({"package/dist/reveal.js": b"ok", "package/README.md": b"no", "package/../evil": b"x"})
    good = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
    vendor.check_integrity(data, good)
    with pytest.raises(ValueError, match="sha512"):
        vendor.check_integrity(data + b"!", good)
    pkg = vendor.Package("reveal.js", "0", good, ("dist/reveal.js",))
    assert vendor.unpack(data, pkg, tmp_path) == 1
    assert (tmp_path / "dist" / "reveal.js").read_bytes() == b"ok" and not (tmp_path / "README.md").exists()
    assert gzip.decompress(data)                                  # a real gzip tarball


def test_bad_language_is_refused(tmp_path):
    with pytest.raises(ValueError, match="lang must be one of"):
        slides.build(tmp_path, lang="fr", vendor=False)
    with pytest.raises(ValueError, match="session must be one of"):
        slides.session_notebook("4")


def test_nbformat_valid(decks):
    for deck in decks.values():
        nbformat.validate(deck)



def test_a_deck_built_from_another_checkout_reads_its_notebooks(tmp_path, decks):
    """session_notebook(root=...) takes the course, the notebooks and their twins all from `root`."""
    here = checkout.find()
    (tmp_path / "docs").mkdir()
    for name in ("course.md", "course.zh-CN.md"):
        (tmp_path / "docs" / name).write_bytes((here / "docs" / name).read_bytes())
    for sub in ("", "zh-CN"):
        (tmp_path / "notebooks" / sub).mkdir(parents=True, exist_ok=True)
        for name in {ROUTE[s].notebook for s in session_stops("1")} - {None}:
            (tmp_path / "notebooks" / sub / name).write_bytes((here / "notebooks" / sub / name).read_bytes())
    assert [c.source for c in slides.session_notebook("1", root=tmp_path).cells] == [c.source for c in decks["1"].cells]
    first = tmp_path / "notebooks" / "01_quickstart.ipynb"
    first.write_text(first.read_text().replace('kind=\\"confidence\\"', 'kind=\\"conf\\"'))
    with pytest.raises(ValueError, match="0 cells contain 'lk.viz.heatmap\\(trace, lm, kind=\"confidence\"\\)'"):
        slides.session_notebook("1", root=tmp_path)


def test_an_interactive_figure_shows_its_stored_picture_and_only_a_bare_widget_a_placeholder():
    import nbformat

    from labkit.course.slides import code_slides
    plotly = nbformat.v4.new_output("display_data", data={"application/vnd.plotly.v1+json": {"data": []},
                                                          "image/png": "iVBORw0KGgo="})
    widget = nbformat.v4.new_output("display_data", data={"application/vnd.jupyter.widget-view+json": {"model_id": "x"},
                                                          "text/plain": "Panel()"})
    cell = nbformat.v4.new_code_cell("fig.show()", outputs=[plotly, widget])
    first, second = code_slides(cell, "notebook 02")
    assert first.outputs[0]["data"] == {"image/png": "iVBORw0KGgo="}
    assert "live widget or interactive figure" in second.outputs[0]["text"]
