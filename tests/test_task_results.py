"""The task models' committed measurements, and every place that states them: docs/models.md's
tables and the model cards are read from benchmarks/results/tasks.json and task_seeds.json."""
import json
import re
from pathlib import Path

import pytest

from labkit.bench import tasks as bench
from labkit.tasks import TASKS

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


@pytest.fixture(scope="module")
def result():
    return json.loads((RESULTS / "tasks.json").read_text())


@pytest.fixture(scope="module")
def seeds():
    return json.loads((RESULTS / "task_seeds.json").read_text())


def test_every_rule_and_the_ar_twin_ran_on_every_task_with_enough_items(result):
    labels = [r["label"] for r in result["runs"]]
    assert labels == [label for label, _, _ in bench.RULES] + [bench.AR_LABEL]
    for run in result["runs"]:
        for task in TASKS:
            s = run["tasks"][task]
            assert s["n"] >= 500 or (task == "reversal" and run["label"] == bench.AR_LABEL), (run["label"], task)
            lo, hi = s["ci95"]
            assert lo <= s["accuracy"] <= hi


def test_docs_models_shows_the_committed_tables(result, seeds):
    docs = (ROOT / "docs" / "models.md").read_text()
    for table in (bench.markdown_accuracy(result), bench.markdown_shakespeare(result), bench.markdown_seeds(seeds)):
        assert table in docs, "docs/models.md: regenerate the tables from benchmarks/results (labkit.bench.tasks)"


def test_the_model_cards_state_the_committed_low_confidence_and_ar_rows(result):
    cards = {"tiny-task": "low-confidence", "tiny-task-ar": bench.AR_LABEL}
    for model, label in cards.items():
        card = (ROOT / "labkit" / "weights" / model / "README.md").read_text()
        for task in TASKS:
            s = bench.accuracy(result, label, task)
            row = re.search(rf"^\| {task} \| (\d+) \| ([\d.]+)% \|", card, re.M)
            assert row and int(row.group(1)) == s["n"] and row.group(2) == f"{100 * s['accuracy']:.1f}", (model, task)


def test_the_seed_runs_are_the_reduced_recipe(seeds):
    assert seeds["seeds"] == list(bench.SEEDS) and seeds["steps"] == bench.SEED_STEPS
    for label in (*bench.SEED_RULES, bench.AR_LABEL):
        for task in TASKS:
            assert bench.seed_spread(seeds, label, task)["runs"] == len(bench.SEEDS)


def test_the_prose_of_docs_models_matches_the_files_it_describes(result):
    """docs/models.md's figures about the task models, read back from the files they describe."""
    docs = (ROOT / "docs" / "models.md").read_text()
    section = docs[docs.index("## Where diffusion wins"):docs.index("## How `tiny-cap`")]
    minutes = []
    for model in ("tiny-task", "tiny-task-ar"):
        folder = ROOT / "labkit" / "weights" / model
        cfg = json.loads((folder / "config.json").read_text())
        minutes.append(f"{json.loads((folder / 'training.json').read_text())['train_seconds'] / 60:.1f}")
        assert (f"{cfg['num_hidden_layers']} layers, d_model {cfg['hidden_size']}, SwiGLU {cfg['intermediate_size']}"
                in section and f"{cfg['vocab_size']} character" in section), model
    assert f"took {minutes[0]} and {minutes[1]} min" in section
    from labkit.models.load import load
    params = sum(p.numel() for p in load("tiny-task").net.parameters())
    assert f"{params / 1e6:.2f}M" in section
    mirror = {r["label"]: r["tasks"]["mirror"] for r in result["runs"]}
    assert "one forward pass\n  per answer at thresholds down to 0.5" in section
    assert all(mirror[k]["nfe_mean"] <= 1.05 and mirror[k]["accuracy"] >= 0.99
               for k in ("threshold 0.9", "threshold 0.7", "threshold 0.5"))
    assert "S and Q modes** score 0 on mirror" in section
    assert mirror["S mode"]["accuracy"] == 0 and mirror["Q mode"]["accuracy"] == 0
    assert min(mirror[k]["accuracy"] for k in ("random order", "low-confidence", "margin", "entropy")) == 1.0


def test_the_seed_paragraph_says_what_task_seeds_json_shows(result, seeds):
    docs = (ROOT / "docs" / "models.md").read_text()
    steps = json.loads((ROOT / "labkit" / "weights" / "tiny-task-ar" / "training.json").read_text())["config"]["steps"]
    assert f"the committed {steps:,}-step run does not" in docs and f"budget of {seeds['steps']} steps" in docs
    ar_sums = [r["tasks"]["addition"]["accuracy"] for r in seeds["runs"] if r["label"] == bench.AR_LABEL]
    assert max(ar_sums) > bench.accuracy(result, bench.AR_LABEL, "addition")["accuracy"]
    masked = [r["tasks"][t]["accuracy"] for r in seeds["runs"] if r["label"] != bench.AR_LABEL for t in TASKS]
    assert max(masked) == 0.0          # "has not left its loss plateau on any task in any seed"


def test_the_targets_table_is_the_same_in_the_docs_and_both_cards(result):
    minutes = {m: json.loads((ROOT / "labkit" / "weights" / m / "training.json").read_text())["train_seconds"] / 60
               for m in ("tiny-task", "tiny-task-ar")}
    rows = bench.targets(result, minutes)
    table = bench.markdown_targets(rows)
    assert table in (ROOT / "docs" / "models.md").read_text()
    for model in minutes:
        assert table in (ROOT / "labkit" / "weights" / model / "README.md").read_text(), model
