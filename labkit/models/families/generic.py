"""Any transformers masked LM (BERT, RoBERTa, ModernBERT, ...) as a one-step-at-a-time denoiser,
and any transformers causal LM (GPT-2, Llama, Qwen2, ...) as the autoregressive baseline. The
class is the one transformers maps the config's model_type to, so the LM head is always there.
A left-padded row gets the position ids it has alone: counted from 0 on its first real token, or,
for a network that keeps a position for padding (RoBERTa and its kin), from that position + 1."""
from __future__ import annotations

import functools
import inspect

import torch
from torch import Tensor
from transformers import AutoModelForCausalLM, AutoModelForMaskedLM
from transformers.models.auto import modeling_auto

from .base import Family, FamilyError, transformers_placement


def _mapping(kind: str) -> dict:
    return (modeling_auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES if kind == "masked"
            else modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


class _Transformers(Family):
    def claims(self, config: dict) -> bool:
        return config.get("model_type") in _mapping(self.kind)

    def build(self, path, config, *, dtype, device, trust_remote_code):
        auto = AutoModelForMaskedLM if self.kind == "masked" else AutoModelForCausalLM
        placed = transformers_placement(device)
        net, info = auto.from_pretrained(path, dtype=dtype, trust_remote_code=trust_remote_code,
                                         output_loading_info=True, **placed)
        if info.get("missing_keys"):
            missing = sorted(info["missing_keys"])
            raise FamilyError(f"checkpoint {str(path)!r} lacks {len(missing)} weights of {type(net).__name__} "
                              f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}): a headless or "
                              f"classification checkpoint has no trained language-model head")
        return (net if placed else net.to(device)).eval()

    def usable_context(self, net, config: dict) -> int | None:
        """A RoBERTa-style network's positions start after its padding position: max_position_embeddings
        514 with padding_idx 1 holds 512 tokens."""
        n, pad = self.context_length(config), _padding_position(net)
        return n if n is None or pad is None else n - pad - 1

    def forward(self, net, x, attention_mask):
        extra = {}
        if _takes_positions(type(net)):
            pad = _padding_position(net)
            extra = self.positions(x, attention_mask) if pad is None else _positions_after(pad, x, attention_mask)
        out = net(input_ids=x, attention_mask=attention_mask, **extra)
        return out.logits


@functools.cache
def _takes_positions(cls) -> bool:
    return "position_ids" in inspect.signature(cls.forward).parameters


def _padding_position(net) -> int | None:
    """The position id a RoBERTa-style network keeps for padding (its position table's padding_idx;
    RoBERTa, XLM-R, CamemBERT, MPNet, ... count real tokens from padding_idx + 1), or None for a
    network whose positions start at 0 (BERT, ModernBERT, ...)."""
    embeddings = getattr(getattr(net, "base_model", net), "embeddings", None)
    table = getattr(embeddings, "position_embeddings", None)
    return table.padding_idx if isinstance(table, torch.nn.Embedding) else None


def _positions_after(pad: int, x: Tensor, attention_mask: Tensor | None) -> dict:
    """Position ids as such a network counts them, from each row's first real token: pad + 1,
    pad + 2, ... (`pad` on the padding). Given without padding too, so a row decodes the same alone
    and in a left-padded batch, and a pad id written into the canvas shifts nothing after it."""
    real = torch.ones_like(x) if attention_mask is None else attention_mask.long()
    return {"position_ids": torch.where(real.bool(), real.cumsum(-1) + pad, pad)}


class MaskedLM(_Transformers):
    name = "masked LM"
    kind = "masked"
    context_keys = ("max_position_embeddings",)


class CausalLM(_Transformers):
    name = "causal LM"
    kind = "causal"
    context_keys = ("max_position_embeddings", "n_positions", "max_sequence_length")

    def mask_id(self, config, tokenizer) -> int | None:
        return None                             # a causal model decodes left to right: no canvas of masks


__all__ = ["CausalLM", "MaskedLM"]
