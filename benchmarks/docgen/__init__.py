"""The generated parts of docs/models.md and docs/benchmarks.md, written from the committed results
(benchmarks/results/*.json), and the embedded models' cards (labkit/weights/NAME/README.md), written
from each model's folder. labkit measures and returns data; this folder holds the prose, the
markdown tables, the targets the issues set and the literature figures the docs compare against.

    python -m benchmarks.docgen              # from the repository root: every generated part again
    python -m benchmarks.docgen cards [NAME] # the model cards only (make runs it after labkit eval --card)
    python benchmarks/make_blocks_section.py # one section (make_rl_section.py, make_models_section.py)

- `markdown`: tables and the writers that put a section or a table into a doc;
- `targets`: the task models', block and RL benchmarks' targets, whether the results meet them,
  and the literature figures beside them;
- `blocks`, `rl`, `tasks`: docs/models.md's sections, `models_md` their writers;
- `benchmarks_md`: docs/benchmarks.md's generated tables (soft steering, lm-eval, test times);
- `cards`, `task_cards`: the model cards, from training.json, config.json, the weights and eval.json
  (the figures `labkit eval --model NAME --card` stores).
- `weights`: what the docs read from a weights file (the parameter count) without loading the model.

The tests that read the docs back (tests/test_*_results.py, test_benchmarks_doc.py, test_test_times.py,
test_stated_figures.py, test_cards.py) import from here through tests/doc_common.py, so a section
here and the committed doc or card cannot drift apart; notebooks 06, 11 and 13 print their tables
from here too.
"""
