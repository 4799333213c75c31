"""`labkit bench blocks`: its flags and runner (labkit.bench.blocks measures; this merges a run of
some parts into an existing blocks.json and recomputes the targets once every part is there)."""
from __future__ import annotations

import json
from pathlib import Path

from ..bench.block_tables import PARTS
from .common import progress_log, report


def parts(p) -> None:
    p.add_argument("--parts", default=",".join(PARTS),
                   help="comma-separated parts to (re)measure, merged into an existing blocks.json "
                        f"(default: {','.join(PARTS)})")


def runs(p) -> None:
    p.add_argument("--runs", default="runs", help="folder of the training runs (curve snapshots; default runs)")


def run(a) -> int:
    from ..bench.block_tables import targets
    from ..bench.blocks import bench_blocks, likelihood_table

    chosen = [x.strip() for x in a.parts.split(",") if x.strip()]
    result = bench_blocks(chosen, runs=a.runs, log=progress_log(a))
    old = Path(a.out) / "blocks.json"
    if old.is_file():
        result = {**json.loads(old.read_text()), **result}
    if all(k in result for k in PARTS):
        result["targets"] = targets(result)
    return report(a, "blocks.json", result,
                  lambda r: print(likelihood_table(r) if "likelihood" in r else json.dumps(r, indent=1)[:4000]))
