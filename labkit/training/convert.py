"""Making a diffusion LM from an autoregressive one: the schedules that carry the AR model's causal
attention over to a diffusion model's, step by step.

- `block_at`: LLaDA2.0's block-size warm-up. Converted to block diffusion with token shift, a block
  of one token *is* the AR model (its one masked token is read from the clean hidden state before
  it), so training starts at block size 1 and doubles it over `block_warmup` steps up to the
  model's block size: 1, 2, 4, ... each for an equal share of the warm-up.
- `anneal_layout`: DiffuLLaMA's attention-mask annealing. For the first `attn_anneal` steps the
  attention is the causal mask with a growing random share of the future keys opened (ratio
  step / attn_anneal; the same draw for every row of a batch), then full.
- `tiny`'s own recipe opens the attention at once (Dream): neither schedule.
"""
from __future__ import annotations

import torch

from ..models.handle import DLM
from ..models.tiny_net import TinyDLM, TinyDLMConfig
from .seeds import CPU


def block_at(block_size: int, block_warmup: int, step: int) -> int:
    """The block length trained at `step`: powers of two from 1 up to `block_size`, each for an equal
    share of the first `block_warmup` steps, then `block_size` (which need not be a power of two)."""
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    if not block_warmup or step >= block_warmup:
        return block_size
    sizes = [1 << i for i in range(block_size.bit_length()) if 1 << i < block_size]   # 1, 2, 4, ... < block_size
    return sizes[step * len(sizes) // block_warmup]


def anneal_ratio(attn_anneal: int, step: int) -> float:
    """The share of future keys open at `step`: step / attn_anneal, 1 from then on."""
    return 1.0 if not attn_anneal or step >= attn_anneal else step / attn_anneal


def anneal_layout(ratio: float, L: int, generator: torch.Generator | None = None) -> torch.Tensor | None:
    """(L, L) bool [query, key]: the causal mask with each future key opened with probability
    `ratio`; None (full attention) at ratio 1. Drawn from `generator` on the CPU."""
    if ratio >= 1:
        return None
    causal = torch.ones(L, L, dtype=torch.bool, device=CPU).tril()
    return causal | (torch.rand(L, L, generator=generator, device=CPU) < ratio)





def as_block_model(ar, block_size: int = 1):
    """An AR model's own weights as a block-diffusion model before any training (a DLM handle):
    block-causal attention with blocks of `block_size` (0: full attention, Dream's conversion at
    its step 0) and the token shift. At block size 1 each
    masked token is read from the clean hidden state before it, so its likelihood is the AR
    model's exactly: where LLaDA2.0's block-size warm-up starts (a test of the mask and the shift)."""
    if getattr(ar, "kind", None) != "causal" or not isinstance(getattr(ar, "net", None), TinyDLM):
        raise ValueError(f"as_block_model needs a causal labkit TinyDLM (tiny-ar), got {getattr(ar, 'name', ar)!r}")
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 0:
        raise ValueError(f"block_size must be an integer >= 0 (0 = full attention), got {block_size!r}")
    cfg = ar.net.config.to_dict()
    cfg.update(is_causal=False, shift_logits=True, block_size=block_size)
    for key in ("architectures", "model_type", "transformers_version", "auto_map"):
        cfg.pop(key, None)
    net = TinyDLM(TinyDLMConfig(**cfg)).to(ar.device).eval()
    net.load_state_dict(ar.net.state_dict())
    return DLM(net=net, tokenizer=ar.tokenizer, mask_id=ar.tokenizer.mask_token_id, eos_id=ar.eos_id, pad_id=ar.pad_id,
               name=f"{ar.name} as block-{block_size}" if block_size else f"{ar.name} opened", kind="masked",
               max_length=ar.max_length)

__all__ = ["anneal_layout", "anneal_ratio", "as_block_model", "block_at"]
