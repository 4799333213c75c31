"""Brings the notebooks' text sources into the notebooks, and each Chinese twin in step with the
English notebook (CONTRIBUTING.md; `make notebook` and `make notebook-sync` run it).

Every notebook has one editable source, paired by jupytext.toml: notebook_sources/NAME.py (jupytext's
percent format: markdown, code, cell tags) for notebooks/NAME.ipynb, which adds the stored outputs that
nbval compares, and notebook_sources/zh-CN/NAME.py for notebooks/zh-CN/NAME.ipynb. A Chinese twin is
the English notebook with its markdown in Chinese: its code cells, their outputs and the notebook's
metadata come from the English .ipynb, its markdown from its own source, and one first cell (tagged
"zh-setup") moves the kernel to notebooks/, where the English code's relative paths hold.

    python benchmarks/sync_notebooks.py 12               # sources -> notebook 12 and its twin, no kernel
    python benchmarks/sync_notebooks.py                  # the same for every notebook
    python benchmarks/sync_notebooks.py --before-run 12  # notebooks/12_rewards.run.ipynb: code edits in, to execute
    python benchmarks/sync_notebooks.py --list 12        # the names selected: 12_rewards

Without --before-run a changed code cell is refused (its stored outputs would be stale): execute it
with `make notebook NB=12`, which runs this before and after nbconvert. --before-run writes the
notebook to execute beside it, as NAME.run.ipynb; make moves it over NAME.ipynb only when every cell
ran, so a failed run leaves the notebook as it was (and its code edit still refused). Markdown edits keep every
output (jupytext matches the unchanged cells to their stored ones). A twin's source whose cells no
longer line up with the English one is refused; a notebook without a twin gets one, its markdown
still English, to translate. A notebook edited after its source (in JupyterLab) is refused too:
`jupytext --sync notebooks/NAME.ipynb` carries such edits into the source first.
"""
from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import jupytext
import nbformat
from jupytext.combine import combine_inputs_with_outputs

ROOT = Path(__file__).resolve().parents[1]
FMT = "py:percent"
TAG = "zh-setup"
SETUP = ("# 中文版：代码与英文版逐格相同，输出也相同。这一格把内核移到上一级目录 notebooks/，\n"
         "# 英文版代码里的相对路径（../benchmarks/results）从那里才成立。\n"
         "import os\n"
         "if os.path.basename(os.getcwd()) == \"zh-CN\":\n"
         "    os.chdir(\"..\")")


class SyncError(Exception):
    """A source that cannot be brought in without losing something: the message says what to do."""


def paths(name: str, root: Path = ROOT) -> dict[str, Path]:
    """The files of notebook NAME (its stem, e.g. 12_rewards): its source, its notebook, its twin's source and
    notebook, as jupytext.toml pairs them, and the copy make executes."""
    return {"src": root / "notebook_sources" / f"{name}.py", "nb": root / "notebooks" / f"{name}.ipynb",
            "run": root / "notebooks" / f"{name}.run.ipynb",                  # what make executes
            "zh_src": root / "notebook_sources" / "zh-CN" / f"{name}.py",
            "zh_nb": root / "notebooks" / "zh-CN" / f"{name}.ipynb"}


def names(selected: list[str], root: Path = ROOT) -> list[str]:
    """The notebooks NB names: "12", "12_rewards" or every English source when none is named."""
    stems = sorted(p.stem for p in (root / "notebook_sources").glob("*.py"))
    if not selected:
        return stems
    out = []
    for sel in selected:
        hits = [s for s in stems if s == sel or s.split("_")[0] == sel.zfill(2)]
        if len(hits) != 1:
            raise SyncError(f"NB={sel}: {len(hits)} sources match in notebook_sources/ ({', '.join(hits) or 'none'})")
        out += hits
    return out


def setup_cell():
    cell = nbformat.v4.new_code_cell(SETUP)
    cell.metadata["tags"] = [TAG]
    return cell


def body(nb) -> list:
    """The cells of a Chinese twin that pair with the English notebook's, the setup cell left out."""
    return [c for c in nb.cells if TAG not in c.metadata.get("tags", [])]


def code(nb) -> list[str]:
    return [c.source for c in nb.cells if c.cell_type == "code"]


def read_source(path: Path):
    return jupytext.read(path, fmt=FMT)


def source_text(nb, root: Path = ROOT) -> str:
    """A notebook as its source's text, with jupytext.toml's settings (its header holds the kernel only)."""
    config = jupytext.config.load_jupytext_config(str(root / "notebooks"))
    nb = copy.deepcopy(nb)
    nb.metadata["jupytext"] = {"notebook_metadata_filter": config.notebook_metadata_filter}
    return jupytext.writes(nb, FMT, config=config)


def with_inputs(src: Path, ipynb: Path):
    """(the notebook at IPYNB with the cells of its source SRC, the stored notebook or None): markdown
    and code from the source, each unchanged cell's outputs, id and metadata from the .ipynb
    (jupytext's own matching)."""
    nb = read_source(src)
    stored = nbformat.read(ipynb, as_version=4) if ipynb.exists() else None
    if stored is not None:
        if ipynb.stat().st_mtime > src.stat().st_mtime and _inputs(stored) != _inputs(nb):
            raise SyncError(f"{ipynb} was edited after {src.name}: carry its edits into the source with "
                            f"`jupytext --sync {ipynb}` (or touch the source to drop them)")
        nb = combine_inputs_with_outputs(nb, stored, fmt=FMT)
    nb.metadata.pop("jupytext", None)         # the pairing lives in jupytext.toml, not in each notebook
    return nb, stored


def _inputs(nb) -> list:
    return [(c.cell_type, c.source, c.metadata.get("tags", [])) for c in nb.cells]


def twin(en, zh):
    """The Chinese twin ZH (markdown and setup cell from its source) with EN's code cells, outputs and
    metadata; refused when its cells do not line up with EN's."""
    cells = body(zh)
    if [c.cell_type for c in cells] != [c.cell_type for c in en.cells]:
        raise SyncError("its cells no longer line up with the English notebook's: add or remove the same cells "
                        "in the twin's source (notebook_sources/zh-CN/) first")
    for mine, theirs in zip(cells, en.cells):
        if theirs.cell_type == "code":
            mine.source, mine.outputs = theirs.source, copy.deepcopy(theirs.outputs)
            mine.execution_count, mine.metadata = theirs.execution_count, copy.deepcopy(theirs.metadata)
    zh.metadata = copy.deepcopy(en.metadata)
    return zh


def new_twin_source(en_src: Path, zh_src: Path, root: Path = ROOT) -> None:
    """A twin's source for a new notebook: the English source after the setup cell (translate its markdown)."""
    nb = read_source(en_src)
    nb.cells = [setup_cell()] + nb.cells
    zh_src.parent.mkdir(parents=True, exist_ok=True)
    zh_src.write_text(source_text(nb, root), encoding="utf-8")


def sync(name: str, root: Path = ROOT, before_run: bool = False) -> list[str]:
    """Brings notebook NAME's sources into its .ipynb and its twin's (see the module's docstring);
    returns what it did, one line per file written. Nothing is written when it refuses."""
    p = paths(name, root)
    en, old = with_inputs(p["src"], p["nb"])
    if not before_run and (old is None or code(old) != code(en)):
        raise SyncError(f"{name}: its code changed since it last ran: `make notebook NB={name[:2]}` executes it")
    done = []
    if not p["zh_src"].exists():
        new_twin_source(p["src"], p["zh_src"], root)
        done.append(f"{p['zh_src'].relative_to(root)}: new, its markdown still English: translate it")
    zh, _ = with_inputs(p["zh_src"], p["zh_nb"])
    try:
        zh = twin(en, zh)
    except SyncError as e:
        raise SyncError(f"{p['zh_src'].relative_to(root)}: {e}") from None
    for key, nb in (("run", en),) if before_run else (("nb", en), ("zh_nb", zh)):
        text = nbformat.writes(nb) + "\n"
        if not p[key].exists() or p[key].read_text(encoding="utf-8") != text:
            p[key].write_text(text, encoding="utf-8")
            done.append(f"{p[key].relative_to(root)}: updated")
    if not before_run and p["zh_src"].read_text(encoding="utf-8") != (zh_text := source_text(zh, root)):
        p["zh_src"].write_text(zh_text, encoding="utf-8")    # its code cells as the English notebook has them
        done.append(f"{p['zh_src'].relative_to(root)}: code cells copied from the English notebook")
    return done


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("nb", nargs="*", help="notebook numbers or names (all when none)")
    p.add_argument("--before-run", action="store_true",
                   help="write NAME.run.ipynb with the code edits, to execute (the notebook and its twin wait)")
    p.add_argument("--list", action="store_true", help="only print the names NB selects (what make executes)")
    a = p.parse_args(argv)
    try:
        if a.list:
            print("\n".join(names(a.nb)))
            return 0
        for name in names(a.nb):
            for line in sync(name, before_run=a.before_run) or [f"{name}: unchanged"]:
                print(line)
    except SyncError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
