"""The model handle: what the decoding loop, the rules, the controls, the KV caches and the views
read from a model. `Denoiser` is the written interface; `DLM` is labkit's handle for any network
(embedded or from transformers); `Wrapper` is the base of handles that wrap another (the caches).

    lm(x, attention_mask)   x (B, L) long → logits (B, L, V), read by the model's `kind`:
                              "masked": logits[:, i] predict token i (what belongs at position i);
                              "causal": logits[:, i] predict token i + 1 (the next token, from
                              positions ≤ i), as in any causal LM: score token i + 1 with logits[:, i].
                            The mask loop shifts a causal model's logits right by one itself
                            (decode._model_fn), so the rules always read position i's at i.
    lm.begin_block(s, e)    optional (None when absent): the loop calls it as block [s, e) starts
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Protocol, runtime_checkable

import torch
from torch import Tensor

KINDS = ("masked", "causal")      # bidirectional denoiser / left-to-right model
TINY_MODEL_TYPE = "labkit-tiny-dlm"   # TinyDLMConfig.model_type (not imported: that would close an import circle)


@runtime_checkable
class Denoiser(Protocol):
    name: str
    kind: str                     # one of KINDS
    mask_id: int                  # the canvas's mask token (-1 for a causal model without one)
    pad_id: int                   # left padding of a batch
    eos_id: int | None
    eot_id: int | None            # end of turn, for chat models
    max_length: int | None        # context length, when the model has one
    tokenizer: Any                # a transformers tokenizer
    net: torch.nn.Module          # the network (parameters, dtype, config)
    family: Any                   # a models.families.Family (how the checkpoint is called), or None
    begin_block: Callable[[int, int], None] | None

    @property
    def stop_ids(self) -> tuple[int, ...]: ...      # EOS, end-of-turn and any other ids that end an answer

    @property
    def device(self) -> torch.device: ...

    def __call__(self, x: Tensor, attention_mask: Tensor | None = None) -> Tensor: ...
    # → logits (B, L, V): [:, i] predicts token i for kind "masked", token i + 1 for kind "causal"

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids, skip_special: bool = True) -> str: ...

    def token_strings(self, ids) -> list[str]: ...


@dataclass
class DLM:
    """A network plus what decoding needs to know about it; implements Denoiser."""
    net: torch.nn.Module
    tokenizer: Any                   # a transformers PreTrainedTokenizerFast
    mask_id: int
    eos_id: int | None
    pad_id: int
    name: str
    kind: str = "masked"             # "masked" (bidirectional denoiser) or "causal" (AR twin)
    max_length: int | None = None    # context length, when the model has one
    eot_id: int | None = None        # end-of-turn id of chat models (LLaDA's <|eot_id|>)
    family: Any = None               # a models.families.Family: how this checkpoint is called
    extra_stop_ids: tuple[int, ...] = ()   # further ids that end an answer (a list-valued eos_token_id's)
    formats: tuple = ()              # a task model's questions (models.formats.PromptFormat), in order
    begin_block: ClassVar[None] = None   # a plain model keeps nothing between steps

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")

    @property
    def stop_ids(self) -> tuple[int, ...]:
        return tuple(dict.fromkeys(i for i in (self.eos_id, self.eot_id, *self.extra_stop_ids) if i is not None))

    @property
    def device(self) -> torch.device:
        return next(self.net.parameters()).device

    @torch.no_grad()
    def __call__(self, x: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        """x (B, L) long → logits (B, L, V): [:, i] predicts token i (masked), token i + 1 (causal)."""
        if self.family is not None:
            return self.family.forward(self.net, x, attention_mask)
        out = self.net(input_ids=x, attention_mask=attention_mask)
        return out.logits if hasattr(out, "logits") else out[0]

    def encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def decode(self, ids, skip_special: bool = True) -> str:
        ids = [int(i) for i in ids]
        if skip_special:
            special = {self.mask_id, self.pad_id, *self.stop_ids}
            ids = [i for i in ids if i not in special]
        return self.tokenizer.decode(ids, skip_special_tokens=False)

    def token_strings(self, ids) -> list[str]:
        """One display string per id (masks as '<mask>'), for grids and hover text."""
        return [self.tokenizer.decode([int(i)]) for i in ids]

    def __repr__(self) -> str:
        n = sum(p.numel() for p in self.net.parameters())
        return f"DLM({self.name!r}, kind={self.kind}, params={n / 1e6:.1f}M, mask_id={self.mask_id})"


class Wrapper:
    """A handle around another (`self.lm`): it is the wrapped model in every respect but the
    forward pass (and `begin_block`) it defines itself."""
    begin_block: Callable[[int, int], None] | None = None

    def __init__(self, lm: Denoiser):
        self.lm = lm

    name = property(lambda self: self.lm.name)
    kind = property(lambda self: self.lm.kind)
    mask_id = property(lambda self: self.lm.mask_id)
    pad_id = property(lambda self: self.lm.pad_id)
    eos_id = property(lambda self: self.lm.eos_id)
    eot_id = property(lambda self: self.lm.eot_id)
    max_length = property(lambda self: self.lm.max_length)
    tokenizer = property(lambda self: self.lm.tokenizer)
    net = property(lambda self: self.lm.net)
    family = property(lambda self: self.lm.family)
    formats = property(lambda self: getattr(self.lm, "formats", ()))
    stop_ids = property(lambda self: self.lm.stop_ids)
    device = property(lambda self: self.lm.device)

    def __call__(self, x: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        return self.lm(x, attention_mask)

    def encode(self, text: str) -> list[int]:
        return self.lm.encode(text)

    def decode(self, ids, skip_special: bool = True) -> str:
        return self.lm.decode(ids, skip_special)

    def token_strings(self, ids) -> list[str]:
        return self.lm.token_strings(ids)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.lm!r})"


def model_block(lm: Denoiser) -> int:
    """The block size of a block-diffusion network (its config's block_size; 0 = attention over the
    whole canvas): its decoding blocks must be whole model blocks, starting on one."""
    config = getattr(getattr(lm, "net", None), "config", None)     # labkit's TinyDLM only: a hub config's
    if getattr(config, "model_type", None) != TINY_MODEL_TYPE:      # block_size (LLaDA2.x) is a decoding default
        return 0
    return int(getattr(config, "block_size", 0) or 0)


__all__ = ["DLM", "KINDS", "TINY_MODEL_TYPE", "Denoiser", "model_block", "Wrapper"]
