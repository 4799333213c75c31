"""Reading the generated docs back: benchmarks/ on sys.path, so the tests import the docs tool as its
scripts do (`from docgen.blocks import ...`, benchmarks/docgen), and a generated section of
docs/models.md as the doc holds it. Import this module before docgen."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS_DOC = ROOT / "docs" / "models.md"
if str(ROOT / "benchmarks") not in sys.path:
    sys.path.insert(0, str(ROOT / "benchmarks"))


def committed_section(start: str, end: str) -> str:
    """The section between its markers, markers included, as docs/models.md holds it."""
    doc = MODELS_DOC.read_text()
    assert start in doc and end in doc, f"docs/models.md lacks the section marked {start!r}"
    return start + doc.split(start, 1)[1].split(end, 1)[0] + end
