"""Reading a generated section of docs/models.md back (the RL and block results' tests)."""
from pathlib import Path

MODELS_DOC = Path(__file__).resolve().parent.parent / "docs" / "models.md"


def committed_section(start: str, end: str) -> str:
    """The section between its markers, markers included, as docs/models.md holds it."""
    doc = MODELS_DOC.read_text()
    assert start in doc and end in doc, f"docs/models.md lacks the section marked {start!r}"
    return start + doc.split(start, 1)[1].split(end, 1)[0] + end
