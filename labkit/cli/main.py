"""The `labkit` command: generate, eval, train, bench.

    labkit generate --model tiny --steps 64 "ROMEO:"
    labkit generate --sampler speed "ROMEO:"          # LLaDA2.1 S mode
    labkit eval --model tiny --json
    labkit train --recipe tiny --out runs/tiny
    labkit bench samplers --json
"""
from __future__ import annotations

import argparse
import json
import sys
import time


def _generate(a) -> int:
    from .. import defaults
    from ..decode import check_knobs, check_seed, generate
    from ..models.load import embedded_kind
    from ..samplers import registry

    # everything that needs no model is checked first, so bad input fails before the model loads
    html_path = _output_file(a.html, "--html", ".html")
    trace_path = _output_file(a.trace, "--trace", ".npz")
    chosen = a.model is not None
    if not chosen:                              # S / Q mode on the lab's model that can do them
        a.model = defaults.PARALLEL_MODEL if a.sampler in registry.PRESETS else defaults.MODEL
    causal = embedded_kind(a.model) == "causal"  # known before loading for the embedded models
    name, sampler, notes = _sampler(a, default="autoregressive" if causal else "low_confidence")
    check_knobs(sampler, gen_length=a.gen_length, block_length=a.block_length, steps=a.steps,
                cfg_scale=a.cfg_scale, penalty_lambda=a.penalty_lambda)
    check_seed(a.seed)
    controls = _controls(a)
    if not chosen and a.sampler in registry.PRESETS:
        notes.insert(0, f"{a.sampler} mode runs on {a.model}, the lab's model for parallel decoding "
                        f"(choose another with --model)")
    lm = _load(a)
    if a.sampler is None and lm.kind == "causal" and name != "autoregressive":
        name, sampler, notes = _sampler(a, default="autoregressive")     # its flags checked again
    for note in notes:
        _note(note)
    prompt = a.prompt if a.prompt.endswith("\n") or not a.prompt.endswith(":") else a.prompt + "\n"
    t0 = time.perf_counter()
    out = generate(lm, prompt, sampler, gen_length=a.gen_length, block_length=a.block_length,
                   steps=a.steps, cfg_scale=a.cfg_scale, seed=a.seed, eos_early_stop=a.eos_early_stop,
                   penalty_lambda=a.penalty_lambda, controls=controls)
    seconds = time.perf_counter() - t0
    print(prompt + out.text)
    print(f"--- NFE {out.stats['nfe']} · {out.stats['gen_tokens']} tokens · "
          f"TPF {out.stats['tpf']:.2f} · {seconds:.2f} s · {out.stats['tps']:.1f} tok/s", file=sys.stderr)
    note = defaults.parallel_note(lm.name, name, out.stats["tpf"])
    if note:
        _note(note)
    if html_path:
        from ..ui.viz import to_html
        path = to_html(out.trace, lm, html_path, title=f"{lm.name}: {prompt.strip()}", stats=out.stats)
        print(f"step-through view written to {path}", file=sys.stderr)
    if trace_path:
        print(f"trace written to {out.trace.save(trace_path)}", file=sys.stderr)
    return 0


def _note(text: str) -> None:
    print(f"labkit: note: {text}", file=sys.stderr)


def _output_file(value: str | None, flag: str, suffix: str):
    """The file an output flag names: its folder must exist and it must not be a folder. A
    name without the suffix gets it (the file written is the one reported)."""
    from pathlib import Path

    if value is None:
        return None
    path = Path(value).expanduser()
    if path.is_dir() or value.endswith(("/", "\\")):
        raise ValueError(f"{flag} takes a file name, got the folder {value!r} (e.g. {flag} {value.rstrip('/')}/run{suffix})")
    if not path.parent.is_dir():
        raise ValueError(f"{flag}: folder {str(path.parent)!r} does not exist; create it first")
    return path if path.suffix.lower() == suffix else path.with_name(path.name + suffix)


def _controls(a) -> list:
    from ..controls import Ban, Keywords, Pin

    controls = []
    if a.keywords:
        controls.append(Keywords([w.strip() for w in a.keywords.split(",")]))
    if a.ban:
        controls.append(Ban([w.strip() for w in a.ban.split(",")]))
    for spec in a.pin or []:
        offset, sep, text = spec.partition(":")
        if not sep or not offset.strip().isdigit():
            raise ValueError(f"--pin takes OFFSET:TEXT (a token offset of the answer, then the text), got {spec!r}")
        controls.append(Pin(int(offset), text))
    return controls


def _sampler(a, default: str = "low_confidence"):
    """(rule name, rule object, notes) from the flags; `default` is the rule when --sampler is
    not given. A flag the rule does not read, or that contradicts another, is refused; one that
    only does nothing here (--steps under a rule that runs until each block is done, --top-p at
    temperature 0) gets a note, printed once everything is checked."""
    from .. import defaults
    from ..samplers import registry

    name, notes = a.sampler or default, []
    if a.remasking is not None:
        if name not in ("low_confidence", "random"):
            raise ValueError(f"--remasking: not read by sampler {name!r} (only by low_confidence)")
        if a.sampler == "random" and a.remasking != "random":
            raise ValueError(f"--remasking {a.remasking} contradicts --sampler random")
        name = "random" if a.remasking == "random" else name
    temperature = defaults.TEMPERATURE if a.temperature is None else a.temperature
    if a.top_p is not None and temperature == 0:
        notes.append("--top-p does nothing at temperature 0 (greedy decoding)")
    top_p = (defaults.TOP_P if a.top_p is None else a.top_p) if temperature > 0 else None
    flags = {"threshold": a.threshold, "editing_threshold": a.editing_threshold, "factor": a.factor,
             "entropy_bound": a.entropy_bound}
    for knob, value in flags.items():
        if value is not None and knob not in registry.knobs(name):
            reads = sorted(registry.knobs(name) & set(flags))
            raise ValueError(f"--{knob.replace('_', '-')}: not read by sampler {name!r}"
                             + (f" (it reads {', '.join('--' + r.replace('_', '-') for r in reads)})" if reads
                                else f"; use --sampler {' or '.join(registry.readers(knob))}"))
    if a.steps_given and not registry.budgeted(name):
        notes.append(f"--steps is ignored by sampler {name!r}: it runs each block until it is done")
    a.steps = defaults.STEPS if a.steps is None else a.steps
    return name, registry.rule(name, temperature=temperature, top_p=top_p, **flags), notes


def _save(a, name: str, result):
    """Write `result` as JSON to a.out / name (creating the folder); return the folder."""
    from pathlib import Path

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / name).write_text(json.dumps(result, indent=1))
    return out


def _bench(a) -> int:
    if a.repeats is not None and a.repeats < 1:
        raise ValueError(f"--repeats must be a positive integer, got {a.repeats}")
    if a.what != "length":
        a.repeats = a.repeats or 5
    return {"panel": _bench_panel, "controls": _bench_controls, "overhead": _bench_overhead,
            "batch": _bench_sweeps, "length": _bench_sweeps, "cache": _bench_cache}.get(a.what, _bench_samplers)(a)


def _bench_cache(a) -> int:
    from ..bench.speed import bench_cache
    from ..models.load import load

    r = bench_cache(_load(a), load(a.ar_model, device=a.device), repeats=a.repeats, gen_length=a.gen_length or 128)
    out = _save(a, "cache.json", r)
    if a.json:
        print(json.dumps(r))
        return 0
    print(f"== KV cache, {r['model']} on {r['device']}, {r['prompts']} long held-out prompts "
          f"({min(r['prompt_tokens'])}-{max(r['prompt_tokens'])} tokens), one batch, greedy, block 32, "
          f"median of {a.repeats} interleaved runs")
    print(f"{'rule':<16}{'cache':<8}{'seconds':>9}{'speedup':>9}{'identical':>11}{'gen-PPL':>9}")
    for rule, rows in r["rules"].items():
        for k, v in rows.items():
            print(f"{rule:<16}{k:<8}{v['seconds']:>9.3f}{v['speedup']:>9.2f}{v['identical']:>11.3f}{v['gen_ppl']:>9.2f}")
    print(f"written: {out / 'cache.json'}")
    return 0


def _bench_sweeps(a) -> int:
    """batch: the batch sweep; length: the AR-vs-diffusion length study. JSON + a plot each."""
    from ..bench.speed import LENGTH_RUNS, bench_batch, bench_length, sweep_figure
    from ..models.load import load

    lm = _load(a)
    log = (lambda m: print(m, file=sys.stderr)) if not a.quiet else None
    if a.what == "batch":
        r = bench_batch(lm, sizes=a.sizes or (1, 4, 8, 16), gen_length=a.gen_length or 64, log=log)
        fig = sweep_figure(batch=r)
    else:
        given = {k: v for k, v in (("lengths", a.lengths), ("repeats", a.repeats)) if v}   # else bench_length's defaults
        r = bench_length(lm, load(a.ar_model, device=a.device), extend_context=not a.no_extend, log=log, **given)
        fig = sweep_figure(length=r)
    out = _save(a, f"{a.what}.json", r)
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
            print(f"{row['length']:>7}" + "".join(f"{row[n]['nfe']:>8} {row[n]['seconds']:>7.2f}" for n in LENGTH_RUNS)
                  + ("  (beyond the trained context: speed only)" if row["beyond_context"] else ""))
        if r["skipped"]:
            print(f"skipped: {r['skipped']}")
    print(f"written: {out / (a.what + '.json')}, {out / (a.what + '.png')}")
    return 0


def _bench_overhead(a) -> int:
    from ..bench.speed import bench_overhead

    r = bench_overhead(_load(a), repeats=a.repeats, gen_length=a.gen_length or 128)
    out = _save(a, "overhead.json", r)
    if a.json:
        print(json.dumps(r))
        return 0
    print(f"== labkit overhead, {r['model']} on {r['device']}, gen_length {r['gen_length']}, {r['nfe']} forward "
          f"passes, median of {r['repeats']} interleaved runs")
    print(f"generate() {r['full_s']:.3f} s | stream() without trace {r['no_trace_s']:.3f} s | "
          f"bare forwards {r['bare_forward_s']:.3f} s")
    print(f"labkit_overhead_ratio {r['labkit_overhead_ratio']:.3f} ({100 * r['overhead_share']:.1f}% of the wall "
          f"time outside the model; target <= 5%) | trace_overhead_ratio {r['trace_overhead_ratio']:.3f} "
          f"(target <= 1.10)")
    print(f"written: {out / 'overhead.json'}")
    return 0


def _bench_controls(a) -> int:
    from pathlib import Path

    from ..bench.controls import bench_edit, bench_keywords, keyword_triples, parse_keywords
    from ..models.load import load

    lm, ar = _load(a), load(a.ar_model, device=a.device)
    a.gen_length = a.gen_length or 64
    triples = parse_keywords(a.keywords) if a.keywords else keyword_triples(a.triples, seed=a.seed)
    methods = a.methods or ["place", "boost", "boost_only"]
    runs, free = {}, None
    for m in methods:
        runs[m] = bench_keywords(lm, ar, triples, method=m, samples=a.samples, gen_length=a.gen_length,
                                 seed=a.seed, unconstrained=free)
        free = runs[m]["unconstrained"]
    main = runs[methods[0]]
    result = {k: main[k] for k in ("method", "triples", "samples", "hit_at_least_2", "hit_all_3",
                                   "gen_ppl", "gen_ppl_unconstrained", "gen_ppl_ratio")}
    result["methods"] = {m: {k: v for k, v in r.items() if k not in ("texts", "unconstrained")}
                         for m, r in runs.items()}
    result["examples"] = [{"keywords": list(t), "text": x} for t, x in zip(triples, main["texts"][::a.samples])][:4]
    if not a.keywords:
        result.update(bench_edit(lm, ar, seed=a.seed))
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
    from ..bench.panel import bench_panel

    log = (lambda m: print(m, file=sys.stderr)) if not a.quiet else None
    r = bench_panel(a.model, repeats=a.repeats, rounds=a.rounds, log=log)
    out = _save(a, "panel.json", r)
    if a.json:
        print(json.dumps(r))
        return 0
    print(f"== lab panel, {r['model']}, 64 tokens in 64 steps, greedy, {r['rounds']} rounds of {r['repeats']} "
          f"presses per setting, {r['cores']} cores (target: generate <= 1.5 s)")
    print(f"{'threads':<30}{'neighbour':>10}{'n':>3}{'median s':>10}{'per round':>16}{'slowest s':>11}"
          f"{'first press s':>15}")
    for row in r["summary"]:
        rounds = "/".join(f"{x:.2f}" for x in row["per_round"])
        print(f"{row['candidate']:<30}{'busy' if row['neighbour'] else '-':>10}{row['threads']:>3}"
              f"{row['generate_median_s']:>10.3f}{rounds:>16}{row['generate_max_s']:>11.3f}"
              f"{row['first_press_max_s']:>15.3f}")
    lv = r["live"]
    print(f"live drawing: {lv['on']['generate_median_s']:.3f} s with ({lv['on']['live_redraws_median']:.0f} redraws) "
          f"against {lv['off']['generate_median_s']:.3f} s without: x{lv['cost_ratio']:.3f}")
    sm = r["s_mode"]
    print(f"S mode on {sm['model']}: generate {sm['generate_median_s']:.3f} s, {sm['steps']} steps; "
          f"scrub {1000 * sm['scrub_median_s']:.1f} ms per step move")
    print(f"written: {out / 'panel.json'}")
    return 0


def _bench_samplers(a) -> int:
    from ..bench.samplers import bench_samplers, frontier_figure, table
    from ..models.load import load

    lm, ar = _load(a), load(a.ar_model, device=a.device)
    log = (lambda m: print(m, file=sys.stderr)) if not a.quiet else None
    a.gen_length = a.gen_length or 128
    kw = dict(n_prompts=a.prompts, names=a.only or None, seed=a.seed, log=log, gen_length=a.gen_length)
    results = bench_samplers(lm, ar, **kw)
    runs = {a.model: results}
    if a.cap_model:
        cap = bench_samplers(load(a.cap_model, device=a.device), ar, with_ar=False, **kw)
        results = {**results, "cap": cap}
        runs[a.cap_model] = cap
    out = _save(a, "samplers.json", results)
    fig = frontier_figure(runs)
    fig.savefig(out / "samplers_frontier.png", dpi=120)
    if a.json:
        print(json.dumps(results))
    else:
        for model, res in runs.items():
            print(table(res, title=f"== {model} ({a.prompts} held-out prompts, gen_length {a.gen_length}, "
                                   f"block 32, greedy, batch 1)"))
        print(f"written: {out / 'samplers.json'}, {out / 'samplers_frontier.png'}")
    return 0


def _eval(a) -> int:
    from ..eval.evaluate import evaluate

    lm = _load(a)
    t0 = time.perf_counter()
    result = evaluate(lm, seed=a.seed)
    result["eval_seconds"] = round(time.perf_counter() - t0, 1)
    if a.card:
        from ..training.card import write_card
        print(f"model card written to {write_card(a.model, result)}", file=sys.stderr)
    if a.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k:>22}: {v!r}" if k == "example" else f"{k:>22}: {v}")
    return 0


def _train(a) -> int:
    import dataclasses

    from ..training.loop import RECIPES, train

    if a.recipe not in RECIPES:
        raise ValueError(f"recipe must be one of {', '.join(RECIPES)}, got {a.recipe!r}")
    overrides = {k: getattr(a, k) for k in ("steps", "seed") if getattr(a, k) is not None}
    cfg = dataclasses.replace(RECIPES[a.recipe], **overrides)
    out = train(cfg, a.out, device=a.device)
    print(f"trained model saved in {out}; try: labkit eval --model {out}")
    return 0


def _load(a):
    import torch

    from ..models.load import load
    dtype = {"auto": None, "float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[a.dtype]
    return load(a.model, device=a.device, dtype=dtype, trust_remote_code=a.trust_remote_code)


class _Given(argparse.Action):
    """Store the value and remember that the flag was given (a default cannot tell)."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_given", True)


def _model_args(p: argparse.ArgumentParser, default: str | None = "tiny", help_default: str = "tiny") -> None:
    p.add_argument("--model", default=default, help=f"'tiny', 'tiny-cap', 'tiny-ar', a model folder, or a "
                   f"hub id (default: {help_default})")
    p.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, ... (default: cpu)")
    p.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"])
    p.add_argument("--trust-remote-code", action="store_true", help="needed by LLaDA / Dream hub models")


def build_parser() -> argparse.ArgumentParser:
    from .. import defaults
    from ..samplers import registry

    p = argparse.ArgumentParser(prog="labkit", description="See, teach and measure diffusion LMs.")
    sub = p.add_subparsers(dest="command", required=True)

    g = sub.add_parser("generate", help="generate text and report NFE and time")
    g.add_argument("prompt")
    _model_args(g, default=None, help_default=f"{defaults.MODEL}; {defaults.PARALLEL_MODEL} for "
                f"--sampler speed / quality")
    g.add_argument("--gen-length", type=int, default=defaults.GEN_LENGTH)
    g.add_argument("--block-length", type=int, default=defaults.BLOCK_LENGTH)
    g.add_argument("--steps", type=int, action=_Given, help=f"step budget (default {defaults.STEPS}; "
                   "rules that run until each block is done ignore it)")
    g.add_argument("--temperature", type=float, help=f"default {defaults.TEMPERATURE}; 0 is greedy")
    g.add_argument("--top-p", type=float, help=f"nucleus at temperature > 0 (default {defaults.TOP_P})")
    g.add_argument("--sampler", choices=registry.NAMES, help="rule (default: low_confidence; autoregressive "
                   "for a causal model); speed / quality are LLaDA2.1's S and Q modes")
    g.add_argument("--threshold", type=float, help="threshold, draft_edit, speed, quality: commit at or "
                   "above this confidence, in [0, 1]")
    g.add_argument("--editing-threshold", type=float, help="draft_edit, speed, quality: edit at or above "
                   "this probability, in [0, 1]")
    g.add_argument("--factor", type=float, help="factor: Fast-dLLM's factor (> 0, default 1.0)")
    g.add_argument("--entropy-bound", type=float, help="entropy_bound: the EB-sampler's bound in nats "
                   "(>= 0, default 0.1)")
    g.add_argument("--remasking", choices=["low_confidence", "random"], help="low_confidence (default) "
                   "or random (the same as --sampler random)")
    g.add_argument("--eos-early-stop", action="store_true", help="stop once an EOS is written")
    g.add_argument("--penalty-lambda", type=float, default=0.0, help="anti-stutter penalty (SGLang)")
    g.add_argument("--cfg-scale", type=float, default=0.0)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--keywords", metavar="A,B", help="words that must appear (labkit.controls.Keywords)")
    g.add_argument("--ban", metavar="A,B", help="words that must not appear (labkit.controls.Ban)")
    g.add_argument("--pin", action="append", metavar="OFFSET:TEXT", help="fixed text at a token offset "
                   "of the answer (repeatable)")
    g.add_argument("--html", help="write the step-through view to this HTML file")
    g.add_argument("--trace", help="save the trace (.npz) to this path")
    g.set_defaults(fn=_generate, steps_given=False)

    e = sub.add_parser("eval", help="held-out accuracy, ELBO and sample quality")
    _model_args(e)
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--json", action="store_true", help="print one JSON object")
    e.add_argument("--card", action="store_true", help="write the figures into the model card")
    e.set_defaults(fn=_eval)

    t = sub.add_parser("train", help="train one of the embedded models (resumes)")
    t.add_argument("--recipe", default="tiny", help="tiny-ar (from scratch), tiny (adapted from tiny-ar) "
                   "or tiny-cap (fine-tuned from tiny); default: tiny")
    t.add_argument("--out", default="runs/tiny", help="output folder; resumes from its ckpt.pt")
    t.add_argument("--steps", type=int)
    t.add_argument("--seed", type=int)
    t.add_argument("--device", default="cpu", help="cpu (default) or cuda: where the arithmetic runs")
    t.set_defaults(fn=_train)

    b = sub.add_parser("bench", help="benchmarks that print a table and write JSON and a plot")
    b.add_argument("what", choices=["samplers", "panel", "controls", "overhead", "batch", "length", "cache"],
                   help="samplers: the speed-quality table; panel: the lab panel's regenerate latency; "
                        "controls: keyword hit rates, infill and re-noise; overhead: labkit's cost around "
                        "the forward passes; batch: batch-size sweep; length: AR vs diffusion over answer length; "
                        "cache: prefix / dual KV cache speedup and identical outputs")
    _model_args(b)
    b.add_argument("--cap-model", default=None, help="also run the CAP variant, reported under 'cap' "
                   "(e.g. tiny-cap)")
    b.add_argument("--ar-model", default="tiny-ar", help="causal model for gen-PPL and the AR row")
    b.add_argument("--prompts", type=int, default=96,
                   help="samplers: held-out prompts (default 96; with 32, gaps of 3%% in gen-PPL are within noise)")
    b.add_argument("--gen-length", type=int, default=None,
                   help="answer length (samplers: default 128, block 32; controls: default 64)")
    b.add_argument("--only", nargs="*", help="run only these sampler names")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--out", default="benchmarks/results", help="folder for samplers.json and the plot")
    b.add_argument("--json", action="store_true", help="print one JSON object")
    b.add_argument("--quiet", action="store_true", help="no per-sampler progress lines")
    b.add_argument("--repeats", type=int, default=None, help="panel, overhead, cache, length: runs to time "
                   "(default 5; length: 3)")
    b.add_argument("--keywords", action="append", metavar="A,B,C",
                   help="controls: a keyword set to test instead of the built-in triples (repeatable)")
    b.add_argument("--sizes", type=int, nargs="*", help="batch: batch sizes (default 1 4 8 16; on a GPU "
                   "it goes on doubling until memory runs out)")
    b.add_argument("--lengths", type=int, nargs="*", help="length: answer lengths (default 32 64 128 256 512)")
    b.add_argument("--no-extend", action="store_true", help="length: skip lengths past the models' context "
                   "instead of running them on stretched-position copies (speed only)")
    b.add_argument("--rounds", type=int, default=2, help="panel: rounds over the thread settings (default 2)")
    b.add_argument("--triples", type=int, default=30, help="controls: built-in keyword triples (default 30)")
    b.add_argument("--samples", type=int, default=4, help="controls: samples per keyword set (default 4)")
    b.add_argument("--methods", nargs="*", help="controls: keyword methods to compare, the first one "
                   "reported at the top (default: place boost boost_only)")
    b.set_defaults(fn=_bench)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except (ValueError, FileNotFoundError, ModuleNotFoundError, PermissionError) as e:
        print(f"labkit {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
