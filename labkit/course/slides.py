"""The course's slide decks: one reveal.js deck per session, built from the notebooks' own cells.

Each session's stops (labkit.course.route.ROUTE: the parts of each notebook the stop shows) become
slides through nbconvert's reveal.js exporter, cut to be read from the back of a room:
- a heading starts a slide; prose is cut between paragraphs at about MAX_WORDS words a slide;
- a markdown table or a printed table longer than MAX_ROWS rows goes over several slides, its
  header repeated; a printed output of more than MAX_LINES lines is cut likewise;
- a code cell's code is shown when it is short (MAX_CODE_LINES), else only its outputs; each figure
  gets a slide; widgets and interactive figures (which need a kernel) are named, not drawn;
- each stop's Show, Say and Ask lines from the course (docs/course.md) are the speaker notes of its
  title slide (reveal.js's speaker view, key S).
The text and figures are the stored outputs themselves, never copies. reveal.js, require.js and
MathJax come from the npm registry once (labkit.course.vendor) and sit beside the decks, so they
open offline. nbformat and nbconvert are the lab's extra: only `labkit slides` (labkit.cli.slides)
imports this module.

    labkit slides --out build/slides              # or: make slides
    labkit slides --out build/slides --lang zh-CN # the Chinese notebooks' cells
"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
from nbconvert import SlidesExporter
from traitlets.config import Config

from ..checkout import root as checkout_root
from .guide import without_notes
from .route import COURSES, ROUTE, SESSIONS, course_stops, notebook, session_stops, stop_pieces
from .vendor import fetch

__all__ = ["CJK", "HEIGHT", "LIVE", "MAX_CODE_LINES", "MAX_LINES", "MAX_ROWS", "MAX_WORDS", "NOTE_LINE", "SENTENCE",
           "SEPARATOR", "TABLE_ROW", "TEMPLATE", "WIDE", "WIDTH", "build", "code_slides", "export", "markdown_slides",
           "session_notebook", "speaker_notes", "split_lines", "split_list", "split_paragraph", "split_table", "stop_parts",
           "units"]

MAX_ROWS = 8                # table rows a slide holds
MAX_LINES = 10              # lines of printed output a slide holds
MAX_WORDS = 70              # words of prose a slide holds
MAX_CODE_LINES = 8          # a longer code cell shows its outputs only
WIDE = ((100, ""), (136, "narrow"), (170, "narrower"))   # widest line (characters) → the slide's font class
WIDTH, HEIGHT = 1920, 1080  # the slide's own size (reveal.js scales it to the screen)
LIVE = ("application/vnd.jupyter.widget-view+json", "application/vnd.plotly.v1+json")
TABLE_ROW = re.compile(r"^\|.*\|$")
SEPARATOR = re.compile(r"^\|[-| :]+\|$")
CJK = re.compile(r"[\u3000-\u30ff\u4e00-\u9fff\uff00-\uffef]")
# a course stop's bullets that become speaker notes: "- **Say:** ..." (English) or "- **讲：** ..." (Chinese)
NOTE_LINE = re.compile(r"^- \*\*(?:Show|Say|Ask|展示|讲|问)(?::|：)\*\*")
SENTENCE = re.compile(r"(?<=[。！？；])|(?<=[.!?;:] )")


def units(text: str) -> float:
    """The room a text takes, in English words: a CJK character counts 0.4 (about as wide)."""
    return len(CJK.sub(" ", text).split()) + 0.4 * len(CJK.findall(text))


def split_paragraph(block: str, words: int = MAX_WORDS) -> list[str]:
    """A paragraph of more than `words` (units) cut between sentences."""
    if units(block) <= words or block.lstrip().startswith(("|", "```", "- ", "#")) or re.match(r"\s*\d+\. ", block):
        return [block]
    out, cur = [], ""
    for sentence in SENTENCE.split(block):
        if cur and units(cur + sentence) > words:
            out.append(cur.strip())
            cur = ""
        cur += sentence
    return out + [cur.strip()] if cur.strip() else out


def _md(text: str) -> dict:
    """A markdown slide; its fenced code sets the monospace font size, as a code cell's does."""
    cell = nbformat.v4.new_markdown_cell(text)
    fenced = "\n".join(re.findall(r"```[^\n]*\n(.*?)```", text, re.S))
    cell.metadata["slideshow"] = {"slide_type": "slide", **_width_state(fenced)}
    return cell


def speaker_notes(body: str) -> str:
    """The Show, Say and Ask bullets of a course stop's text, each whole (its indented lines with it),
    in order."""
    items, keep = [], False
    for line in body.splitlines():
        if line.startswith("- "):
            keep = bool(NOTE_LINE.match(line))
            if keep:
                items.append(line)
        elif keep and line.startswith("  ") and line.strip():
            cjk = CJK.match(items[-1][-1]) or CJK.match(line.strip()[0])         # Chinese joins without a space
            items[-1] += ("" if cjk else " ") + line.strip()
        else:                                   # a blank line or other text ends the bullet
            keep = False
    return "\n".join(items)


def _notes(text: str) -> dict:
    """A speaker-notes cell (nbconvert's reveal.js exporter writes it as <aside class="notes">)."""
    cell = nbformat.v4.new_markdown_cell(text)
    cell.metadata["slideshow"] = {"slide_type": "notes"}
    return cell


def _blocks(text: str) -> list[str]:
    """Markdown cut into blocks (paragraphs, lists, tables, fenced code), blank lines between."""
    blocks, cur, fenced = [], [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not line.strip() and not fenced:
            if cur:
                blocks.append("\n".join(cur))
            cur = []
        else:
            cur.append(line)
    if cur:
        blocks.append("\n".join(cur))
    return blocks


def split_list(block: str, words: int = MAX_WORDS) -> list[str]:
    """A list block of more than `words` words as several blocks, cut between its items."""
    if units(block) <= words or not re.search(r"^(- |\d+\. )", block, re.M):
        return [block]
    items = re.split(r"\n(?=- |\d+\. )", block)
    out, cur = [], []
    for it in items:
        if cur and units(" ".join(cur)) + units(it) > words:
            out.append("\n".join(cur))
            cur = []
        cur.append(it)
    return out + ["\n".join(cur)]


def split_table(block: str, rows: int = MAX_ROWS) -> list[str]:
    """A markdown table of more than `rows` body rows as several tables, the header repeated."""
    lines = block.splitlines()
    if len(lines) < 3 or not all(TABLE_ROW.match(ln.strip()) for ln in lines) or not SEPARATOR.match(lines[1].strip()):
        return [block]
    head, body = lines[:2], lines[2:]
    return ["\n".join(head + body[i:i + rows]) for i in range(0, len(body), rows)] or [block]


def markdown_slides(text: str) -> list[str]:
    """One markdown piece as slide texts: a new slide at each heading and past MAX_WORDS words."""
    slides, cur, words = [], [], 0
    for block in _blocks(text):
        for part in (p for b in split_list(block) for t in split_table(b) for p in split_paragraph(t)):
            n = units(part)
            is_table = part.lstrip().startswith("|")
            if cur and (part.lstrip().startswith("#") or words + n > MAX_WORDS or is_table):
                slides.append("\n\n".join(cur))
                cur, words = [], 0
            cur.append(part)
            words += n
            if is_table:
                slides.append("\n\n".join(cur))
                cur, words = [], 0
    if cur:
        slides.append("\n\n".join(cur))
    return slides


def split_lines(text: str, lines: int = MAX_LINES) -> list[str]:
    """Printed text of more than `lines` lines as several pieces, its first line (a table's header)
    repeated on each."""
    rows = text.rstrip("\n").splitlines()
    if len(rows) <= lines:
        return [text]
    head, body = rows[0], rows[1:]
    step = lines - 1
    return ["\n".join([head, *body[i:i + step]]) + "\n" for i in range(0, len(body), step)]


def _width_state(*texts: str) -> dict:
    """The slide's data-state (a smaller monospace font) for its widest line of code or output."""
    widest = max((len(ln) for t in texts for ln in t.splitlines()), default=0)
    state = next((name for width, name in WIDE if widest <= width), WIDE[-1][1])
    return {"data": {"state": state}} if state else {}


def code_slides(cell, where: str) -> list:
    """A code cell as slides: its code when short, each printed output cut to fit, each figure alone
    (an interactive figure by the PNG stored beside it; a placeholder only where none is)."""
    out = []
    code = [ln for ln in cell.source.splitlines() if ln.strip() and not ln.startswith("# NBVAL_")]
    shown = "\n".join(code) if len(code) <= MAX_CODE_LINES else ""
    for o in cell.get("outputs", []):
        if o.output_type == "stream":
            pieces = [nbformat.v4.new_output("stream", name=o.name, text=t) for t in split_lines(o.text)]
        elif "data" in o and set(o.data) & set(LIVE) and "image/png" not in o.data:   # no stored picture
            pieces = [nbformat.v4.new_output("stream", name="stdout",
                                             text=f"(a live widget or interactive figure: run {where})\n")]
        elif "data" in o:
            data = {k: v for k, v in o.data.items() if k in ("image/png", "image/svg+xml", "text/plain")}
            if "text/plain" in data and len(data) > 1:
                data.pop("text/plain")
            text = data.get("text/plain")
            pieces = ([nbformat.v4.new_output("stream", name="stdout", text=t) for t in split_lines(text)]
                      if isinstance(text, str) and len(data) == 1 else [nbformat.v4.new_output("display_data", data=data)])
        else:
            continue
        for p in pieces:
            c = nbformat.v4.new_code_cell(shown, outputs=[p])
            c.metadata["slideshow"] = {"slide_type": "slide", **_width_state(shown, p.get("text", ""))}
            if not shown:
                c.metadata["tags"] = ["hide-input"]
            out.append(c)
            shown = ""              # the code once, above the first output
    if not out and shown:
        c = nbformat.v4.new_code_cell(shown)
        c.metadata["slideshow"] = {"slide_type": "slide", **_width_state(shown)}
        out.append(c)
    return out


def stop_parts(name: str, shown: tuple, folder: Path | None = None, twin: Path | None = None) -> list[tuple[str, object]]:
    """(kind, markdown text or code cell) of the parts a stop shows, found in the English notebook (of
    `folder`, default the lab's notebooks/); with `twin` (the Chinese notebooks' folder), the same
    cells of the twin (same order and code; a markdown cell cut by a heading is shown whole, once)."""
    nb = notebook(name, folder)
    seen = stop_pieces(nb, shown)
    if twin is None:
        return [(kind, x) for _, kind, x in seen]
    other, out, used = notebook(name, twin), [], set()
    other.cells = [c for c in other.cells if "zh-setup" not in c.metadata.get("tags", [])]   # its own first cell
    for _, kind, x in seen:
        i = next(k for k, c in enumerate(nb.cells)
                 if (c is x if kind == "code" else c.cell_type == "markdown" and x in without_notes(c.source)))
        if i not in used:
            used.add(i)
            out.append((kind, other.cells[i] if kind == "code" else without_notes(other.cells[i].source)))
    return out


def session_notebook(session: str, lang: str = "en", root: Path | None = None):
    """The deck of one session as a notebook: a title slide, then each stop's title and parts (from
    the lab's checkout, or from `root`)."""
    root = Path(root) if root else checkout_root("the course's slides")
    folder = root / "notebooks" / ("zh-CN" if lang == "zh-CN" else "")
    titles = course_stops((root / "docs" / COURSES[lang]).read_text())
    stops = session_stops(session)
    cells = [_md(f"# Session {session}\n\n" + "\n".join(f"- **{s}** {titles[s][2]}" for s in stops))]
    for s in stops:
        stop = ROUTE[s]
        if stop.notebook is None:
            continue
        cells.append(_md(f"## {s} · {titles[s][2]}\n\n`notebooks/{folder.name + '/' if lang != 'en' else ''}"
                         f"{stop.notebook}`"))
        notes = speaker_notes(titles[s][3])
        if notes:
            cells.append(_notes(notes))
        for kind, x in stop_parts(stop.notebook, stop.shown, root / "notebooks", folder if lang != "en" else None):
            cells += [_md(t) for t in markdown_slides(x)] if kind == "markdown" else code_slides(x, stop.notebook)
    deck = nbformat.v4.new_notebook(cells=cells)
    deck.metadata["title"] = f"labkit course · session {session}"
    return deck


TEMPLATE = """{%- extends 'reveal/index.html.j2' -%}
{%- block html_head_js -%}<script src="vendor/requirejs/require.js"></script>{%- endblock html_head_js -%}
{%- block html_head_js_mathjax -%}
<script>window.MathJax = {tex: {inlineMath: [['$', '$'], ['\\\\(', '\\\\)']]}};</script>
<script src="vendor/mathjax/es5/tex-chtml-full.js"></script>
{%- endblock html_head_js_mathjax -%}
{% block jupyter_widgets %}{% endblock jupyter_widgets %}
{% block footer_js %}
<style>
.reveal { font-size: 40px; }
.reveal .jp-RenderedMarkdown, .reveal .jp-RenderedHTMLCommon { font-size: 40px !important; line-height: 1.35; }
.reveal pre, .reveal pre span, .reveal code { font-size: 28px !important; line-height: 1.3 !important; }
.reveal table, .reveal td, .reveal th { font-size: 32px !important; }
.reveal img { max-height: 900px; }
.narrow .reveal pre, .narrow .reveal pre span { font-size: 22px !important; }
.narrower .reveal pre, .narrower .reveal pre span { font-size: 18px !important; }
.reveal .jp-InputPrompt, .reveal .jp-OutputPrompt { display: none; }
</style>
<script>
require({waitSeconds: 15}, ["vendor/reveal.js/dist/reveal.js", "vendor/reveal.js/plugin/notes/notes.js"],
  function(Reveal, RevealNotes) {
    Reveal.initialize({controls: true, progress: true, hash: true, transition: "none", slideNumber: "c/t",
                       plugins: [RevealNotes], width: WIDTH, height: HEIGHT, margin: 0.04});
    window.Reveal = Reveal;
  });
</script>
{% endblock footer_js %}
"""


def export(deck, path: Path) -> Path:
    """The deck as reveal.js HTML at `path` (its libraries expected in path's folder, under vendor/)."""
    tpl = path.parent / ".template" / "deck.html.j2"
    tpl.parent.mkdir(parents=True, exist_ok=True)
    tpl.write_text(TEMPLATE.replace("WIDTH", str(WIDTH)).replace("HEIGHT", str(HEIGHT)))
    cfg = Config()
    cfg.TagRemovePreprocessor.remove_input_tags = {"hide-input"}       # one of the exporter's default preprocessors
    exporter = SlidesExporter(config=cfg, template_file=str(tpl), reveal_url_prefix="vendor/reveal.js",
                              reveal_theme="white")
    html, _ = exporter.from_notebook_node(deck)
    path.write_text(html)
    return path


def build(out: str | Path, lang: str = "en", sessions: str = SESSIONS, vendor: bool = True, log=print) -> list[Path]:
    """Every session's deck under `out` (session-1.html, ...; session-1.zh-CN.html for lang zh-CN)."""
    if lang not in COURSES:
        raise ValueError(f"lang must be one of {', '.join(COURSES)}, got {lang!r}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if vendor:
        fetch(out / "vendor", log=log)
    suffix = "" if lang == "en" else f".{lang}"
    return [export(session_notebook(s, lang), out / f"session-{s}{suffix}.html") for s in sessions]
