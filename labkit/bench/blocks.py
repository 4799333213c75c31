"""`labkit bench blocks`: block diffusion and conversion from an AR model, measured (notebook 13,
docs/models.md). Its parts (PARTS), each a key of the result (benchmarks/results/blocks.json):

- likelihood: bits per predicted token (positions 1..255 of 32 held-out windows given token 0,
  `eval.likelihood.predicted_bits`) of the AR twin (exact), of its own weights read as a block-1
  model (exact: must equal it), of every block and full-attention model, each ± its standard error
  over windows and with its gap to the AR model paired window by window;
- quality: greedy (one token per step) and S-mode text on held-out prompts (Q mode too for the
  models trained with T2T noise), gen-PPL under the AR twin with a 95% bootstrap interval, word
  validity, TPF; and the TPF / gen-PPL frontier of threshold decoding at a few thresholds for one
  model per block size;
- curves: the same bits per token of each conversion and from-scratch run at 10/25/50/100% of its
  steps (the snapshots `labkit train --keep-steps` keeps in runs/RECIPE/step-N), with the
  training minutes each point cost;
- speed and stop (labkit.bench.block_speed): the exact cache against none, and the EOS stop.
- sudoku (labkit.bench.task_convert): the Sudoku AR twin converted to a masked model, and its curve.
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import torch

from ..decode import generate
from ..eval.likelihood import predicted_bits
from ..eval.metrics import gen_nats, word_validity
from ..models.handle import model_block
from ..models.kv_cache import BlockCache
from ..models.load import EMBEDDED, load, model_folder
from ..samplers import registry
from ..training.convert import as_block_model
from ..training.prompts import sample_prompts
from ..training.recipes import RECIPES, curve_steps
from . import block_speed, task_convert
from .common import Column, find_model, format_table, metadata, train_seconds
from .likelihood import pick_windows
from .samplers import nats_figures

PARTS = ("likelihood", "quality", "curves", "speed", "stop", "sudoku")     # the keys of blocks.json
AR_MODEL = "tiny-ar"
LIKELIHOOD_MODELS = ("tiny-block4-from-ar", "tiny-block16", "tiny-block4", "tiny-block4-edit", "tiny", "tiny-anneal",
                     "tiny-cap")
QUALITY_MODELS = ("tiny-block4-from-ar", "tiny-block16", "tiny-block4", "tiny-block4-edit", "tiny", "tiny-anneal",
                  "tiny-cap")
CURVES = {"block 4 from tiny-ar (LLaDA2.0)": "tiny-block4-from-ar", "block 4 from scratch": "tiny-block4",
          "full, opened at once from tiny-ar (Dream: tiny)": "tiny",
          "full, annealed from tiny-ar (DiffuLLaMA)": "tiny-anneal", "full from scratch": "tiny-scratch"}
WINDOWS, MC_NUM, CURVE_MC_NUM = 32, 16, 8
KNOBS = dict(gen_length=128, block_length=32)
THRESHOLDS = (0.9, 0.7, 0.5)
FRONTIER_MODELS = ("tiny-block4-from-ar", "tiny-block16", "tiny")          # threshold decoding too: TPF by block size
EDIT_MODELS = ("tiny-block4-edit", "tiny-cap")                             # trained with T2T noise: Q mode too


def _r(x: float, digits: int = 4) -> float | None:
    return None if x is None or math.isnan(x) else round(float(x), digits)


def bits_row(lm, windows: torch.Tensor, ar: dict, mc_num: int, seed: int = 0) -> dict:
    """predicted_bits of one model with its paired gap to the AR model and the perplexity ratio."""
    t0 = time.perf_counter()
    r = predicted_bits(lm, windows, mc_num=mc_num, seed=seed)
    gap = r["per_window"] - ar["per_window"]                                       # (N,)
    return {"block_size": model_block(lm), "bits_per_token": _r(r["bits_per_token"]), "se": _r(r["se"]),
            "mc_se": _r(r["mc_se"]), "mc_num": r["mc_num"], "gap_to_ar": _r(gap.mean()),
            "gap_se": _r(gap.std() / math.sqrt(len(gap))), "ppl_ratio_to_ar": _r(2 ** float(gap.mean()), 3),
            "seconds": round(time.perf_counter() - t0, 1)}


def likelihood(models=LIKELIHOOD_MODELS, windows: int = WINDOWS, mc_num: int = MC_NUM, runs="runs", log=None) -> dict:
    ar_lm = load(AR_MODEL)
    w = pick_windows(ar_lm, windows)
    ar = predicted_bits(ar_lm, w)
    rows = {AR_MODEL: {"block_size": None, "bits_per_token": _r(ar["bits_per_token"]), "se": _r(ar["se"]),
                       "mc_se": 0.0, "mc_num": 0, "gap_to_ar": 0.0, "gap_se": 0.0, "ppl_ratio_to_ar": 1.0}}
    rows[f"{AR_MODEL} as block 1"] = bits_row(as_block_model(ar_lm, 1), w, ar, 1)
    for name in models:
        rows[name] = bits_row(find_model(name, runs), w, ar, mc_num)
        if log:
            log(f"likelihood {name}: {rows[name]}")
    return {"windows": len(w), "window_tokens": w.shape[1], "scored_tokens": w.shape[1] - 1, "rows": rows}


def quality_row(lm, ar, prompts: list[str], rule, steps: int) -> dict:
    """One rule on the prompts in one batch: TPF, NFE, gen-PPL (interval, per-prompt parts), word validity."""
    fast = BlockCache(lm) if model_block(lm) else lm                                # identical tokens (tested)
    knobs = {**KNOBS, "block_length": model_block(lm) or KNOBS["block_length"]}     # a block model in its own blocks
    out = generate(fast, prompts, rule, steps=steps, seed=0, **knobs)
    n = len(prompts)
    return {"tpf": round(out.stats["tpf"], 3), "nfe": round(out.stats["row_nfe"] / n, 2),
            "word_validity": round(word_validity(out.texts), 4), **nats_figures(gen_nats(ar, prompts, out.texts)),
            "example": out.texts[0]}


def quality(models=QUALITY_MODELS, n_prompts: int = 24, runs="runs", log=None) -> dict:
    ar = load(AR_MODEL)
    prompts = sample_prompts(n_prompts)
    L = KNOBS["gen_length"]
    rules = {"greedy": registry.rule("low_confidence"), "S mode": registry.rule("speed")}
    edit = {"Q mode": registry.rule("quality")}
    frontier = {f"threshold {t}": registry.rule("threshold", threshold=t) for t in THRESHOLDS}
    rows = {}
    for name in models:
        lm = find_model(name, runs)
        rows[name] = {"block_size": model_block(lm)}
        more = {**(edit if name in EDIT_MODELS else {}), **(frontier if name in FRONTIER_MODELS else {})}
        for label, rule in {**rules, **more}.items():
            steps = L
            t0 = time.perf_counter()
            rows[name][label] = quality_row(lm, ar, prompts, rule, steps)
            if log:
                log(f"quality {name} {label}: tpf {rows[name][label]['tpf']} gen-PPL {rows[name][label]['gen_ppl']} "
                    f"({time.perf_counter() - t0:.0f} s)")
    ar_out = generate(ar, prompts, registry.rule("autoregressive"), steps=L, seed=0, **KNOBS)
    rows[AR_MODEL] = {"block_size": None, "greedy": {
        "tpf": round(ar_out.stats["tpf"], 3), "nfe": round(ar_out.stats["row_nfe"] / len(prompts), 2),
        "word_validity": round(word_validity(ar_out.texts), 4),
        **nats_figures(gen_nats(ar, prompts, ar_out.texts)), "example": ar_out.texts[0]}}
    return {"prompts": n_prompts, "knobs": KNOBS, "thresholds": list(THRESHOLDS), "frontier_models": list(FRONTIER_MODELS),
            "rows": rows}


def curves(runs="runs", windows: int = WINDOWS, mc_num: int = CURVE_MC_NUM, log=None) -> dict:
    """Bits per token of each run in CURVES at CURVE_STEPS and its end, against training steps and
    minutes; the converted runs start (step 0) from tiny-ar's own weights, read as the target model."""
    ar_lm = load(AR_MODEL)
    w = pick_windows(ar_lm, windows)
    ar = predicted_bits(ar_lm, w)
    out = {}
    for label, recipe in CURVES.items():
        cfg, folder = RECIPES[recipe], Path(runs) / recipe
        points = []
        if cfg.init_from == AR_MODEL:
            start = as_block_model(ar_lm, cfg.block_size)          # 0: tiny-ar's attention opened at once
            points.append({"step": 0, "train_minutes": 0.0, **bits_row(start, w, ar, mc_num)})
        for step in curve_steps(cfg):
            snap = folder / f"step-{step}" if step < cfg.steps else folder
            if step == cfg.steps and recipe in EMBEDDED:             # the committed model is the run's end
                snap = model_folder(recipe)
            if not (snap / "model.safetensors").is_file():          # a run stopped early (--stop-at): its points so far
                if step < cfg.steps:
                    raise FileNotFoundError(f"no snapshot {snap}: labkit train --recipe {recipe} --keep-steps ...")
                break
            lm = find_model(recipe, runs) if step == cfg.steps else load(str(snap))
            seconds = train_seconds(snap)
            points.append({"step": step, "train_minutes": round(seconds / 60, 1), **bits_row(lm, w, ar, mc_num)})
            if log:
                log(f"curve {recipe} step {step}: {points[-1]['bits_per_token']}")
        out[label] = {"recipe": recipe, "steps": cfg.steps, "init_from": cfg.init_from or None,
                      "block_size": cfg.block_size, "points": points, "finished": points[-1]["step"] == cfg.steps}
    return {"windows": len(w), "mc_num": mc_num, "ar_bits": _r(ar["bits_per_token"]), "curves": out}


def bench_blocks(parts=PARTS, runs="runs", log=None) -> dict:
    unknown = set(parts) - set(PARTS)
    if unknown:
        raise ValueError(f"parts must be among {', '.join(PARTS)}; got {sorted(unknown)}")
    result = {"meta": metadata(load(AR_MODEL))}
    steps = {"likelihood": lambda: likelihood(runs=runs, log=log), "quality": lambda: quality(runs=runs, log=log),
             "curves": lambda: curves(runs=runs, log=log), "speed": lambda: block_speed.cache_speed(log=log),
             "stop": lambda: block_speed.eos_stop(log=log),
             "sudoku": lambda: task_convert.sudoku_conversion(runs=runs, log=log)}
    for part in parts:
        t0 = time.perf_counter()
        result[part] = steps[part]()
        result[part]["seconds"] = round(time.perf_counter() - t0, 1)
    return result


def likelihood_table(r: dict) -> str:
    def f(x):
        return "-" if x is None else f"{x:.4f}"
    cols = [Column("model", 26, align="<"), Column("block", 6), Column("bits/token", 11), Column("± s.e.", 8),
            Column("- AR", 8), Column("± s.e.", 8), Column("PPL / AR", 9)]
    rows = [(name, "-" if x["block_size"] is None else str(x["block_size"] or "full"), f(x["bits_per_token"]),
             f(x["se"]), f(x["gap_to_ar"]), f(x["gap_se"]), f"{x['ppl_ratio_to_ar']:.3f}")
            for name, x in r["likelihood"]["rows"].items()]
    lk = r["likelihood"]
    return format_table(cols, rows, f"== bits per predicted token, positions 1..{lk['scored_tokens']} of "
                                    f"{lk['windows']} held-out windows given token 0")


__all__ = ["AR_MODEL", "CURVE_MC_NUM", "CURVES", "EDIT_MODELS", "FRONTIER_MODELS", "KNOBS", "LIKELIHOOD_MODELS",
           "MC_NUM", "PARTS", "QUALITY_MODELS", "THRESHOLDS", "WINDOWS", "bench_blocks", "bits_row", "curves",
           "find_model", "likelihood", "likelihood_table", "quality", "quality_row"]
