"""LLaDA low-confidence remasking (Nie et al., 2025), the reference rule.

Each step proposes x0 at every masked position of the active block (argmax, or Gumbel-max at
temperature > 0), scores it by p(x0) ("low_confidence") or by a uniform draw ("random"), and
commits the k best, k = ceil(masks_left / steps_left). That reproduces LLaDA's remainder-first
schedule (m // s per step, the first m % s steps one more) without storing a table.
`remasking="left_to_right"` / `"right_to_left"` commit in a fixed order instead (the raster order an
AR model writes in, or its reverse), so an order's effect can be measured on the same weights.

Dream's variants of the same fixed-count rule: `score="margin"` (top-1 minus top-2 probability) or
`"neg_entropy"` instead of the probability, and `alg_temp` > 0 to draw the k positions at random
from softmax(score / alg_temp) (without replacement, via Gumbel-top-k) instead of taking the best.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .base import (
    SCORES,
    DecodeState,
    Rule,
    StepRecord,
    ceil_div,
    check_sampling,
    commit_record,
    gumbel,
    sample_tokens,
    score_block,
    spread,
    topk_mask,
)

REMASKING = ("low_confidence", "random", "left_to_right", "right_to_left")
FIXED_ORDERS = ("left_to_right", "right_to_left")   # rank by position; the record keeps the model's confidence


@dataclass(frozen=True)
class LowConfidence(Rule):
    temperature: float = 0.0            # 0 = greedy; > 0 samples from softmax(logits / T)
    top_k: int | None = None            # sample among the k most likely tokens only (T > 0)
    top_p: float | None = None          # ... or within the top_p probability nucleus (T > 0)
    remasking: str = "low_confidence"   # "low_confidence" (rank by p(x0)), "random", "left_to_right", "right_to_left"
    logits_eos_inf: bool = False        # forbid EOS / EoT outright (LLaDA's HumanEval setting)
    confidence_eos_eot_inf: bool = False  # commit EOS / EoT last: confidence -inf (EVAL.md's intent,
                                          # not generate.py's chained-assignment quirk)
    score: str = "probability"          # Dream: "probability" | "margin" | "neg_entropy"
    alg_temp: float | None = None       # Dream: > 0 samples which positions commit (None/0: the best)

    def __post_init__(self):
        check_sampling(self.temperature, self.top_k, self.top_p)
        if self.remasking not in REMASKING:
            raise ValueError(f"remasking must be one of {REMASKING}, got {self.remasking!r}")
        if self.score not in SCORES:
            raise ValueError(f"score must be one of {SCORES}, got {self.score!r}")
        if self.alg_temp is not None and not self.alg_temp >= 0:
            raise ValueError(f"alg_temp must be >= 0 or None, got {self.alg_temp!r}")

    def step(self, logits, state: DecodeState, generator=None) -> StepRecord:
        s, e = state.block_start, state.block_end
        block_logits = logits[:, s:e].float()                      # (B, N, V)
        stop = list(state.stop_ids)
        if self.logits_eos_inf and stop:
            block_logits = block_logits.clone()                    # never write into the caller's logits
            block_logits[..., stop] = float("-inf")
        cand_b, conf_b = sample_tokens(block_logits, self.temperature, generator,
                                       self.top_k, self.top_p)               # (B, N)
        if self.score != "probability":
            conf_b = score_block(block_logits, cand_b, conf_b, self.score)
        if self.confidence_eos_eot_inf and stop:
            conf_b = conf_b.masked_fill(torch.isin(cand_b, torch.tensor(stop, device=cand_b.device)),
                                        float("-inf"))
        if self.remasking == "random":
            conf_b = torch.rand(conf_b.shape, generator=generator, device=conf_b.device)
        masked, candidates, confidence = spread(state, cand_b, conf_b)       # (B, L) each
        k = ceil_div(masked.sum(-1), max(1, state.steps - state.step))       # (B,)
        rank = confidence
        if self.remasking in FIXED_ORDERS:                                   # earlier (or later) first
            pos = torch.arange(conf_b.shape[1], device=conf_b.device, dtype=conf_b.dtype)
            rank = spread(state, cand_b, (-pos if self.remasking == "left_to_right" else pos).expand_as(conf_b))[2]
        # rank on -inf-safe scores: EOS-suppressed positions still commit, just last
        score = torch.nan_to_num(rank, nan=float("-inf"), neginf=-1e30)
        if self.alg_temp:   # Gumbel-top-k = k draws without replacement from softmax(score / alg_temp)
            score = (score.double() / self.alg_temp + gumbel(score.shape, generator, score.device)).float()
        committed = topk_mask(score, masked, k)
        return commit_record(state, candidates, confidence, committed)
