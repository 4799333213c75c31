"""`labkit student`: the students' copies of the notebooks. Every solution cell (tagged "solution"
in the teacher's notebooks) becomes a stub that runs and says where the answer goes, its output
cleared; every other cell is kept as it is, outputs included, so a copy opened without a kernel
still shows the lesson. The teacher's notebooks are not touched.

    labkit student --out build/student          # or: make student
"""
from __future__ import annotations

import copy
from pathlib import Path

from ..checkout import root

TAG = "solution"
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


def write_students(out: str | Path, src: str | Path | None = None) -> list[Path]:
    """A student's copy of each notebook of `src` (default: the lab's notebooks/) written into `out`."""
    import nbformat  # the lab's extra: not needed by other commands

    src = root("labkit student (the teacher's notebooks)") / "notebooks" if src is None else src
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for path in sorted(Path(src).glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        untagged = [i for i, c in enumerate(nb.cells) if marked(c) and not is_solution(c)]
        if untagged:
            raise ValueError(f"{path.name}: cells {untagged} start with '{MARK}' but lack the '{TAG}' tag")
        nbformat.write(student_copy(nb), out / path.name)
        written.append(out / path.name)
    return written


def _student(a) -> int:
    written = write_students(a.out, a.notebooks)
    print(f"{len(written)} student notebooks in {a.out} (solution cells replaced by a stub)")
    return 0


def add_parser(sub) -> None:
    s = sub.add_parser("student", help="the students' copies of the notebooks: solutions replaced by stubs")
    s.add_argument("--out", default="build/student", help="folder for the copies (default build/student)")
    s.add_argument("--notebooks", help="the teacher's notebooks (default: the notebooks/ of the lab's checkout)")
    s.set_defaults(fn=_student)
