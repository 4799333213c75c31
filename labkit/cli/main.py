"""The `labkit` command: generate, eval, train, train-rl, bench, serve, check-endpoint, batch.

    labkit generate --model tiny --steps 64 "ROMEO:"
    labkit generate --sampler speed "ROMEO:"          # LLaDA2.1 S mode
    labkit eval --model tiny --json
    labkit train --recipe tiny --out runs/tiny
    labkit train-rl --recipe tiny-sudoku-rl --out runs/tiny-sudoku-rl
    labkit bench samplers --json
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time

from ..eval.evaluate import evaluate
from ..eval.exact import evaluate_tasks
from ..samplers import registry
from ..tasks import TASKS, is_task_model, model_tasks
from ..training.card import save_eval
from ..training.recipes import RECIPES
from . import bench, doctor, generate, jobs, rl, serve, slides, student
from .common import load_model, model_args
from .generate import rule_args, sampler_from_flags


def _save_card_figures(model: str, result: dict) -> None:
    """--card: the figures stored as eval.json in the model's folder; benchmarks/docgen writes the card."""
    path = save_eval(model, result)
    print(f"figures stored in {path}; the card from them: python -m benchmarks.docgen cards {model}", file=sys.stderr)


def _eval(a) -> int:
    if a.tasks is not None or is_task_model(a.model):
        return _eval_tasks(a)
    lm = load_model(a)
    t0 = time.perf_counter()
    result = evaluate(lm, seed=a.seed)
    result["eval_seconds"] = round(time.perf_counter() - t0, 1)
    if a.card:
        _save_card_figures(a.model, result)
    if a.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k:>22}: {v!r}" if k == "example" else f"{k:>22}: {v}")
    return 0


def _eval_tasks(a) -> int:
    """`labkit eval --tasks ...`: exact-match accuracy on the held-out task suite under one rule."""
    own = model_tasks(a.model) or TASKS
    tasks = own if a.tasks in (None, "all") else tuple(t.strip() for t in a.tasks.split(","))
    bad = [t for t in tasks if t not in TASKS]
    if bad:
        raise ValueError(f"--tasks: {', '.join(bad)} unknown; use all or some of {', '.join(TASKS)}")
    if a.n is not None and a.n < 1:
        raise ValueError(f"--n must be a positive integer, got {a.n}")
    a.temperature = 0.0 if a.temperature is None else a.temperature      # exact answers: greedy unless told
    lm = load_model(a)
    _, rule, notes = sampler_from_flags(a, default=registry.default_rule(lm))
    t0 = time.perf_counter()
    result = evaluate_tasks(lm, rule, tasks=tasks, n=a.n, seed=a.seed)
    result["eval_seconds"] = round(time.perf_counter() - t0, 1)
    if a.card:
        _save_card_figures(a.model, result)
    if a.json:
        print(json.dumps(result))
        return 0
    print(f"{lm.name} · {result['sampler']}")
    for task, r in result["tasks"].items():
        for label, s in [(task, r), *((f"  {g}", v) for g, v in r.get("groups", {}).items())]:
            print(f"{label:>20}: {s['accuracy']:.3f}  [{s['ci95'][0]:.3f}, {s['ci95'][1]:.3f}]  n {s['n']}  "
                  f"NFE {s['nfe_mean']}  TPF {s['tpf']}")
    return 0


def _lm_eval(a) -> int:
    """lm-eval's own command line with the labkit model registered (lm-eval has no plugin entry
    point for models); `--include_path labkit` stands for the shipped tasks' folder."""
    try:
        from lm_eval.__main__ import cli_evaluate  # the eval extra
    except ImportError:
        raise ValueError('labkit lm-eval needs lm-evaluation-harness: pip install "labkit[eval]"') from None
    from ..eval import harness  # imports lm_eval, the eval extra

    rest = [str(harness.TASKS_DIR) if x == "labkit" and i and a.rest[i - 1] == "--include_path" else x
            for i, x in enumerate(a.rest)]
    sys.argv = ["lm_eval", *rest]
    cli_evaluate()
    return 0


def _train(a) -> int:
    # the loop imports tiny_net (transformers' model classes, about 1.7 s): kept off every command's start
    from ..training.loop import train

    if a.recipe not in RECIPES:
        raise ValueError(f"recipe must be one of {', '.join(RECIPES)}, got {a.recipe!r}")
    overrides = {k: getattr(a, k) for k in ("steps", "seed") if getattr(a, k) is not None}
    cfg = dataclasses.replace(RECIPES[a.recipe], **overrides)
    keep = [int(k) for k in a.keep_steps.split(",") if k.strip()] if a.keep_steps else []
    out = train(cfg, a.out, device=a.device, keep_steps=keep, stop_at=a.stop_at)
    if a.stop_at is not None and a.stop_at < cfg.steps:
        print(f"stopped at step {a.stop_at} of {cfg.steps}; run the same command without --stop-at to go on")
    else:
        print(f"trained model saved in {out}; try: labkit eval --model {out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="labkit", description="See, teach and measure diffusion LMs.")
    sub = p.add_subparsers(dest="command", required=True)
    generate.add_parser(sub)
    e = sub.add_parser("eval", help="held-out accuracy, ELBO and sample quality")
    model_args(e)
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--json", action="store_true", help="print one JSON object")
    e.add_argument("--card", action="store_true", help="store the figures as eval.json in the model's folder, for its card "
                   "(python -m benchmarks.docgen cards NAME writes README.md from it)")
    e.add_argument("--tasks", help="the task suite instead of the held-out plays: all, or some of "
                   "sudoku,addition,reversal,mirror (default for a task model: the tasks it was trained on)")
    e.add_argument("--n", type=int, help="--tasks: held-out items per task (default: all 600)")
    rule_args(e)
    e.set_defaults(fn=_eval)

    t = sub.add_parser("train", help="train one of the embedded models (resumes)")
    t.add_argument("--recipe", default="tiny", help="tiny-ar (from scratch), tiny (adapted from tiny-ar) "
                   "or tiny-cap (fine-tuned from tiny); default: tiny")
    t.add_argument("--out", default="runs/tiny", help="output folder; resumes from its ckpt.pt")
    t.add_argument("--steps", type=int)
    t.add_argument("--seed", type=int)
    t.add_argument("--device", default="cpu", help="cpu (default) or cuda: where the arithmetic runs")
    t.add_argument("--keep-steps", help="comma-separated steps at which a copy of the model is kept in OUT/step-N "
                   "(a training curve), e.g. 240,600,1200")
    t.add_argument("--stop-at", type=int, help="stop at this step with a checkpoint (the recipe's schedule unchanged)")
    t.set_defaults(fn=_train)
    rl.add_parser(sub)

    h = sub.add_parser("lm-eval", help="lm-evaluation-harness with the labkit model (--model labkit)",
                       prefix_chars="+", add_help=False,        # every flag, --help too, goes to lm-eval
                       description="lm-eval's own command line, with labkit registered as --model labkit: e.g. "
                       "labkit lm-eval --model labkit --model_args model=tiny,sampler=threshold,threshold=0.9 "
                       "--tasks labkit_shakespeare --include_path labkit")
    h.add_argument("rest", nargs=argparse.REMAINDER, help="lm-eval's arguments")
    h.set_defaults(fn=_lm_eval)

    bench.add_parser(sub)
    serve.add_parser(sub)
    jobs.add_parser(sub)
    doctor.add_parser(sub)
    student.add_parser(sub)
    slides.add_parser(sub)
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
