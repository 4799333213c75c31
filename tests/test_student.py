"""`labkit student`: the students' copies, in both languages, keep every cell but the solutions, which
become stubs that run; no later cell needs what only a solution defined; a copy in each language
runs top to bottom from the folder the copies are written to."""
import ast
import hashlib
from pathlib import Path

import nbformat
import pytest

from labkit.cli import student

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
TWINS = sorted((ROOT / "notebooks" / student.TWINS).glob("*.ipynb"))


def _key(path: Path) -> str:
    """"12_rewards.ipynb" for a notebook, "zh-CN/12_rewards.ipynb" for its twin."""
    return f"{student.TWINS}/{path.name}" if path.parent.name == student.TWINS else path.name


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A stand-in checkout: the lab's notebooks/ and benchmarks/ linked into a temporary folder, and
    the students' copies written beside them (student/), as `make student` writes them."""
    lab = tmp_path_factory.mktemp("lab")
    for name in ("notebooks", "benchmarks"):
        (lab / name).symlink_to(ROOT / name)
    return lab


@pytest.fixture(scope="module")
def copies(lab):
    before = {_key(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in NOTEBOOKS + TWINS}
    written = student.write_students(lab / "student", lab / "notebooks")
    after = {_key(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in NOTEBOOKS + TWINS}
    assert after == before, "teacher's copies untouched"
    return {_key(p): nbformat.read(p, as_version=4) for p in written}


def test_every_solution_becomes_a_stub_and_nothing_else_changes(copies):
    assert sorted(copies) == sorted(_key(p) for p in NOTEBOOKS + TWINS) and len(TWINS) == len(NOTEBOOKS)
    for path in NOTEBOOKS + TWINS:
        teacher, mine = nbformat.read(path, as_version=4), copies[_key(path)]
        assert len(teacher.cells) == len(mine.cells)
        solutions = [student.is_solution(c) for c in teacher.cells]
        assert sum(solutions) >= 1, f"{path.name} has exercises with solutions"
        assert [student.marked(c) for c in teacher.cells] == solutions, f"{path.name}: every '# Solution' cell is tagged"
        for t, m, sol in zip(teacher.cells, mine.cells, solutions):
            if sol:
                assert m.source == student.STUB and m.outputs == [] and "Solution" not in m.source
            else:
                assert m.source == t.source and m.get("outputs") == t.get("outputs")


def _names(source: str) -> tuple[set, set]:
    """(names a cell binds, names it reads), IPython magics and shell lines dropped."""
    code = "\n".join(ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!")))
    tree = ast.parse(code)
    bound, read = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, ast.Store) else read).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    return bound, read


@pytest.mark.parametrize("path", NOTEBOOKS + TWINS, ids=_key)
def test_no_cell_needs_what_only_a_solution_defined(path):
    nb = nbformat.read(path, as_version=4)
    outside, only_in_solutions = set(), set()
    for cell in (c for c in nb.cells if c.cell_type == "code"):
        bound, read = _names(cell.source)
        if student.is_solution(cell):
            only_in_solutions |= bound - outside
            continue
        missing = (read & only_in_solutions) - bound
        assert not missing, f"{path.name}: a cell after a solution reads {sorted(missing)}, defined only there"
        outside |= bound
        only_in_solutions -= bound


def test_an_untagged_solution_is_refused(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("# Solution\nprint(1)")]
    nbformat.write(nb, tmp_path / "x.ipynb")
    with pytest.raises(ValueError, match="lack the 'solution' tag"):
        student.write_students(tmp_path.parent / "out", tmp_path)


@pytest.mark.parametrize("out", ["nested/student", "../elsewhere", "notebooks"])
def test_copies_go_beside_the_notebooks_or_are_refused(lab, out):
    """Anywhere else the notebooks' ../benchmarks/results would not be found (and notebooks/ itself
    holds the teacher's copies)."""
    with pytest.raises(ValueError, match="--out must be a folder beside the notebooks' folder"):
        student.write_students(lab / out, lab / "notebooks")


@pytest.mark.parametrize("key", ["12_rewards.ipynb", f"{student.TWINS}/12_rewards.ipynb"])
def test_a_students_copy_runs_top_to_bottom_where_it_was_written(copies, lab, key):
    from nbclient import NotebookClient

    nb = copies[key]
    folder = lab / "student" / Path(key).parent
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(folder)}}).execute()
    stubs = [c for c in nb.cells if student.is_solution(c)]
    assert stubs and all(c.outputs == [] for c in stubs)
    assert not [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]


def test_the_handout_lists_every_notebooks_exercises_in_both_languages():
    import re

    counts = {}
    for path in NOTEBOOKS:
        text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
        counts[path.name] = len(set(re.findall(r"\*\*(\d+)\.\*\* ", text.split("## Exercises", 1)[-1])))
    for name in ("handout.md", "handout.zh-CN.md"):
        text = (ROOT / "docs" / name).read_text()
        rows = {m[0]: int(m[1]) for m in re.findall(r"^\| `([^`]+\.ipynb)` \| (\d+) \|", text, re.M)}
        assert rows == counts, name
        assert "labkit doctor" in text and "make student" in text and "make lab" in text, name
        assert not re.search(r"\b[A-Z]{4,}_[A-Z_]{3,}\b", text), f"{name}: a template marker is left"
