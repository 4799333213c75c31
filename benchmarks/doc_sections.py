"""Writing one generated section into docs/models.md (make_rl_section.py, make_blocks_section.py):
the text between its start and end markers replaced, or the section put before a heading."""
from __future__ import annotations

from pathlib import Path

DOC = Path("docs/models.md")
BEFORE = "## How `tiny-cap`'s recipe was chosen"


def write_section(section: str, start: str, end: str, doc: Path = DOC, before: str = BEFORE) -> Path:
    text = doc.read_text()
    if start in text:
        head, rest = text.split(start, 1)
        text = head + section + rest.split(end, 1)[1]
    else:
        text = text.replace(before, section + "\n\n" + before, 1)
    doc.write_text(text)
    return doc
