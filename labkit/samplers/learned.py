"""A learned unmasking policy (after Jazbec et al. and UPO): a handful of weights turn each masked
position's confidence into a commit probability, the model itself untouched.

Per step, for each masked position of the block (p its top probability, as every rule scores it):

    features  f = (logit p, share of the block still masked, rank of p among the masked / (m − 1), 1)
    commit    with probability q = σ(w · f)

The most confident masked position always commits (a block of n masks takes at most n steps); the
others are Bernoulli draws with `stochastic=True` (the policy RL trains,
`labkit.training.learned_policy`), or commit where q ≥ 0.5 (the greedy rule a user runs).
`decision_features` is the one feature function: the rule computes it from the confidence it
records, and the trainer from the same confidence in the trace, so a replay sees what the rule saw.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from .base import DecodeState, Rule, StepRecord, check_sampling, commit_record, sample_tokens, spread

FEATURES = ("logit p", "masked share", "rank", "bias")
LOGIT_CLIP = 8.0


def decision_features(confidence: torch.Tensor, masked: torch.Tensor, block_length: int
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """confidence (..., L) (nan where not scored), masked (..., L) bool, the block's length →
    features (..., L, 4) and the forced position (..., L) bool: the most confident masked one (it
    always commits)."""
    p = torch.nan_to_num(confidence.float(), nan=0.0).clamp(1e-6, 1 - 1e-6)
    z = torch.log(p / (1 - p)).clamp(-LOGIT_CLIP, LOGIT_CLIP)
    m = masked.sum(-1, keepdim=True).float()                                  # (..., 1)
    share = (m / block_length).expand_as(z)
    score = torch.where(masked, p, torch.full_like(p, -1.0))
    order = score.argsort(dim=-1, descending=True, stable=True)
    rank = torch.empty_like(order).scatter_(-1, order, torch.arange(order.shape[-1], device=order.device).expand_as(order))
    rank_frac = rank.float() / (m - 1).clamp_min(1)
    forced = masked & (rank == 0)
    return torch.stack([z, share, rank_frac, torch.ones_like(z)], -1), forced


@dataclass(frozen=True)
class LearnedCommit(Rule):
    weights: tuple = (2.0, 0.0, 0.0, -4.4)   # w over FEATURES; the default ≈ a threshold of 0.9
    stochastic: bool = False                 # draw each decision (training) or commit where q >= 0.5
    temperature: float = 0.0
    top_k: int | None = None
    top_p: float | None = None
    uses_step_budget: ClassVar[bool] = False   # runs until the block is full

    def __post_init__(self):
        check_sampling(self.temperature, self.top_k, self.top_p)
        if len(self.weights) != len(FEATURES) or not all(isinstance(w, (int, float)) for w in self.weights):
            raise ValueError(f"weights must be {len(FEATURES)} numbers, one per feature {FEATURES}, got {self.weights!r}")

    def commit_probability(self, confidence: torch.Tensor, masked: torch.Tensor, block_length: int
                           ) -> tuple[torch.Tensor, torch.Tensor]:
        """(q (..., L), forced (..., L)): each masked position's commit probability, and the one
        that commits anyway."""
        f, forced = decision_features(confidence, masked, block_length)
        w = torch.tensor(self.weights, dtype=f.dtype, device=f.device)
        return torch.sigmoid(f @ w), forced

    def step(self, logits, state: DecodeState, generator=None) -> StepRecord:
        s, e = state.block_start, state.block_end
        cand_b, prob_b = sample_tokens(logits[:, s:e].float(), self.temperature, generator, self.top_k, self.top_p)
        masked, candidates, confidence = spread(state, cand_b, prob_b)
        q, forced = self.commit_probability(confidence, masked, e - s)
        if self.stochastic:
            take = torch.rand(q.shape, generator=generator, device=q.device) < q
        else:
            take = q >= 0.5
        return commit_record(state, candidates, confidence, masked & (take | forced))


__all__ = ["FEATURES", "LOGIT_CLIP", "LearnedCommit", "decision_features"]
