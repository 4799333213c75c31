"""The cells of a generated notebook (benchmarks/make_notebook_11.py, make_notebook_12.py): markdown,
code whose output nbval checks (or ignores), written unexecuted for `make notebooks` to run."""
from pathlib import Path

import nbformat as nbf

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


class NotebookWriter:
    def __init__(self):
        self.cells = []

    def md(self, text: str) -> None:
        self.cells.append(nbf.v4.new_markdown_cell(text.strip()))

    def code(self, text: str, check: bool = True) -> None:
        tag = "# NBVAL_CHECK_OUTPUT\n" if check else "# NBVAL_IGNORE_OUTPUT\n"
        cell = nbf.v4.new_code_cell(tag + text.strip())
        if text.strip().startswith("# Solution"):           # what `labkit student` replaces by a stub
            cell.metadata["tags"] = ["solution"]
        self.cells.append(cell)

    def write(self, name: str) -> Path:
        nb = nbf.v4.new_notebook()
        nb.cells = self.cells
        nb.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                       "language_info": {"name": "python", "version": "3.11.7"}}
        nbf.write(nb, NOTEBOOKS / name)
        return NOTEBOOKS / name
