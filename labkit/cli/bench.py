"""`labkit bench WHAT`: each benchmark prints a table (or one JSON object) and writes its JSON."""
from __future__ import annotations

import json
from pathlib import Path

from ..bench import (
    controls,
    draft_edit,
    learned_policy,
    likelihood,
    llada21,
    lm_eval,
    loop_cost,
    panel,
    roofline,
    samplers,
    serve,
    speed,
    steering,
    task_tables,
    tasks,
)
from ..models.load import load
from . import bench_blocks as blocks_cmd
from . import bench_training as trained
from .common import SCRATCH, bench_input, load_model, model_args, progress_log, report, save


def add_parser(sub) -> None:
    """`labkit bench WHAT`: one subcommand per benchmark, each with only the flags it reads
    (`labkit bench WHAT --help`)."""
    b = sub.add_parser("bench", help="benchmarks that print a table and write JSON and a plot",
                       description="benchmarks that print a table and write JSON and a plot; "
                                   "`labkit bench WHAT --help` lists WHAT's flags")
    kinds = b.add_subparsers(dest="what", metavar="WHAT", required=True)
    for name, (text, runner, flags) in _benchmarks().items():
        p = kinds.add_parser(name, help=text, description=text)
        for add in flags:
            add(p)
        p.add_argument("--out", default=SCRATCH,
                       help=f"folder for the results ({name}.json; default {SCRATCH}; the committed figures: "
                            "--out benchmarks/results)")
        p.add_argument("--json", action="store_true", help="print one JSON object")
        p.set_defaults(fn=run, bench=runner)


def _benchmarks() -> dict:
    """name → (what it measures, its runner, the flags it reads): the one list of benchmarks."""
    return {
        "samplers": ("the speed-quality table of every sampler on held-out prompts", _bench_samplers,
                     (model_args, _cap_model, _ar_model, _prompts, _gen_length(128, "block 32"), _only, _seed,
                      _quiet)),
        "panel": ("the lab panel's regenerate latency, quiet and next to a busy neighbour", _bench_panel,
                  (_model_only, _repeats(5), _rounds, _quiet)),
        "controls": ("keyword hit rates, infill and re-noise", _bench_controls,
                     (model_args, _ar_model, _gen_length(64), _keywords, _triples, _samples, _methods, _seed)),
        "overhead": ("labkit's cost around the forward passes", _bench_overhead,
                     (model_args, _repeats(5), _gen_length(128))),
        "batch": ("the batch-size sweep", _bench_sweeps, (model_args, _sizes, _gen_length(64), _quiet)),
        "length": ("AR vs diffusion over answer length", _bench_sweeps,
                   (model_args, _ar_model, _lengths, _repeats(None, "3"), _no_extend, _quiet)),
        "cache": ("prefix / dual KV cache speedup and identical outputs", _bench_cache,
                  (model_args, _ar_model, _repeats(5), _gen_length(128))),
        "likelihood": ("masked models' Monte-Carlo ELBO against the AR twin's exact bits per token",
                       _bench_likelihood, (_likelihood_models, _ar_model, _mc_nums, _windows, _window_tokens,
                                           _device, _seed, _quiet)),
        "serve": ("the OpenAI-compatible server's throughput and latency, batching on and off", _bench_serve,
                  (model_args, _clients, _requests, _gen_length(32), _quiet)),
        "tasks": ("exact-match accuracy of every rule on each task model pair, AR twin and Shakespeare beside",
                  _bench_tasks, (_task_pairs, _items, _quiet)),
        "task-seeds": ("the Sudoku pair's accuracy across 3 training seeds (trains seeds 1 and 2)", trained.run_task_seeds,
                       (_items, _quiet)),
        "rl": ("RL with exact rewards on the Sudoku pair: every rule before and after, reward curves per "
               "surrogate, gradient noise (trains what is missing)", trained.run_rl, (_items, trained.no_noise, _quiet)),
        "editor": ("the editor trained on its own drafts against the random-noise T2T stage, every rule on "
                   "the held-out puzzles (trains what is missing)", trained.run_editor, (_items, _quiet)),
        "rl-sweep": ("the RL recipe search on tiny-sudoku: each run's reward and its greedy evaluations of S mode, "
                     "threshold 0.9, Q mode and low-confidence (trains what is missing)", trained.run_rl_sweep,
                     (trained.sweep_runs, _quiet)),
        "learned-policy": ("a learned unmasking policy on tiny-sudoku (the model frozen) against the threshold, "
                           "factor and editing rules on the held-out puzzles (trains it when missing)",
                           _bench_learned_policy, (_items, _quiet)),
        "blocks": ("block diffusion and conversion from tiny-ar: likelihood, text and TPF by block size, curves, "
                   "the exact cache, the stop", blocks_cmd.run, (blocks_cmd.parts, blocks_cmd.runs, _quiet)),
        "llada21": ("the tiny LLaDA2.1 against the AR twin with its KV cache: tokens/s at batch 1 and 4, TPF, gen-PPL "
                    "by a neutral judge on prompts of every form, the EOS stop", _bench_llada21, (_candidates, _quiet)),
        "lm-eval": ("every sampler's score, TPF and time on a shipped lm-eval task, through lm-eval", _bench_lm_eval,
                    (_limit, _quiet)),
        "draft-edit": ("notebook 04's sweeps on tiny-cap: editing or not, the S-Q grid, corrections", _bench_notebook, (_quiet,)),
        "steering": ("notebook 06's soft-steering table: Topic strengths and cfg_scale on tiny", _bench_notebook, (_quiet,)),
        "roofline": ("when does parallel decoding pay: a cached pass's time against the positions it computes, beside "
                     "a roofline of this machine's FLOP/s and bandwidth", roofline.run_cli, (roofline.add_flags, _quiet)),
        "loop-cost": ("the decoding loop's time per step against its bare forwards, split, for the cached AR twin and "
                      "tiny-llada21", loop_cost.run_cli, (loop_cost.add_flags, _quiet)),
    }


def run(a) -> int:
    """The chosen benchmark, its --repeats and --n checked first."""
    for flag in ("repeats", "n"):
        value = getattr(a, flag, None)
        if value is not None and value < 1:
            raise ValueError(f"--{flag} must be a positive integer, got {value}")
    return a.bench(a)


# --- the flags, one function each (a benchmark lists the ones it reads) ------------------------------------
def _task_pairs(p) -> None:
    p.add_argument("--pairs", default="sudoku,facts,add", help="task model pairs (default: sudoku,facts,add)")
    p.add_argument("--rows", help="only these rows of one pair (labels, ';' between), run again into --out's tasks.json")
    p.add_argument("--device", default="cpu", help="cpu, cuda, ... (default: cpu)")


def _items(p) -> None:
    p.add_argument("--n", type=int, default=None, help="held-out items per task (default: all)")


def _limit(p) -> None:
    p.add_argument("--limit", type=int, default=None, help="items of the task (default: all 200)")


def _model_only(p) -> None:
    p.add_argument("--model", default="tiny", help="'tiny', 'tiny-cap', 'tiny-ar' or a model folder (default: tiny)")


def _device(p) -> None:
    p.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, ... (default: cpu)")


def _ar_model(p) -> None:
    p.add_argument("--ar-model", default="tiny-ar", help="causal model for gen-PPL and the AR row")


def _cap_model(p) -> None:
    p.add_argument("--cap-model", default=None, help="also run the CAP variant, reported under 'cap' (e.g. tiny-cap)")


def _prompts(p) -> None:
    p.add_argument("--prompts", type=int, default=96,
                   help="held-out prompts (default 96; with 32, gaps of 3%% in gen-PPL are within noise)")


def _gen_length(default: int, note: str = ""):
    def add(p) -> None:
        p.add_argument("--gen-length", type=int, default=None,
                       help=f"answer length (default {default}{', ' + note if note else ''})")
    return add


def _repeats(default: int | None, shown: str | None = None):
    def add(p) -> None:
        p.add_argument("--repeats", type=int, default=default, help=f"runs to time (default {shown or default})")
    return add


def _only(p) -> None:
    p.add_argument("--only", nargs="*", help="run only these sampler names")


def _seed(p) -> None:
    p.add_argument("--seed", type=int, default=0)


def _quiet(p) -> None:
    p.add_argument("--quiet", action="store_true", help="no progress lines")


def _rounds(p) -> None:
    p.add_argument("--rounds", type=int, default=2, help="rounds over the thread settings (default 2)")


def _keywords(p) -> None:
    p.add_argument("--keywords", action="append", metavar="A,B,C",
                   help="a keyword set to test instead of the built-in triples (repeatable)")


def _triples(p) -> None:
    p.add_argument("--triples", type=int, default=30, help="built-in keyword triples (default 30)")


def _samples(p) -> None:
    p.add_argument("--samples", type=int, default=4, help="samples per keyword set (default 4)")


def _methods(p) -> None:
    p.add_argument("--methods", nargs="*", help="keyword methods to compare, the first one reported at the top "
                   "(default: place boost boost_only)")


def _sizes(p) -> None:
    p.add_argument("--sizes", type=int, nargs="*", help="batch sizes (default 1 4 8 16; on a GPU it goes on "
                   "doubling until memory runs out)")


def _lengths(p) -> None:
    p.add_argument("--lengths", type=int, nargs="*", help="answer lengths (default 32 64 128 256 512)")


def _no_extend(p) -> None:
    p.add_argument("--no-extend", action="store_true", help="skip lengths past the models' context instead of "
                   "running them on stretched-position copies (speed only)")


def _likelihood_models(p) -> None:
    p.add_argument("--models", nargs="+", default=["tiny", "tiny-cap"], help="masked models (names or folders; "
                   "default: tiny tiny-cap), each against --ar-model")


def _mc_nums(p) -> None:
    p.add_argument("--mc-nums", type=int, nargs="+", default=[1, 4, 16, 64],
                   help="Monte-Carlo draws per window (default 1 4 16 64)")


def _windows(p) -> None:
    p.add_argument("--windows", type=int, default=32, help="held-out windows, evenly spaced (default 32; 0: all)")


def _window_tokens(p) -> None:
    p.add_argument("--window-tokens", type=int, default=256, help="tokens per window (default 256; at most every "
                   "model's context, e.g. 64 for the notebook's from-scratch models)")


def _clients(p) -> None:
    p.add_argument("--clients", type=int, nargs="*", help="concurrent client levels (default 1 4 16 64)")


def _requests(p) -> None:
    p.add_argument("--requests", type=int, default=2, help="requests per client per level (default 2)")


# --- the benchmarks ----------------------------------------------------------------------------------------
def _bench_likelihood(a) -> int:
    if a.windows < 0:
        raise ValueError(f"--windows must be 0 (all) or at least 2, got {a.windows}")
    r = likelihood.bench_likelihood(a.models, a.ar_model, a.mc_nums, windows=a.windows or None, seed=a.seed,
                         device=a.device, log=progress_log(a), window_tokens=a.window_tokens)
    return report(a, "likelihood.json", r, lambda r: print(likelihood.table(r)))


def _bench_serve(a) -> int:
    """serve: `labkit serve` in-process under 1-64 concurrent clients, batching on and off, against the loop."""
    r = serve.bench_serve(load_model(a), levels=tuple(a.clients or serve.LEVELS), requests=a.requests,
                    gen_length=a.gen_length or 32, log=progress_log(a))
    return report(a, "serve.json", r, lambda r: print(serve.table(r)))


def _bench_cache(a) -> int:
    r = speed.bench_cache(load_model(a), load(a.ar_model, device=a.device), repeats=a.repeats, gen_length=a.gen_length or 128)

    def table(r):
        print(f"== KV cache, {r['model']} on {r['device']}, {r['prompts']} long held-out prompts "
              f"({min(r['prompt_tokens'])}-{max(r['prompt_tokens'])} tokens), one batch, greedy, block 32, "
              f"median of {a.repeats} interleaved runs")
        print(f"{'rule':<16}{'cache':<8}{'seconds':>9}{'speedup':>9}{'identical':>11}{'gen-PPL':>9}")
        for rule, rows in r["rules"].items():
            for k, v in rows.items():
                print(f"{rule:<16}{k:<8}{v['seconds']:>9.3f}{v['speedup']:>9.2f}{v['identical']:>11.3f}"
                      f"{v['gen_ppl']:>9.2f}")
    return report(a, "cache.json", r, table)


def _bench_sweeps(a) -> int:
    """batch: the batch sweep; length: the AR-vs-diffusion length study. JSON + a plot each."""
    lm = load_model(a)
    log = progress_log(a)
    if a.what == "batch":
        r = speed.bench_batch(lm, sizes=a.sizes or (1, 4, 8, 16), gen_length=a.gen_length or 64, log=log)
        fig = speed.sweep_figure(batch=r)
    else:
        given = {k: v for k, v in (("lengths", a.lengths), ("repeats", a.repeats)) if v}   # else bench_length's defaults
        r = speed.bench_length(lm, load(a.ar_model, device=a.device), extend_context=not a.no_extend, log=log, **given)
        fig = speed.sweep_figure(length=r)
    out = save(a, f"{a.what}.json", r)
    fig.savefig(out / f"{a.what}.png", dpi=110)
    if a.json:
        print(json.dumps(r))
        return 0
    if a.what == "batch":
        print(f"== batch sweep, {r['model']} on {r['device']}, {r['gen_length']} tokens, one token per step")
        print(f"{'batch':>6}{'ms/step':>10}{'tokens/s':>10}{'peak MiB':>10}")
        for row in r["rows"]:
            print(f"{row['batch']:>6}{row['ms_per_step']:>10.1f}{row['tokens_per_s']:>10.0f}"
                  f"{row['peak_bytes'] / 2**20:>10.0f}")
        if r["stopped"]:
            print(r["stopped"])
    else:
        print(f"== AR ({r['ar_model']}) vs diffusion ({r['model']}: {r['fixed_steps']} fixed steps, "
              f"threshold {r['threshold']}), 4 blocks per answer")
        print("NFE / seconds per answer; cached = KV cache (AR: exact; diffusion: dual cache)")
        print(f"{'length':>7}" + "".join(f"{n:>16}" for n in ("ar", "ar cached", "diff fixed", "diff thr", "diff thr cached")))
        for row in r["rows"]:
            print(f"{row['length']:>7}" + "".join(f"{row[n]['nfe']:>8} {row[n]['seconds']:>7.2f}" for n in speed.LENGTH_RUNS)
                  + ("  (beyond the trained context: speed only)" if row["beyond_context"] else ""))
        if r["skipped"]:
            print(f"skipped: {r['skipped']}")
    print(f"written: {out / (a.what + '.json')}, {out / (a.what + '.png')}")
    return 0


def _bench_overhead(a) -> int:
    def table(r):
        print(f"== labkit overhead, {r['model']} on {r['device']}, gen_length {r['gen_length']}, {r['nfe']} "
              f"forward passes, median of {r['repeats']} interleaved runs")
        print(f"generate() {r['full_s']:.3f} s | stream() without trace {r['no_trace_s']:.3f} s | "
              f"bare forwards {r['bare_forward_s']:.3f} s")
        print(f"labkit_overhead_ratio {r['labkit_overhead_ratio']:.3f} ({100 * r['overhead_share']:.1f}% of the "
              f"wall time outside the model; target <= 5%) | trace_overhead_ratio {r['trace_overhead_ratio']:.3f} "
              f"(target <= 1.10)")
    return report(a, "overhead.json", speed.bench_overhead(load_model(a), repeats=a.repeats, gen_length=a.gen_length or 128),
                  table)


def _bench_controls(a) -> int:
    lm, ar = load_model(a), load(a.ar_model, device=a.device)
    a.gen_length = a.gen_length or 64
    triples = controls.parse_keywords(a.keywords) if a.keywords else controls.keyword_triples(a.triples, seed=a.seed)
    methods = a.methods or ["place", "boost", "boost_only"]
    runs, free = {}, None
    for m in methods:
        runs[m] = controls.bench_keywords(lm, ar, triples, method=m, samples=a.samples, gen_length=a.gen_length,
                                 seed=a.seed, unconstrained=free)
        free = runs[m]["unconstrained"]
    main = runs[methods[0]]
    result = {k: main[k] for k in ("method", "triples", "samples", "hit_at_least_2", "hit_all_3",
                                   "gen_ppl", "gen_ppl_unconstrained", "gen_ppl_ratio")}
    result["methods"] = {m: {k: v for k, v in r.items() if k not in ("texts", "unconstrained")}
                         for m, r in runs.items()}
    result["examples"] = [{"keywords": list(t), "text": x} for t, x in zip(triples, main["texts"][::a.samples])][:4]
    if not a.keywords:
        result.update(controls.bench_edit(lm, ar, seed=a.seed))
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if not a.keywords:          # the committed results are the built-in set's
        (out / "controls.json").write_text(json.dumps(result, indent=1))
    if a.json:
        print(json.dumps(result))
        return 0
    print(f"== keyword control, {a.model}, {len(triples)} triples x {a.samples} samples, gen_length "
          f"{a.gen_length}, low-confidence T=1.0 top-p 0.9 (targets: >=2 of 3 95%, all 3 85%, gen-PPL <= 1.5x)")
    print(f"{'method':<12}{'>=2 of 3':>10}{'all 3':>8}{'gen-PPL':>9}{'free PPL':>10}{'ratio':>7}{'seconds':>9}")
    for m, r in result["methods"].items():
        print(f"{m:<12}{r['hit_at_least_2']:>10.3f}{r['hit_all_3']:>8.3f}{r['gen_ppl']:>9.2f}"
              f"{r['gen_ppl_unconstrained']:>10.2f}{r['gen_ppl_ratio']:>7.2f}{r['seconds']:>9.1f}")
    for name in ("infill", "renoise"):
        if name in result:
            r = result[name]
            print(f"{name:<12} kept byte-identical {r['kept_identical']:.3f} of {r['samples']}, gen-PPL "
                  f"{r['gen_ppl']:.2f} (original lines {r['gen_ppl_original']:.2f})")
    if not a.keywords:
        print(f"written: {out / 'controls.json'}")
    return 0


def _bench_panel(a) -> int:
    """Generate → every view re-rendered, on the lab panel: 64 tokens, 64 steps, greedy; each
    thread setting quiet and next to a busy neighbour process; live drawing on and off; S mode."""
    def table(r):
        print(f"== lab panel, {r['model']}, 64 tokens in 64 steps, greedy, {r['rounds']} rounds of {r['repeats']} "
              f"presses per setting, {r['cores']} cores (target: generate <= 1.5 s)")
        print(f"{'threads':<30}{'neighbour':>10}{'n':>3}{'median s':>10}{'per round':>16}{'slowest s':>11}"
              f"{'first press s':>15}")
        for row in r["summary"]:
            rounds = "/".join(f"{x:.2f}" for x in row["per_round"])
            print(f"{row['candidate']:<30}{'busy' if row['neighbour'] else '-':>10}{row['threads']:>3}"
                  f"{row['generate_median_s']:>10.3f}{rounds:>16}{row['generate_max_s']:>11.3f}"
                  f"{row['first_press_max_s']:>15.3f}")
        lv, sm = r["live"], r["s_mode"]
        print(f"live drawing: {lv['on']['generate_median_s']:.3f} s with ({lv['on']['live_redraws_median']:.0f} "
              f"redraws) against {lv['off']['generate_median_s']:.3f} s without: x{lv['cost_ratio']:.3f}")
        print(f"S mode on {sm['model']}: generate {sm['generate_median_s']:.3f} s, {sm['steps']} steps; "
              f"scrub {1000 * sm['scrub_median_s']:.1f} ms per step move")
    r = panel.bench_panel(a.model, repeats=a.repeats, rounds=a.rounds, log=progress_log(a))
    return report(a, "panel.json", r, table)


def _bench_samplers(a) -> int:
    lm, ar = load_model(a), load(a.ar_model, device=a.device)
    log = progress_log(a)
    a.gen_length = a.gen_length or 128
    kw = dict(n_prompts=a.prompts, names=a.only or None, seed=a.seed, log=log, gen_length=a.gen_length)
    results = samplers.bench_samplers(lm, ar, **kw)
    runs = {a.model: results}
    if a.cap_model:
        cap = samplers.bench_samplers(load(a.cap_model, device=a.device), ar, with_ar=False, **kw)
        results = {**results, "cap": cap}
        runs[a.cap_model] = cap
    out = save(a, "samplers.json", results)
    fig = samplers.frontier_figure(runs)
    fig.savefig(out / "samplers_frontier.png", dpi=120)
    if a.json:
        print(json.dumps(results))
    else:
        for model, res in runs.items():
            print(samplers.table(res, title=f"== {model} ({a.prompts} held-out prompts, gen_length {a.gen_length}, "
                                   f"block 32, greedy, batch 1)"))
        print(f"written: {out / 'samplers.json'}, {out / 'samplers_frontier.png'}")
    return 0


def _bench_tasks(a) -> int:
    pairs = [p.strip() for p in a.pairs.split(",") if p.strip()]
    if not pairs or any(p not in tasks.PAIRS for p in pairs):
        raise ValueError(f"--pairs must name some of {', '.join(tasks.PAIRS)}, got {a.pairs!r}")
    if a.rows:
        result = tasks.refresh_rows(json.loads(open(bench_input(a, "tasks.json")).read()), pairs[0],
                              [x.strip() for x in a.rows.split(";")], n=a.n, device=a.device, log=progress_log(a))
    else:
        result = tasks.bench_tasks(bench_input(a, "samplers.json"), pairs=pairs, n=a.n, device=a.device, log=progress_log(a))
    out = save(a, "tasks.json", result)
    if set(pairs) == set(tasks.PAIRS) and not a.rows:
        task_tables.frontier_figure(result).savefig(out / "tasks_frontier.png", dpi=120)
    if a.json:
        print(json.dumps(result))
    else:
        for pair in pairs:
            for task in tasks.PAIRS[pair][2]:
                print(task_tables.table(result, pair, task), "\n")
        print(f"written: {out / 'tasks.json'}")
    return 0


def _bench_learned_policy(a) -> int:
    result = learned_policy.bench_learned_policy(bench_input(a, "tasks.json"), n=a.n, log=progress_log(a))
    return report(a, "learned_policy.json", result, lambda r: print(learned_policy.text_table(r)))


def _candidates(p) -> None:
    p.add_argument("--candidates", help="comma-separated block-model folders measured beside it for the choice of the "
                   "model, each named by its folder (e.g. runs/tiny-llada21-first-line,runs/tiny-llada21-any)")


def _bench_llada21(a) -> int:
    folders = [f.strip() for f in (a.candidates or "").split(",") if f.strip()]
    choice = {Path(f).name: f for f in folders if load(f).net.config.block_size}
    result = llada21.bench_llada21(choice=choice or None, log=progress_log(a))
    return report(a, "llada21.json", result, lambda r: print(llada21.table(r)))


def _bench_notebook(a) -> int:
    """draft-edit, steering: the sweeps notebooks 04 and 06 print from their JSON (and run in part live)."""
    mod, run = {"draft-edit": (draft_edit, draft_edit.bench_draft_edit), "steering": (steering, steering.bench_steering)}[a.what]
    return report(a, f"{a.what.replace('-', '_')}.json", run(log=progress_log(a)), lambda r: print(mod.table(r)))


def _bench_lm_eval(a) -> int:
    if a.limit is not None and a.limit < 1:
        raise ValueError(f"--limit must be a positive integer, got {a.limit}")
    result = lm_eval.bench_lm_eval(limit=a.limit, log=progress_log(a))
    return report(a, "lm_eval.json", result, lambda r: print(lm_eval.table(r)))
