"""`labkit bench blocks`: its flags and runner (labkit.bench.blocks measures; this merges a run of
some parts into an existing blocks.json). The targets are judged from the rows by the docs step that
follows (benchmarks/make_blocks_section.py), so a merge drops the ones judged from the old rows."""
from __future__ import annotations

import json
from pathlib import Path

from ..bench.blocks import PARTS, bench_blocks, likelihood_table
from .common import progress_log, report


def parts(p) -> None:
    p.add_argument("--parts", default=",".join(PARTS),
                   help="comma-separated parts to (re)measure, merged into an existing blocks.json "
                        f"(default: {','.join(PARTS)})")


def runs(p) -> None:
    p.add_argument("--runs", default="runs", help="folder of the training runs (curve snapshots; default runs)")


def run(a) -> int:
    chosen = [x.strip() for x in a.parts.split(",") if x.strip()]
    result = bench_blocks(chosen, runs=a.runs, log=progress_log(a))
    old = Path(a.out) / "blocks.json"
    if old.is_file():
        result = {k: v for k, v in json.loads(old.read_text()).items() if k != "targets"} | result
    return report(a, "blocks.json", result,
                  lambda r: print(likelihood_table(r) if "likelihood" in r else json.dumps(r, indent=1)[:4000]))
