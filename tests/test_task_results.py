"""The task models' committed measurements, and every place that states them: docs/models.md's
tables, the model cards and notebook 11 read from benchmarks/results/tasks.json and task_seeds.json."""
import json
import re

import pytest
from doc_common import MODELS_DOC, ROOT
from docgen import tasks as section
from docgen.targets import MAX_MB, task_targets

from labkit.bench import task_tables as tables
from labkit.bench import tasks as bench
from labkit.models.load import model_folder
from labkit.tasks import HELDOUT_ITEMS

RESULTS = ROOT / "benchmarks" / "results"
MODELS = [m for masked, ar, _ in bench.PAIRS.values() for m in (masked, ar)]


@pytest.fixture(scope="module")
def result():
    return json.loads((RESULTS / "tasks.json").read_text())


@pytest.fixture(scope="module")
def seeds():
    return json.loads((RESULTS / "task_seeds.json").read_text())


def test_every_rule_and_each_twin_ran_on_every_held_out_item(result):
    assert list(result["pairs"]) == list(bench.PAIRS)
    for pair, (masked, ar, tasks) in bench.PAIRS.items():
        p = result["pairs"][pair]
        assert (p["masked"], p["ar"], p["tasks"]) == (masked, ar, list(tasks))
        solver = [bench.SOLVER_LABEL] if pair == "sudoku" else []       # Sudoku's third model, an AR twin too
        assert [r["label"] for r in p["runs"]] == [label for label, _, _ in bench.rules_for(pair)] + solver + [bench.AR_LABEL]
        for run in p["runs"]:
            for task in tasks:
                s = run["tasks"][task]
                lo, hi = s["ci95"]
                assert lo <= s["accuracy"] <= hi and s["correct"] == round(s["accuracy"] * s["n"])
                full = HELDOUT_ITEMS if task != "reversal" else 3 * 300
                assert s["n"] == full - (300 if task == "reversal" and run["label"] == bench.AR_LABEL else 0), \
                    (pair, run["label"], task)


def test_docs_models_holds_the_section_the_script_writes(result, seeds):
    doc = MODELS_DOC.read_text()
    written = section.models_section(result, seeds)
    assert doc[doc.index(section.HEADING):].startswith(written + "<!-- editor section"), \
        "docs/models.md: python benchmarks/make_models_section.py"


def test_each_pair_shares_the_recipe_the_section_states():
    """The section's table gives one steps × rows per pair and its prose one optimiser for all six
    ("AdamW 1e-3 with a 300-step warm-up"): what each model's training.json records."""
    assert "AdamW 1e-3 with a 300-step warm-up" in MODELS_DOC.read_text()
    for masked, ar, _ in bench.PAIRS.values():
        cfg, twin = (json.loads((model_folder(m) / "training.json").read_text())["config"] for m in (masked, ar))
        keys = ("steps", "batch_size", "lr", "warmup", "weight_decay", "seed")
        assert {k: cfg[k] for k in keys} == {k: twin[k] for k in keys}, (masked, ar)
        assert (cfg["lr"], cfg["warmup"]) == (1e-3, 300), masked


@pytest.mark.parametrize("model", MODELS)
def test_each_card_states_its_models_committed_row_and_size(result, model):
    card = (ROOT / "labkit" / "weights" / model / "README.md").read_text()
    pair = next(p for p, (m, ar, _) in bench.PAIRS.items() if model in (m, ar))
    label = bench.AR_LABEL if model.endswith("-ar") else "low-confidence"
    for task in bench.PAIRS[pair][2]:
        s = tables.accuracy(result, pair, label, task)
        row = re.search(rf"^\| {task} \| (\d+) \| ([\d.]+)% \|", card, re.M)
        assert row and int(row.group(1)) == s["n"] and row.group(2) == f"{100 * s['accuracy']:.1f}", (model, task)
    assert f"({tables.sizes_mb()[model]:.2f} MB)" in card and tables.sizes_mb()[model] <= MAX_MB


def test_the_seed_runs_are_the_full_recipe_of_the_sudoku_pair(seeds):
    assert seeds["seeds"] == list(bench.SEEDS) and seeds["models"] == list(bench.PAIRS["sudoku"][:2])
    for label in bench.SEED_RULES:
        assert tables.seed_spread(seeds, label)["runs"] == len(bench.SEEDS)
    text = tables.seeds_table(seeds).splitlines()             # what labkit bench task-seeds prints
    assert len(text) == 1 + len(bench.SEED_RULES) and all(f"seed {k}" in text[0] for k in bench.SEEDS)
    assert [row[0] for row in tables.seed_rows(seeds)] == list(bench.SEED_RULES)
    assert len(seeds["train_minutes"]) == 2 * len(bench.SEEDS)


def test_the_order_effect_holds_in_every_seed_as_docs_models_says(seeds):
    docs = " ".join((ROOT / "docs" / "models.md").read_text().split())
    assert ("In each of the three seeds, both confident orders (low-confidence, margin) solve more puzzles "
            "than random order, left to right and the AR twin, on all puzzles and on the hard ones") in docs
    def acc(label, seed, group):
        r = next(r for r in seeds["runs"] if r["seed"] == seed and r["label"] == label)["tasks"]["sudoku"]
        return (r if group is None else r["groups"][group])["accuracy"]
    for seed in seeds["seeds"]:
        for group in (None, "hard"):
            confident = min(acc(c, seed, group) for c in ("low-confidence", "margin"))
            assert confident > max(acc(x, seed, group) for x in ("random order", "left to right", bench.AR_LABEL)), \
                (seed, group)


def test_the_targets_computed_from_a_hand_built_result():
    """The target logic on numbers chosen by hand: each row says met or by how much it missed."""
    def s(acc, tpf=1.0, edits=None, groups=None):
        d = {"accuracy": acc, "tpf": tpf, "ci95": [acc, acc], "n": 100, "nfe_mean": 1.0}
        if edits:
            d["edits"] = edits
        if groups:
            d["groups"] = {g: {"accuracy": a, "tpf": tpf, "ci95": [a, a], "n": 10, "nfe_mean": 1.0}
                           for g, a in groups.items()}
        return d

    def pair(task, per_label, groups=None):
        return {"runs": [{"label": lab, "tasks": {task: s(*v, groups=(groups or {}).get(lab))}}
                         for lab, v in per_label.items()]}
    labels = [label for label, _, _ in bench.RULES] + [bench.AR_LABEL]
    sud = {lab: (0.5,) for lab in labels}
    sud.update({"margin": (0.97,), "threshold 0.9": (0.96, 3.5), "S mode": (0.90, 6.0, {"fixed": 5, "broke": 9})})
    sud_groups = {lab: {"hard": 0.3} for lab in labels}
    sud_groups["margin"] = {"hard": 0.91}
    sud_groups[bench.AR_LABEL] = {"hard": 0.05}
    result = {"pairs": {
        "sudoku": pair("sudoku", sud, sud_groups),
        "add": pair("addition", {lab: (0.9 if lab == "right to left" else 0.2,) for lab in labels}),
        "facts": {"runs": [{"label": lab, "tasks": {
            "reversal": s(0.5, groups={"forward": 0.96, "backward_infill": 0.90, "backward_reversed": 0.0}),
            "mirror": s(1.0, 10.0 if lab.startswith("threshold") else 1.0)}} for lab in labels]},
    }}
    rows = task_targets(result, None, {"tiny-sudoku": 0.8, "tiny-x": 5.5})

    def row(prefix):
        (r,) = [r for r in rows if r["target"].startswith(prefix)]
        return r["met"], r["note"]
    assert row("Sudoku: margin or low-confidence") == (True, "")
    assert row("Sudoku: ≥ 90% on the hardest") == (True, "")
    assert row("Sudoku: random order ≤ 60%") == (True, "")
    assert row("Sudoku: ahead of the AR twin") == (True, "")
    assert row("Addition: masked model") == (False, "5.0 points short")
    assert row("Parallel, Sudoku")[0] is True                      # 96% at 3.5 TPF, best order 97%
    assert row("Editing: S mode")[0] is False                      # 90%, and more cells broken than fixed
    assert row("Facts: backward infill") == (True, "")
    assert row("Facts: forward ≥ 95% (masked") == (True, "")
    assert row("Parallel, mirror")[0] is True
    assert row("tiny-x: ≤ 5 MB") == (False, "0.50 MB over") and row("tiny-sudoku: ≤ 5 MB") == (True, "")


def test_the_prose_of_docs_models_says_what_tasks_json_shows(result):
    """Each comparative sentence of docs/models.md's task section, read back from tasks.json."""
    docs = (ROOT / "docs" / "models.md").read_text()
    section = " ".join(docs[docs.index("## Where diffusion wins"):docs.index("## How `tiny-cap`")].split())

    def acc(pair, label, task, group=None):
        return tables.accuracy(result, pair, label, task, group)["accuracy"]
    confident, fixed = ("low-confidence", "margin", "entropy"), ("random order", "left to right")
    assert "the AR twin, which can only go left to right, solves the fewest" in section
    sudoku = [acc("sudoku", r["label"], "sudoku") for r in result["pairs"]["sudoku"]["runs"]]
    assert acc("sudoku", bench.AR_LABEL, "sudoku") == min(sudoku)
    assert min(acc("sudoku", c, "sudoku") for c in confident) > max(acc("sudoku", f, "sudoku") for f in fixed)
    gaps = {g: acc("sudoku", "low-confidence", "sudoku", g) - acc("sudoku", "random order", "sudoku", g)
            for g in ("easy", "medium", "hard")}
    assert "the gap is widest on the hard puzzles" in section and max(gaps, key=gaps.get) == "hard"
    assert "one forward pass per answer at thresholds down to 0.5" in section
    for pair, task in (("facts", "mirror"), ("add", "addition")):
        for label in ("threshold 0.9", "threshold 0.7", "threshold 0.5"):
            s = tables.accuracy(result, pair, label, task)
            assert s["nfe_mean"] == 1.0 and s["accuracy"] == 1.0, (pair, label)
    s = tables.accuracy(result, "sudoku", "S mode", "sudoku")
    assert "many more cells right than wrong" in section and s["edits"]["fixed"] > 2 * s["edits"]["broke"]
    assert s["accuracy"] < min(acc("sudoku", c, "sudoku") for c in confident)
    assert acc("facts", "S mode", "reversal", "forward") < 1 and acc("add", "S mode", "addition") < 1
    assert "recalls every one-way fact forwards and none in reversed order" in section
    assert acc("facts", bench.AR_LABEL, "reversal", "forward") == 1 and acc("facts", bench.AR_LABEL, "reversal",
                                                                            "backward_reversed") == 0
    assert "answers backwards by infill of the trained layout as well as forwards" in section
    assert acc("facts", "low-confidence", "reversal", "backward_infill") >= acc("facts", "low-confidence", "reversal",
                                                                                  "forward")
    assert "also answers most of them in the reversed order" in section
    assert acc("facts", "low-confidence", "reversal", "backward_reversed") > 0.5
    assert "both the masked model (in every order) and the AR twin are exact" in section
    assert all(acc("add", label, "addition") == 1 for label in (*bench.ONE_PER_STEP, bench.AR_LABEL))


def test_labkit_bench_task_seeds_trains_only_the_missing_seed_runs(tmp_path, monkeypatch):
    from labkit.cli import bench_training

    done = tmp_path / "tiny-sudoku-seed1"
    done.mkdir()
    (done / "training.json").write_text("{}")
    trained = []
    monkeypatch.setattr(bench_training, "train", lambda cfg, run, **kw: trained.append((run.name, cfg.seed)))
    assert bench_training.train_task_seeds(tmp_path) == [tmp_path / n for n in ("tiny-sudoku-ar-seed1", "tiny-sudoku-seed2",
                                                                                 "tiny-sudoku-ar-seed2")]
    assert trained == [("tiny-sudoku-ar-seed1", 1), ("tiny-sudoku-seed2", 2), ("tiny-sudoku-ar-seed2", 2)]
