"""Left to right, one token per forward pass: the autoregressive baseline, inside the same loop.

With a causal model (the "tiny-ar" twin, or any hub causal LM) the loop hands this rule shifted
logits, so logits[:, i] is the next-token prediction for position i, computed from positions < i
only. With a masked diffusion model the same rule decodes it strictly left to right (the order
a diffusion model is free to leave), which isolates what the order costs or buys.
Its trace is a diagonal: one commit per step, so its heatmaps line up with any diffusion rule's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from .base import DecodeState, Rule, StepRecord, check_sampling, commit_record, sample_tokens, spread


@dataclass(frozen=True)
class Autoregressive(Rule):
    temperature: float = 0.0
    top_k: int | None = None
    top_p: float | None = None
    uses_step_budget: ClassVar[bool] = False    # one token per step: gen_length steps, `steps` ignored
    decodes_causal: ClassVar[bool] = True       # the one rule a causal model can run

    def __post_init__(self):
        check_sampling(self.temperature, self.top_k, self.top_p)

    def step(self, logits, state: DecodeState, generator=None) -> StepRecord:
        if self.temperature == 0:
            return self._greedy(logits, state)
        s, e = state.block_start, state.block_end
        cand_b, prob_b = sample_tokens(logits[:, s:e].float(), self.temperature, generator,
                                       self.top_k, self.top_p)                # (B, N)
        masked, candidates, confidence = spread(state, cand_b, prob_b)       # (B, L)
        first = masked.int().argmax(-1)                                      # (B,) leftmost mask
        cursor = torch.zeros_like(masked).scatter(-1, first[:, None], True) & masked
        # only the cursor is a real proposal; the rest of the block has no left context yet
        candidates = torch.where(cursor, candidates, state.x)
        confidence = confidence.masked_fill(~cursor, float("nan"))
        return commit_record(state, candidates, confidence, cursor)

    @staticmethod
    def _greedy(logits, state: DecodeState) -> StepRecord:
        """Temperature 0: the same record, with only the cursor's logits read (one position's softmax,
        not the block's: the AR step's rule then costs about what its one-token forward does)."""
        s, e = state.block_start, state.block_end
        masked = state.masked                                                # (B, L)
        here = masked[:, s:e]
        rows = torch.arange(here.shape[0], device=here.device)
        cursor_pos = s + here.int().argmax(-1)                               # (B,) leftmost mask (s if none)
        cand, prob = sample_tokens(logits[rows, cursor_pos][:, None], 0.0)   # (B, 1) each
        cursor = torch.zeros_like(masked)
        cursor[rows, cursor_pos] = here.any(-1)
        candidates = torch.where(cursor, cand, state.x)
        confidence = torch.where(cursor, prob, torch.full_like(prob, float("nan")).expand_as(cursor))
        return commit_record(state, candidates, confidence, cursor)


__all__ = ["Autoregressive"]
