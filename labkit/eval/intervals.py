"""Bootstrap intervals over prompts, for every verdict about generated text.

gen-PPL and word validity are ratios of sums over samples (nats over tokens, valid words over
words), so a percentile bootstrap resamples whole samples (prompts) with replacement and recomputes
the ratio: `ratio_interval`. Two rules decoded on the same prompts are compared paired (the same
resampled prompts for both): `paired_ratio` gives the ratio of their figures with its interval,
and `verdict` words a comparison: "within noise" when the two intervals overlap.

    rows = gen_nats(ar, prompts, texts)            # [(nats, tokens), ...] per prompt
    lo, hi = ppl_interval(rows)                    # 95% interval of gen-PPL over prompts
"""
from __future__ import annotations

import math

import torch

DRAWS = 2000          # bootstrap resamples
LEVEL = 0.95


def _check(rows: list, name: str) -> torch.Tensor:
    t = torch.tensor([[float(a), float(b)] for a, b in rows], dtype=torch.float64).reshape(-1, 2)
    if len(t) < 2:
        raise ValueError(f"{name} needs at least 2 samples to resample, got {len(t)}")
    if not (t[:, 1] > 0).any():
        raise ValueError(f"{name}: every sample has a zero denominator")
    return t


def _draws(n: int, draws: int, seed: int) -> torch.Tensor:
    if not isinstance(draws, int) or draws < 100:
        raise ValueError(f"draws must be an integer >= 100, got {draws!r}")
    g = torch.Generator().manual_seed(seed)
    return torch.randint(n, (draws, n), generator=g)                              # (draws, n)


def _percentiles(x: torch.Tensor, level: float) -> tuple[float, float]:
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    q = torch.tensor([(1 - level) / 2, (1 + level) / 2], dtype=x.dtype)
    lo, hi = torch.quantile(x[torch.isfinite(x)], q).tolist()
    return lo, hi


def ratio_interval(rows: list[tuple[float, int]], *, draws: int = DRAWS, seed: int = 0,
                   level: float = LEVEL) -> tuple[float, float]:
    """Percentile bootstrap interval of sum(a) / sum(b) over samples [(a, b), ...]."""
    t = _check(rows, "ratio_interval")
    idx = _draws(len(t), draws, seed)
    num, den = t[idx, 0].sum(-1), t[idx, 1].sum(-1)                              # (draws,)
    return _percentiles(num / den, level)


def ppl_interval(rows: list[tuple[float, int]], **kw) -> tuple[float, float]:
    """Interval of gen-PPL (exp of nats per token) from per-prompt (nats, tokens): labkit.eval.metrics.gen_nats."""
    lo, hi = ratio_interval(rows, **kw)
    return math.exp(lo), math.exp(hi)


def paired_ratio(rows_a: list[tuple[float, int]], rows_b: list[tuple[float, int]], *, ppl: bool = True,
                 draws: int = DRAWS, seed: int = 0, level: float = LEVEL) -> tuple[float, float, float]:
    """(figure of a / figure of b, low, high): two rules on the same prompts (row k of each is one
    prompt), resampled together. ppl=True compares gen-PPLs, else the plain ratios (word validity)."""
    a, b = _check(rows_a, "paired_ratio"), _check(rows_b, "paired_ratio")
    if len(a) != len(b):
        raise ValueError(f"paired_ratio needs the same prompts for both, got {len(a)} and {len(b)} samples")
    idx = _draws(len(a), draws, seed)

    def figure(t, i=None):
        r = (t[:, 0].sum() / t[:, 1].sum()) if i is None else t[i, 0].sum(-1) / t[i, 1].sum(-1)
        return torch.exp(r) if ppl else r

    lo, hi = _percentiles(figure(a, idx) / figure(b, idx), level)
    return float(figure(a) / figure(b)), lo, hi


def overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Two intervals (low, high) share a point."""
    return a[0] <= b[1] and b[0] <= a[1]


def verdict(name_a: str, ci_a: tuple[float, float], name_b: str, ci_b: tuple[float, float],
            lower_is_better: bool = True) -> str:
    """A comparison in words: "within noise" when the intervals overlap, else which is better."""
    if overlap(ci_a, ci_b):
        return f"{name_a} and {name_b} within noise"
    a_better = (ci_a[1] < ci_b[0]) == lower_is_better
    return f"{name_a if a_better else name_b} better"
