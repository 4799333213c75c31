"""docs/models.md's generated sections written from the committed results: the task pairs, the
self-error editor, RL and block diffusion (the RL and block results carry their targets, judged here before the section is
written)."""
from __future__ import annotations

import json
from pathlib import Path

from labkit.bench.blocks import PARTS

from . import blocks, editor, llada21, rl, rl_search, tasks
from .markdown import MODELS_DOC, RESULTS, write_heading_section, write_section
from .targets import judge_blocks, judge_rl


def judged(name: str, judge, results: Path = RESULTS) -> dict:
    """results/NAME read, its targets judged from its rows and kept in it (the file rewritten only
    where they changed: notebooks read them from there)."""
    path = results / name
    result = json.loads(path.read_text())
    targets = json.loads(json.dumps(judge(result)))
    if result.get("targets") != targets:
        result["targets"] = targets
        path.write_text(json.dumps(result, indent=1))
    return result


def write_tasks(results: Path = RESULTS, doc: Path = MODELS_DOC) -> Path:
    r, seeds = (json.loads((results / f).read_text()) for f in ("tasks.json", "task_seeds.json"))
    return write_heading_section(tasks.models_section(r, seeds), tasks.HEADING, doc)


def write_editor(results: Path = RESULTS, doc: Path = MODELS_DOC) -> Path:
    result = json.loads((results / "editor.json").read_text())
    return write_section(editor.models_section(result), editor.SECTION_START, editor.SECTION_END, doc, editor.BEFORE)


def write_rl_search(results: Path = RESULTS, doc: Path = MODELS_DOC) -> Path:
    sweep, policy = (json.loads((results / f).read_text()) for f in ("rl_sweep.json", "learned_policy.json"))
    return write_section(rl_search.models_section(sweep, policy), rl_search.SECTION_START, rl_search.SECTION_END, doc,
                         rl_search.BEFORE)


def write_rl(results: Path = RESULTS, doc: Path = MODELS_DOC) -> Path:
    return write_section(rl.models_section(judged("rl.json", judge_rl, results)), rl.SECTION_START, rl.SECTION_END, doc)


def write_blocks(results: Path = RESULTS, doc: Path = MODELS_DOC) -> Path:
    result = json.loads((results / "blocks.json").read_text())
    missing = [p for p in PARTS if p not in result]
    if missing:
        raise ValueError(f"blocks.json lacks the parts {missing}: labkit bench blocks --parts {','.join(missing)}")
    result = judged("blocks.json", judge_blocks, results)
    return write_section(blocks.models_section(result), blocks.SECTION_START, blocks.SECTION_END, doc)


def write_llada21(results: Path = RESULTS, doc: Path = MODELS_DOC) -> Path:
    result = json.loads((results / "llada21.json").read_text())
    return write_section(llada21.models_section(result), llada21.SECTION_START, llada21.SECTION_END, doc, llada21.BEFORE)
