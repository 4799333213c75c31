"""docs/benchmarks.md's generated tables, from benchmarks/results/: soft steering (steering.json; notebook
06 prints it too), the samplers through lm-evaluation-harness (lm_eval.json) and where make test's time
goes (test_times.json, which benchmarks/test_times.py sums from a pytest log), with the figures from
before issue 33 beside it."""
from __future__ import annotations

import json
import re
from pathlib import Path

from .markdown import BENCHMARKS_DOC, RESULTS, markdown_table, replace_table

# Before issue 33 (round 3's last commit, 1b2b358): each notebook's stored cell seconds (the sum of
# its cells' execution times, as `make notebooks` ran them), and the issue's own run of make test on
# a fresh clone (999 passed in 1310 s after a 2.5-minute install) and of CI (2644 s).
BEFORE_NOTEBOOKS = {"01_quickstart.ipynb": 13.5, "02_step_through.ipynb": 18.5, "03_parallel_decoding.ipynb": 330.0,
                    "04_draft_and_edit.ipynb": 243.5, "05_lab_panel.ipynb": 26.3, "06_controls.ipynb": 148.1,
                    "07_profiling.ipynb": 125.1, "08_real_models.ipynb": 9.7, "09_serving.ipynb": 97.2,
                    "10_train_from_scratch.ipynb": 268.5, "11_where_diffusion_wins.ipynb": 38.6}
BEFORE_TEST = {"passed": 999, "wall_seconds": 1310, "ci_seconds": 2644}
RUN_SUMMARY = re.compile(r"^\d+ passed, \d+ failed in ", re.M)


def lm_eval_table(result: dict) -> str:
    """Every rule's score, TPF and seconds on the shipped lm-eval task."""
    return markdown_table(["model", "rule", "word F1", "exact match", "TPF", "seconds"],
                          [(r["model"], r["label"], f"{r['word_f1']:.3f}", f"{r['exact_match']:.3f}", f"{r['tpf']:.2f}",
                            f"{r['seconds']:.1f}") for r in result["rows"]])


def steering_row(name: str, r: dict) -> str:
    """One setting of steering.json as a row: hits, topic words per sample, gen-PPL [95% CI], distinct-2."""
    ci = "" if "gen_ppl_ci95" not in r else " [{:.1f}, {:.1f}]".format(*r["gen_ppl_ci95"])
    return (f"| {name} | {r['hits']}/{r['samples']} | {r['topic_words_per_sample']:.2f} | {r['gen_ppl']:.1f}{ci} | "
            f"{r['distinct_2']:.2f} |")


def steering_table(r: dict) -> str:
    """Soft steering, every setting (`labkit bench steering`; notebook 06 prints it too)."""
    return "\n".join(["| setting | samples with a topic word | topic words per sample | gen-PPL [95% CI] | distinct-2 |",
                      "|---|---|---|---|---|", *(steering_row(name, v) for name, v in r["rows"].items())])


def times_tables(r: dict, top: int = 10) -> str:
    """Seconds per notebook under nbval, the slowest unit-test files, and the run's summary line."""
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
    """Each notebook before (stored cell seconds) and now (its seconds under nbval, kernel start
    included), then the whole of make test."""
    now = {Path(f).name: sec for f, sec in r["notebooks"].items()}
    rows = ["| notebook | before (s) | now under nbval (s) |", "|---|---|---|"]
    rows += [f"| {name} | {BEFORE_NOTEBOOKS.get(name, float('nan')):.1f} | {now[name]:.1f} |" for name in sorted(now)]
    rows += [f"| unit tests (summed over workers) | – | {r['unit_summed_seconds']:.0f} |",
             f"| make test: tests passed | {BEFORE_TEST['passed']} | {r['counts'].get('passed', 0)} |",
             f"| make test: tests failed | 0 | {r['counts'].get('failed', 0)} |",
             f"| make test: pytest wall seconds (2 workers now, 1 before) | {BEFORE_TEST['wall_seconds']} | "
             f"{r['wall_seconds']:.0f} |"]
    return "\n".join(rows)


def write_test_times(r: dict, doc: Path = BENCHMARKS_DOC) -> Path:
    """The latest run's tables: from the before/after table's header to the first run summary line
    after it (the older runs below it stay as they are)."""
    text = doc.read_text()
    a = text.index(before_after(r).split("\n", 1)[0] + "\n")
    end = RUN_SUMMARY.search(text, a)
    b = text.index("\n", end.start())
    doc.write_text(text[:a] + before_after(r) + "\n\n" + times_tables(r) + text[b:])
    return doc


def write(results: Path = RESULTS, doc: Path = BENCHMARKS_DOC) -> Path:
    """Every generated table of docs/benchmarks.md from the committed results."""
    replace_table(lm_eval_table(json.loads((results / "lm_eval.json").read_text())), doc)
    replace_table(steering_table(json.loads((results / "steering.json").read_text())), doc)
    return write_test_times(json.loads((results / "test_times.json").read_text()), doc)
