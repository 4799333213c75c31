"""The Family interface every model family implements."""
from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import torch
from torch import Tensor


class FamilyError(ValueError):
    """A checkpoint labkit cannot decode, with what is wrong in one line."""


def config_fields(cls, config: dict, family: str) -> dict:
    """The config.json values of dataclass `cls`'s fields: rope keys also read from a re-saved
    transformers-5 `rope_parameters`; any rope scaling but the default refused; a field without a
    default that the config lacks is a FamilyError naming it."""
    from dataclasses import MISSING, fields

    kw = {f.name: config[f.name] for f in fields(cls) if config.get(f.name) is not None}
    rope = config.get("rope_parameters") or {}
    for key in ("rope_theta", "partial_rotary_factor"):
        if key not in kw and rope.get(key) is not None:
            kw[key] = rope[key]
    scaling = config.get("rope_scaling") or rope
    if scaling.get("rope_type", scaling.get("type", "default")) != "default":
        raise FamilyError(f"{family}: rope scaling {scaling} is not supported (only the default rope)")
    missing = [f.name for f in fields(cls) if f.default is MISSING and f.name not in kw]
    if missing:
        raise FamilyError(f"{family} config.json lacks {', '.join(missing)}; labkit assumes no default for these")
    return kw


class Family:
    """How one family's checkpoints are built and called. Subclasses override what differs."""
    name: ClassVar[str] = ""
    model_type: ClassVar[str] = ""            # the config's model_type it claims ("" for transformers' own)
    kind: ClassVar[str] = "masked"            # "masked": bidirectional denoiser; "causal": left to right
    noise: ClassVar[str] = "mask"             # the canvas starts as masks ("mask") or random tokens ("uniform")
    context_keys: ClassVar[tuple[str, ...]] = ("max_position_embeddings",)
    default_sampler: ClassVar[str | None] = None   # a registry name the lab opens this family with
    memory: ClassVar[str] = ""                # weights in bf16 of the published sizes, for README

    def claims(self, config: dict) -> bool:
        raise NotImplementedError

    def build(self, path: str | Path, config: dict, *, dtype: torch.dtype | None, device: torch.device,
              trust_remote_code: bool) -> torch.nn.Module:
        """The network with the checkpoint's weights, in eval mode."""
        raise NotImplementedError

    def tokenizer(self, source, trust_remote_code: bool = False):
        """The family's own way to load its published tokenizer, or None: transformers' AutoTokenizer."""
        return None

    def mask_id(self, config: dict, tokenizer) -> int | None:
        """The canvas's mask id: the config's `mask_token_id`, else the tokenizer's mask token."""
        if config.get("mask_token_id") is not None:
            return int(config["mask_token_id"])
        return tokenizer.mask_token_id

    def context_length(self, config: dict) -> int | None:
        return next((int(config[k]) for k in self.context_keys if config.get(k) is not None), None)

    def forward(self, net: torch.nn.Module, x: Tensor, attention_mask: Tensor | None) -> Tensor:
        """x (B, L) long, attention_mask (B, L) {0 pad, 1 token} or None → logits (B, L, V), with
        position i's logits predicting token i whatever the batch's padding."""
        out = net(input_ids=x, attention_mask=attention_mask, **self.positions(x, attention_mask))
        return out.logits if hasattr(out, "logits") else out[0]

    def positions(self, x: Tensor, attention_mask: Tensor | None) -> dict:
        """Extra forward arguments for a left-padded batch: position ids that start at 0 on each
        row's first real token, so a row's answer does not depend on its padding."""
        if attention_mask is None:
            return {}
        return {"position_ids": (attention_mask.long().cumsum(-1) - 1).clamp_min(0)}

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
