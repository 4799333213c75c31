"""The generated parts of docs/models.md and docs/benchmarks.md, written from the committed results
(benchmarks/results/*.json). labkit measures and returns data; this folder holds the prose, the
markdown tables, the targets the issues set and the literature figures the docs compare against.

    python -m benchmarks.docgen              # from the repository root: every generated part again
    python benchmarks/make_blocks_section.py # one section (make_rl_section.py, make_models_section.py)

- `markdown`: tables and the writers that put a section or a table into a doc;
- `targets`: each issue's targets, and whether the results meet them (blocks, RL);
- `blocks`, `rl`, `tasks`: docs/models.md's sections;
- `benchmarks_md`: docs/benchmarks.md's generated tables (lm-eval, test times).

The tests that read the docs back (tests/test_*_results.py, tests/test_test_times.py) import from
here, so a section here and the committed doc cannot drift apart.
"""
