"""Parallel decoding rules: commit every position the model is sure enough about.

- `Threshold(threshold=0.9)`, Fast-dLLM: always commit the most confident masked position of the
  block, plus every other one whose confidence is >= threshold.
- `Threshold(threshold=None, factor=1.0)`, Fast-dLLM's dynamic rule as its official code runs it
  (`get_transfer_index_dynamic`): sort the block's masked confidences c_(1) >= c_(2) >= ... >= c_(m),
  accept ranks while c_(r) >= 1 - factor / (r + 1) (rank 1 always), and when the first failure
  is the last rank m, commit it too: the last two masks of a block always go together.
  `factor_rule="paper"` is the paper's Theorem 1 without that last step (parallel greedy equals
  sequential greedy when (n + 1) * eps <= 1, eps = 1 - confidence).
- `EntropyBound(entropy_bound=...)`, the EB-sampler (arXiv 2505.24857, as in transformers'
  EntropyBoundSampler): order masked positions by entropy, accept the longest prefix with
  sum(H_1..k) - max(H_1..k) <= entropy_bound.

Scores follow Dream: "probability" (p of the proposed token, LLaDA's confidence), "margin"
(top-1 minus top-2 probability) and "neg_entropy" (sum p log p; higher is surer). Every rule
commits at least one token per row per step, so a block of n masks takes at most n steps.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import ClassVar

import torch

from .base import SCORES, DecodeState, Rule, StepRecord, check_sampling, commit_record, sample_tokens, score_block, spread


def _propose(rule, logits, state, generator):
    """Shared by the rules: proposals and scores inside the block, full-length (B, L) views."""
    s, e = state.block_start, state.block_end
    block_logits = logits[:, s:e].float()
    cand_b, prob_b = sample_tokens(block_logits, rule.temperature, generator, rule.top_k, rule.top_p)
    return spread(state, cand_b, score_block(block_logits, cand_b, prob_b, rule.score))


def _ranks(confidence: torch.Tensor, allowed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row: positions sorted by confidence (masked first), and the sorted scores. (B, L) each."""
    score = torch.nan_to_num(confidence, nan=float("-inf")).masked_fill(~allowed, float("-inf"))
    sorted_score, order = score.sort(dim=-1, descending=True, stable=True)
    return order, sorted_score


def _check_common(rule) -> None:
    check_sampling(rule.temperature, rule.top_k, rule.top_p)
    if rule.score not in SCORES:
        raise ValueError(f"score must be one of {SCORES}, got {rule.score!r}")


def _check_number(name: str, value, low: float, high: float, allowed: str) -> None:
    """A real number in [low, high], or a ValueError naming the parameter and what is allowed."""
    real = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not (real and low <= value <= high):
        raise ValueError(f"{name} must be {allowed}, got {value!r}")


FACTOR_RULES = ("official", "paper")

# the range a threshold on each score can take: p and top-1 - top-2 are in [0, 1]; sum p log p <= 0
SCORE_RANGE = {"probability": (0.0, 1.0, "in [0, 1]"), "margin": (0.0, 1.0, "in [0, 1]"),
               "neg_entropy": (float("-inf"), 0.0, "<= 0")}


@dataclass(frozen=True)
class Threshold(Rule):
    threshold: float | None = 0.9    # τ: commit every masked position with confidence >= τ
    factor: float | None = None      # instead of τ: Fast-dLLM's dynamic rule (1.0 in its evals)
    factor_rule: str = "official"    # "official": as Fast-dLLM's code; "paper": Theorem 1 alone
    score: str = "probability"       # "probability" | "margin" | "neg_entropy"
    temperature: float = 0.0
    top_k: int | None = None
    top_p: float | None = None
    uses_step_budget: ClassVar[bool] = False   # runs until the block is full; `steps` is ignored

    def __post_init__(self):
        _check_common(self)
        if (self.threshold is None) == (self.factor is None):
            raise ValueError("give exactly one of threshold and factor "
                             "(e.g. Threshold(threshold=0.9) or Threshold(threshold=None, factor=1.0))")
        if self.threshold is not None:
            low, high, allowed = SCORE_RANGE[self.score]
            _check_number("threshold", self.threshold, low, high, f"{allowed} for score={self.score!r}")
        if self.factor is not None:
            _check_number("factor", self.factor, math.ulp(0.0), float("inf"), "a number > 0")
        if self.factor_rule not in FACTOR_RULES:
            raise ValueError(f"factor_rule must be one of {FACTOR_RULES}, got {self.factor_rule!r}")

    def _factor_accept(self, sorted_score, rank, n_masked):
        """(B, L) bool over ranks: c_(r) >= 1 - factor / (r + 1) (r 1-based, rank 1 always),
        up to the first failure; "official" also takes the last rank when it is the first failure."""
        passes = (sorted_score >= 1 - self.factor / (rank + 2)) | (rank == 0)
        n = passes.long().cumprod(-1).sum(-1, keepdim=True)             # (B, 1) ranks accepted
        if self.factor_rule == "official":
            n = torch.where(n == n_masked - 1, n_masked, n)
        return rank < n

    def step(self, logits, state: DecodeState, generator=None) -> StepRecord:
        masked, candidates, confidence = _propose(self, logits, state, generator)
        order, sorted_score = _ranks(confidence, masked)                 # (B, L)
        n_masked = masked.sum(-1, keepdim=True)                          # (B, 1)
        rank = torch.arange(order.shape[-1], device=order.device)        # 0-based
        if self.factor is None:
            accept = (sorted_score >= self.threshold) | (rank == 0)      # the best one always commits
        else:
            accept = self._factor_accept(sorted_score, rank, n_masked)
        accept = accept & (rank < n_masked)
        committed = torch.zeros_like(masked).scatter(-1, order, accept) & masked
        return commit_record(state, candidates, confidence, committed)


@dataclass(frozen=True)
class EntropyBound(Rule):
    entropy_bound: float = 0.1       # γ, in nats: the error the step may add
    temperature: float = 0.0
    top_k: int | None = None
    top_p: float | None = None
    score: str = "neg_entropy"       # positions are ranked by entropy; kept for a common interface
    uses_step_budget: ClassVar[bool] = False

    def __post_init__(self):
        _check_common(self)
        _check_number("entropy_bound", self.entropy_bound, 0.0, float("inf"), "a number >= 0 (nats)")

    def step(self, logits, state: DecodeState, generator=None) -> StepRecord:
        masked, candidates, confidence = _propose(self, logits, state, generator)
        s, e = state.block_start, state.block_end
        p = torch.softmax(logits[:, s:e].float(), -1)
        entropy = torch.zeros(state.x.shape, device=state.x.device)
        entropy[:, s:e] = -(p * torch.log(p.clamp_min(1e-30))).sum(-1)
        order, neg_sorted = _ranks(-entropy, masked)                     # lowest entropy first
        h = (-neg_sorted).masked_fill(torch.isinf(neg_sorted), 0.0)      # (B, L) sorted entropies
        rank = torch.arange(order.shape[-1], device=order.device)
        n_masked = masked.sum(-1, keepdim=True)
        within = (h.cumsum(-1) - h.cummax(-1).values) <= self.entropy_bound
        accept = (within.cumprod(-1).bool() | (rank == 0)) & (rank < n_masked)
        committed = torch.zeros_like(masked).scatter(-1, order, accept) & masked
        return commit_record(state, candidates, confidence, committed)


__all__ = ["FACTOR_RULES", "SCORE_RANGE", "EntropyBound", "score_block", "Threshold"]
