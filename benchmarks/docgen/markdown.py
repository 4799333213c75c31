"""Markdown tables, and putting a generated section or table into a doc."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODELS_DOC = ROOT / "docs" / "models.md"
BENCHMARKS_DOC = ROOT / "docs" / "benchmarks.md"
RESULTS = ROOT / "benchmarks" / "results"             # the committed results the docs are written from
BEFORE = "## How `tiny-cap`'s recipe was chosen"      # where a new section of docs/models.md goes


def markdown_table(header: list[str], rows) -> str:
    """A markdown table: the header cells, then one line per row (a sequence of cell strings)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def write_section(section: str, start: str, end: str, doc: Path = MODELS_DOC, before: str = BEFORE) -> Path:
    """The text between `start` and `end` (markers included) replaced by `section`, or the section
    put before the heading `before` where the doc has no such markers yet."""
    text = doc.read_text()
    if start in text:
        head, rest = text.split(start, 1)
        text = head + section + rest.split(end, 1)[1]
    else:
        text = text.replace(before, section + "\n\n" + before, 1)
    doc.write_text(text)
    return doc


def write_heading_section(section: str, heading: str, doc: Path = MODELS_DOC) -> Path:
    """The section that starts at the line `heading` replaced by `section`, up to the next heading
    of its level or the next generated section's marker (an HTML comment line)."""
    text = doc.read_text()
    a = text.index(heading)
    ends = [i for i in (text.find("\n## ", a + 1), text.find("\n<!-- ", a + 1)) if i >= 0]
    b = min(ends) + 1 if ends else len(text)
    doc.write_text(text[:a] + section + text[b:])
    return doc


def replace_table(table: str, doc: Path = BENCHMARKS_DOC) -> Path:
    """The table in `doc` whose header line is `table`'s replaced by `table` (its lines up to the
    first line that does not start with '|')."""
    header = table.split("\n", 1)[0] + "\n"
    text = doc.read_text()
    if text.count(header) != 1:
        raise ValueError(f"{doc}: the header {header.strip()!r} is there {text.count(header)} times, not once")
    a = text.index(header)
    lines = text[a:].split("\n")
    n = next(i for i, line in enumerate(lines) if not line.startswith("|"))
    doc.write_text(text[:a] + table + "\n" + "\n".join(lines[n:]))
    return doc
