"""The course's route as data: which notebook parts each stop of docs/course.md shows.

Read by the course's dry run (tests/test_course.py, which times every stop from these parts) and by
`labkit slides` (labkit.course.slides), which builds each session's deck from the same parts, so the
slides show what the session shows. A part is a notebook section (from its heading to the next
heading of any level) or one cell, found by a text it contains; `pieces` reads a notebook as
(heading, kind, text or cell), markdown cut at each heading.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..checkout import root
from .guide import without_notes

__all__ = ["COURSES", "ROUTE", "SESSIONS", "STOP_HEADING", "Stop", "course_stops", "notebook", "notebooks", "pieces",
           "session_stops", "shown_pieces", "stop_pieces"]


@dataclass(frozen=True)
class Stop:
    """One stop: what it shows, what it re-runs live, and the students' activity.

    `shown` lists ("section", heading) for a notebook section (from its heading to the next heading of
    any level) or ("cell", text) for the one cell (or, in a markdown cell cut by a heading, the one part)
    that contains `text`. `live` lists cells (by a text they contain) the route runs again in class.
    """
    notebook: str | None
    shown: tuple = ()
    live: tuple = ()
    activity_minutes: int = 0
    walked: tuple = ()          # code cells (by a text they contain) walked through line by line


ROUTE = {
    # session 1 (core): what a masked diffusion LM is, and how it decodes
    "1.1": Stop("01_quickstart.ipynb", (
        ("cell", "out = lk.generate(lm, PROMPT, sampler, seed=SEED, **settings)"),
        ("cell", 'lk.viz.heatmap(trace, lm, kind="state")'), ("cell", 'lk.viz.heatmap(trace, lm, kind="confidence")'),
        ("cell", "conf = trace.confidence()[:, 0].float()"), ("cell", "order = trace.commit_step()[0, P:]"))),
    "1.2": Stop("02_step_through.ipynb", (
        ("cell", "order = trace.commit_step()[0, P:]                      # (64,)"),
        ("cell", 'rand = run(lk.LowConfidence(remasking="random"))'), ("cell", "def my_generate("),
        ("cell", "mine = my_generate(lm, PROMPT)"), ("cell", "**3.** Compare `lk.LowConfidence(score=\"margin\")`"),
        ("cell", 'margin = run(lk.LowConfidence(score="margin"))')),
        live=("def my_generate(", "mine = my_generate(lm, PROMPT)"), activity_minutes=4, walked=("def my_generate(",)),
    "1.3": Stop("03_parallel_decoding.ipynb", (("cell", "rules = {"), ("cell", "import matplotlib.pyplot as plt"))),
    "1.4": Stop(None),
    # session 2: where diffusion wins, the panel, and how it is trained
    "2.1": Stop("05_lab_panel.ipynb", (("cell", "lab = lk.widgets.Lab(lm, PROMPT)"),),
                live=("lab = lk.widgets.Lab(lm, PROMPT)",)),
    "2.2": Stop("11_where_diffusion_wins.ipynb", (
        ("cell", "runs = {k: lk.generate(sd, puzzles, rule, seed=SEED)"), ("cell", "lk.viz.commit_grid("),
        ("cell", 'best = tables.best_order(result, "sudoku", "sudoku")'))),
    "2.3": Stop("10_train_from_scratch.ipynb", (("cell", "def masked_loss_by_hand("), ("section", "Where the 1/t comes from")),
                live=("def masked_loss_by_hand(",), activity_minutes=5),
    "2.4": Stop(None),
    # session 3 (optional): editing, control, speed and serving
    "3.1": Stop("11_where_diffusion_wins.ipynb", (
        ("cell", "for label, question in ("),)),
    "3.2": Stop("04_draft_and_edit.ipynb", (
        ("cell", 'runs = {"S": lk.DraftEdit.speed()'), ("cell", "s, q = sweep[0.5, 0.0], sweep[0.7, 0.5]"))),
    "3.3": Stop("06_controls.ipynb", (
        ("cell", "out = lk.generate(lm, PROMPT, rule, controls=[lk.Pin(12"), ("cell", 'line = "Come, you spirits'))),
    "3.4": Stop("07_profiling.ipynb", (
        ("cell", "timers = {}"), ("cell", "for name, t in timers.items():"),
        ("cell", 'o = json.loads((RESULTS / "overhead.json").read_text())'))),
    "3.5": Stop("09_serving.ipynb", (
        ("cell", "client = openai.OpenAI(base_url=BASE_URL"), ("cell", 'ROOT = BASE_URL.removesuffix("/v1")'))),
    "3.6": Stop(None),
}
SESSIONS = "123"                # 1 and 2 the core, 3 optional
COURSES = {"en": "course.md", "zh-CN": "course.zh-CN.md"}      # the course's text by language, in docs/


def notebooks() -> Path:
    """The lab's notebooks/ folder (in its checkout: the package does not ship the notebooks)."""
    return root("the course (its notebooks)") / "notebooks"


def notebook(name: str, folder: Path | None = None):
    """Notebook `name` of `folder` (default: the lab's notebooks/)."""
    import nbformat  # the lab's extra: not needed by other commands

    return nbformat.read(Path(folder or notebooks()) / name, as_version=4)


def pieces(nb):
    """The notebook as (heading, kind, text or cell): markdown cut at each heading, code cells whole."""
    heading, out = None, []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            out.append((heading, "code", cell))
            continue
        part, fenced = [], False
        for line in without_notes(cell.source).splitlines():       # the reader's notes are not shown in class
            fenced ^= line.lstrip().startswith("```")
            m = None if fenced else re.match(r"#{1,6} (.+)$", line)
            if m:
                if part:
                    out.append((heading, "markdown", "\n".join(part)))
                heading, part = m.group(1).strip(), []
            part.append(line)
        if part:
            out.append((heading, "markdown", "\n".join(part)))
    return out


def shown_pieces(nb, selector, ps: list | None = None):
    kind, key = selector
    ps = pieces(nb) if ps is None else ps
    if kind == "section":
        heads = {h for h, _, _ in ps if h and h.replace("*", "").startswith(key)}
        if len(heads) != 1:
            raise ValueError(f"{len(heads)} headings start with {key!r}")
        return [p for p in ps if p[0] in heads]
    found = [p for p in ps if key in (p[2] if p[1] == "markdown" else p[2].source)]
    if len(found) != 1:
        raise ValueError(f"{len(found)} cells contain {key!r}")
    return found


STOP_HEADING = re.compile(r"^### (\d\.\d) · (\d+):(\d\d)–(\d+):(\d\d) · (.+)$", re.M)


def course_stops(text: str) -> dict:
    """{"1.1": (start minute, end minute, title, the stop's text)} from a course file."""
    heads = list(STOP_HEADING.finditer(text))
    stops = {}
    for m in heads:
        body = text[m.end():]
        body = re.split(r"^#{2,3} ", body, maxsplit=1, flags=re.M)[0]
        start, end = int(m.group(2)) * 60 + int(m.group(3)), int(m.group(4)) * 60 + int(m.group(5))
        stops[m.group(1)] = (start, end, m.group(6), body)
    return stops


def stop_pieces(nb, shown: tuple) -> list:
    """The pieces a stop's selectors show, in order, each once (a cell shown by two selectors, e.g.
    a section and one of its cells, counts once)."""
    ps = pieces(nb)
    seen: list[int] = []
    for selector in shown:
        for p in shown_pieces(nb, selector, ps):
            i = next(k for k, q in enumerate(ps) if q is p)          # shown_pieces returns items of ps
            if i not in seen:
                seen.append(i)
    return [ps[i] for i in seen]


def session_stops(session: str) -> list[str]:
    """The stop ids of one session (\"1\": 1.1, 1.2, ...), in order."""
    if session not in tuple(SESSIONS):
        raise ValueError(f"session must be one of {', '.join(SESSIONS)}, got {session!r}")
    return [s for s in ROUTE if s.split('.')[0] == session]
