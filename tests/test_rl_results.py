"""The committed RL results read back: benchmarks/results/rl.json against tasks.json, its targets
recomputed from its rows (benchmarks/docgen/targets.py), docs/models.md's RL section as
benchmarks/make_rl_section.py writes it, and the RL models' records."""
import json
from pathlib import Path

import pytest
from doc_common import committed_section
from docgen.models_md import write_rl
from docgen.rl import SECTION_END, SECTION_START, keywords_paragraph, markdown_seeds, models_section
from docgen.targets import judge_rl, reward_rise, rl_targets

from labkit.bench.rl import (
    AR_RL_MODEL,
    ELBO_MODEL,
    RL_MODEL,
    RL_SEEDS,
    SEED_LABELS,
    curve_configs,
    keyword_config,
    seed_config,
    text_table,
)
from labkit.bench.tasks import SOLVER_LABEL
from labkit.models.load import model_folder
from labkit.training.rl import RL_RECIPES, same_config

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


@pytest.fixture(scope="module")
def rl():
    return json.loads((RESULTS / "rl.json").read_text())


def test_the_starting_rows_are_tasks_json_rows_and_every_rule_ran_after(rl):
    tasks = json.loads((RESULTS / "tasks.json").read_text())["pairs"]["sudoku"]["runs"]
    solver = [r for r in tasks if r["label"] == SOLVER_LABEL]          # the third Sudoku model, outside RL
    assert len(solver) == 1 and solver[0]["model"] == "tiny-sudoku-ar-solver"
    assert rl["runs"]["start"] + [rl["runs"]["ar_start"]] == [r for r in tasks if r["label"] != SOLVER_LABEL]
    for model in ("rl", "rl_elbo"):
        assert [r["label"] for r in rl["runs"][model]] == [r["label"] for r in rl["runs"]["start"]]
    assert all(r["tasks"]["sudoku"]["n"] == 600 for r in rl["runs"]["rl"] + rl["runs"]["rl_elbo"] + [rl["runs"]["ar_rl"]])
    assert rl["models"] == {"rl": RL_MODEL, "rl_elbo": ELBO_MODEL, "start": "tiny-sudoku", "ar_rl": AR_RL_MODEL,
                            "ar_start": "tiny-sudoku-ar"}


def test_the_targets_are_the_rows_read_again(rl):
    assert json.loads(json.dumps(judge_rl(rl))) == rl["targets"]
    history = json.loads((model_folder(RL_MODEL) / "training.json").read_text())["rl"]["history"]
    first = sum(h["reward"] for h in history[:10]) / 10            # seed 0's first tenth, from its record
    assert rl["targets"]["reward_rises"]["value"]["rises"][0] == pytest.approx(
        round(sum(h["reward"] for h in history[-10:]) / 10 - first, 4), abs=2e-4)


def test_docs_models_holds_the_section_the_script_writes(rl):
    assert committed_section(SECTION_START, SECTION_END) == models_section(rl)


def test_the_script_judges_the_targets_into_rl_json_then_writes_the_section(rl, tmp_path):
    """As `make bench-rl` runs it: labkit bench rl writes the rows without targets (here they come
    last; the committed file keeps them where an earlier round put them)."""
    section = committed_section(SECTION_START, SECTION_END)
    doc = tmp_path / "models.md"
    doc.write_text(f"# models\n\n{section}\n")
    (tmp_path / "rl.json").write_text(json.dumps({k: v for k, v in rl.items() if k != "targets"}))
    write_rl(tmp_path, doc)
    assert json.loads((tmp_path / "rl.json").read_text()) == rl and doc.read_text() == f"# models\n\n{section}\n"


def test_the_commands_printout_is_every_rule_before_and_after(rl):
    lines = text_table(rl).splitlines()
    assert len(lines) == len(rl["runs"]["start"]) + len(rl["runs"]["rl_elbo"]) + len(rl["runs"]["rl"])
    s = rl["runs"]["rl"][-1]["tasks"]["sudoku"]
    assert lines[-1].endswith(f"{rl['runs']['rl'][-1]['label']}: {s['accuracy']:.3f} TPF {s['tpf']:.2f}")


def _row(label, acc, tpf, hard=None, edits=None):
    s = {"accuracy": acc, "tpf": tpf, "groups": {"hard": {"accuracy": acc if hard is None else hard}}}
    return {"label": label, "tasks": {"sudoku": s | ({"edits": edits} if edits else {})}}


def test_the_targets_are_read_from_the_rows():
    start = [_row("low-confidence", 0.988, 1.0), _row("margin", 0.988, 1.0), _row("entropy", 0.992, 1.0),
             _row("threshold 0.7", 0.893, 10.78), _row("S mode", 0.883, 7.8, edits={"fixed": 486, "broke": 112})]
    good = [_row("low-confidence", 0.986, 1.0), _row("margin", 0.99, 1.0), _row("entropy", 0.99, 1.0),
            _row("threshold 0.7", 0.90, 10.0),
            _row("S mode", 0.96, 7.5, hard=0.91, edits={"fixed": 500, "broke": 90})]
    t = rl_targets(good, start, {"tasks": {"sudoku": {"accuracy": 0.5}}}, [[1.5, 1.7], [1.52, 1.68], [1.49, 1.66]])
    assert all(v["met"] for v in t.values()), t
    assert t["reward_rises"]["value"] == {"rises": [0.2, 0.16, 0.17], "mean_rise": 0.1767, "spread": 0.04}
    assert not rl_targets(good, start, None, [[1.5, 1.6], [1.5, 1.52], [1.5, 1.7]])["reward_rises"]["met"]
    assert "reward_rises" not in rl_targets(good, start, None)              # no seeds: not judged
    assert reward_rise([[1.0, 1.1]]) == {"rises": [0.1], "mean_rise": 0.1, "spread": 0.0}
    bad = [dict(r) for r in good]
    bad[3] = _row("threshold 0.7", 0.97, 9.0)                          # more accurate at a higher TPF
    bad[0] = _row("low-confidence", 0.98, 1.0)                          # 0.8 points below the start
    t = rl_targets(bad, start, None)
    assert not t["s_mode_on_frontier"]["met"] and "threshold 0.7" in t["s_mode_on_frontier"]["value"][0]
    assert not t["confident_orders_kept"]["met"] and t["confident_orders_kept"]["value"]["low-confidence"] == -0.008
    assert t["other_rules_within_1_point"]["met"]                           # 0.8 points is within one
    bad[1] = _row("margin", 0.97, 1.0)
    t = rl_targets(bad, start, None)
    assert not t["other_rules_within_1_point"]["met"] and t["other_rules_within_1_point"]["value"] == {"margin": -0.018}
    assert not t["ar_twin"]["met"]
    bad[4] = _row("S mode", 0.96, 6.5, hard=0.85, edits={"fixed": 400, "broke": 100})
    t = rl_targets(bad, start, None)
    assert [t[k]["met"] for k in ("s_mode_overall", "s_mode_hard", "s_mode_tpf", "edits_fixed_per_broken")] == \
        [True, False, False, False]


def test_the_curves_are_the_recipe_with_one_surrogate_each(rl):
    configs = curve_configs()
    assert set(rl["curves"]) == set(configs)
    for label, c in rl["curves"].items():
        assert same_config(c["config"], configs[label])
        assert len(c["reward"]) == c["config"]["steps"]


@pytest.mark.parametrize("name", [RL_MODEL, ELBO_MODEL, AR_RL_MODEL])
def test_the_rl_models_carry_their_recipe_and_record(name):
    record = json.loads((model_folder(name) / "training.json").read_text())
    assert same_config(record["rl"]["config"], RL_RECIPES[name])
    assert len(record["rl"]["history"]) == RL_RECIPES[name].steps
    assert record["config"]["data"] == "tasks"                         # still a task model for every tool
    card = (model_folder(name) / "README.md").read_text()
    assert f"labkit train-rl --recipe {name}" in card


def test_the_readmes_sentence_on_rl_is_what_rl_json_shows(rl):
    readme = " ".join((ROOT / "README.md").read_text().split())
    zh = "".join((ROOT / "docs" / "README.zh-CN.md").read_text().split())
    assert ("RL has not raised S mode's accuracy" in readme and "强化学习还没有提高S模式的准确率" in zh and "过于自信" in zh)
    assert all(f"`{m}`" in text for m in (RL_MODEL, ELBO_MODEL, AR_RL_MODEL) for text in (readme, zh))
    rows = {k: {r["label"]: r["tasks"]["sudoku"] for r in rl["runs"][k]} for k in ("start", "rl", "rl_elbo")}
    for k in ("rl", "rl_elbo"):                                        # S mode not raised beyond the interval
        assert rows[k]["S mode"]["ci95"][0] <= rows["start"]["S mode"]["ci95"][1], k
    pct = lambda k, label: f"{100 * rows[k][label]['accuracy']:.1f}%"             # noqa: E731
    t0, t1, t2 = rows["start"]["threshold 0.9"], rows["rl_elbo"]["threshold 0.9"], rows["rl"]["threshold 0.9"]
    assert t1["tpf"] > t0["tpf"] and t1["accuracy"] < t0["accuracy"] - 0.1   # the ELBO: confident sooner, wrong more often
    assert t2["accuracy"] >= t0["accuracy"] - 0.01                             # the decisions: threshold 0.9 kept
    assert rows["rl"]["threshold 0.7"]["accuracy"] < rows["start"]["threshold 0.7"]["accuracy"] - 0.01
    said = (f"0.9: {pct('start', 'threshold 0.9')} → {pct('rl_elbo', 'threshold 0.9')}", f"({pct('rl', 'threshold 0.9')})",
            f"0.7: {pct('start', 'threshold 0.7')} → {pct('rl', 'threshold 0.7')}")
    assert all(f"threshold {x}" in readme or x.startswith("(") and x in readme for x in said), said
    full = str.maketrans({":": "：", "(": "（", ")": "）", " ": None})               # Chinese punctuation, no spaces
    assert all(x.translate(full) in zh for x in said), said


@pytest.mark.parametrize("model, key", [("rl", "seeds"), ("rl_elbo", "seeds_elbo")])
def test_the_seeds_are_the_recipe_with_other_seeds_on_every_held_out_puzzle(rl, model, key):
    assert sorted(rl[key]) == sorted(str(s) for s in RL_SEEDS)
    for seed, s in rl[key].items():
        assert [r["label"] for r in s["runs"]] == list(SEED_LABELS), seed
        for r in s["runs"]:
            t = r["tasks"]["sudoku"]
            assert t["n"] == 600 and t["accuracy"] == round(t["correct"] / 600, 4), (seed, r["label"])
        first, last = s["reward_tenths"]
        assert 0 <= first <= 2 and 0 <= last <= 2 and s["train_seconds"] > 0
    table = markdown_seeds(rl, model)
    assert table.count("\n") == 2 + len(RL_SEEDS)          # header, rule, seed 0 and each other seed
    s_mode = {r["label"]: r for r in rl["runs"][model]}["S mode"]["tasks"]["sudoku"]
    assert f"{100 * s_mode['accuracy']:.1f}%" in table.splitlines()[2]       # seed 0 is the committed model


def test_the_keyword_run_on_shakespeare_is_the_recipe_and_its_figures_hold_together(rl):
    from labkit.eval.exact import wilson

    k = rl["keywords"]
    cfg = keyword_config()
    assert same_config(k["config"], cfg) and len(k["reward"]) == cfg.steps
    for side in ("before", "after"):
        e = k[side]
        hits = round(e["all_words"] * e["n"])
        assert e["n"] == 96 and [round(v, 4) for v in wilson(hits, e["n"])] == e["all_words_ci95"]
        assert set(e["word_rates"]) == set(cfg.keywords) and e["gen_ppl"] > 1 and len(e["examples"]) == 2
        assert e["all_words"] <= min(e["word_rates"].values())          # all three is rarer than any one
    assert keywords_paragraph(rl).strip() in (ROOT / "docs" / "models.md").read_text()


def test_labkit_bench_rl_trains_only_the_missing_runs_and_the_bench_only_reads_them(tmp_path, monkeypatch):
    from labkit.bench import rl as bench_rl
    from labkit.cli import bench_training

    folders = {"curves_folder": tmp_path / "curves", "seeds_folder": tmp_path / "seeds",
               "keyword_folder": tmp_path / "keywords", "elbo_seeds_folder": tmp_path / "elbo-seeds"}
    runs = bench_rl.training_runs(**folders)
    assert len(runs) == len(curve_configs()) + 2 * len(RL_SEEDS) + 1
    assert runs[tmp_path / "elbo-seeds" / "seed1"] == seed_config(1, ELBO_MODEL)
    done = next(iter(runs))
    done.mkdir(parents=True)
    (done / "training.json").write_text(json.dumps({"rl": {"config": {}, "history": []}}))
    trained = []
    monkeypatch.setattr(bench_training, "train_rl", lambda cfg, folder, **kw: trained.append((folder, cfg.seed)))
    assert bench_training.train_rl_runs(**folders) == [f for f in runs if f != done]
    assert (tmp_path / "seeds" / "seed2", 2) in trained
    with pytest.raises(FileNotFoundError, match="labkit bench rl trains it first"):
        bench_rl.read_run(tmp_path / "seeds" / "seed1")


def test_the_calibration_and_the_start_gradients_hold_together(rl):
    from labkit.bench.rl import CALIBRATION_MODELS, COSINE_CONFIG
    cal = rl["calibration"]
    assert list(cal) == list(CALIBRATION_MODELS)
    for c in cal.values():
        assert sum(b["n"] for b in c["bins"]) == c["points"] > 100_000          # every prediction of 600 puzzles
        top = [b for b in c["bins"] if b["lo"] >= 0.9]
        assert sum(b["n"] for b in top) / c["points"] == pytest.approx(c["confident_share"], abs=1e-4)
        assert 1 - top[0]["accuracy"] == pytest.approx(c["confident_wrong"], abs=1e-3)
    g = rl["gradient_cosine"]
    assert [r["label"] for r in g["rows"]] == ["one_pass", "elbo", "block_elbo (6 blanks)"]
    assert g["rollouts"] == COSINE_CONFIG.questions * COSINE_CONFIG.group and 0 < g["signal_rows"] <= g["rollouts"]
    assert all(r["single_min"] <= r["single_mean"] <= r["single_max"] for r in g["rows"])


def test_notebook_12_states_the_calibration_it_shows(rl):
    """Section 11's markdown: "(a 0.75 guess is right about 94% of the time)", read from rl.json."""
    b = next(b for b in rl["calibration"]["tiny-sudoku"]["bins"] if b["lo"] == 0.7)
    assert round(b["confidence"], 2) == 0.75 and round(100 * b["accuracy"]) == 94
    assert "(a 0.75 guess is right about 94% of the time)" in (ROOT / "notebook_sources" / "12_rewards.py").read_text()
