"""Where `make test`'s time goes: read the log of a pytest run made with `--durations=0` (as `make
test-times` runs it) and sum the seconds per notebook and per unit-test file (setup, call and teardown
of every test; a notebook's kernel start is in its first cell's setup).

    make test-times          # make test with --durations=0 → .venv/test-times.log, then this script
    python benchmarks/test_times.py LOG --out benchmarks/results/test_times.json

With two workers (`make test`'s -n 2) the wall time is about half the summed seconds: each worker runs
whole files, one after another.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

# Before issue 33 (round 3's last commit, 1b2b358): each notebook's stored cell seconds (the sum of
# its cells' execution times, as `make notebooks` ran them), and the issue's own run of make test on
# a fresh clone (999 passed in 1310 s after a 2.5-minute install) and of CI (2644 s).
BEFORE_NOTEBOOKS = {"01_quickstart.ipynb": 13.5, "02_step_through.ipynb": 18.5, "03_parallel_decoding.ipynb": 330.0,
                    "04_draft_and_edit.ipynb": 243.5, "05_lab_panel.ipynb": 26.3, "06_controls.ipynb": 148.1,
                    "07_profiling.ipynb": 125.1, "08_real_models.ipynb": 9.7, "09_serving.ipynb": 97.2,
                    "10_train_from_scratch.ipynb": 268.5, "11_where_diffusion_wins.ipynb": 38.6}
BEFORE_TEST = {"passed": 999, "wall_seconds": 1310, "ci_seconds": 2644}
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


def markdown(r: dict, top: int = 10) -> str:
    rows = ["| notebook (nbval, all cells) | seconds |", "|---|---|"]
    rows += [f"| {Path(f).name} | {s:.1f} |" for f, s in sorted(r["notebooks"].items())]
    rows += ["", f"| slowest unit-test files (of {len(r['unit_files'])}) | seconds |", "|---|---|"]
    rows += [f"| {Path(f).name} | {s:.1f} |" for f, s in list(r["unit_files"].items())[:top]]
    c = r["counts"]
    rows += ["", f"{c.get('passed', 0)} passed, {c.get('failed', 0)} failed in {r['wall_seconds']:.0f} s of wall "
                 f"time; summed over workers: unit tests {r['unit_summed_seconds']:.0f} s, notebooks "
                 f"{r['notebook_summed_seconds']:.0f} s"]
    return "\n".join(rows)


def before_after(r: dict) -> str:
    """The table docs/benchmarks.md shows: each notebook before (stored cell seconds) and now (its
    seconds under nbval, kernel start included), then the whole of make test."""
    now = {Path(f).name: sec for f, sec in r["notebooks"].items()}
    rows = ["| notebook | before (s) | now under nbval (s) |", "|---|---|---|"]
    rows += [f"| {name} | {BEFORE_NOTEBOOKS.get(name, float('nan')):.1f} | {now[name]:.1f} |" for name in sorted(now)]
    rows += [f"| unit tests (summed over workers) | – | {r['unit_summed_seconds']:.0f} |",
             f"| make test: tests passed | {BEFORE_TEST['passed']} | {r['counts'].get('passed', 0)} |",
             f"| make test: tests failed | 0 | {r['counts'].get('failed', 0)} |",
             f"| make test: pytest wall seconds (2 workers now, 1 before) | {BEFORE_TEST['wall_seconds']} | "
             f"{r['wall_seconds']:.0f} |"]
    return "\n".join(rows)


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
    print(markdown(r))
    print()
    print(before_after(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
