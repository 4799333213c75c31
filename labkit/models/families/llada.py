"""LLaDA-8B (Base, Instruct, LLaDA-1.5) in its published on-disk format, without the checkpoint's
remote code (which transformers 5 cannot run): config.json keys as GSAI-ML wrote them
(`d_model`, `n_layers`, `max_sequence_length`, ...) and weights named `model.transformer.*`.

The network is a pre-norm "llama" block stack: RMSNorm (fp32 statistics, cast back, then the
weight), bidirectional attention with rotate-half RoPE (fp32, theta from config), SwiGLU with
`ff_proj` as the gate, an untied (or, with `weight_tying`, tied) head. No logit shift.

Left padding: pads are never attended to (an additive key-padding mask, as in the October 2025
upstream file). The official code numbers positions 0..T-1 over the padded input, so a row padded
by p tokens starts its prompt at position p; this family by default numbers each row from 0 at its
first real token instead (a deviation from upstream), so a padded row rotates q and k exactly as
the unpadded row does. With pads masked, RoPE makes attention depend only on position differences,
so the two numberings agree in exact arithmetic and differ only in rounding (which in bf16 can
flip a near tie); `LLaDA(official_positions=True)` gives the upstream numbering."""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..kv_cache import window_kv
from .base import Family, FamilyError, fill

# What this module implements; a config with any other value is refused rather than misread.
FIXED = {"block_type": "llama", "layer_norm_type": "rms", "activation_type": "silu", "rope": True,
         "rope_full_precision": True, "alibi": False, "attention_layer_norm": False, "include_bias": False,
         "include_qkv_bias": False, "bias_for_layer_norm": False, "layer_norm_with_affine": True,
         "input_emb_norm": False, "scale_logits": False, "block_group_size": 1}
MOE_KEYS = ("num_experts", "num_experts_per_tok", "expert_intermediate_size", "moe_layer_freq")


@dataclass(frozen=True)
class Shape:
    d: int            # d_model
    layers: int       # n_layers
    heads: int        # n_heads
    kv_heads: int     # n_kv_heads
    ff: int           # mlp_hidden_size
    vocab: int        # embedding rows: embedding_size or vocab_size
    theta: float      # rope_theta
    eps: float        # rms_norm_eps
    tied: bool        # weight_tying: the head is wte

    @classmethod
    def of(cls, config: dict) -> Shape:
        need = ("d_model", "n_layers", "n_heads", "vocab_size", "rope_theta", "rms_norm_eps", "weight_tying", *FIXED)
        missing = [k for k in need if k not in config]
        if missing:
            raise FamilyError(f"LLaDA config.json lacks {missing}; labkit reads these keys and assumes no defaults")
        wrong = {k: config[k] for k, v in FIXED.items() if config[k] != v}
        if wrong:
            raise FamilyError(f"LLaDA config.json has {wrong}; labkit implements only {FIXED}")
        kv = config.get("n_kv_heads") or (1 if config.get("multi_query_attention") else config["n_heads"])
        ff = config.get("mlp_hidden_size") or config["mlp_ratio"] * config["d_model"]
        return cls(d=config["d_model"], layers=config["n_layers"], heads=config["n_heads"], kv_heads=kv, ff=ff,
                   vocab=config.get("embedding_size") or config["vocab_size"], theta=float(config["rope_theta"]),
                   eps=float(config["rms_norm_eps"]), tied=bool(config["weight_tying"]))


class RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(d)), eps

    def forward(self, x: Tensor) -> Tensor:                 # (..., d) → (..., d)
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return h.to(x.dtype) * self.weight                  # normalised in fp32, cast back, then scaled


def rotate(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """x (B, H, L, hd), cos/sin (B, 1, L, hd) fp32 → x rotated (rotate-half pairing), x's dtype."""
    h = x.float()
    half = h.shape[-1] // 2
    return (h * cos + torch.cat((-h[..., half:], h[..., :half]), -1) * sin).to(x.dtype)


class Block(nn.Module):
    def __init__(self, s: Shape):
        super().__init__()
        self.s, hd = s, s.d // s.heads
        self.attn_norm, self.ff_norm = RMSNorm(s.d, s.eps), RMSNorm(s.d, s.eps)
        self.q_proj = nn.Linear(s.d, s.heads * hd, bias=False)
        self.k_proj = nn.Linear(s.d, s.kv_heads * hd, bias=False)
        self.v_proj = nn.Linear(s.d, s.kv_heads * hd, bias=False)
        self.attn_out = nn.Linear(s.d, s.d, bias=False)
        self.ff_proj = nn.Linear(s.d, s.ff, bias=False)     # gate (SiLU side)
        self.up_proj = nn.Linear(s.d, s.ff, bias=False)
        self.ff_out = nn.Linear(s.ff, s.d, bias=False)

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor, bias: Tensor | None, past=None, start: int = 0,
                write: bool = False) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """x (B, W, d): positions start .. start+W-1; bias (B, 1, 1, L) additive or None; past: this
        layer's (K, V), each (B, kv_heads, L, hd), of an earlier pass over all L positions, whose
        window the fresh keys and values replace (in new tensors, or with `write` in `past`
        itself). Returns the output (B, W, d) and the (K, V) used (before any GQA repeat)."""
        B, W, _ = x.shape
        n = self.attn_norm(x)
        q, k, v = (p(n).view(B, W, -1, self.s.d // self.s.heads).transpose(1, 2)       # (B, heads, W, hd)
                   for p in (self.q_proj, self.k_proj, self.v_proj))
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        if past is not None:
            k, v = window_kv(past, k, v, start, write)                                     # (B, kv, L, hd)
        kv = (k, v)
        if self.s.kv_heads != self.s.heads:
            k, v = (t.repeat_interleave(self.s.heads // self.s.kv_heads, dim=1) for t in (k, v))
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, is_causal=False)  # (B, H, W, hd)
        h = x + self.attn_out(a.transpose(1, 2).reshape(B, W, self.s.d))
        n = self.ff_norm(h)
        return h + self.ff_out(F.silu(self.ff_proj(n)) * self.up_proj(n)), kv


class LLaDANet(nn.Module):
    """Parameter names are the checkpoint's: model.transformer.{wte, blocks.i.*, ln_f, ff_out}."""

    def __init__(self, s: Shape, config: dict | None = None):
        super().__init__()
        self.s, self.config = s, config
        parts = {"wte": nn.Embedding(s.vocab, s.d), "blocks": nn.ModuleList(Block(s) for _ in range(s.layers)),
                 "ln_f": RMSNorm(s.d, s.eps)}
        if not s.tied:
            parts["ff_out"] = nn.Linear(s.d, s.vocab, bias=False)
        self.model = nn.Module()
        self.model.transformer = nn.ModuleDict(parts)

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None,
                position_ids: Tensor | None = None) -> Tensor:
        """input_ids (B, L), attention_mask (B, L) {0 pad, 1 token}, position_ids (B, L) (default
        0..L-1) → logits (B, L, vocab), position i predicting token i."""
        return self.run(input_ids, attention_mask, position_ids=position_ids)[0]

    def run(self, input_ids: Tensor, attention_mask: Tensor | None = None, past=None, start: int = 0,
            write: bool = False, position_ids: Tensor | None = None) -> tuple[Tensor, list]:
        """Logits of positions start .. start+W-1 (input_ids (B, W)) and every layer's (K, V): the
        KV-cache pass of labkit.models.kv_cache, as TinyDLM.run. attention_mask and position_ids
        cover all L positions (B, L); without `past` the window is the whole sequence."""
        t, (B, W) = self.model.transformer, input_ids.shape
        x = t.wte(input_ids)                                # (B, W, d)
        if position_ids is None:
            pos = torch.arange(start, start + W, device=x.device).expand(B, W)
        else:
            pos = position_ids[:, start:start + W]
        hd = self.s.d // self.s.heads
        inv = 1.0 / self.s.theta ** (torch.arange(0, hd, 2, device=x.device, dtype=torch.float32) / hd)  # (hd/2,)
        ang = pos.float()[..., None] * inv                  # (B, W, hd/2)
        ang = torch.cat((ang, ang), -1)[:, None]            # (B, 1, W, hd)
        cos, sin = ang.cos(), ang.sin()
        bias = None
        if attention_mask is not None:                      # keys that are pads get -inf-like scores
            L = W if past is None else past[0][0].shape[2]
            bias = (1.0 - attention_mask[:, None, None, :L].to(x.dtype)) * torch.finfo(x.dtype).min
        kvs = []
        for i, block in enumerate(t.blocks):
            x, kv = block(x, cos, sin, bias, None if past is None else past[i], start, write)
            kvs.append(kv)
        x = t.ln_f(x)
        return (F.linear(x, t.wte.weight) if self.s.tied else t.ff_out(x)), kvs


class LLaDA(Family):
    name = "LLaDA-8B"
    model_type = "llada"
    kind = "masked"
    noise = "mask"
    context_keys = ("max_sequence_length",)
    memory = "16 GB in bf16 (8.0B parameters)"

    def __init__(self, official_positions: bool = False):
        self.official_positions = official_positions   # True: positions 0..T-1 of the padded input, as upstream

    def claims(self, config: dict) -> bool:
        archs = config.get("architectures") or ["LLaDAModelLM"]
        return (config.get("model_type") == "llada" and "LLaDAModelLM" in archs and "d_model" in config
                and not any(k in config for k in MOE_KEYS))

    def build(self, path, config, *, dtype, device, trust_remote_code) -> LLaDANet:
        """Weights go one by one onto `device` (or a device map's devices; cast to `dtype` unless None)
        and are assigned into a meta-device network: no random init, no second copy (base.fill)."""
        with torch.device("meta"):
            net = LLaDANet(Shape.of(config), config)
        return fill(net, path, self.name, device=device, dtype=dtype, no_split=("Block",))

    def forward(self, net, x, attention_mask):
        pos = None if self.official_positions else self.positions(x, attention_mask).get("position_ids")
        return net(x, attention_mask=attention_mask, position_ids=pos)

    def run(self, net, x, attention_mask, past=None, start: int = 0, write: bool = False):
        """The KV-cache pass (labkit.models.kv_cache): x (B, W) at positions start .. start+W-1,
        attention_mask (B, L) or None → unshifted logits (B, W, V) and every layer's (K, V)."""
        pos = None if self.official_positions else self.positions(x, attention_mask).get("position_ids")
        return net.run(x, attention_mask, past=past, start=start, write=write, position_ids=pos)

    def __repr__(self) -> str:
        return f"LLaDA(official_positions={self.official_positions})"


LLADA = LLaDA()

__all__ = ["FIXED", "LLADA", "MOE_KEYS", "Block", "LLaDA", "LLaDANet", "RMSNorm", "rotate", "Shape"]
