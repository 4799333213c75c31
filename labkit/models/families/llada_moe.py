"""LLaDA-MoE-7B-A1B (inclusionAI, Base / Instruct) in its published on-disk format, without the
checkpoint's remote code (which transformers 5 cannot run). A clean-room port of the architecture
as described in the lab's format notes (families.md, section 2):

    embed_tokens → N × [ h = x + o_proj(Attn(input_layernorm(x)))
                         y = h + MoE(post_attention_layernorm(h)) (+ shared_expert(same input)) ] → norm → lm_head

* attention: separate q/k/v/o projections (`self_attn.*`), per-head RMSNorm of q and k over head_dim
  (`q_norm`, `k_norm`, config `qk_layernorm`) before rotate-half RoPE on the first
  head_dim · partial_rotary_factor channels; bidirectional; scale 1/sqrt(head_dim); optional
  `clip_qkv` clamp of q, k, v.
* MoE (`mlp.gate` router without bias, `mlp.experts.{j}.{gate,up,down}_proj` SwiGLU experts of
  `expert_intermediate_size`): probabilities = softmax of the router logits in float32 (plus the
  `mlp.expert_bias` buffer if `moe_router_enable_expert_bias`), top `num_experts_per_tok`, weights =
  the chosen probabilities, NOT renormalised (the published forward hard-codes norm_topk_prob=False
  whatever the config says), cast to the activation dtype. Layers with `moe_layer_freq[i] == 0` hold a
  dense SwiGLU `mlp.{gate,up,down}_proj` of `dense_intermediate_size`; a non-null
  `shared_expert_intermediate_size` adds `shared_expert.*` on each MoE decoder layer (not on the dense
  ones, as the published LLaDAMoEDecoderLayer).
* RMSNorm: fp32 statistics, cast back, then × weight. Logits in the model dtype, no shift.

`model_type` is "llada", the same string as LLaDA-8B: this family claims a config only when it has
the MoE keys (`num_experts`, `expert_intermediate_size`, ...) and no `d_model`; the LLaDA-8B family
refuses such configs, so `detect` tells them apart either way round.

Left padding: pads are never attended to (additive key-padding mask, the October 2025 upstream
behaviour; another published copy ignores the mask). Positions count from each row's first real
token by default; `LLaDAMoE(official_positions=True)` numbers 0..T-1 over the padded input as the
published code does. With pads masked the two agree up to rounding (RoPE sees only differences).

Verified against the published modeling_lladamoe.py / configuration_lladamoe.py (golden logits,
tests/fixtures/llada_moe, benchmarks/make_family_fixtures_llada_moe.py; max abs difference ~2e-6 in float32):
the config keys labkit reads (`hidden_size`, `num_hidden_layers`, `num_attention_heads`,
`num_key_value_heads`, `num_experts`, `num_experts_per_tok`, `expert_intermediate_size`,
`dense_intermediate_size`, `shared_expert_intermediate_size`, `moe_layer_freq`, `qk_layernorm`,
`moe_router_enable_expert_bias`, `rope_theta`, `partial_rotary_factor`, `rms_norm_eps`) are the published
config class's, under those names (`head_dim` is not one: upstream always uses hidden_size /
num_attention_heads); grouped kv heads; the parameter names and shapes, the shared expert on MoE layers only;
per-head q/k RMSNorm before RoPE; rotate-half RoPE (full rotary in the fixture; upstream rotates the first
int(head_dim · partial_rotary_factor) channels, as labkit does); softmax routing in float32 with `expert_bias`
added to the probabilities, top-k, no renormalisation (the published forward hard-codes it: `norm_topk_prob`,
`moe_router_score_function`, `routed_scaling_factor`, `router_num_group`, `router_topk_group` are read by the
config class and ignored by the forward); pads masked as additive key-padding; positions 0..L-1 over the
padded input (`official_positions=True`). `LLaDAMoE(renormalize=True)` renormalises the top-k weights to sum 1
instead.

Still unverified (these are about the real checkpoint's files, which the fixture does not hold):
  1. the values in the real config.json. Where a key is absent labkit falls back to: `rms_norm_eps`
     1e-5 (the config class default), `partial_rotary_factor` <= 0 → 1.0 (the published code cannot
     run with the class default -1, so a runnable config sets it; `LLaDAMoE(rotary_factor=...)`
     overrides it), `qk_layernorm` true (upstream: absent → no q/k norm; labkit would then report the
     q/k norm weights as missing), `moe_layer_freq` every layer MoE (upstream: absent → an error),
     `shared_expert_intermediate_size` / `moe_router_enable_expert_bias` none (as upstream).
  2. mask id: config `mask_token_id` if present, else the tokenizer's mask token, else `<|mask|>`
     (156895 in the published tokenizer; the loader's fallback list has it).
  3. any rope scaling other than "default" is refused rather than guessed.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..kv_cache import window_kv
from .base import Family, FamilyError, config_fields, fill
from .llada2 import MLP, RMSNorm, apply_rotary, rotary

MOE_KEYS = ("num_experts", "num_experts_per_tok", "expert_intermediate_size")
ARCHS = ("LLaDAMoEModelLM", "LLaDAMoEModel")
# the published checkpoint's sizes (families.md 2.1-2.2), for the memory figure only
PUBLISHED = {"vocab_size": 157184, "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 16,
             "num_key_value_heads": 16, "num_experts": 64, "num_experts_per_tok": 8, "expert_intermediate_size": 1024,
             "rope_theta": 50000.0}


@dataclass(frozen=True)
class LLaDAMoEConfig:
    """The config.json keys the network reads; defaults only where families.md gives the config
    class's default or the published checkpoint's evident value (see the module docstring)."""
    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_experts: int
    num_experts_per_tok: int
    expert_intermediate_size: int
    rope_theta: float
    num_key_value_heads: int | None = None          # None → num_attention_heads
    head_dim: int | None = None                     # None → hidden_size / num_attention_heads
    rms_norm_eps: float = 1e-5
    partial_rotary_factor: float = -1.0             # <= 0 → 1.0 (module docstring, still unverified 1)
    qk_layernorm: bool = True
    attention_bias: bool = False
    clip_qkv: float | None = None
    moe_layer_freq: tuple[int, ...] | int = 1       # per layer: 1 MoE, 0 dense
    dense_intermediate_size: int | None = None
    shared_expert_intermediate_size: int | None = None
    moe_router_enable_expert_bias: bool = False
    tie_word_embeddings: bool = False

    @classmethod
    def from_dict(cls, config: dict) -> LLaDAMoEConfig:
        kw = config_fields(cls, config, "LLaDA-MoE")
        if isinstance(kw.get("moe_layer_freq"), list):
            kw["moe_layer_freq"] = tuple(kw["moe_layer_freq"])
        cfg = cls(**kw)
        cfg.check()
        return cfg

    def check(self) -> None:
        freq = self.moe_layer_freq
        if (len(freq) != self.num_hidden_layers) if isinstance(freq, tuple) else freq != 1:
            raise FamilyError(f"LLaDA-MoE config.json: moe_layer_freq {freq!r} is neither 1 nor a list of "
                              f"{self.num_hidden_layers} flags; labkit reads only those")
        if not all(self.is_moe(i) for i in range(self.num_hidden_layers)) and not self.dense_intermediate_size:
            raise FamilyError("LLaDA-MoE config.json has dense layers (moe_layer_freq 0) but no dense_intermediate_size")
        h, kv, _ = self.heads
        if h % kv or self.num_experts_per_tok > self.num_experts:
            raise FamilyError(f"LLaDA-MoE config.json: {h} heads over {kv} kv heads, top {self.num_experts_per_tok} "
                              f"of {self.num_experts} experts")

    def is_moe(self, i: int) -> bool:
        return bool(self.moe_layer_freq[i]) if isinstance(self.moe_layer_freq, tuple) else True

    @property
    def heads(self) -> tuple[int, int, int]:
        """(H query heads, KV key/value heads, hd head dim)."""
        h = self.num_attention_heads
        return h, self.num_key_value_heads or h, self.head_dim or self.hidden_size // h


def parameter_count(config: dict) -> int:
    """Parameters of a checkpoint with this config, from its shapes (arithmetic, no network built;
    the tests check it against the meta-device network's state dict)."""
    c = LLaDAMoEConfig.from_dict(config)
    (h, kv, hd), d = c.heads, c.hidden_size
    bias = c.attention_bias
    attn = d * h * hd * 2 + d * kv * hd * 2 + (h * hd + 2 * kv * hd + d) * bias + 2 * hd * c.qk_layernorm
    moe = c.num_experts * (d + 3 * d * c.expert_intermediate_size) + c.num_experts * c.moe_router_enable_expert_bias
    dense = 3 * d * (c.dense_intermediate_size or 0)
    moe += 3 * d * (c.shared_expert_intermediate_size or 0)                  # on MoE layers only, as upstream
    layers = sum(attn + 2 * d + (moe if c.is_moe(i) else dense) for i in range(c.num_hidden_layers))
    return layers + c.vocab_size * d * (1 if c.tie_word_embeddings else 2) + d


# ------------------------------------------------------------------------------------------ modules


class Attention(nn.Module):
    def __init__(self, cfg: LLaDAMoEConfig):
        super().__init__()
        self.h, self.kv, self.hd = cfg.heads
        d, bias = cfg.hidden_size, cfg.attention_bias
        self.q_proj = nn.Linear(d, self.h * self.hd, bias=bias)
        self.k_proj = nn.Linear(d, self.kv * self.hd, bias=bias)
        self.v_proj = nn.Linear(d, self.kv * self.hd, bias=bias)
        self.o_proj = nn.Linear(self.h * self.hd, d, bias=bias)
        if cfg.qk_layernorm:
            self.q_norm, self.k_norm = RMSNorm(self.hd, cfg.rms_norm_eps), RMSNorm(self.hd, cfg.rms_norm_eps)
        self.qk_norm, self.clip = cfg.qk_layernorm, cfg.clip_qkv

    def forward(self, x: Tensor, rope: tuple[Tensor, Tensor], bias: Tensor | None, past=None, start: int = 0,
                write: bool = False) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """x (B, W, d) at positions start .. start+W-1, rope cos/sin (B, 1, W, rot) fp32, bias (B, 1, 1, L)
        additive or None; past: this layer's (K, V) (B, kv, L, hd) of a pass over all L positions, the
        window's replacing theirs (labkit.models.kv_cache.window_kv) → (B, W, d) and the (K, V) used."""
        B, L, _ = x.shape
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        if self.clip is not None:
            q, k, v = (t.clamp(-self.clip, self.clip) for t in (q, k, v))
        q, k, v = q.view(B, L, self.h, self.hd), k.view(B, L, self.kv, self.hd), v.view(B, L, self.kv, self.hd)
        if self.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)                                   # per head, over hd
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))                            # (B, h|kv, L, hd)
        q, k = apply_rotary(q, *rope), apply_rotary(k, *rope)
        if past is not None:
            k, v = window_kv(past, k, v, start, write)                                # (B, kv, L, hd)
        kv = (k, v)
        if self.kv != self.h:
            k, v = (t.repeat_interleave(self.h // self.kv, dim=1) for t in (k, v))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, is_causal=False, scale=self.hd ** -0.5)
        return self.o_proj(out.transpose(1, 2).reshape(B, L, self.h * self.hd)), kv


class MoE(nn.Module):
    """Softmax router (`gate`, no bias) over `experts`; weights are the chosen softmax
    probabilities, not renormalised unless `renormalize` is set."""

    def __init__(self, cfg: LLaDAMoEConfig):
        super().__init__()
        self.gate = nn.Linear(cfg.hidden_size, cfg.num_experts, bias=False)
        self.experts = nn.ModuleList(MLP(cfg.hidden_size, cfg.expert_intermediate_size) for _ in range(cfg.num_experts))
        if cfg.moe_router_enable_expert_bias:
            self.register_buffer("expert_bias", torch.zeros(cfg.num_experts))
        self.top_k, self.renormalize = cfg.num_experts_per_tok, False

    def route(self, flat: Tensor) -> tuple[Tensor, Tensor]:
        """flat (T, d) → expert ids (T, k) long, weights (T, k) in flat's dtype."""
        p = F.softmax(self.gate(flat).float(), dim=-1)                              # (T, E) fp32
        if hasattr(self, "expert_bias"):
            p = p + self.expert_bias.float()                                        # upstream adds it to p itself
        w, ids = p.topk(self.top_k, dim=-1)
        if self.renormalize:
            w = w / w.sum(-1, keepdim=True)
        return ids, w.to(flat.dtype)

    def forward(self, x: Tensor) -> Tensor:
        """x (B, L, d) → Σ_k w_k · expert_k(x), (B, L, d)."""
        flat = x.reshape(-1, x.shape[-1])                                           # (T, d)
        ids, w = self.route(flat)
        out = torch.zeros_like(flat)
        for e in ids.unique().tolist():
            tok, slot = (ids == e).nonzero(as_tuple=True)                           # tokens routed to expert e
            out.index_add_(0, tok, self.experts[e](flat[tok]) * w[tok, slot, None])
        return out.view_as(x)


class DecoderLayer(nn.Module):
    def __init__(self, cfg: LLaDAMoEConfig, i: int):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.mlp = MoE(cfg) if cfg.is_moe(i) else MLP(cfg.hidden_size, cfg.dense_intermediate_size)
        if cfg.shared_expert_intermediate_size and cfg.is_moe(i):             # upstream: MoE layers only
            self.shared_expert = MLP(cfg.hidden_size, cfg.shared_expert_intermediate_size)

    def forward(self, x: Tensor, rope: tuple[Tensor, Tensor], bias: Tensor | None, past=None, start: int = 0,
                write: bool = False) -> tuple[Tensor, tuple[Tensor, Tensor]]:                # (B, W, d)
        a, kv = self.self_attn(self.input_layernorm(x), rope, bias, past, start, write)
        h = x + a
        n = self.post_attention_layernorm(h)
        y = self.mlp(n)
        return h + (y + self.shared_expert(n) if hasattr(self, "shared_expert") else y), kv


class Backbone(nn.Module):
    def __init__(self, cfg: LLaDAMoEConfig):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(cfg, i) for i in range(cfg.num_hidden_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)


class LLaDAMoENet(nn.Module):
    """LLaDAMoEModelLM's parameter layout (`model.*`, `lm_head`); logits in the model dtype."""

    def __init__(self, cfg: LLaDAMoEConfig, rotary_factor: float | None = None):
        super().__init__()
        self.config = cfg
        factor = rotary_factor or (cfg.partial_rotary_factor if cfg.partial_rotary_factor > 0 else 1.0)
        self.rotary_dim = int(cfg.heads[2] * factor)
        self.model = Backbone(cfg)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None,
                position_ids: Tensor | None = None) -> Tensor:
        """input_ids (B, L), attention_mask (B, L) {0 pad, 1 token}, position_ids (B, L) (default
        0..L-1) → logits (B, L, V), position i predicting token i."""
        return self.run(input_ids, attention_mask, position_ids=position_ids)[0]

    def run(self, input_ids: Tensor, attention_mask: Tensor | None = None, past=None, start: int = 0,
            write: bool = False, position_ids: Tensor | None = None) -> tuple[Tensor, list]:
        """Logits of positions start .. start+W-1 (input_ids (B, W)) and every layer's (K, V): the
        KV-cache pass of labkit.models.kv_cache. attention_mask and position_ids cover all L
        positions (B, L); without `past` the window is the whole sequence."""
        B, W = input_ids.shape
        x = self.model.embed_tokens(input_ids)                                      # (B, W, d)
        pos = (torch.arange(start, start + W, device=x.device).expand(B, W) if position_ids is None
               else position_ids[:, start:start + W])
        rope = rotary(pos, self.rotary_dim, self.config.rope_theta)
        bias = None
        if attention_mask is not None:                                              # pad keys get -inf-like scores
            L = W if past is None else past[0][0].shape[2]
            bias = (1.0 - attention_mask[:, None, None, :L].to(x.dtype)) * torch.finfo(x.dtype).min
        kvs = []
        for i, layer in enumerate(self.model.layers):
            x, kv = layer(x, rope, bias, None if past is None else past[i], start, write)
            kvs.append(kv)
        return self.lm_head(self.model.norm(x)), kvs


# ------------------------------------------------------------------------------------------ family

PUBLISHED_PARAMETERS = parameter_count(PUBLISHED)       # 7 356 880 896: families.md's byte count / 2


class LLaDAMoE(Family):
    name = "LLaDA-MoE"
    model_type = "llada"
    kind = "masked"
    noise = "mask"
    context_keys = ("max_position_embeddings",)
    memory = (f"{2 * PUBLISHED_PARAMETERS / 1e9:.1f} GB in bf16 (LLaDA-MoE-7B-A1B, "
              f"{PUBLISHED_PARAMETERS / 1e9:.2f}B parameters; computed from the parameter count)")

    def __init__(self, official_positions: bool = False, renormalize: bool = False,
                 rotary_factor: float | None = None):
        self.official_positions = official_positions   # True: positions 0..T-1 of the padded input, as upstream
        self.renormalize = renormalize                 # True: top-k weights sum to 1 (upstream: False)
        self.rotary_factor = rotary_factor             # None: the config's partial_rotary_factor (<= 0 → 1.0)

    def claims(self, config: dict) -> bool:
        archs = config.get("architectures") or [ARCHS[0]]
        return (config.get("model_type") == "llada" and any(a in ARCHS for a in archs) and "d_model" not in config
                and all(k in config for k in MOE_KEYS))

    def build(self, path, config, *, dtype, device, trust_remote_code) -> LLaDAMoENet:
        """Meta-device init, then the checkpoint's tensors assigned in place (no random init, no second
        copy; base.fill). `trust_remote_code` is ignored: the published remote code needs transformers 4.x."""
        cfg = LLaDAMoEConfig.from_dict(config)
        with torch.device("meta"):
            net = LLaDAMoENet(cfg, self.rotary_factor)
        tied = ("lm_head.weight", "model.embed_tokens.weight") if cfg.tie_word_embeddings else None
        net = fill(net, path, self.name, device=device, dtype=dtype, no_split=("DecoderLayer",), tied=tied)
        for m in net.modules():
            if isinstance(m, MoE):
                m.renormalize = self.renormalize
        return net

    def forward(self, net, x, attention_mask):
        pos = None if self.official_positions else self.positions(x, attention_mask).get("position_ids")
        return net(x, attention_mask=attention_mask, position_ids=pos)

    def run(self, net, x, attention_mask, past=None, start: int = 0, write: bool = False):
        """The KV-cache pass (labkit.models.kv_cache): x (B, W) at positions start .. start+W-1,
        attention_mask (B, L) or None → logits (B, W, V) and every layer's (K, V)."""
        pos = None if self.official_positions else self.positions(x, attention_mask).get("position_ids")
        return net.run(x, attention_mask, past=past, start=start, write=write, position_ids=pos)

    def __repr__(self) -> str:
        return (f"LLaDAMoE(official_positions={self.official_positions}, renormalize={self.renormalize}, "
                f"rotary_factor={self.rotary_factor})")


LLADA_MOE = LLaDAMoE()

__all__ = ["ARCHS", "LLADA_MOE", "MOE_KEYS", "PUBLISHED", "PUBLISHED_PARAMETERS", "Attention", "Backbone",
           "DecoderLayer", "LLaDAMoE", "LLaDAMoEConfig", "LLaDAMoENet", "MoE", "parameter_count"]
