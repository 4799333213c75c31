"""`labkit train-rl`: policy optimisation with exact rewards (labkit.training.rl), resumable.

    labkit train-rl --recipe tiny-sudoku-rl --out runs/tiny-sudoku-rl
    labkit train-rl --init-from tiny-sudoku --surrogate one_pass --steps 50 --out runs/try
"""
from __future__ import annotations

import dataclasses

from ..training.rl import RL_RECIPES, SURROGATES, RLConfig, train_rl

SCALARS = (int, float, str, bool)


def _train_rl(a) -> int:
    if a.recipe is not None and a.recipe not in RL_RECIPES:
        raise ValueError(f"recipe must be one of {', '.join(RL_RECIPES)}, got {a.recipe!r}")
    base = RL_RECIPES[a.recipe] if a.recipe else RLConfig()
    given = {f.name: getattr(a, f.name) for f in dataclasses.fields(RLConfig)
             if getattr(a, f.name, None) is not None}
    if a.clues is not None:
        given["clues"] = tuple(int(c) for c in a.clues.split(","))
    cfg = dataclasses.replace(base, **given)
    out = train_rl(cfg, a.out, device=a.device)
    print(f"policy saved in {out}; try: labkit eval --model {out} --sampler {cfg.rule}")
    return 0


def add_parser(sub) -> None:
    t = sub.add_parser("train-rl", help="policy optimisation with exact rewards (resumes)")
    t.add_argument("--recipe", help=f"one of {', '.join(RL_RECIPES)} (else RLConfig's defaults and the flags)")
    t.add_argument("--out", required=True, help="output folder; resumes from its rl_ckpt.pt")
    t.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    t.add_argument("--clues", help="sudoku: the training puzzles' clue range, LOW,HIGH (e.g. 10,13)")
    for f in dataclasses.fields(RLConfig):
        default = getattr(RLConfig(), f.name)
        if not isinstance(default, SCALARS):
            continue
        kind = (lambda s: s.lower() in ("1", "true", "yes")) if isinstance(default, bool) else type(default)
        extra = f" ({', '.join(SURROGATES)})" if f.name == "surrogate" else ""
        t.add_argument("--" + f.name.replace("_", "-"), dest=f.name, type=kind,
                       help=f"default {default!r} (or the recipe's){extra}")
    t.set_defaults(fn=_train_rl)
