"""The committed RL recipe search and learned unmasking policy read back: rl_sweep.json
(`labkit bench rl-sweep`), learned_policy.json (`labkit bench learned-policy`) and docs/models.md's
section as the docgen writes it."""
import dataclasses
import json
from pathlib import Path

import pytest
from doc_common import committed_section
from docgen.rl_search import SECTION_END, SECTION_START, models_section, rose

from labkit.bench import learned_policy, rl_sweep
from labkit.training.learned_policy import PolicyConfig

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"


@pytest.fixture(scope="module")
def sweep():
    return json.loads((RESULTS / "rl_sweep.json").read_text())


@pytest.fixture(scope="module")
def policy():
    return json.loads((RESULTS / "learned_policy.json").read_text())


def test_the_sweep_is_the_base_and_its_runs(sweep):
    assert sweep["base"] == json.loads(json.dumps(dataclasses.asdict(rl_sweep.BASE)))
    assert [r["name"] for r in sweep["runs"]] == [n for n in rl_sweep.SWEEP if n in {r["name"] for r in sweep["runs"]}]
    for r in sweep["runs"]:
        assert r["settings"] == json.loads(json.dumps(rl_sweep.SWEEP[r["name"]][1]))
        assert 10 <= r["steps"] <= rl_sweep.BASE.steps and len(r["reward_by_ten_steps"]) == -(-r["steps"] // 10)
        assert r["evals"][0]["step"] == 0 and all(set(e) >= {"step", *rl_sweep.BASE.eval_rules} for e in r["evals"])


def test_the_policy_run_is_the_default_config_and_its_rows_hold_together(policy):
    run = policy["run"]
    assert run["config"] == json.loads(json.dumps(dataclasses.asdict(PolicyConfig())))
    assert len(run["history"]) == PolicyConfig().steps and run["history"][-1]["weights"] == run["weights"]
    assert policy["learned"]["n"] == 600 and set(policy["start"]) <= set(learned_policy.COMPARED)
    tasks = {r["label"]: r["tasks"]["sudoku"] for r in json.loads((RESULTS / "tasks.json").read_text())["pairs"]["sudoku"]["runs"]
             if r.get("model", "tiny-sudoku") == "tiny-sudoku"}
    for label, r in policy["start"].items():
        assert (r["accuracy"], r["tpf"]) == (tasks[label]["accuracy"], tasks[label]["tpf"])
    assert policy["dominated_by"] == learned_policy.dominated_by(policy["learned"], policy["start"])
    assert policy["tenths"]["run"] == learned_policy.tenths(run)
    assert policy["control"]["config"] == {**run["config"], "control": True}


def test_rose_by_hand():
    assert rose({"reward_by_ten_steps": [1.0, 1.0, 1.0, 1.0, 1.3]}) and not rose({"reward_by_ten_steps": [1.0, 1.2, 0.9, 1.05]})


def test_docs_models_holds_the_section_the_docgen_writes(sweep, policy):
    assert committed_section(SECTION_START, SECTION_END) == models_section(sweep, policy)


def test_the_readme_and_the_course_say_what_the_seeds_show(policy):
    from docgen.rl_search import seed_rise
    t = policy["tenths"]
    beat = sum(x > t["control"][1] - t["control"][0] for x in seed_rise(policy)["rises"])
    words = {0: "no seed", 1: "one seed", 2: "two seeds", 3: "every seed"}[beat]
    root = RESULTS.parent.parent
    for doc in ("README.md", "docs/course.md"):
        assert f"{words} of three rises clearly past it" in (root / doc).read_text().replace("\n  ", " "), doc
    assert policy["dominated_by"] == []                       # "lands on the threshold rules' frontier"
