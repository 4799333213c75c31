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


__all__ = ["Autoregressive"]
