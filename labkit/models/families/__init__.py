"""Model families: where each published format keeps what the decoding loop needs.

A `Family` says, in one place, how to build the network from a checkpoint folder, where the mask,
pad, end-of-text and end-of-turn ids live, which config key holds the context length, how a
left-padded batch gets its attention mask and position ids, whether logits are shifted, and what
kind of noise the canvas starts from. `detect(config)` picks the family from the config's
`model_type` (labkit's own families first, in the order of `FAMILIES`, then transformers' masked-LM and
causal-LM mappings); nothing is chosen by name fragments and nothing falls back to a headless model.
A new family is one module here and one entry in `FAMILIES`; importing a family module registers nothing.
"""
from __future__ import annotations

from .base import Family, FamilyError
from .diffusion_gemma import DIFFUSION_GEMMA
from .dream import DREAM
from .generic import CausalLM, MaskedLM
from .llada import LLADA
from .llada2 import LLADA2
from .llada_moe import LLADA_MOE

# labkit-native families, in the order detect() asks them, before transformers' mappings
FAMILIES: tuple[Family, ...] = (DIFFUSION_GEMMA, DREAM, LLADA, LLADA2, LLADA_MOE)


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


__all__ = ["FAMILIES", "CausalLM", "Family", "FamilyError", "MaskedLM", "detect"]
