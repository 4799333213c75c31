"""The `labkit` command on the embedded model: output, HTML view, and errors without tracebacks."""
import json
import subprocess
import sys

import pytest

from labkit.cli.main import main


def test_generate_prints_text_nfe_and_time(capsys):
    assert main(["generate", "--model", "tiny", "--steps", "32", "--gen-length", "32", "ROMEO:"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("ROMEO:\n") and len(out) > len("ROMEO:\n") + 10
    assert "NFE 32" in err and "tok/s" in err


def test_generate_writes_html_and_trace(tmp_path, capsys):
    html, trace = tmp_path / "view.html", tmp_path / "t.npz"
    assert main(["generate", "--gen-length", "32", "--steps", "16", "--html", str(html),
                 "--trace", str(trace), "KING:"]) == 0
    text = html.read_text()
    assert "plotly" in text and "<h1>" in text
    from labkit import Trace
    assert len(Trace.load(trace)) == 16


@pytest.mark.parametrize("args, word", [
    (["generate", "--model", "nope", "x"], "unknown model"),
    (["generate", "--steps", "0", "ROMEO:"], "steps"),
    (["generate", "--temperature", "-1", "ROMEO:"], "temperature"),
    (["generate", "--gen-length", "48", "--block-length", "32", "ROMEO:"], "block_length"),
    (["generate", ""], "prompt"),
])
def test_errors_are_one_line_and_exit_nonzero(args, word, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert word in err and "Traceback" not in err and err.count("\n") == 1


def test_python_dash_m_entry_point():
    r = subprocess.run([sys.executable, "-m", "labkit", "generate", "--steps", "0", "x"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "steps" in r.stderr and "Traceback" not in r.stderr


def test_eval_json_has_the_keys(capsys, monkeypatch):
    """`labkit eval --json` prints one JSON object (quality figures checked on a small slice)."""
    import labkit.eval.evaluate as ev
    monkeypatch.setattr(ev, "heldout_windows", lambda lm, length=256: ev_windows(lm))
    monkeypatch.setattr(ev, "sample_prompts", lambda n=32: ["ROMEO:\n", "KING:\n"])
    assert main(["eval", "--model", "tiny", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    for k in ("mask_acc_0.15", "mask_acc_0.5", "elbo_bits_per_token", "word_validity", "distinct_2"):
        assert k in result
    for k in ("mask_acc_0.15", "mask_acc_0.5", "word_validity", "distinct_2"):
        assert 0.0 <= result[k] <= 1.0
    assert result["mask_acc_0.15"] > 0.1 and result["elbo_bits_per_token"] > 0


def ev_windows(lm):
    import torch

    from labkit.training.corpus import load_plays
    ids = lm.encode(load_plays("heldout")["macbeth"][:6000])
    n = len(ids) // 128
    return torch.tensor(ids[:n * 128]).view(n, 128)


def spy_on_generate(monkeypatch) -> list:
    """(model name, rule) of every decode.generate call `labkit generate` makes; the runs still happen."""
    import labkit.cli.generate
    real, calls = labkit.cli.generate.generate, []

    def spy(lm, prompt, sampler=None, **kw):
        calls.append((lm.name, sampler))
        return real(lm, prompt, sampler, **kw)
    monkeypatch.setattr(labkit.cli.generate, "generate", spy)
    return calls


def expected_rule(name):
    """The rule each --sampler name must build, written out from the classes (not the registry)."""
    import labkit as lk
    return {"threshold": lk.Threshold(), "speed": lk.DraftEdit.speed(), "quality": lk.DraftEdit.quality(),
            "entropy_bound": lk.EntropyBound(), "autoregressive": lk.Autoregressive()}[name]


@pytest.mark.parametrize("sampler", ["threshold", "speed", "quality", "entropy_bound", "autoregressive"])
def test_generate_with_each_sampler(sampler, capsys, monkeypatch, tmp_path):
    import labkit as lk
    calls = spy_on_generate(monkeypatch)
    assert main(["generate", "--sampler", sampler, "--gen-length", "32", "--temperature", "0",
                 "--eos-early-stop", "--trace", str(tmp_path / "t.npz"), "ROMEO:"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("ROMEO:\n") and "NFE" in err
    [(model, rule)] = calls
    assert rule == expected_rule(sampler)                       # the rule built, every field
    assert lk.Trace.load(tmp_path / "t.npz").meta["sampler"] == repr(rule)    # and the one the run recorded
    assert model == ("tiny-cap" if sampler in ("speed", "quality") else "tiny")
    if sampler in ("speed", "quality"):                         # S and Q mode are told apart by their thresholds
        other = lk.DraftEdit.quality() if sampler == "speed" else lk.DraftEdit.speed()
        assert (rule.threshold, rule.editing_threshold) != (other.threshold, other.editing_threshold)
    if sampler == "speed":
        assert (rule.threshold, rule.editing_threshold) == (0.5, 0.0)      # the LLaDA2.1 card's S mode


def test_generate_on_the_causal_twin_defaults_to_left_to_right(capsys):
    assert main(["generate", "--model", "tiny-ar", "--gen-length", "32", "--steps", "32", "ROMEO:"]) == 0
    assert "NFE 32" in capsys.readouterr().err


def test_bench_samplers_json_and_plot(tmp_path, capsys):
    assert main(["bench", "samplers", "--prompts", "2", "--gen-length", "32", "--only", "low_confidence_2tok", "threshold_0.9",
                 "draft_edit_quality", "ar", "--cap-model", "tiny", "--json", "--quiet",
                 "--out", str(tmp_path)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result) == {"low_confidence_2tok", "threshold_0.9", "draft_edit_quality", "ar", "cap"}
    assert set(result["cap"]) == {"low_confidence_2tok", "threshold_0.9", "draft_edit_quality"}
    for row in (result["low_confidence_2tok"], result["ar"], result["cap"]["threshold_0.9"]):
        assert set(row) == {"nfe", "tpf", "tps", "gen_ppl", "gen_ppl_ci95", "per_prompt", "distinct_2", "prompts"}
        assert row["prompts"] == 2 and len(row["per_prompt"]["nats"]) == len(row["per_prompt"]["tokens"]) == 2
        lo, hi = row["gen_ppl_ci95"]
        assert lo <= row["gen_ppl"] + 0.01 and row["gen_ppl"] - 0.01 <= hi
    assert result["low_confidence_2tok"]["tpf"] == 2.0 and result["ar"]["tpf"] == 1.0
    assert result["threshold_0.9"]["tpf"] >= 1.0 and result["ar"]["gen_ppl"] > 1.0
    assert (tmp_path / "samplers.json").is_file() and (tmp_path / "samplers_frontier.png").stat().st_size > 1000


def test_bench_rejects_unknown_sampler_names(capsys):
    assert main(["bench", "samplers", "--only", "fastest", "--prompts", "1"]) == 2
    assert "fastest" in capsys.readouterr().err


def test_bench_suite_has_every_sampler_the_issue_names():
    from labkit.bench.samplers import sampler_suite
    names = {"threshold_0.95", "threshold_0.93",        # the threshold curve near 2 tokens per forward
             "low_confidence_1tok", "low_confidence_2tok", "low_confidence_4tok", "random", "threshold_0.9",
             "threshold_0.7", "threshold_0.5", "factor_1.0", "entropy_bound", "draft_edit_speed",
             "draft_edit_quality", "draft_edit_speed_mbe", "draft_edit_quality_mbe"}
    suite = sampler_suite(128)
    assert set(suite) == names
    assert [suite[f"low_confidence_{k}tok"][1] for k in (1, 2, 4)] == [128, 64, 32]
    assert suite["draft_edit_speed_mbe"][0].mbe_blocks == 1 and suite["draft_edit_speed"][0].mbe_blocks == 0


def test_generate_with_keywords_pin_and_ban(capsys):
    assert main(["generate", "--gen-length", "32", "--block-length", "32", "--steps", "32", "--keywords",
                 "crown,night", "--pin", "20: the sword", "--ban", "lord", "ROMEO:"]) == 0
    from labkit.controls import contains_word
    text = capsys.readouterr().out[len("ROMEO:\n"):]
    assert contains_word(text, "crown") and contains_word(text, "night") and " the sword" in text
    assert not contains_word(text, "lord")


@pytest.mark.parametrize("args, word", [
    (["generate", "--pin", "x", "ROMEO:"], "--pin takes OFFSET:TEXT"),
    (["generate", "--keywords", "crown,,night", "ROMEO:"], "empty keyword"),
    (["bench", "controls", "--keywords", "crown", "--samples", "1"], "at least two"),
])
def test_control_options_reject_bad_input(args, word, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert word in err and err.count("\n") == 1


def test_bench_controls_json_with_given_keywords(tmp_path, capsys):
    assert main(["bench", "controls", "--keywords", "crown,night,sword", "--keywords", "king,sea,island",
                 "--samples", "2", "--methods", "place", "--gen-length", "32", "--json", "--out", str(tmp_path)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["triples"] == 2 and result["samples"] == 4 and result["method"] == "place"
    assert result["hit_all_3"] == 1.0 and result["hit_at_least_2"] == 1.0 and result["gen_ppl_ratio"] > 0
    assert set(result["methods"]) == {"place"} and not (tmp_path / "controls.json").exists()


def test_bench_length_table_with_chosen_lengths(tmp_path, capsys):
    assert main(["bench", "length", "--lengths", "32", "300", "--no-extend", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "ar cached" in out and "skipped: [300]" in out
    saved = json.loads((tmp_path / "length.json").read_text())
    assert [r["length"] for r in saved["rows"]] == [32] and saved["rows"][0]["ar_cached"]["nfe"] == 32
    assert (tmp_path / "length.png").stat().st_size > 0


def test_bench_samplers_can_skip_the_speed_runs():
    import labkit as lk
    from labkit.bench.samplers import bench_samplers
    rows = bench_samplers(lk.load("tiny"), lk.load("tiny-ar"), n_prompts=2, gen_length=32,
                          names=["low_confidence_2tok", "ar"], tps_prompts=0)
    assert rows["low_confidence_2tok"]["tps"] == 0.0 and rows["ar"]["tps"] == 0.0
    assert rows["low_confidence_2tok"]["tpf"] == 2.0 and rows["ar"]["gen_ppl"] > 1.0


def test_recipe_sweep_ranks_variants_by_targets_then_variety():
    from notebook_cells import script
    sweep = script("recipe_sweep")
    rows = {k: {"tpf": 2.0, "gen_ppl": 6.0} for k in sweep.NAMES}
    ratio = {k: 1.0 for k in sweep.NAMES}
    def result(name, met, d2, folder=True):
        r = {"name": name, "rows": rows, "ratio": ratio, "sampled": {"distinct_2": d2},
             "targets": {"a": met >= 1, "b": met >= 2, "c": False, "d": False}}
        return {**r, "folder": "x"} if folder else r
    results = [result("one", 1, 0.9), result("two_low", 2, 0.4), result("two_high", 2, 0.5),
               result("tiny", 2, 0.99, folder=False)]          # a reference model is never ranked
    assert [r["name"] for r in sweep.rank(results)] == ["two_high", "two_low", "one"]
    table = sweep.summary(results)
    assert table.splitlines()[0].startswith("model") and "++--" in table and len(table.splitlines()) == 5


@pytest.mark.parametrize("args, word", [
    (["generate", "--sampler", "threshold", "--threshold", "1.5", "ROMEO:"], "threshold must be a number in [0, 1]"),
    (["generate", "--sampler", "threshold", "--threshold", "-0.5", "ROMEO:"], "threshold must be a number in [0, 1]"),
    (["generate", "--sampler", "speed", "--editing-threshold", "2", "ROMEO:"], "editing_threshold must be a number in [0, 1]"),
    (["generate", "--sampler", "factor", "--factor", "0", "ROMEO:"], "factor must be a number > 0"),
    (["generate", "--sampler", "entropy_bound", "--entropy-bound", "-1", "ROMEO:"], "entropy_bound must be"),
    (["generate", "--threshold", "0.7", "ROMEO:"], "--threshold: not read by sampler 'low_confidence'"),
    (["generate", "--sampler", "threshold", "--editing-threshold", "0.5", "ROMEO:"], "--editing-threshold: not read"),
    (["generate", "--sampler", "speed", "--remasking", "random", "ROMEO:"], "--remasking: not read"),
    (["generate", "--sampler", "random", "--remasking", "low_confidence", "ROMEO:"], "contradicts --sampler random"),
    (["generate", "--model", "tiny-ar", "--threshold", "0.7", "ROMEO:"], "not read by sampler 'autoregressive'"),
    (["generate", "--model", "tiny-ar", "--remasking", "random", "ROMEO:"], "--remasking: not read by sampler 'autoregressive'"),
    (["generate", "--device", "cuda:7", "ROMEO:"], "is not available"),
    (["generate", "--device", "gpu", "ROMEO:"], "device must be"),
    (["generate", "--trace", "/tmp", "ROMEO:"], "--trace takes a file name"),
    (["generate", "--html", "/no/such/folder/v.html", "ROMEO:"], "does not exist"),
])
def test_bad_input_is_refused_before_the_model_loads(args, word, capsys, monkeypatch):
    import labkit.models.load
    monkeypatch.setattr(labkit.models.load, "_load_tiny", lambda *a: pytest.fail("the model was loaded"))
    assert main(args) == 2
    err = capsys.readouterr().err
    assert word in err and "Traceback" not in err and err.count("\n") == 1


def test_cuda_without_cuda_is_one_line(capsys, monkeypatch):
    import torch
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main(["generate", "--device", "cuda", "ROMEO:"]) == 2
    err = capsys.readouterr().err
    assert "device 'cuda' is not available" in err and err.count("\n") == 1


def test_s_mode_runs_on_the_parallel_model_by_default(capsys, monkeypatch):
    calls = spy_on_generate(monkeypatch)
    assert main(["generate", "--sampler", "speed", "--temperature", "0", "ROMEO:"]) == 0
    assert calls == [("tiny-cap", expected_rule("speed"))]
    err = capsys.readouterr().err
    assert "speed mode runs on tiny-cap" in err
    tpf = float(err.split("TPF ")[1].split()[0])
    assert tpf > 2 and "not confident enough" not in err


def test_s_mode_on_a_chosen_model_says_when_it_cannot_parallelise(capsys, monkeypatch):
    calls = spy_on_generate(monkeypatch)
    assert main(["generate", "--model", "tiny", "--sampler", "speed", "--temperature", "0", "ROMEO:"]) == 0
    assert calls == [("tiny", expected_rule("speed"))]
    err = capsys.readouterr().err
    assert "runs on tiny-cap" not in err and "not confident enough to decode in parallel" in err


def test_the_causal_twin_notes_steps_it_ignores(capsys):
    assert main(["generate", "--model", "tiny-ar", "--steps", "32", "--gen-length", "32", "ROMEO:"]) == 0
    assert "--steps is ignored by sampler 'autoregressive'" in capsys.readouterr().err


def test_a_note_never_precedes_an_error(capsys):
    assert main(["generate", "--sampler", "threshold", "--steps", "0", "ROMEO:"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "steps must be a positive integer" in err


def test_flags_the_rule_ignores_get_a_note(capsys):
    assert main(["generate", "--sampler", "threshold", "--steps", "32", "--temperature", "0", "--top-p", "0.5",
                 "--gen-length", "32", "ROMEO:"]) == 0
    err = capsys.readouterr().err
    assert "--steps is ignored by sampler 'threshold'" in err and "--top-p does nothing at temperature 0" in err


def test_output_paths_do_what_they_say(tmp_path, capsys):
    assert main(["generate", "--gen-length", "16", "--steps", "16", "--block-length", "16",
                 "--trace", str(tmp_path / "run"), "--html", str(tmp_path / "view"), "ROMEO:"]) == 0
    err = capsys.readouterr().err
    assert f"trace written to {tmp_path / 'run.npz'}" in err and (tmp_path / "run.npz").is_file()
    assert f"written to {tmp_path / 'view.html'}" in err and (tmp_path / "view.html").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.npz", "view.html"]


def test_generate_on_the_gpu_path_writes_the_same_text(capsys):
    args = ["generate", "--model", "tiny", "--steps", "32", "--gen-length", "32", "ROMEO:"]
    assert main(args) == 0 and main(args + ["--gpu-path"]) == 0
    out, err = capsys.readouterr()
    plain, fast = out.split("ROMEO:\n")[1:]
    assert plain == fast and err.count("NFE 32") == 2


def test_generate_with_a_kv_cache(capsys):
    assert main(["generate", "--model", "tiny", "--cache", "dual", "--gpu-path", "--gen-length", "64",
                 "--block-length", "16", "--steps", "64", "ROMEO:"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("ROMEO:\n") and "NFE 64" in err
    assert main(["generate", "--model", "tiny-ar", "--cache", "prefix", "ROMEO:"]) == 2
    err = capsys.readouterr().err
    assert "for masked diffusion models" in err and "Traceback" not in err


def test_a_users_bench_run_never_overwrites_the_committed_figures():
    """Every bench writes to the scratch folder unless told --out (the make targets say
    --out benchmarks/results); inputs from other benches fall back to the committed copies."""
    from labkit.cli import bench, common
    from labkit.cli.main import build_parser

    parser = build_parser()
    for name in bench._benchmarks():
        assert parser.parse_args(["bench", name]).out == common.SCRATCH == "runs/bench", name
    a = parser.parse_args(["bench", "rl", "--out", "nowhere-here"])
    assert common.bench_input(a, "tasks.json") == str(common.committed() / "tasks.json")
    assert (common.committed() / "tasks.json").is_file()
