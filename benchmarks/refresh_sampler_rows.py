"""Adds gen-PPL's bootstrap interval over prompts (and its per-prompt parts) to rows of the committed
benchmarks/results/samplers.json, by decoding those rows again with the bench's own code
(labkit.bench.samplers.bench_samplers, batch-1 speed runs skipped). A row is updated only where the
new run reproduces its committed NFE, TPF, gen-PPL and distinct-2, so each interval belongs to the
committed figure; the committed speeds (TPS) are kept. A row that does not reproduce is reported and
left as it was (rerun the whole bench then: `make bench-samplers`).

    OMP_NUM_THREADS=1 python benchmarks/refresh_sampler_rows.py tiny:threshold_0.9 tiny-cap:draft_edit_speed
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import labkit as lk
from labkit.bench.samplers import bench_samplers

PATH = Path(__file__).resolve().parent / "results" / "samplers.json"
SAME = ("nfe", "tpf", "gen_ppl", "distinct_2")


def main(argv: list[str]) -> int:
    data = json.loads(PATH.read_text())
    rows = {"tiny": data, "tiny-cap": data["cap"]}
    wanted: dict[str, list[str]] = {}
    for arg in argv:
        model, _, name = arg.partition(":")
        if model not in rows or name not in rows[model]:
            raise SystemExit(f"{arg!r}: give MODEL:ROW with MODEL tiny or tiny-cap and a row of samplers.json")
        wanted.setdefault(model, []).append(name)
    ar = lk.load("tiny-ar")
    failed = 0
    for model, names in wanted.items():
        lm = lk.load(model)
        for name in names:                      # one row at a time, written as soon as it is done
            old = rows[model][name]
            got = bench_samplers(lm, ar, n_prompts=old["prompts"], names=[name], with_ar=False, tps_prompts=0,
                                 log=lambda m: print(m, flush=True))[name]
            if all(old[k] == got[k] for k in SAME):
                old["gen_ppl_ci95"], old["per_prompt"] = got["gen_ppl_ci95"], got["per_prompt"]
                PATH.write_text(json.dumps(data, indent=1))
                print(f"{model}:{name} reproduced; gen-PPL {old['gen_ppl']} {old['gen_ppl_ci95']}", flush=True)
            else:
                failed += 1
                print(f"{model}:{name} NOT reproduced: committed {[old[k] for k in SAME]}, "
                      f"now {[got[k] for k in SAME]}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
