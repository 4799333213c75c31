"""LLaDA2.1 draft-and-edit: commit masks (M2T) and rewrite tokens already written (T2T).

Per step, with v_i the proposal at position i and p_i its probability:
- M2T: masked positions of the block with p_i > `threshold`; if fewer than `num_to_transfer`,
  the `num_to_transfer` most confident masked positions instead (LLaDA2.1's fallback).
- T2T: filled, non-frozen positions of the block whose proposal differs from the current token,
  with p_i > `editing_threshold`. Frozen positions (prompt, pins) are never edited.
A block keeps stepping after it is full: up to `max_post_steps` "post" steps, and it is done as
soon as a post step changes nothing (converged). The loop (decode.stream) counts post steps per row.

A stochastic policy (`decision_temperature` κ > 0, for RL on the rule's own decisions): each
masked position of the block commits with probability σ((p_i − threshold) / κ) and each differing
filled position is rewritten with probability σ((p_i − editing_threshold) / κ), one uniform draw per
position from the loop's generator, with no fallback (a pass may commit nothing). As κ → 0 the draws
become the thresholds; `labkit.training.surrogates` replays their log-probabilities ("decisions").

Presets from the LLaDA2.1 model card: `DraftEdit.speed()` (S mode, 0.5 / 0.0) and
`DraftEdit.quality()` (Q mode, 0.7 / 0.5), both with max_post_steps 16 and block 32.

Multi-block editing (MBE). LLaDA2.1's paper lets T2T revisit earlier blocks but publishes no
parameters; public code confines edits to the current block. Our design:
- positions of the `mbe_blocks` blocks before the active one (0 = off) may be edited too, but only
  when p_i > `mbe_threshold`: an earlier token was written with less right-hand context, so a
  rewrite of it must clear a higher bar than an in-block edit (default 0.9);
- at most `mbe_edits_per_step` such edits per row and step, the most confident first: the edit
  budget. Since every block stops after at most block_length + max_post_steps steps, a row
  can never make more than (block_length + max_post_steps) * mbe_edits_per_step earlier-block
  edits per block;
- earlier-block edits count as changes, so a block does not converge while it still fixes its past.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from .base import DecodeState, Rule, StepRecord, check_sampling, sample_tokens, topk_mask


@dataclass(frozen=True)
class DraftEdit(Rule):
    threshold: float = 0.95            # τ_mask: commit masks with p above it (code default)
    editing_threshold: float = 0.9     # τ_edit: rewrite a filled token when p of another is above it
    max_post_steps: int = 16           # steps a full block may keep editing
    num_to_transfer: int = 1           # M2T fallback: commit at least this many masks per step
    temperature: float = 0.0
    top_k: int | None = None
    top_p: float | None = None
    mbe_blocks: int = 0                # multi-block editing: how many earlier blocks T2T may revisit
    mbe_threshold: float = 0.9         # ... only with p above this
    mbe_edits_per_step: int = 1        # ... and at most this many per row and step
    decision_temperature: float = 0.0  # κ > 0: each commit and edit a Bernoulli draw, p = σ((confidence − τ) / κ),
                                       # with no top-n fallback (a stochastic policy RL can learn: labkit.training.rl)
    uses_step_budget: ClassVar[bool] = False   # runs until the block converges; `steps` is ignored

    def __post_init__(self):
        check_sampling(self.temperature, self.top_k, self.top_p)
        for name in ("threshold", "editing_threshold", "mbe_threshold"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)!r}")
        if not self.decision_temperature >= 0:
            raise ValueError(f"decision_temperature must be >= 0 (0: the thresholds decide), got {self.decision_temperature!r}")
        for name, low in (("max_post_steps", 0), ("num_to_transfer", 1), ("mbe_blocks", 0),
                          ("mbe_edits_per_step", 1)):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {v!r}")

    @classmethod
    def speed(cls, **overrides) -> "DraftEdit":
        """S mode (LLaDA2.1-mini card): threshold 0.5, editing_threshold 0.0, 16 post steps."""
        return cls(**{"threshold": 0.5, "editing_threshold": 0.0, "max_post_steps": 16, **overrides})

    @classmethod
    def quality(cls, **overrides) -> "DraftEdit":
        """Q mode (LLaDA2.1-mini card): threshold 0.7, editing_threshold 0.5, 16 post steps."""
        return cls(**{"threshold": 0.7, "editing_threshold": 0.5, "max_post_steps": 16, **overrides})

    def step(self, logits, state: DecodeState, generator=None) -> StepRecord:
        s, e = state.block_start, state.block_end
        lo = max(0, s - self.mbe_blocks * (e - s))                   # earliest editable position
        cand_w, prob_w = sample_tokens(logits[:, lo:e].float(), self.temperature, generator,
                                       self.top_k, self.top_p)       # (B, e - lo)
        x = state.x
        candidates = x.clone()
        candidates[:, lo:e] = cand_w
        confidence = torch.full(x.shape, float("nan"), device=x.device)
        confidence[:, lo:e] = prob_w
        candidates = torch.where(state.frozen, x, candidates)          # frozen: nothing proposed
        confidence = confidence.masked_fill(state.frozen, float("nan"))

        masked = state.masked                                           # (B, L)
        score = torch.nan_to_num(confidence, nan=-1.0)
        filled = (x != state.mask_id) & ~state.frozen
        differs = filled & (candidates != x)
        if self.decision_temperature:                                   # stochastic decisions (no fallback)
            u = torch.rand(x.shape, generator=generator, device=x.device)
            scored = ~torch.isnan(confidence)
            m2t = masked & scored & (u < torch.sigmoid((score - self.threshold) / self.decision_temperature))
            t2t = differs & scored & state.in_block & (
                u < torch.sigmoid((score - self.editing_threshold) / self.decision_temperature))
        else:
            m2t = masked & (score > self.threshold)
            short = m2t.sum(-1) < self.num_to_transfer                  # (B,) fall back to top-n
            fallback = topk_mask(score, masked, torch.full_like(masked[:, 0], self.num_to_transfer, dtype=torch.long))
            m2t = torch.where(short[:, None], fallback, m2t)
            t2t = differs & state.in_block & (score > self.editing_threshold)
        if self.mbe_blocks:
            earlier = torch.zeros_like(masked)
            earlier[:, lo:s] = True
            wanted = differs & earlier & (score > self.mbe_threshold)
            k = torch.full_like(masked[:, 0], self.mbe_edits_per_step, dtype=torch.long)
            t2t = t2t | topk_mask(score, wanted, k)
        tokens = torch.where(m2t | t2t, candidates, x)
        return StepRecord(step=state.global_step, block=state.block, tokens=tokens,
                          candidates=candidates, confidence=confidence, committed=m2t, edited=t2t)


__all__ = ["DraftEdit"]
