"""LLaDA2.0 / LLaDA2.1 mini (inclusionAI, model_type "llada2_moe") in their published on-disk format,
without the checkpoint's remote code (which needs transformers 4.x). A clean-room port of the
architecture as described in the lab's format notes (families.md, section 3):

    word_embeddings → N × [ h = x + dense(Attn(input_layernorm(x)))
                            y = h + MLP_or_MoE(post_attention_layernorm(h)) ] → norm → lm_head → float32

* attention: fused `query_key_value` with rows [all Q heads | all K heads | all V heads]; per-head
  RMSNorm of q and k (`query_layernorm`, `key_layernorm`, over head_dim) before a *partial* rotary
  embedding (rotate_half on the first head_dim · partial_rotary_factor channels); GQA; scale 1/sqrt(hd).
* layers < first_k_dense_replace: SwiGLU MLP of `intermediate_size`; later layers: MoE of
  `num_experts` SwiGLU experts (`moe_intermediate_size`), top `num_experts_per_tok`, plus
  `num_shared_experts` always-on experts fused into one MLP of moe_intermediate_size · S.
* router: sigmoid scores of an fp32 linear gate; choice on scores + `expert_bias`, limited to the
  `topk_group` best of `n_group` contiguous expert groups (group score: sum of its 2 best biased
  scores); weights are the *unbiased* scores of the chosen experts, normalised to sum 1, times
  `routed_scaling_factor`.
* attention pattern: BLOCK-CAUSAL, as LLaDA2.x is trained and decoded: blocks of `block_size`
  positions (config `block_size`/`block_length`, else the official generate()'s default 32); a query
  in block b sees every key in blocks <= b. Blocks and rotary positions are counted from each row's
  first real token (see `block_causal_mask`).

Against the official generate() (batch 1, no padding, blocks from absolute position 0, only the
prefix up to the active block fed): an unpadded row gets exactly its mask and positions; a
left-padded row gets the same ones shifted past its pads (official code has no padded batches);
feeding the whole canvas changes nothing, since no block sees a later one. What differs is the
lab's loop: it decodes blocks of block_length starting at the prompt's end, so when the prompt
length is not a multiple of block_size one decoding block spans two model blocks, where
generate() first finishes the prompt's partial block.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .base import Family, FamilyError, config_fields, fill

DEFAULT_BLOCK_SIZE = 32          # LLaDA2.0/2.1 generate(block_length=32): the published checkpoints name none
MASK_TOKEN = "<|mask|>"          # id 156895 in the published tokenizer; config.json has no mask_token_id


@dataclass(frozen=True)
class LLaDA2Config:
    """The config.json keys the network reads. Defaults are those of the published config class,
    used only when a key is absent (the published files set all of them but use_qk_norm)."""
    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    moe_intermediate_size: int
    num_experts: int
    num_experts_per_tok: int
    num_key_value_heads: int = 0             # 0 → num_attention_heads
    head_dim: int | None = None              # None → hidden_size / num_attention_heads
    num_shared_experts: int = 0
    first_k_dense_replace: int = 0
    n_group: int = 1
    topk_group: int = 1
    routed_scaling_factor: float = 1.0
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    partial_rotary_factor: float = 0.5
    use_qk_norm: bool = True
    use_qkv_bias: bool = False
    use_bias: bool = True                    # bias of attention.dense
    tie_word_embeddings: bool = False
    block_size: int = DEFAULT_BLOCK_SIZE

    @classmethod
    def from_dict(cls, config: dict) -> "LLaDA2Config":
        kw = config_fields(cls, config, "llada2_moe")
        if config.get("block_length") is not None and config.get("block_size") is None:
            kw["block_size"] = config["block_length"]
        cfg = cls(**kw)
        if cfg.num_experts % cfg.n_group or cfg.num_attention_heads % cfg.heads[1]:
            raise FamilyError(f"llada2_moe config.json: num_experts {cfg.num_experts} must divide into n_group "
                              f"{cfg.n_group} groups and num_attention_heads {cfg.num_attention_heads} into "
                              f"num_key_value_heads {cfg.heads[1]}")
        return cfg

    @property
    def heads(self) -> tuple[int, int, int]:
        """(H query heads, KV key/value heads, hd head dim)."""
        h = self.num_attention_heads
        return h, self.num_key_value_heads or h, self.head_dim or self.hidden_size // h

    @property
    def rotary_dim(self) -> int:
        return int(self.heads[2] * self.partial_rotary_factor)


# ------------------------------------------------------------------------------------------ modules


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:               # (..., dim): fp32 statistics, cast back, × weight
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * y.to(x.dtype)


class MLP(nn.Module):
    """SwiGLU: down(silu(gate(x)) · up(x))."""

    def __init__(self, d: int, inner: int):
        super().__init__()
        self.gate_proj = nn.Linear(d, inner, bias=False)
        self.up_proj = nn.Linear(d, inner, bias=False)
        self.down_proj = nn.Linear(inner, d, bias=False)

    def forward(self, x: Tensor) -> Tensor:               # (..., d) → (..., d)
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


def rotary(positions: Tensor, dim: int, theta: float) -> tuple[Tensor, Tensor]:
    """positions (B, L) → cos, sin (B, 1, L, dim) in float32: transformers' default rope on `dim` channels."""
    inv_freq = 1.0 / theta ** (torch.arange(0, dim, 2, device=positions.device, dtype=torch.float32) / dim)
    freqs = positions.float()[..., None] * inv_freq                         # (B, L, dim/2)
    emb = torch.cat([freqs, freqs], dim=-1)[:, None]                         # (B, 1, L, dim)
    return emb.cos(), emb.sin()


def apply_rotary(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """x (B, h, L, hd): rotate_half on the first cos.shape[-1] channels, the rest passed through."""
    dim = cos.shape[-1]
    rot, rest = x[..., :dim], x[..., dim:]
    half = rot.shape[-1] // 2
    rotated = torch.cat([-rot[..., half:], rot[..., :half]], dim=-1)
    return torch.cat([rot * cos.to(x.dtype) + rotated * sin.to(x.dtype), rest], dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg: LLaDA2Config):
        super().__init__()
        self.h, self.kv, self.hd = cfg.heads
        self.query_key_value = nn.Linear(cfg.hidden_size, (self.h + 2 * self.kv) * self.hd, bias=cfg.use_qkv_bias)
        self.dense = nn.Linear(self.h * self.hd, cfg.hidden_size, bias=cfg.use_bias)
        if cfg.use_qk_norm:
            self.query_layernorm = RMSNorm(self.hd, cfg.rms_norm_eps)
            self.key_layernorm = RMSNorm(self.hd, cfg.rms_norm_eps)
        self.use_qk_norm = cfg.use_qk_norm

    def forward(self, x: Tensor, rope: tuple[Tensor, Tensor], mask: Tensor) -> Tensor:
        """x (B, L, d), rope cos/sin (B, 1, L, rot), mask (B, 1, L, L) bool (True = may attend) → (B, L, d)."""
        B, L, _ = x.shape
        qkv = self.query_key_value(x).view(B, L, self.h + 2 * self.kv, self.hd)   # [Q heads | K heads | V heads]
        q, k, v = qkv.split([self.h, self.kv, self.kv], dim=2)                     # (B, L, h|kv, hd)
        if self.use_qk_norm:
            q, k = self.query_layernorm(q), self.key_layernorm(k)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))                           # (B, h|kv, L, hd)
        q, k = apply_rotary(q, *rope), apply_rotary(k, *rope)
        rep = self.h // self.kv                                                     # GQA: query head i ↔ kv head i // rep
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=1.0 / math.sqrt(self.hd))
        return self.dense(out.transpose(1, 2).reshape(B, L, self.h * self.hd))


class Gate(nn.Module):
    """The router: `weight` (E, d) and the persistent `expert_bias` (E,) that only steers the choice."""

    def __init__(self, cfg: LLaDA2Config):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(cfg.num_experts, cfg.hidden_size))
        self.register_buffer("expert_bias", torch.zeros(cfg.num_experts, dtype=torch.float32))
        self.top_k, self.n_group, self.topk_group = cfg.num_experts_per_tok, cfg.n_group, cfg.topk_group
        self.scale = cfg.routed_scaling_factor

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """x (T, d) → expert ids (T, k) long, weights (T, k) float32."""
        scores = F.linear(x.float(), self.weight.float()).sigmoid()               # (T, E)
        biased = scores + self.expert_bias.float()
        if self.n_group > 1:
            T, E = biased.shape
            grouped = biased.view(T, self.n_group, E // self.n_group)               # (T, G, E/G)
            group_score = grouped.topk(min(2, E // self.n_group), dim=-1).values.sum(-1)   # (T, G)
            keep = torch.zeros_like(group_score, dtype=torch.bool)
            keep.scatter_(1, group_score.topk(self.topk_group, dim=-1).indices, True)
            biased = grouped.masked_fill(~keep[..., None], float("-inf")).view(T, E)
        ids = biased.topk(self.top_k, dim=-1).indices                               # (T, k)
        w = scores.gather(-1, ids)                                                   # unbiased scores
        if self.top_k > 1:
            w = w / (w.sum(-1, keepdim=True) + 1e-20)
        return ids, w * self.scale


class MoE(nn.Module):
    def __init__(self, cfg: LLaDA2Config):
        super().__init__()
        self.gate = Gate(cfg)
        self.experts = nn.ModuleList(MLP(cfg.hidden_size, cfg.moe_intermediate_size) for _ in range(cfg.num_experts))
        self.shared_experts = (MLP(cfg.hidden_size, cfg.moe_intermediate_size * cfg.num_shared_experts)
                               if cfg.num_shared_experts else None)

    def forward(self, x: Tensor) -> Tensor:
        """x (B, L, d) → (B, L, d): Σ_k w_k · expert_k(x), summed in float32, plus the shared experts."""
        flat = x.reshape(-1, x.shape[-1])                                           # (T, d)
        ids, w = self.gate(flat)                                                    # (T, k), (T, k)
        out = torch.zeros(flat.shape, dtype=torch.float32, device=x.device)
        for e in ids.unique().tolist():
            tok, slot = (ids == e).nonzero(as_tuple=True)                           # tokens routed to expert e
            out.index_add_(0, tok, self.experts[e](flat[tok]).float() * w[tok, slot, None])
        out = out.to(x.dtype).view_as(x)
        return out if self.shared_experts is None else out + self.shared_experts(x)


class DecoderLayer(nn.Module):
    def __init__(self, cfg: LLaDA2Config, i: int):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.attention = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.mlp = MLP(cfg.hidden_size, cfg.intermediate_size) if i < cfg.first_k_dense_replace else MoE(cfg)

    def forward(self, x: Tensor, rope: tuple[Tensor, Tensor], mask: Tensor) -> Tensor:   # (B, L, d) → (B, L, d)
        h = x + self.attention(self.input_layernorm(x), rope, mask)
        return h + self.mlp(self.post_attention_layernorm(h))


class Backbone(nn.Module):
    def __init__(self, cfg: LLaDA2Config):
        super().__init__()
        self.word_embeddings = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(cfg, i) for i in range(cfg.num_hidden_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)


def block_causal_mask(attention_mask: Tensor | None, B: int, L: int, block_size: int, device
                      ) -> tuple[Tensor, Tensor]:
    """Position ids (B, L) and the attention mask (B, 1, L, L) bool of a (left-padded) batch.

    Positions count from each row's first real token (pads get 0), and blocks are
    ⌊position / block_size⌋, so a row's answer does not depend on its padding. For an unpadded row
    this is the official generate()'s layout (blocks aligned to absolute position 0, prompt included).
    A query sees the real keys of its own and earlier blocks; every query also sees itself, so a pad
    query's row is never empty (its output is never read)."""
    if attention_mask is None:
        valid = torch.ones(B, L, dtype=torch.bool, device=device)
        pos = torch.arange(L, device=device).expand(B, L)
    else:
        valid = attention_mask.to(device).bool()
        pos = (valid.long().cumsum(-1) - 1).clamp_min(0)
    blk = pos // block_size                                                      # (B, L)
    allowed = (blk[:, None, :] <= blk[:, :, None]) & valid[:, None, :]           # (B, Lq, Lk)
    allowed |= torch.eye(L, dtype=torch.bool, device=device)
    return pos, allowed[:, None]


class LLaDA2Net(nn.Module):
    """LLaDA2MoeModelLM's parameter layout (`model.*`, `lm_head`); forward gives float32 logits."""

    def __init__(self, cfg: LLaDA2Config):
        super().__init__()
        self.config = cfg
        self.block_size = cfg.block_size          # the block-causal mask's block; the lab may change it
        self.model = Backbone(cfg)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.model.word_embeddings.weight

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        """input_ids (B, L) long, attention_mask (B, L) {0 pad, 1 token} or None → logits (B, L, V) float32."""
        B, L = input_ids.shape
        pos, mask = block_causal_mask(attention_mask, B, L, self.block_size, input_ids.device)
        rope = rotary(pos, self.config.rotary_dim, self.config.rope_theta)
        x = self.model.word_embeddings(input_ids)                                 # (B, L, d)
        for layer in self.model.layers:
            x = layer(x, rope, mask)
        return self.lm_head(self.model.norm(x)).float()


# ------------------------------------------------------------------------------------------ weights


def _dtype(config: dict, dtype: torch.dtype | None) -> torch.dtype:
    """The requested dtype, else the config's `dtype`/`torch_dtype` (transformers 5 loads "auto"), else float32."""
    if dtype is not None:
        return dtype
    name = config.get("dtype") or config.get("torch_dtype")
    found = getattr(torch, str(name), None) if name else None
    return found if isinstance(found, torch.dtype) else torch.float32


# ------------------------------------------------------------------------------------------ family


class LLaDA2(Family):
    name = "LLaDA2"
    model_type = "llada2_moe"
    kind = "masked"
    noise = "mask"
    context_keys = ("max_position_embeddings",)
    default_sampler = "quality"                       # LLaDA2.1's Q mode (threshold 0.7, editing 0.5)
    memory = "32.5 GB (LLaDA2.0-mini / LLaDA2.1-mini, 16.3B parameters, 1.4B active)"

    def claims(self, config: dict) -> bool:
        return config.get("model_type") == "llada2_moe"

    def build(self, path, config, *, dtype, device, trust_remote_code):
        """Meta-device init, then the checkpoint's tensors assigned in place (no second full copy;
        base.fill), expert_bias kept in float32. `trust_remote_code` is ignored: the published remote
        code needs transformers 4.x."""
        cfg = LLaDA2Config.from_dict(config)
        with torch.device("meta"):
            net = LLaDA2Net(cfg)
        tied = ("lm_head.weight", "model.word_embeddings.weight") if cfg.tie_word_embeddings else None
        return fill(net, path, self.name, device=device, dtype=_dtype(config, dtype), no_split=("DecoderLayer",),
                    tied=tied, fp32=("expert_bias",))

    def mask_id(self, config: dict, tokenizer) -> int | None:
        """config `mask_token_id`, else the tokenizer's mask token, else its "<|mask|>" (the published
        config.json names no mask id; generate() hard-codes 156895 = "<|mask|>")."""
        found = super().mask_id(config, tokenizer)
        if found is None and MASK_TOKEN in tokenizer.get_vocab():
            found = tokenizer.get_vocab()[MASK_TOKEN]
        return found

    def forward(self, net, x, attention_mask):
        """x (B, L), attention_mask (B, L) or None → float32 logits (B, L, V), block-causal (net.block_size)."""
        return net(x, attention_mask)


LLADA2 = LLaDA2()

__all__ = ["DEFAULT_BLOCK_SIZE", "LLADA2", "MASK_TOKEN", "MLP", "apply_rotary", "Attention", "Backbone",
           "block_causal_mask", "DecoderLayer", "Gate", "LLaDA2", "LLaDA2Config", "LLaDA2Net", "MoE", "RMSNorm",
           "rotary"]
