"""labkit inside lm-evaluation-harness: lm_eval.simple_evaluate (not a mock) on the shipped tasks,
the model_args checks, and the server route giving the direct route's scores."""
import functools
import math

import pytest

lm_eval = pytest.importorskip("lm_eval")

from labkit.eval import harness, lm_eval_data  # noqa: E402
from labkit.eval.harness import LabkitLM, cut_at_stop, parse_model_args  # noqa: E402

LIMIT = 24


@functools.cache
def task_manager():
    """labkit's own tasks only, indexed once per test run: lm-eval's thousands of built-in task files
    (about 20 s to index on 2 cores) are never asked for here."""
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(harness.TASKS_DIR), include_defaults=False)


def evaluate(model, tasks, limit=LIMIT, **kw):
    return lm_eval.simple_evaluate(model=model, tasks=tasks, limit=limit, task_manager=task_manager(),
                                   log_samples=False, bootstrap_iters=0, **kw)["results"]


@pytest.fixture(scope="module")
def tiny_lm():
    return LabkitLM(model="tiny", mc_num=4, batch_size=8)


@pytest.fixture(scope="module")
def tiny_ar_lm():
    return LabkitLM(model="tiny-ar", batch_size=8)


def test_the_shipped_data_files_are_current():
    for stem, rows in lm_eval_data.datasets().items():
        path = harness.TASKS_DIR / f"{stem}.jsonl"
        assert path.read_text(encoding="utf-8") == lm_eval_data.jsonl(rows), f"{path}: run python -m labkit.eval.lm_eval_data"


def _pairs(n=24):
    """(context, the true end of the line, the same end with its words shuffled) from the shipped line-end task."""
    import random

    rng = random.Random(0)
    rows = lm_eval_data.shakespeare_line_end()[:n]
    out = []
    for r in rows:
        true = r["choices"][r["label"]]
        words = true.split()
        shuffled = words[:]
        while shuffled == words:
            rng.shuffle(shuffled)
        out.append((r["context"], true, " ".join(shuffled)))
    return out


def _ll(model, pairs):
    from lm_eval.api.instance import Instance

    reqs = [Instance(request_type="loglikelihood", doc={}, arguments=(c, x), idx=0) for c, t, s in pairs for x in (t, s)]
    return [ll for ll, _ in model.loglikelihood(reqs)]


def test_the_causal_likelihood_is_exact_and_prefers_the_true_line(tiny_ar_lm):
    from labkit.eval.likelihood import ar_log_likelihood

    pairs = _pairs()
    ll = _ll(tiny_ar_lm, pairs)
    lm = tiny_ar_lm.lm
    for (c, t, _), got in zip(pairs, ll[::2]):
        assert math.isclose(got, ar_log_likelihood(lm, lm.encode(c), lm.encode(t)), rel_tol=1e-5)
    wins = sum(a > b for a, b in zip(ll[::2], ll[1::2]))
    assert wins >= 0.9 * len(pairs), wins                  # word order matters to a language model


def test_the_masked_monte_carlo_likelihood_prefers_the_true_line_and_is_seeded(tiny_lm):
    pairs = _pairs()
    ll = _ll(tiny_lm, pairs)
    assert all(math.isfinite(x) and x < 0 for x in ll)
    assert sum(a > b for a, b in zip(ll[::2], ll[1::2])) >= 0.8 * len(pairs)
    assert _ll(tiny_lm, pairs[:4]) == ll[:8]                 # the same seed, the same estimate


@pytest.mark.parametrize("model, kw", [("tiny-facts-ar", {}), ("tiny-facts", {"mc_num": 4})])
def test_multiple_choice_ranks_the_true_answer_first_far_more_often_than_chance(model, kw):
    lm = LabkitLM(model=model, batch_size=8, **kw)
    r = evaluate(lm, ["labkit_puzzle_mirror_choice"], limit=40)["labkit_puzzle_mirror_choice"]
    assert r["acc,none"] >= 0.9, r
    again = evaluate(lm, ["labkit_puzzle_mirror_choice"], limit=40)["labkit_puzzle_mirror_choice"]
    assert again["acc,none"] == r["acc,none"]


@pytest.mark.parametrize("model, task, floor", [("tiny-sudoku", "labkit_puzzle_sudoku", 0.9),
                                                ("tiny-sudoku-ar", "labkit_puzzle_sudoku", 0.0),
                                                ("tiny-facts", "labkit_puzzle_reversal_infill", 0.9)])
def test_the_task_models_answer_their_puzzles_through_lm_eval(model, task, floor):
    """A question as lm-eval poses it (the context, then the generation) is read in the model's own
    layout: the masked Sudoku model solves the puzzle in place, the facts model fills the gap."""
    r = evaluate(LabkitLM(model=model, batch_size=8), [task], limit=16)[task]
    assert r["exact_match,none"] >= floor, r


def test_a_left_to_right_model_cannot_fill_the_infill_questions():
    r = evaluate(LabkitLM(model="tiny-facts-ar", batch_size=8), ["labkit_puzzle_reversal_infill"], limit=8)
    assert r["labkit_puzzle_reversal_infill"]["exact_match,none"] == 0.0


def test_the_shakespeare_choice_scores_are_the_same_twice(tiny_ar_lm):
    r = evaluate(tiny_ar_lm, ["labkit_shakespeare_line_end"], limit=24)["labkit_shakespeare_line_end"]
    again = evaluate(tiny_ar_lm, ["labkit_shakespeare_line_end"], limit=24)["labkit_shakespeare_line_end"]
    assert 0 <= r["acc,none"] <= 1 and again["acc,none"] == r["acc,none"] and again["acc_norm,none"] == r["acc_norm,none"]


def test_generation_tasks_score_the_same_twice_and_log_tpf(tiny_lm):
    r1 = evaluate(tiny_lm, ["labkit_shakespeare_complete"])["labkit_shakespeare_complete"]
    r2 = evaluate(tiny_lm, ["labkit_shakespeare_complete"])["labkit_shakespeare_complete"]
    assert r1["word_f1,none"] == r2["word_f1,none"] and 0 < r1["word_f1,none"] < 1
    log = tiny_lm.decode_log[-LIMIT:]
    assert len(log) == LIMIT and all(e["nfe"] >= 1 and e["tpf"] > 0 for e in log)
    assert tiny_lm.decode_summary()["requests"] == len(tiny_lm.decode_log)


def test_a_parallel_rule_through_model_args_commits_more_per_forward():
    fast = LabkitLM.create_from_arg_string("model=tiny-cap,sampler=threshold,threshold=0.5,batch_size=8")
    evaluate(fast, ["labkit_shakespeare_complete"], limit=8)
    assert fast.decode_summary()["tpf"] > 1.0 and repr(fast.rule({})).startswith("Threshold(threshold=0.5")


@pytest.mark.parametrize("args, word", [
    ("model=tiny,sampler=nope", "sampler must be one of"),
    ("model=tiny,threshold=0.5", "threshold: not read by sampler 'low_confidence'"),
    ("model=tiny,sampler=threshold,threshold=1.5", "threshold must be a number in [0, 1]"),
    ("model=tiny,mc_num=0", "mc_num"),
    ("model=tiny,mc_num=-3", "mc_num"),
    ("model=tiny,colour=red", "colour is not an argument of the labkit model"),
    ("model=tiny,steps=x", "steps must be an integer"),
])
def test_bad_model_args_are_one_line_errors_naming_the_argument(args, word):
    with pytest.raises(ValueError) as e:
        LabkitLM.create_from_arg_string(args)
    assert word in str(e.value) and "\n" not in str(e.value)


def test_parse_model_args_types_each_argument():
    a = parse_model_args({"model": "tiny", "sampler": "speed", "threshold": "0.6", "mc_num": "8", "score": None})
    assert a == {"model": "tiny", "sampler": "speed", "threshold": 0.6, "mc_num": 8}


def test_cut_at_stop():
    assert cut_at_stop("to be\nor not", ["\n"]) == ("to be", True)
    assert cut_at_stop("to be, or not", [" or", ","]) == ("to be", True)
    assert cut_at_stop("to be", "\n\n") == ("to be", False) and cut_at_stop("to be", None) == ("to be", False)


def test_the_server_route_gives_the_direct_routes_scores(tiny_lm):
    """lm-eval's local-completions pointed at `labkit serve` scores what LabkitLM scores directly
    (same model, same rule, greedy): one request at a time on both routes."""
    import labkit as lk
    from labkit.serve.app import create_app, run_in_thread

    direct = LabkitLM(model="tiny", batch_size=1)
    tasks = ["labkit_shakespeare_complete"]
    want = evaluate(direct, tasks, limit=12)["labkit_shakespeare_complete"]
    server = run_in_thread(create_app(lk.load("tiny"), "tiny"))
    try:
        args = (f"model=tiny,base_url={server.url}/v1/completions,num_concurrent=1,max_retries=1,"
                "tokenized_requests=False,tokenizer_backend=None")
        got = evaluate("local-completions", tasks, limit=12, model_args=args)["labkit_shakespeare_complete"]
    finally:
        server.stop()
    for metric in ("exact_match,none", "word_f1,none"):
        assert math.isclose(got[metric], want[metric]), (metric, got, want)


def test_lm_evals_default_device_falls_back_to_the_cpu_where_there_is_no_cuda(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this torch has CUDA: lm-eval's default device is usable")
    lm = LabkitLM.create_from_arg_obj({"model": "tiny"}, {"device": "cuda:0", "batch_size": None, "max_batch_size": None})
    assert str(lm.lm.device) == "cpu" and "not available here; running on cpu" in capsys.readouterr().err
    with pytest.raises(ValueError, match="device"):
        LabkitLM.create_from_arg_obj({"model": "tiny", "device": "cuda:0"}, {})
