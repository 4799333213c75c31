"""Is a task model's confidence worth what threshold rules take it for? Confidence against accuracy.

Threshold rules (and S / Q mode) commit every masked cell whose top probability clears a bar, so
they are only as good as the model's calibration: a model that says 0.95 and is right 80% of the
time commits its errors early and in parallel. `reliability` decodes held-out items one cell per
pass (greedy, low-confidence order) and, at every pass, scores each still-masked cell's top
prediction against the truth: predictions binned by confidence, each bin's accuracy, the expected
calibration error (ECE: the bins' |accuracy − confidence| weighted by their share), and the share
of confident predictions (≥ 0.9) that are wrong, which is what a threshold of 0.9 commits.
"""
from __future__ import annotations

import torch

from ..decode import generate
from ..samplers import registry
from ..tasks import Item

CONFIDENT = 0.9             # the confidence a threshold-0.9 rule commits at
BATCH = 200


def prediction_points(lm, items: list[Item], rule: str = "low_confidence", seed: int = 0,
                      batch: int = BATCH) -> tuple[torch.Tensor, torch.Tensor]:
    """(confidence (P,), right (P,) bool): every still-masked answer cell at every pass of a greedy
    decoding of `items` (one layout) with `rule`: its top probability, and whether its top token is
    the truth."""
    conf, right = [], []
    for start in range(0, len(items), batch):
        chunk = items[start:start + batch]
        n = len(lm.encode(chunk[0].answer))
        out = generate(lm, [it.prompt for it in chunk], registry.rule(rule), gen_length=n, block_length=n, steps=n,
                       seed=seed)
        tr = out.trace
        P = tr.prompt_len
        truth = torch.tensor([lm.encode(it.answer) for it in chunk], dtype=torch.long)          # (B, n)
        before = tr.read().long()[..., P:]                                                   # (S, B, n)
        c, cand = tr.confidence()[..., P:].float(), tr.candidates().long()[..., P:]            # (S, B, n)
        seen = (before == lm.mask_id) & ~torch.isnan(c)
        conf.append(c[seen])
        right.append((cand == truth[None])[seen])
    return torch.cat(conf), torch.cat(right)


def reliability(conf: torch.Tensor, right: torch.Tensor, bins: int = 10) -> dict:
    """Predictions binned by confidence (equal widths on [0, 1]): each bin's count, mean confidence
    and accuracy; the ECE; the share of predictions at ≥ CONFIDENT and how many of those are wrong."""
    if conf.shape != right.shape or conf.numel() == 0:
        raise ValueError(f"conf and right must be non-empty and of one shape, got {tuple(conf.shape)} "
                         f"and {tuple(right.shape)}")
    idx = (conf * bins).long().clamp(0, bins - 1)
    rows, ece = [], 0.0
    for b in range(bins):
        sel = idx == b
        k = int(sel.sum())
        if not k:
            continue
        acc, mean = float(right[sel].float().mean()), float(conf[sel].mean())
        ece += k / conf.numel() * abs(acc - mean)
        rows.append({"lo": b / bins, "hi": (b + 1) / bins, "n": k, "confidence": round(mean, 4),
                     "accuracy": round(acc, 4)})
    sure = conf >= CONFIDENT
    return {"points": conf.numel(), "bins": rows, "ece": round(ece, 4),
            "confident_share": round(float(sure.float().mean()), 4),
            "confident_wrong": round(float((~right[sure]).float().mean()) if sure.any() else 0.0, 4)}


__all__ = ["BATCH", "CONFIDENT", "prediction_points", "reliability"]
