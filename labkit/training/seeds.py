"""Per-step seeds: every random draw of a training run is a pure function of (run seed, step), so
a resumed run sees the same data and noise as one that was never stopped. Every draw is made on the
CPU (`CPU`), from a CPU generator, and moved to the network's device: one seed, the same draws on
any device."""
from __future__ import annotations

import torch

CPU = torch.device("cpu")       # where batches and noise are drawn

DATA_SEED_STRIDE = 1_000_003    # a prime above any step count: corpus batches and teacher chunks
NOISE_SEED_STRIDE = 7_919       # the 1000th prime: each step's masking and T2T noise


def data_seed(seed: int, step: int) -> int:
    """Seed of the corpus batch of `step` (and of the teacher's answers from prompt `step` on)."""
    return seed * DATA_SEED_STRIDE + step


def noise_seed(seed: int, step: int) -> int:
    """Seed of the loss's noise (masking ratios, masks, T2T swaps) at `step`."""
    return seed * NOISE_SEED_STRIDE + step
