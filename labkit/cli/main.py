"""The `labkit` command: generate, eval, train, bench, serve, check-endpoint, batch.

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

from . import bench, generate, jobs, serve
from .common import load_model, model_args


def _eval(a) -> int:
    from ..eval.evaluate import evaluate

    lm = load_model(a)
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


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="labkit", description="See, teach and measure diffusion LMs.")
    sub = p.add_subparsers(dest="command", required=True)
    generate.add_parser(sub)
    e = sub.add_parser("eval", help="held-out accuracy, ELBO and sample quality")
    model_args(e)
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

    bench.add_parser(sub)
    serve.add_parser(sub)
    jobs.add_parser(sub)
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
