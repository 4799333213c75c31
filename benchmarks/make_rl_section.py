"""Writes docs/models.md's section on reinforcement learning from benchmarks/results/rl.json
(tests/test_rl_results.py checks that the committed section is the one this writes).

    python benchmarks/make_rl_section.py     # after labkit bench rl --out benchmarks/results
"""
from __future__ import annotations

import json
from pathlib import Path

from doc_sections import write_section

from labkit.bench.rl import SECTION_END, SECTION_START, models_section

if __name__ == "__main__":
    section = models_section(json.loads(Path("benchmarks/results/rl.json").read_text()))
    print(f"written: {write_section(section, SECTION_START, SECTION_END)}")
