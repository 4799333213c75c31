"""`labkit bench likelihood`: how the masked models' ELBO on the held-out plays, estimated with
LLaDA's Monte-Carlo likelihood at a few `mc_num`, compares with the causal twin's exact
likelihood. Bits per token on the same windows, each ± its standard error over the windows; the
Monte-Carlo part of it alone; and the gap to the AR model, paired window by window.

    r = bench_likelihood(["tiny", "tiny-cap"], windows=32)
    r["models"]["tiny"][0]["bits_per_token"], r["ar"]["bits_per_token"]
"""
from __future__ import annotations

import math
import time

import torch

from ..eval.evaluate import WINDOW, heldout_windows
from ..eval.likelihood import ar_bits, check_mc_num, elbo_bits
from ..models.load import load
from .common import Column, format_table, metadata

MC_NUMS = (1, 4, 16, 64)
WINDOWS = 32                # held-out windows (of 256 tokens), evenly spaced over the plays
ESTIMATOR = ("masked models: -ELBO by LLaDA's estimator (per draw, l of the window's L tokens masked, l "
             "stratified over 1..L across the draws, (L/l) x the masked tokens' cross-entropy), an upper "
             "bound on -log p in expectation; AR: exact -log p per predicted token")


def pick_windows(lm, n: int | None, length: int = WINDOW) -> torch.Tensor:
    """n of the held-out windows (N, length), evenly spaced over the plays (all with n None)."""
    if not isinstance(length, int) or length < 2:
        raise ValueError(f"window_tokens must be an integer >= 2, got {length!r}")
    if lm.max_length is not None and length > lm.max_length:
        raise ValueError(f"window_tokens ({length}) exceeds model {lm.name!r}'s context of {lm.max_length} tokens: "
                         f"pass window_tokens <= {lm.max_length}")
    windows = heldout_windows(lm, length)
    if n is None or n >= len(windows):
        return windows
    if n < 2:
        raise ValueError(f"windows must be at least 2 (a standard error needs two), got {n}")
    return windows[torch.linspace(0, len(windows) - 1, n).round().long()]


def _plain(x: float) -> float | None:
    return None if math.isnan(x) else round(x, 4)


def model_rows(lm, windows: torch.Tensor, mc_nums, ar: dict | None, seed: int, log=None) -> list[dict]:
    """One row per mc_num: bits_per_token, se, mc_se, seconds and, with the AR result on the same
    windows (`ar`), gap_to_ar ± gap_se (per-window differences: the text's spread cancels)."""
    rows = []
    for mc in mc_nums:
        t0 = time.perf_counter()
        r = elbo_bits(lm, windows, mc_num=mc, seed=seed)
        row = {"mc_num": mc, "bits_per_token": round(r["bits_per_token"], 4), "se": _plain(r["se"]),
               "mc_se": _plain(r["mc_se"]), "seconds": round(time.perf_counter() - t0, 1)}
        if ar is not None:
            gap = r["per_window"] - ar["per_window"]                     # (N,)
            row["gap_to_ar"] = round(float(gap.mean()), 4)
            row["gap_se"] = _plain(float(gap.std() / math.sqrt(len(gap))))
        rows.append(row)
        if log:
            log(f"{lm.name} mc_num {mc}: {row['bits_per_token']:.4f} bits/token ({row['seconds']} s)")
    return rows


def bench_likelihood(models=("tiny", "tiny-cap"), ar_model: str = "tiny-ar", mc_nums=MC_NUMS,
                     windows: int | None = WINDOWS, seed: int = 0, device: str = "cpu", log=None,
                     window_tokens: int = WINDOW) -> dict:
    """The likelihood table: each of `models` (masked; names or folders) at each mc_num against
    `ar_model`'s exact bits per token, on `windows` held-out windows. A model whose windows differ
    from the AR model's (another tokenizer) gets no paired gap."""
    mc_nums = [check_mc_num(m) for m in mc_nums]     # every argument checked before a model loads
    if not models:
        raise ValueError("models must name at least one masked model")
    ar_lm = load(ar_model, device=device)
    ar_windows = pick_windows(ar_lm, windows, window_tokens)
    t0 = time.perf_counter()
    ar = ar_bits(ar_lm, ar_windows)
    result = {"meta": metadata(ar_lm), "estimator": ESTIMATOR, "seed": seed,
              "windows": len(ar_windows), "window_tokens": ar_windows.shape[1],
              "ar": {"model": ar_model, "bits_per_token": round(ar["bits_per_token"], 4), "se": _plain(ar["se"]),
                     "seconds": round(time.perf_counter() - t0, 1)},
              "models": {}}
    for name in models:
        lm = load(name, device=device)
        w = pick_windows(lm, windows, window_tokens)
        paired = ar if torch.equal(w, ar_windows) else None
        result["models"][name] = model_rows(lm, w, mc_nums, paired, seed, log)
    return result


def table(r: dict) -> str:
    """The result as a fixed-width text table."""
    def fmt(x):
        return "-" if x is None else f"{x:.4f}"
    cols = [Column("model", 16, align="<"), Column("mc_num", 7), Column("bits/token", 11), Column("± s.e.", 9),
            Column("MC s.e.", 9), Column("- AR", 9), Column("± s.e.", 9), Column("seconds", 9)]
    a = r["ar"]
    rows = [(a["model"], "exact", fmt(a["bits_per_token"]), fmt(a["se"]), "-", "-", "-", f"{a['seconds']:.1f}")]
    for name, model_rows_ in r["models"].items():
        rows += [(name, str(x["mc_num"]), fmt(x["bits_per_token"]), fmt(x["se"]), fmt(x["mc_se"]),
                  fmt(x.get("gap_to_ar")), fmt(x.get("gap_se")), f"{x['seconds']:.1f}") for x in model_rows_]
    title = (f"== likelihood on {r['windows']} held-out windows of {r['window_tokens']} tokens, bits per token "
             f"({r['meta']['device']}, seed {r['seed']})\n{r['estimator']}\n"
             "± s.e.: over windows; MC s.e.: the Monte-Carlo part; - AR: paired gap to the AR model")
    return format_table(cols, rows, title)


__all__ = ["ESTIMATOR", "MC_NUMS", "WINDOWS", "bench_likelihood", "model_rows", "pick_windows", "table"]
