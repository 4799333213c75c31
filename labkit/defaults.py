"""The lab's defaults: which model, which sampler settings. What the notebooks, `labkit generate`
and `labkit eval` use unless told otherwise.

Models: `tiny` for everything, except LLaDA2.1's S and Q modes, which run on `tiny-cap`, the
embedded model trained to commit several tokens per forward pass (`tiny` commits about one, so
S mode on it shows a learner edits fighting each other, not parallel decoding).

Sampling: LLaDA low-confidence remasking, one token per step, sampled at temperature 1.0 within
the 0.9 nucleus (how it was chosen: docs/benchmarks.md, "Sampling defaults").
"""
from __future__ import annotations

from .decode import DEFAULT_BLOCK
from .samplers import registry
from .samplers.low_confidence import LowConfidence

MODEL = "tiny"
PARALLEL_MODEL = "tiny-cap"      # the S / Q presets' model unless the user chose another
MIN_PARALLEL_TPF = 1.2           # below this a parallel rule is not really decoding in parallel
GEN_LENGTH = 64
BLOCK_LENGTH = DEFAULT_BLOCK        # a block-diffusion model's own block size comes first (decode.block_for)
STEPS = 64
TEMPERATURE = 1.0
TOP_P = registry.DEFAULT_TOP_P   # the nucleus at temperature > 0


def sampler() -> LowConfidence:
    return LowConfidence(temperature=TEMPERATURE, top_p=TOP_P)


def settings() -> dict:
    return {"gen_length": GEN_LENGTH, "block_length": BLOCK_LENGTH, "steps": STEPS}


def parallel_note(model: str, rule: str, tpf: float) -> str | None:
    """A note when a rule meant to commit several tokens per forward pass (threshold, factor,
    entropy_bound, draft_edit, speed, quality) committed fewer than MIN_PARALLEL_TPF on average:
    the model is not confident enough for it. None otherwise."""
    if registry.budgeted(rule) or rule == "autoregressive" or tpf >= MIN_PARALLEL_TPF:
        return None
    hint = "" if model == PARALLEL_MODEL else f"; {PARALLEL_MODEL} is the lab's model for parallel decoding"
    return (f"{model} committed {tpf:.2f} tokens per forward pass under {rule}: it is not confident "
            f"enough to decode in parallel (below {MIN_PARALLEL_TPF}){hint}")
