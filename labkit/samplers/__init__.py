"""Sampler rules: frozen dataclasses of knobs with a pure `step(logits, state, generator)`."""
from .autoregressive import Autoregressive
from .base import DecodeState, Sampler, StepRecord
from .draft_edit import DraftEdit
from .learned import LearnedCommit
from .low_confidence import LowConfidence
from .threshold import EntropyBound, Threshold

__all__ = ["Autoregressive", "DecodeState", "DraftEdit", "EntropyBound", "LearnedCommit", "LowConfidence", "Sampler",
           "StepRecord", "Threshold"]
