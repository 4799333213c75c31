"""Where `make test`'s time goes: read the log of a pytest run made with `--durations=0` (as `make
test-times` runs it) and sum the seconds per notebook and per unit-test file (setup, call and teardown
of every test; a notebook's kernel start is in its first cell's setup).

    make test-times          # make test with --durations=0 → .venv/test-times.log, then this script
    python benchmarks/test_times.py LOG --out benchmarks/results/test_times.json

It prints docs/benchmarks.md's test-time tables (docgen.benchmarks_md; `python -m benchmarks.docgen`
writes them into the doc from test_times.json). With two workers (`make test`'s -n 2) the wall time
is about half the summed seconds: each worker runs whole files, one after another.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

from docgen.benchmarks_md import before_after, times_tables

DURATION = re.compile(r"^\s*([\d.]+)s (setup|call|teardown)\s+(\S+?)(?:::.*)?$")
SUMMARY = re.compile(r"=* ?(.*?) in ([\d.]+)s")


def parse(text: str) -> dict:
    """Seconds per file and the run's summary from a pytest log with --durations=0."""
    seconds = defaultdict(float)
    summary = None
    for line in text.splitlines():
        m = DURATION.match(line)
        if m:
            seconds[m[3]] += float(m[1])
            continue
        m = SUMMARY.search(line)
        if m and ("passed" in m[1] or "failed" in m[1]):
            counts = {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|skipped|deselected|error)", m[1])}
            summary = {"counts": counts, "wall_seconds": float(m[2])}
    if summary is None:
        raise ValueError("no pytest summary line ('N passed in S s') in the log: was it a whole run?")
    if not seconds:
        raise ValueError("no durations in the log: run pytest with --durations=0")
    files = {f: round(s, 1) for f, s in sorted(seconds.items(), key=lambda kv: -kv[1])}
    notebooks = {f: s for f, s in files.items() if f.endswith(".ipynb")}
    units = {f: s for f, s in files.items() if not f.endswith(".ipynb")}
    return {**summary, "summed_seconds": round(sum(files.values()), 1),
            "notebooks": notebooks, "unit_files": units,
            "unit_summed_seconds": round(sum(units.values()), 1),
            "notebook_summed_seconds": round(sum(notebooks.values()), 1)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("log", type=Path, help="a pytest log made with --durations=0")
    p.add_argument("--out", type=Path, help="write the sums as JSON here")
    a = p.parse_args(argv)
    if not a.log.is_file():
        p.error(f"log: no such file {a.log}")
    r = parse(a.log.read_text(errors="replace"))
    if a.out:
        a.out.write_text(json.dumps(r, indent=1) + "\n")
    print(times_tables(r))
    print()
    print(before_after(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
