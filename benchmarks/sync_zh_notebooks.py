"""Keeps notebooks/zh-CN/ in step with the English notebooks: each Chinese twin is the English
notebook with its markdown in Chinese, its code cells and their stored outputs copied from the
English one, and one first cell (tagged "zh-setup") that moves the kernel to notebooks/, where the
English code's relative paths hold.

    python benchmarks/sync_zh_notebooks.py          # after `make notebooks`: copy code and outputs over
    python benchmarks/sync_zh_notebooks.py --new    # a twin for every English notebook that lacks one
                                                    # (its markdown still English: translate it)

The markdown of an existing twin is never touched; a twin whose cells no longer line up with the
English notebook (a cell added or removed there) is reported, not guessed at.
"""
from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
EN, ZH = ROOT / "notebooks", ROOT / "notebooks" / "zh-CN"
TAG = "zh-setup"
SETUP = ("# 中文版：代码与英文版逐格相同，输出也相同。这一格把内核移到上一级目录 notebooks/，\n"
         "# 英文版代码里的相对路径（../benchmarks/results）从那里才成立。\n"
         "import os\n"
         "if os.path.basename(os.getcwd()) == \"zh-CN\":\n"
         "    os.chdir(\"..\")")


def setup_cell():
    cell = nbformat.v4.new_code_cell(SETUP)
    cell.metadata["tags"] = [TAG]
    return cell


def body(nb) -> list:
    """The cells of a Chinese twin that pair with the English notebook's, the setup cell left out."""
    return [c for c in nb.cells if TAG not in c.metadata.get("tags", [])]


def sync(en_path: Path, zh_path: Path) -> str:
    en = nbformat.read(en_path, as_version=4)
    if not zh_path.exists():
        zh = copy.deepcopy(en)
        zh.cells = [setup_cell()] + zh.cells
        nbformat.write(zh, zh_path)
        return "new (markdown to translate)"
    zh = nbformat.read(zh_path, as_version=4)
    cells = body(zh)
    if [c.cell_type for c in cells] != [c.cell_type for c in en.cells]:
        return "cells no longer line up: add or remove the same cells in the twin first"
    for mine, theirs in zip(cells, en.cells):
        if theirs.cell_type == "code":
            mine.source, mine.outputs = theirs.source, copy.deepcopy(theirs.outputs)
            mine.execution_count, mine.metadata = theirs.execution_count, copy.deepcopy(theirs.metadata)
    zh.metadata = copy.deepcopy(en.metadata)
    nbformat.write(zh, zh_path)
    return "synced"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--new", action="store_true", help="create the missing twins (English markdown)")
    a = p.parse_args(argv)
    ZH.mkdir(exist_ok=True)
    bad = 0
    for en_path in sorted(EN.glob("*.ipynb")):
        zh_path = ZH / en_path.name
        if not zh_path.exists() and not a.new:
            print(f"{en_path.name}: no twin (run with --new)")
            bad += 1
            continue
        status = sync(en_path, zh_path)
        bad += status.startswith("cells")
        print(f"{en_path.name}: {status}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
