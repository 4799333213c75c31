"""`labkit slides`: one reveal.js deck per course session, built from the notebooks' own cells
(labkit.course.slides), with reveal.js, require.js and MathJax beside them so they open offline.

    labkit slides --out build/slides              # or: make slides
    labkit slides --out build/slides --lang zh-CN # the Chinese notebooks' cells
"""
from __future__ import annotations

from ..course.route import COURSES


def add_parser(sub) -> None:
    p = sub.add_parser("slides", help="one reveal.js deck per course session, from the notebooks' cells")
    p.add_argument("--out", default="build/slides", help="folder for the decks (default build/slides)")
    p.add_argument("--lang", default="en", choices=sorted(COURSES), help="the notebooks' language")
    p.add_argument("--offline-only", action="store_true",
                   help="do not fetch reveal.js, require.js and MathJax (use what --out/vendor holds)")
    p.set_defaults(fn=run)


def run(a) -> int:
    from ..course.slides import build  # nbformat and nbconvert (the lab's extra): for this command only

    for path in build(a.out, a.lang, vendor=not a.offline_only):
        print(f"written: {path}")
    return 0
