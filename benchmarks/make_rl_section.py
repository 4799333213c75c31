"""Writes docs/models.md's section on reinforcement learning from benchmarks/results/rl.json
(tests/test_rl_results.py checks that the committed section is the one this writes).

    python benchmarks/make_rl_section.py     # after labkit bench rl --out benchmarks/results
"""
from __future__ import annotations

import json
from pathlib import Path

from labkit.bench.rl import SECTION_END, SECTION_START, models_section

DOC = Path("docs/models.md")
BEFORE = "## How `tiny-cap`'s recipe was chosen"


def main() -> None:
    section = models_section(json.loads(Path("benchmarks/results/rl.json").read_text()))
    doc = DOC.read_text()
    if SECTION_START in doc:
        head, rest = doc.split(SECTION_START, 1)
        doc = head + section + rest.split(SECTION_END, 1)[1]
    else:
        doc = doc.replace(BEFORE, section + "\n\n" + BEFORE, 1)
    DOC.write_text(doc)
    print(f"written: {DOC}")


if __name__ == "__main__":
    main()
