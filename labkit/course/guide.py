"""The lab's reading order for someone alone with it: the start-here path (four notebooks, about 45
minutes), then where each notebook leads, and each notebook's time to read and run, measured from
the stored notebook the way the course's dry run measures a stop (tests/test_course.py): words read,
outputs looked at, code lines read and the cells' stored run time; the exercises apart.

Each notebook's first cell states its time, what it needs first and where to go next (`header`),
README.md, docs/course.md and the handout name the same path (tests/test_guide.py holds them to
these tables and the stored notebooks).
"""
from __future__ import annotations

import re
from datetime import datetime

__all__ = ["NEEDS", "NEXT", "NOTE", "ORDER", "READ_WPM", "SECONDS_PER_CODE_LINE", "SECONDS_PER_OUTPUT", "START_HERE",
           "TITLES", "TITLES_ZH", "WORD", "header", "outputs_shown", "reading_minutes", "run_seconds", "stated_minutes",
           "without_notes"]

READ_WPM = 200               # silent reading, words per minute (the course's 130 is reading aloud)
SECONDS_PER_OUTPUT = 20      # looking at one printed output, figure or widget
SECONDS_PER_CODE_LINE = 3    # reading one line of code (not walking it through)
WORD = re.compile(r"\S*[^\W_]\S*")
# the reader's notes at a notebook's top (its header, notebook 01's path): for someone alone with the
# lab, not read out in class (labkit.course.route leaves them out of the stops and the slides)
NOTE = re.compile(r"^(\*About \d+ minutes to read and run|\*阅读并运行约 \d+ 分钟|\*\*New here\?\*\*|\*\*第一次来？\*\*)")

TITLES = {"01": "Quickstart", "02": "Step through", "03": "Parallel decoding", "04": "Draft and edit",
          "05": "The lab panel", "06": "Controls", "07": "Profiling", "08": "Real models", "09": "Serving",
          "10": "Train from scratch", "11": "Where diffusion wins", "12": "Rewards", "13": "Block diffusion"}
TITLES_ZH = {"01": "快速上手", "02": "逐步查看", "03": "并行解码", "04": "草稿—编辑", "05": "实验面板", "06": "内容控制",
             "07": "性能剖析", "08": "真实模型", "09": "服务部署", "10": "从零训练", "11": "扩散模型在哪里胜出",
             "12": "奖励", "13": "块扩散"}
START_HERE = ("01", "02", "03", "05")          # what a diffusion LM does, its order, its speed, the knobs
# after the path: editing and where it wins, then how the models are made, then control, speed and use
NEXT = {"01": "02", "02": "03", "03": "05", "05": "04", "04": "11", "11": "12", "12": "10", "10": "13",
        "13": "06", "06": "07", "07": "08", "08": "09", "09": None}
NEEDS = {"01": (), "02": ("01",), "03": ("02",), "04": ("03",), "05": ("03",), "06": ("02",), "07": ("03",),
         "08": ("01",), "09": ("01",), "10": ("02",), "11": ("04",), "12": ("11",), "13": ("10",)}


def without_notes(markdown: str) -> str:
    """Markdown with the reader's notes (NOTE: whole paragraphs) left out."""
    paragraphs = re.split(r"\n\s*\n", markdown)
    return "\n\n".join(p for p in paragraphs if not NOTE.match(p.strip()))


def _order() -> tuple[str, ...]:
    out, k = [], "01"
    while k:
        out.append(k)
        k = NEXT[k]
    return tuple(out)


ORDER = _order()              # every notebook once, from 01 along NEXT


def run_seconds(cell) -> float:
    """A code cell's stored run time: execution metadata, iopub.execute_input to shell.execute_reply
    (0 for a cell run without it)."""
    meta = cell.metadata.get("execution", {})
    if "iopub.execute_input" not in meta:
        return 0.0
    start, end = (datetime.fromisoformat(meta[k].replace("Z", "+00:00"))
                  for k in ("iopub.execute_input", "shell.execute_reply"))
    return (end - start).total_seconds()


def outputs_shown(cell) -> int:
    """One for a cell's printed text (however many prints), one per figure, table, page or widget."""
    outs = cell.get("outputs", [])
    text = any(o.output_type == "stream" or ("data" in o and set(o.data) <= {"text/plain"}) for o in outs)
    return int(text) + sum(1 for o in outs if "data" in o and set(o.data) - {"text/plain"})


def reading_minutes(nb) -> float:
    """Minutes to read and run a stored notebook up to its "## Exercises": words at READ_WPM, each
    output looked at, each code line read, and the cells' stored run time."""
    cut = next((i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and "## Exercises" in c.source),
               len(nb.cells))
    seconds = 0.0
    for c in nb.cells[:cut]:
        if c.cell_type == "markdown":
            seconds += 60 * len(WORD.findall(c.source)) / READ_WPM
            continue
        lines = sum(1 for ln in c.source.splitlines() if ln.strip() and not ln.strip().startswith("#"))
        seconds += SECONDS_PER_OUTPUT * outputs_shown(c) + SECONDS_PER_CODE_LINE * lines + run_seconds(c)
    return seconds / 60


def stated_minutes(nb) -> int:
    """reading_minutes to the nearest 5, at least 5: the time a notebook's top states."""
    return max(5, 5 * round(reading_minutes(nb) / 5))


def _name(k: str, lang: str) -> str:
    return f"notebook {k} · {TITLES[k]}" if lang == "en" else f"notebook {k}（{TITLES_ZH[k]}）"


def header(k: str, minutes: int, lang: str = "en") -> str:
    """The line under notebook k's title: its time, what it needs first, where to go next."""
    needs, nxt = NEEDS[k], NEXT[k]
    if lang == "en":
        need = ", ".join(_name(n, lang) for n in needs) or "nothing but the lab"
        after = _name(nxt, lang) if nxt else "the course (docs/course.md) or a question of your own"
        path = " (the start-here path: 01 → 02 → 03 → 05)" if k in START_HERE else ""
        return f"*About {minutes} minutes to read and run, exercises apart · needs: {need} · next: {after}{path}.*"
    need = "、".join(_name(n, lang) for n in needs) or "无，打开实验室即可"
    after = _name(nxt, lang) if nxt else "课程（docs/course.zh-CN.md），或者你自己的问题"
    path = "（入门路线：01 → 02 → 03 → 05）" if k in START_HERE else ""
    return f"*阅读并运行约 {minutes} 分钟，不含练习 · 前置：{need} · 下一步：{after}{path}。*"
