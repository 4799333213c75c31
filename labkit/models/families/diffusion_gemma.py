"""DiffusionGemma (google/diffusiongemma-26B-A4B-it), native in transformers 5.x, drawn in the lab.

DiffusionGemma is block ("canvas") diffusion over *uniform* noise: each canvas of `canvas_length` tokens starts as
random token ids, never masks. Every denoising step the decoder reads the canvas (plus the encoder's cache of the
prompt and earlier canvases, plus self-conditioning on the previous step's logits); the entropy-bound sampler
accepts the lowest-entropy sampled tokens and re-noises every other position with fresh random ids (the accepted
set is recomputed each step: nothing is frozen). After the last step the *argmax* canvas is appended to the text.
labkit's mask loop cannot decode this (there is no mask token), so the family has no mask id; `lk.generate` runs
the model's own `generate()` instead and records it as a labkit Trace: the second decoding loop, labkit.recorded
(`generate_recorded`, `DraftRecorder`; its docstring says what each record holds).
"""
from __future__ import annotations

import torch
import transformers
from torch import Tensor
from transformers import DynamicCache
from transformers.models.auto import modeling_auto

from .base import Family, FamilyError, transformers_placement


class DiffusionGemma(Family):
    name = "DiffusionGemma"
    model_type = "diffusion_gemma"
    kind = "masked"                  # a bidirectional denoiser over each canvas
    noise = "uniform"                # canvases start as random token ids; there is no mask token
    context_keys = ("max_position_embeddings",)
    memory = "DiffusionGemma 26B-A4B: about 52 GB (26B parameters, 4B active)"

    def claims(self, config: dict) -> bool:
        return config.get("model_type") == self.model_type

    def build(self, path, config, *, dtype, device, trust_remote_code):
        """The class transformers' own auto mapping gives `diffusion_gemma` (DiffusionGemmaForBlockDiffusion: the
        encoder-decoder plus its LM head and generate()). No remote code."""
        cls_name = modeling_auto.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES.get(self.model_type)
        cls = getattr(transformers, cls_name or "", None)
        if cls is None or not hasattr(cls, "generate"):
            raise FamilyError(f"this transformers ({transformers.__version__}) has no DiffusionGemma model with a "
                              f"language-model head; DiffusionGemma needs transformers >= 5.12")
        placed = transformers_placement(device)
        net, info = cls.from_pretrained(path, dtype=dtype, output_loading_info=True, **placed)
        missing = sorted(info.get("missing_keys") or ())
        if missing:
            raise FamilyError(f"DiffusionGemma checkpoint {str(path)!r} lacks {len(missing)} weights of {cls_name} "
                              f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''})")
        return (net if placed else net.to(device)).eval()

    def mask_id(self, config: dict, tokenizer) -> int | None:
        return None                  # uniform noise: the canvas never holds a mask (Gemma's <mask> is not one)

    def context_length(self, config: dict) -> int | None:
        return super().context_length(config.get("text_config") or config)

    def forward(self, net, x: Tensor, attention_mask: Tensor | None) -> Tensor:
        """x (B, L) → logits (B, L, V): one decoder pass over x as a canvas after a one-token context (BOS),
        without self-conditioning (the first denoising step's view). Used for checks, not for decoding."""
        b, n = x.shape
        text = net.config.get_text_config()
        first = text.bos_token_id if text.bos_token_id is not None else (text.pad_token_id or 0)
        context = torch.full((b, 1), first, dtype=x.dtype, device=x.device)
        mask = None
        if attention_mask is not None:
            mask = torch.cat([torch.ones_like(attention_mask[:, :1]), attention_mask], -1).bool()
        out = net(input_ids=context, cache=DynamicCache(config=net.config.get_text_config(decoder=True)),
                  position_ids=torch.zeros(1, 1, dtype=torch.int32, device=x.device), decoder_input_ids=x,
                  decoder_attention_mask=mask,
                  decoder_position_ids=torch.arange(1, n + 1, dtype=torch.int32, device=x.device)[None])
        return out.logits


DIFFUSION_GEMMA = DiffusionGemma()

__all__ = ["DIFFUSION_GEMMA", "DiffusionGemma"]
