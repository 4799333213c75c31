"""`labkit student`: the students' copies of the notebooks, in both languages (notebooks/*.ipynb
and their Chinese twins, notebooks/zh-CN/*.ipynb, into OUT and OUT/zh-CN). Every solution cell
(tagged "solution" in the teacher's notebooks) becomes a stub that runs and says where the answer
goes, its output cleared; every other cell is kept as it is, outputs included, so a copy opened
without a kernel still shows the lesson. The teacher's notebooks are not touched.

The notebooks read the committed results beside them (../benchmarks/results), so the copies go in
a folder beside notebooks/, in the lab's checkout (default: student/); `make lab
NOTEBOOKS=student` opens them.

    labkit student                 # → student/ and student/zh-CN; or: make student
"""
from __future__ import annotations

import copy
import os
from pathlib import Path

from ..checkout import root

TAG = "solution"
TWINS = "zh-CN"                     # the Chinese twins' folder, inside the notebooks' folder and the copies'
MARK = "# Solution"                 # the first line of a solution cell's code (after nbval's markers)
STUB = ("# Your solution here: the exercise is in the text above. (The teacher's copy of this notebook\n"
        "# has a worked solution in this cell.)\n")


def _code_lines(source: str) -> list[str]:
    return [ln for ln in source.splitlines() if not ln.startswith("# NBVAL_")]


def is_solution(cell) -> bool:
    return cell.cell_type == "code" and TAG in cell.metadata.get("tags", [])


def marked(cell) -> bool:
    """A code cell whose code starts with MARK (the teacher's convention)."""
    lines = _code_lines(cell.source) if cell.cell_type == "code" else []
    first = lines[0].strip() if lines else ""
    return first == MARK or first.startswith(MARK + " ")         # "# Solution (on the stand-in)" too


def tag_solutions(nb) -> int:
    """Tag each marked cell; returns how many cells carry the tag."""
    for cell in nb.cells:
        if marked(cell) and not is_solution(cell):
            cell.metadata.setdefault("tags", []).append(TAG)
    return sum(is_solution(c) for c in nb.cells)


def student_copy(nb):
    """A copy of notebook `nb` with each solution cell replaced by the stub."""
    out = copy.deepcopy(nb)
    for cell in out.cells:
        if is_solution(cell):
            cell.source, cell.outputs, cell.execution_count = STUB, [], None
    return out


def write_students(out: str | Path | None = None, src: str | Path | None = None) -> list[Path]:
    """A student's copy of each notebook of `src` (default: the lab's notebooks/) and of each of its
    Chinese twins (src/zh-CN) written into `out` (default: student/ beside notebooks/) and out/zh-CN.
    `out` must sit beside `src`: the notebooks read ../benchmarks/results."""
    import nbformat  # the lab's extra: not needed by other commands

    src = Path(root("labkit student (the teacher's notebooks)") / "notebooks" if src is None else src)
    out = src.parent / "student" if out is None else Path(out)
    if Path(os.path.abspath(out)).parent != Path(os.path.abspath(src)).parent or out.name in (src.name, ""):
        raise ValueError(f"--out must be a folder beside the notebooks' folder {src} (such as {src.parent / 'student'}): "
                         f"the notebooks read ../benchmarks/results from there; got {out}")
    written = []
    for folder, into in ((src, out), (src / TWINS, out / TWINS)):
        for path in sorted(folder.glob("*.ipynb")):
            into.mkdir(parents=True, exist_ok=True)
            nb = nbformat.read(path, as_version=4)
            untagged = [i for i, c in enumerate(nb.cells) if marked(c) and not is_solution(c)]
            if untagged:
                raise ValueError(f"{path.name}: cells {untagged} start with '{MARK}' but lack the '{TAG}' tag")
            nbformat.write(student_copy(nb), into / path.name)
            written.append(into / path.name)
    return written


def _student(a) -> int:
    written = write_students(a.out, a.notebooks)
    twins = sum(p.parent.name == TWINS for p in written)
    folder = written[0].parent if written else Path(a.out or "student")
    print(f"{len(written) - twins} student notebooks and {twins} Chinese twins in {folder} (solution cells replaced by "
          f"a stub); open them with: make lab NOTEBOOKS={folder.name}")
    return 0


def add_parser(sub) -> None:
    s = sub.add_parser("student", help="the students' copies of the notebooks: solutions replaced by stubs")
    s.add_argument("--out", help="folder for the copies, beside notebooks/ (default: student/ in the lab's checkout)")
    s.add_argument("--notebooks", help="the teacher's notebooks (default: the notebooks/ of the lab's checkout)")
    s.set_defaults(fn=_student)
