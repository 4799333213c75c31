"""What every sampler rule sees and returns. The loop (decode.stream) owns the state; a rule's
`step()` is a pure function of logits and state."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar, Protocol, runtime_checkable

import torch
from torch import Tensor


@dataclass
class DecodeState:
    """What a sampler may look at. Owned and advanced by decode.stream()."""
    x: Tensor              # (B, L) long: prompt + canvas, mask_id where undecided
    frozen: Tensor         # (B, L) bool: prompt, padding and pinned positions; never committed or edited
    block_start: int       # first position of the active block
    block_end: int         # one past its last position
    block: int             # active block index
    step: int              # step index within the block (0-based)
    steps: int             # step budget for this block
    global_step: int       # step index over the whole generation
    mask_id: int
    stop_ids: tuple[int, ...] = ()   # EOS / end-of-turn ids (LLaDA: <|endoftext|>, <|eot_id|>)

    @property
    def in_block(self) -> Tensor:              # (B, L) bool
        m = torch.zeros_like(self.frozen)
        m[:, self.block_start:self.block_end] = True
        return m

    @cached_property
    def masked(self) -> Tensor:                # (B, L) bool: undecided positions of the active block
        """Computed once per state (the loop and the rule both read it; x does not change under it)."""
        s, e = self.block_start, self.block_end
        m = torch.zeros_like(self.frozen)
        m[:, s:e] = (self.x[:, s:e] == self.mask_id) & ~self.frozen[:, s:e]
        return m


@dataclass(frozen=True)
class StepRecord:
    """What one denoising step (one forward pass) did. Every tensor is (B, L)."""
    step: int              # global step index
    block: int             # active block index
    tokens: Tensor         # long: the canvas after this step
    candidates: Tensor     # long: the rule's proposal at each position (x where it proposed nothing)
    confidence: Tensor     # float: the score used for ranking / thresholding (nan where not scored)
    committed: Tensor      # bool: mask → token at this step (M2T)
    edited: Tensor         # bool: token → different token at this step (T2T)
    seconds: float = float("nan")   # wall time of the step, when a timer filled it in
    active: Tensor | None = None    # (B,) bool: rows the step applied to (the loop fills it in;
                                    # finished rows are carried along unchanged)
    pinned: Tensor | None = None    # (B, L) bool: answer positions fixed by controls after this step
                                    # (None when the run has no controls)


@runtime_checkable
class Sampler(Protocol):
    """A rule: what to commit (and edit) at one step. `step` is pure: logits (B, L, V) and the
    state in, a StepRecord out. Its capabilities tell the loop how to drive it."""
    uses_step_budget: bool    # spends the `steps` budget (LLaDA); else runs until a block is done
    decodes_causal: bool      # can run on a causal (left-to-right) model
    max_post_steps: int       # steps a full block may keep editing (0: none)

    def step(self, logits: Tensor, state: DecodeState,
             generator: torch.Generator | None = None) -> StepRecord: ...


class Rule:
    """Base of labkit's rules: the capability defaults of the Sampler protocol."""
    uses_step_budget: ClassVar[bool] = True
    decodes_causal: ClassVar[bool] = False
    max_post_steps: ClassVar[int] = 0


def gumbel(shape, generator: torch.Generator | None, device) -> Tensor:
    """Gumbel(0, 1) noise in float64 (low-precision Gumbel noise hurts quality: arXiv:2409.02908).
    Adding it to logits and taking the argmax samples from their softmax (the top k: k draws
    without replacement)."""
    u = torch.rand(shape, generator=generator, device=device, dtype=torch.float64)
    return -torch.log(-torch.log(u.clamp_min(1e-300)))


def sample_tokens(logits: Tensor, temperature: float, generator: torch.Generator | None = None,
                  top_k: int | None = None, top_p: float | None = None) -> tuple[Tensor, Tensor]:
    """Propose x0 at every position and score it by its probability under softmax(logits).
    logits (B, N, V) → candidates (B, N) long, probability (B, N) float32.
    temperature 0 is argmax; > 0 is Gumbel-max in float64 (low-precision Gumbel noise hurts
    quality: arXiv:2409.02908), i.e. a sample from softmax(logits / temperature), optionally
    truncated to the top_k tokens and / or the top_p nucleus first (as LLaDA2's sampler offers).
    The score is always p(x0) under the plain softmax, so truncation changes what is proposed,
    not how confident the model was."""
    logits = logits.float()
    if temperature > 0:
        noisy = logits.double() / temperature
        noisy = truncate(noisy, top_k, top_p)
        cand = (noisy + gumbel(logits.shape, generator, logits.device)).argmax(-1)
    else:
        cand = logits.argmax(-1)
    prob = torch.softmax(logits, -1).gather(-1, cand[..., None]).squeeze(-1)
    return cand, prob


SCORES = ("probability", "margin", "neg_entropy")


def score_block(logits: torch.Tensor, cand: torch.Tensor, prob: torch.Tensor, score: str) -> torch.Tensor:
    """(B, N, V) logits, (B, N) proposals and their probability → (B, N) confidence."""
    if score == "probability":
        return prob
    p = torch.softmax(logits.float(), -1)
    if score == "margin":
        top2 = p.topk(2, dim=-1).values
        return top2[..., 0] - top2[..., 1]
    return (p * torch.log(p.clamp_min(1e-30))).sum(-1)


def truncate(logits: Tensor, top_k: int | None, top_p: float | None) -> Tensor:
    """Set logits outside the top_k / the smallest set with mass >= top_p to -inf. (..., V)"""
    if top_k is not None and top_k < logits.shape[-1]:
        kth = logits.topk(top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None and top_p < 1.0:
        sorted_logits, order = logits.sort(dim=-1, descending=True)
        mass_before = sorted_logits.softmax(-1).cumsum(-1) - sorted_logits.softmax(-1)
        drop = (mass_before >= top_p).scatter(-1, order, mass_before >= top_p)
        logits = logits.masked_fill(drop, float("-inf"))
    return logits


def check_sampling(temperature: float, top_k: int | None, top_p: float | None) -> None:
    """The proposal knobs every rule shares: a clear error naming the parameter."""
    if not temperature >= 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"top_k must be a positive integer or None, got {top_k!r}")
    if top_p is not None and not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1] or None, got {top_p!r}")


def spread(state: "DecodeState", cand_b: Tensor, conf_b: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Block-local proposals (B, N) → full-length views (B, L): the masked positions of the block,
    the candidates (x wherever nothing is proposed) and the confidence (nan where not scored)."""
    s, e = state.block_start, state.block_end
    masked = state.masked
    candidates = state.x.clone()
    candidates[:, s:e] = torch.where(masked[:, s:e], cand_b, state.x[:, s:e])
    confidence = torch.full(state.x.shape, float("nan"), device=state.x.device)
    confidence[:, s:e] = torch.where(masked[:, s:e], conf_b, confidence[:, s:e])
    return masked, candidates, confidence


def commit_record(state: "DecodeState", candidates: Tensor, confidence: Tensor, committed: Tensor) -> StepRecord:
    """The StepRecord of a step that only commits (M2T): tokens = x with the commits written."""
    return StepRecord(step=state.global_step, block=state.block,
                      tokens=torch.where(committed, candidates, state.x), candidates=candidates,
                      confidence=confidence, committed=committed, edited=torch.zeros_like(committed))


def topk_mask(score: Tensor, allowed: Tensor, k: Tensor) -> Tensor:
    """(B, L) bool: per row, the k[b] highest-score positions among `allowed` (ties by position)."""
    score = score.masked_fill(~allowed, float("-inf"))
    order = score.argsort(dim=-1, descending=True, stable=True)       # (B, L)
    rank = torch.empty_like(order)
    rank.scatter_(-1, order, torch.arange(score.shape[-1], device=score.device).expand_as(order))
    return (rank < k[:, None]) & allowed


def ceil_div(a: Tensor, b: int) -> Tensor:
    return -(-a // b)
