"""Sampler rules: frozen dataclasses of knobs with a pure `step(logits, state, generator)`."""
from .base import DecodeState, Sampler, StepRecord
from .low_confidence import LowConfidence

__all__ = ["DecodeState", "Sampler", "StepRecord", "LowConfidence"]
