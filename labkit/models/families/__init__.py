"""Model families: where each published format keeps what the decoding loop needs.

A `Family` says, in one place, how to build the network from a checkpoint folder, where the mask,
pad, end-of-text and end-of-turn ids live, which config key holds the context length, how a
left-padded batch gets its attention mask and position ids, whether logits are shifted, and what
kind of noise the canvas starts from. `detect(config)` picks the family from the config's
`model_type` (labkit's own families first, then transformers' masked-LM and causal-LM mappings);
nothing is chosen by name fragments and nothing falls back to a headless model.
"""
from __future__ import annotations

from .base import Family, FamilyError
from .generic import CausalLM, MaskedLM

FAMILIES: list[Family] = []          # labkit-native families, checked before transformers' mappings


def register(family: Family) -> Family:
    FAMILIES.append(family)
    return family


def detect(config: dict) -> Family:
    """The family of a checkpoint from its config.json contents, or a FamilyError naming what
    labkit supports."""
    for family in FAMILIES:
        if family.claims(config):
            return family
    for family in (MaskedLM(), CausalLM()):
        if family.claims(config):
            return family
    model_type = config.get("model_type")
    names = ", ".join(sorted({f.name for f in FAMILIES} | {"masked LMs (BERT, RoBERTa, ModernBERT, ...)",
                                                             "causal LMs (GPT-2, Llama, Qwen2, ...)"}))
    raise FamilyError(f"model_type {model_type!r} (architectures {config.get('architectures')}) is neither a "
                      f"diffusion LM labkit knows nor a masked or causal language model; labkit loads: {names}")


__all__ = ["FAMILIES", "CausalLM", "Family", "FamilyError", "MaskedLM", "detect", "register"]


# labkit's native families register themselves on import (after `register` exists)
from . import diffusion_gemma, dream, llada, llada2, llada_moe  # noqa: E402,F401
