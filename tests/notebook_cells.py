"""Reading stored notebooks and the scripts under benchmarks/ in tests (shared by the course, stated
figures, notebook listing and benchmark-script tests): cells found by what they say, never by index;
notebooks read with nbformat, never executed."""
from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIGURE_MIMES = ("image/png", "application/vnd.plotly.v1+json")


def code_cell(nb, anchor: str):
    """The one code cell whose source contains `anchor`."""
    cells = [c for c in nb.cells if c.cell_type == "code" and anchor in c.source]
    assert len(cells) == 1, f"{len(cells)} code cells contain {anchor!r}"
    return cells[0]


def output(nb, anchor: str) -> str:
    """The stored text output (streams and plain-text results) of the one code cell with `anchor`."""
    parts = []
    for o in code_cell(nb, anchor).get("outputs", []):
        if o.output_type == "stream":
            parts.append(o.text)
        elif "data" in o and "text/plain" in o.data:
            parts.append(o.data["text/plain"])
    text = "".join(parts)
    assert text, f"the cell with {anchor!r} has no stored text output"
    return text


def compared(cell) -> bool:
    """A code cell whose stored output nbval compares (not marked NBVAL_IGNORE_OUTPUT or NBVAL_SKIP)."""
    return cell.cell_type == "code" and "NBVAL_IGNORE_OUTPUT" not in cell.source and "NBVAL_SKIP" not in cell.source


def counts(nb) -> tuple[int, int, int]:
    """(code cells, cells with outputs that nbval compares, stored figures: outputs with a PNG or plotly)."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    figures = sum(any(k in o.get("data", {}) for k in FIGURE_MIMES) for c in code for o in c.get("outputs", []))
    return len(code), sum(compared(c) and bool(c.get("outputs")) for c in code), figures


def script(name: str):
    """benchmarks/NAME.py imported as a module (the folder is not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
