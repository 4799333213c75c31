"""Sampler rules: frozen dataclasses of knobs with a pure `step(logits, state, generator)`."""
from .base import DecodeState, Sampler, StepRecord
from .low_confidence import LowConfidence
from .threshold import EntropyBound, Threshold

__all__ = ["DecodeState", "EntropyBound", "LowConfidence", "Sampler", "StepRecord", "Threshold"]
