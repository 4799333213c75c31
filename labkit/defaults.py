"""The lab's default sampler settings: what the notebooks, `labkit generate` and `labkit eval`
use unless told otherwise. Chosen by `labkit eval` sweeps on the embedded model (see its card)."""
from __future__ import annotations

from .samplers.low_confidence import LowConfidence

GEN_LENGTH = 64
BLOCK_LENGTH = 32
STEPS = 64
TEMPERATURE = 0.8


def sampler() -> LowConfidence:
    return LowConfidence(temperature=TEMPERATURE)


def settings() -> dict:
    return {"gen_length": GEN_LENGTH, "block_length": BLOCK_LENGTH, "steps": STEPS}
