"""Noise schedules: ᾱ(t), the share of signal left at diffusion time t ∈ [0, 1].

One function serves both kinds of diffusion:

- Gaussian (continuous) diffusion: x_t = √ᾱ(t) · x0 + √(1 − ᾱ(t)) · ε, ε ~ N(0, I), so ᾱ(t) is the
  signal level (the variance kept of x0);
- masked diffusion: each token is still clean with probability ᾱ(t), so the masking rate is
  1 − ᾱ(t) (`Schedule.mask_rate`).

Every schedule has ᾱ(0) = 1 (clean) and ᾱ(1) ≈ 0 (pure noise / all masked), decreasing in t:

- "linear": DDPM's linear β schedule in continuous time (the VP SDE), β(t) = β_min + (β_max − β_min) t,
  ᾱ(t) = exp(−β_min t − ½ (β_max − β_min) t²) with β_min = 0.1, β_max = 20 (ᾱ(1) ≈ 4.3e-5);
- "cosine": Nichol & Dhariwal's, ᾱ(t) = cos²(π/2 · (t + s)/(1 + s)) / cos²(π/2 · s/(1 + s)), s = 0.008
  (ᾱ(1) = 0 up to rounding);
- "log-linear": the masked-diffusion schedule of SEDD / MDLM (LLaDA's t): the total noise
  σ(t) = −log(1 − (1 − ε) t) grows log-linearly, so ᾱ(t) = 1 − (1 − ε) t, ε = 1e-3: the masking
  rate is (1 − ε) t, linear in t.

    from labkit.training.schedules import schedule
    s = schedule("cosine")
    s(torch.tensor([0.0, 0.5, 1.0]))       # ᾱ at those times
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

BETA_MIN, BETA_MAX = 0.1, 20.0     # "linear": DDPM's β range in continuous time
COSINE_S = 0.008                   # "cosine": the small offset that keeps β finite near t = 0
LOG_LINEAR_EPS = 1e-3              # "log-linear": ᾱ(1) = ε, the smallest share left clean


def linear(t: torch.Tensor) -> torch.Tensor:
    """ᾱ(t) of DDPM's linear β schedule (VP SDE): exp(−∫₀ᵗ β)."""
    return torch.exp(-(BETA_MIN * t + 0.5 * (BETA_MAX - BETA_MIN) * t * t))


def cosine(t: torch.Tensor) -> torch.Tensor:
    """ᾱ(t) of the cosine schedule, normalised so ᾱ(0) = 1; clamped at 0 against rounding."""
    f = torch.cos((t + COSINE_S) / (1 + COSINE_S) * (math.pi / 2)) ** 2
    return (f / math.cos(COSINE_S / (1 + COSINE_S) * math.pi / 2) ** 2).clamp(0.0, 1.0)


def log_linear(t: torch.Tensor) -> torch.Tensor:
    """ᾱ(t) = exp(−σ(t)) with σ(t) = −log(1 − (1 − ε) t): 1 − (1 − ε) t."""
    return 1 - (1 - LOG_LINEAR_EPS) * t


SCHEDULES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "linear": linear, "cosine": cosine, "log-linear": log_linear}


@dataclass(frozen=True)
class Schedule:
    """A named ᾱ(t). Calling it gives ᾱ(t) (the signal level); `mask_rate` gives 1 − ᾱ(t)."""
    name: str

    def __call__(self, t) -> torch.Tensor:
        """t: float or tensor in [0, 1] → ᾱ(t), same shape, float32 (or t's float dtype)."""
        t = torch.as_tensor(t)
        t = t if t.is_floating_point() else t.float()
        return SCHEDULES[self.name](t.clamp(0.0, 1.0))

    def alpha_bar(self, t) -> torch.Tensor:
        return self(t)

    def mask_rate(self, t) -> torch.Tensor:
        """Masked diffusion: the probability that a token is masked at time t."""
        return 1 - self(t)


def schedule(name: str) -> Schedule:
    """The schedule called `name` (one of SCHEDULES), or a ValueError naming the allowed names."""
    if isinstance(name, Schedule):
        return name
    if not isinstance(name, str) or name not in SCHEDULES:
        raise ValueError(f"schedule must be one of {tuple(SCHEDULES)}, got {name!r}")
    return Schedule(name)


__all__ = ["BETA_MAX", "BETA_MIN", "COSINE_S", "LOG_LINEAR_EPS", "SCHEDULES", "cosine", "linear", "log_linear",
           "schedule", "Schedule"]
