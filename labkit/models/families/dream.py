"""Dream-v0 (Dream-org/Dream-v0-Instruct-7B, -Base-7B) in its published format, without its remote code.

A Qwen2-7B (q/k/v biases, grouped-query attention, rotate-half RoPE, RMSNorm, SwiGLU) under the checkpoint's own
names (`model.embed_tokens`, `model.layers.{i}.*`, `model.norm`, `lm_head`), attention bidirectional. Adapted from
an AR model, Dream reads the logits predicting token i from the hidden state at i - 1 (position 0 keeps its own):
`Dream.forward` applies that shift. Under left padding pads are masked as keys, pad queries attend to nothing and
position ids restart at 0 on each row's first real token, so a row's answer does not depend on its batch.
"""
from __future__ import annotations

import json

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from transformers import Qwen2Tokenizer

from ..kv_cache import window_kv
from .base import Family, FamilyError, checkpoint_file, fill


class RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(d)), eps

    def forward(self, h: Tensor) -> Tensor:                # (B, L, d), normalised in float32
        h32 = h.float()
        h32 = h32 * torch.rsqrt(h32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h32.to(h.dtype)


def rotate(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:   # x (B, heads, L, hd); cos, sin (B, 1, L, hd)
    a, b = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-b, a), dim=-1) * sin


class Attention(nn.Module):
    def __init__(self, d: int, heads: int, kv_heads: int, hd: int):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, hd
        self.q_proj = nn.Linear(d, heads * hd)
        self.k_proj = nn.Linear(d, kv_heads * hd)
        self.v_proj = nn.Linear(d, kv_heads * hd)
        self.o_proj = nn.Linear(heads * hd, d, bias=False)

    def forward(self, h: Tensor, cos: Tensor, sin: Tensor, keys: Tensor | None, past=None, start: int = 0,
                write: bool = False) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """h (B, W, d) at positions start .. start+W-1; keys (B, 1, W, L) bool, True where a query may
        see a key, or None for all; past: this layer's (K, V), each (B, KV, L, hd), of an earlier pass
        over all L positions, whose window the fresh ones replace (new tensors, or with `write` in
        `past` itself). Returns the output (B, W, d) and the (K, V) used (before the GQA repeat)."""
        b, n, _ = h.shape
        q = self.q_proj(h).view(b, n, self.heads, self.hd).transpose(1, 2)      # (B, H, W, hd)
        k = self.k_proj(h).view(b, n, self.kv_heads, self.hd).transpose(1, 2)   # (B, KV, W, hd)
        v = self.v_proj(h).view(b, n, self.kv_heads, self.hd).transpose(1, 2)   # (B, KV, W, hd)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        if past is not None:
            k, v = window_kv(past, k, v, start, write)                                     # (B, KV, L, hd)
        kv, rep = (k, v), self.heads // self.kv_heads
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)  # (B, H, L, hd)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=keys)          # (B, H, W, hd)
        return self.o_proj(out.transpose(1, 2).reshape(b, n, self.heads * self.hd)), kv


class Layer(nn.Module):
    def __init__(self, c: dict):
        super().__init__()
        d, heads = c["hidden_size"], c["num_attention_heads"]
        kv_heads = c.get("num_key_value_heads") or heads
        self.input_layernorm = RMSNorm(d, c["rms_norm_eps"])
        self.self_attn = Attention(d, heads, kv_heads, c.get("head_dim") or d // heads)
        self.post_attention_layernorm = RMSNorm(d, c["rms_norm_eps"])
        self.mlp = nn.Module()
        self.mlp.gate_proj = nn.Linear(d, c["intermediate_size"], bias=False)
        self.mlp.up_proj = nn.Linear(d, c["intermediate_size"], bias=False)
        self.mlp.down_proj = nn.Linear(c["intermediate_size"], d, bias=False)

    def forward(self, h: Tensor, cos: Tensor, sin: Tensor, keys: Tensor | None, real: Tensor | None, past=None,
                start: int = 0, write: bool = False) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """h (B, W, d); real (B, W, 1) 1 on real tokens, 0 on pads (their attention output is zero)."""
        att, kv = self.self_attn(self.input_layernorm(h), cos, sin, keys, past, start, write)
        h = h + (att if real is None else att * real)
        x, m = self.post_attention_layernorm(h), self.mlp
        return h + m.down_proj(F.silu(m.gate_proj(x)) * m.up_proj(x)), kv


class DreamNet(nn.Module):
    """The network under the checkpoint's parameter names. forward gives the raw logits (unshifted)."""

    def __init__(self, config: dict):
        super().__init__()
        self.config = config
        d, vocab = config["hidden_size"], config["vocab_size"]
        self.model = nn.Module()
        self.model.embed_tokens = nn.Embedding(vocab, d)
        self.model.layers = nn.ModuleList(Layer(config) for _ in range(config["num_hidden_layers"]))
        self.model.norm = RMSNorm(d, config["rms_norm_eps"])
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.head_dim = config.get("head_dim") or d // config["num_attention_heads"]

    def rope(self, positions: Tensor, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        """positions (B, L) → cos, sin (B, 1, L, hd), computed in float32 and cast to the activations' dtype."""
        hd, theta = self.head_dim, float(self.config.get("rope_theta", 10000.0))
        inv_freq = 1.0 / theta ** (torch.arange(0, hd, 2, dtype=torch.int64, device=positions.device).float() / hd)
        freqs = positions[..., None].float() * inv_freq                          # (B, L, hd / 2)
        angles = torch.cat((freqs, freqs), dim=-1)[:, None]                      # (B, 1, L, hd)
        return angles.cos().to(dtype), angles.sin().to(dtype)

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None,
                position_ids: Tensor | None = None) -> Tensor:
        """input_ids (B, L), attention_mask (B, L) {0 pad, 1 token} → logits (B, L, V), where position i's
        logits predict token i + 1 (the AR convention Dream was initialised with)."""
        return self.run(input_ids, attention_mask, position_ids=position_ids)[0]

    def run(self, input_ids: Tensor, attention_mask: Tensor | None = None, past=None, start: int = 0,
            write: bool = False, position_ids: Tensor | None = None) -> tuple[Tensor, list]:
        """Raw logits of positions start .. start+W-1 (input_ids (B, W)) and every layer's (K, V): the
        KV-cache pass of labkit.models.kv_cache. attention_mask and position_ids cover all L positions
        (B, L); without `past` the window is the whole sequence."""
        b, n = input_ids.shape
        L = n if past is None else past[0][0].shape[2]
        keys = real = None
        if attention_mask is not None and not attention_mask.bool().all():
            valid = attention_mask.bool()[:, :L]                                 # (B, L)
            if position_ids is None:                                             # Dream's sampler: pads at 1
                position_ids = (valid.long().cumsum(-1) - 1).masked_fill(~valid, 1)
            keys = (valid[:, None, :] | ~valid[:, :, None])[:, None, start:start + n]   # (B, 1, W, L); pad rows see all
            real = valid[:, start:start + n, None]                               # (B, W, 1): then zeroed
        if position_ids is None:
            position_ids = torch.arange(L, device=input_ids.device).expand(b, L)
        h = self.model.embed_tokens(input_ids)                                   # (B, W, d)
        cos, sin = self.rope(position_ids[:, start:start + n], h.dtype)
        real = None if real is None else real.to(h.dtype)
        kvs = []
        for i, layer in enumerate(self.model.layers):
            h, kv = layer(h, cos, sin, keys, real, None if past is None else past[i], start, write)
            kvs.append(kv)
        return self.lm_head(self.model.norm(h)), kvs                             # (B, W, V)


class Dream(Family):
    name = "Dream"
    model_type = "Dream"
    kind = "masked"
    noise = "mask"
    context_keys = ("max_position_embeddings",)   # 131072 in config; Dream's README calls 2048 its effective context
    memory = "Dream-v0 7B: 15.2 GB (7.6B parameters)"
    shift_logits = True     # hidden state i - 1 gives the logits of token i (forward shifts; caches too)

    def claims(self, config: dict) -> bool:
        return config.get("model_type") in ("Dream", "dream")

    def build(self, path, config, *, dtype, device, trust_remote_code):
        """Meta-device init, then the checkpoint's tensors assigned in place (no second copy; base.fill).
        Remote code never runs."""
        unsupported = {k: config.get(k) for k in ("rope_scaling", "use_sliding_window", "use_mrope") if config.get(k)}
        if unsupported or config.get("hidden_act", "silu") != "silu":
            raise FamilyError(f"Dream checkpoint {str(path)!r} uses what labkit's Dream does not implement: "
                              f"{unsupported or {'hidden_act': config.get('hidden_act')}}")
        with torch.device("meta"):
            net = DreamNet(config)
        tied = ("lm_head.weight", "model.embed_tokens.weight") if config.get("tie_word_embeddings") else None
        return fill(net, path, self.name, device=device, dtype=dtype, no_split=("Layer",), tied=tied)

    def tokenizer(self, source, trust_remote_code: bool = False):
        """The published tokenizer (tokenizer_class "DreamTokenizer", remote code) is Qwen2's byte-level BPE:
        transformers' Qwen2Tokenizer reads its vocab.json, merges.txt and specials. None: load it the usual way."""
        config = checkpoint_file(source, "tokenizer_config.json")
        if trust_remote_code or not config or json.loads(config.read_text()).get("tokenizer_class") != "DreamTokenizer":
            return None
        return Qwen2Tokenizer.from_pretrained(source)

    def forward(self, net, x, attention_mask):
        """logits (B, L, V) with logits[:, i] predicting token i: the net's raw logits shifted right by one,
        position 0 keeping its own (as Dream's sampler does)."""
        raw = net(x, attention_mask)                                             # (B, L, V), i predicts i + 1
        return torch.cat((raw[:, :1], raw[:, :-1]), dim=1)

    def run(self, net, x, attention_mask, past=None, start: int = 0, write: bool = False):
        """The KV-cache pass (labkit.models.kv_cache): x (B, W) at positions start .. start+W-1 →
        raw logits (B, W, V) (unshifted: the cache shifts them, as `shift_logits` says) and every
        layer's (K, V)."""
        return net.run(x, attention_mask, past=past, start=start, write=write)


DREAM = Dream()
