"""The masking forward process, written once: which tokens of a clean sequence x0 become masks, and
the weight each masked token's cross-entropy carries in the bound on -log p(x0).

Two ways to choose, the two the field uses:

- at a rate: each allowed position is masked independently with probability t (one t per row,
  LLaDA's pre-training loss and ESPO's ELBO; or one per position, BD3-LM's t per block); weight 1/t;
- at a count: exactly k of a row's n allowed positions, chosen uniformly (LLaDA's likelihood
  estimator and the task models' loss; with `block`, k_b of the n_b allowed positions of each
  block); weight n/k.

Either way E[Σ_masked weight · CE] is the same masked-diffusion bound. The rates and counts
themselves are drawn by `stratified_t` and `stratified_counts`: one uniform offset, the batch's
draws evenly spaced from it (the same expectation as independent draws, less noise).

Noise is drawn on the CPU from the caller's generator (so a seed gives the same masks on any
device) and moved to x0's device; the order of draws is part of the contract (the committed models
and figures were made with it): the rate or count first, by the caller, then one (B, L) uniform.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .seeds import CPU

EPS = 1e-3                          # t ~ U(EPS, 1): the smallest masking probability


@dataclass(frozen=True)
class Noised:
    """A masked canvas and the weights of the bound: all (B, L), on x0's device."""
    canvas: torch.Tensor         # (B, L) x0 with the masked positions set to the mask id
    masked: torch.Tensor         # (B, L) bool
    weight: torch.Tensor         # (B, L) float: 1/t (rate) or n/k (count) where masked, 0 elsewhere


def stratified_t(batch: int, eps: float = EPS, generator: torch.Generator | None = None) -> torch.Tensor:
    """Masking ratios t ~ U(eps, 1), one per row, low-discrepancy over the batch: one uniform
    offset, rows evenly spaced in [0, 1) from it. Returns (batch,) on the CPU."""
    u = (torch.rand(1, generator=generator, device=CPU) + torch.arange(batch, device=CPU) / batch) % 1.0
    return (1 - eps) * u + eps


def stratified_counts(draws: int, length: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """How many of `length` tokens each of `draws` draws masks: one uniform offset, the draws evenly
    spaced from it around [0, 1), mapped onto 1..length. Each count alone is uniform on 1..length.
    Returns (draws,) long, on the CPU."""
    u = (torch.rand(1, generator=generator, device=CPU) + torch.arange(draws, device=CPU) / draws) % 1.0
    return (u * length).long().clamp_max(length - 1) + 1


def uniform(shape, generator: torch.Generator | None, device: torch.device) -> torch.Tensor:
    """U(0, 1) noise of `shape` drawn on the CPU from `generator`, moved to `device`."""
    return torch.rand(shape, generator=generator, device=CPU).to(device)


def mask_tokens(x0: torch.Tensor, mask_id: int, *, rate: torch.Tensor | None = None, count: torch.Tensor | None = None,
                where: torch.Tensor | None = None, block: int = 0,
                generator: torch.Generator | None = None) -> Noised:
    """Mask x0 (B, L) at a `rate` or a `count` (exactly one), only at `where` (B, L) bool (default:
    everywhere). `rate`: (B,) one per row or (B, L) one per position. `count`: (B,) per row, or
    (B, blocks) with `block`, the count of each block of `block` positions (counted from 0); a count
    must not exceed its row's (block's) allowed positions. Draws one (B, L) uniform from `generator`."""
    if (rate is None) == (count is None):
        raise ValueError("give exactly one of rate (a masking probability) and count (a number of masks)")
    B, L = x0.shape
    dev = x0.device
    where = torch.ones(B, L, dtype=torch.bool, device=dev) if where is None else where.to(dev)
    u = uniform((B, L), generator, CPU)                                        # (B, L)
    if rate is not None:
        r = rate.to(dev)
        r = r[:, None] if r.dim() == 1 else r                                  # (B, 1) or (B, L)
        masked = (u.to(dev) < r) & where
        weight = torch.where(masked, 1.0 / r, 0.0)
    else:
        masked, weight = _by_count(u, count, where, block)
    return Noised(x0.masked_fill(masked, mask_id), masked, weight)


def _by_count(u: torch.Tensor, count: torch.Tensor, where: torch.Tensor, block: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The k smallest keys u among each row's (block's) allowed positions are masked; weight n/k."""
    dev, L = where.device, where.shape[1]
    block_of = torch.arange(L, device=CPU) // (block or L + 1)                 # (L,) all 0 without blocks
    keys = u.masked_fill(~where.cpu(), 2.0)                                    # not allowed: last
    if block:
        rank = (keys + block_of * 4.0).argsort(-1).argsort(-1) - block_of * block   # rank inside its block
    else:
        rank = keys.argsort(-1).argsort(-1)                                    # (B, L)
    count = count.cpu()
    k = (count[:, None] if count.dim() == 1 else count)[:, block_of]          # (B, L) the count of each position
    n = torch.zeros(where.shape[0], int(block_of[-1]) + 1, device=CPU).index_add_(1, block_of, where.cpu().float())
    masked = (rank < k).to(dev) & where
    weight = torch.where(masked, (n[:, block_of] / k).to(dev), 0.0)
    return masked, weight


__all__ = ["EPS", "mask_tokens", "Noised", "stratified_counts", "stratified_t", "uniform"]
