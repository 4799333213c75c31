"""The embedded diffusion LM: a small bidirectional transformer as a `transformers` model.

RoPE positions (a bidirectional model gets no word order from its attention mask), RMSNorm,
SwiGLU MLPs and tied input/output embeddings: the recipe that leaves the unigram plateau fastest
on a CPU. `is_causal=True` gives the autoregressive twin of the same shape ("tiny-ar").
`shift_logits=True` is Dream's adaptation of an AR model into a diffusion model: attention becomes
bidirectional but each position's logits still come from the hidden state one to its left, as in
the AR model the weights came from, so the output head keeps its meaning. Callers never see that
shift: a masked (or shifted) model's logits[:, i] predict position i. The causal twin's
logits[:, i] predict position i + 1, as in any causal LM (the mask loop shifts them itself).

The task models (labkit.tasks) add what a fixed layout knows about its positions: a learned
embedding per position (`absolute_positions`) and `structure` tables, each giving every position
an id whose embedding is added (a Sudoku cell's row, column and box; a digit's place value), so
that positions that belong together share a vector. Both count positions from the first real
token, so a left-padded row sees the same embeddings as the row alone.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM, PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import MaskedLMOutput

from .kv_cache import window_kv


class TinyDLMConfig(PretrainedConfig):
    model_type = "labkit-tiny-dlm"

    def __init__(self, vocab_size: int = 2048,      # BPE vocabulary incl. <pad>, <eos>, <mask>
                 hidden_size: int = 256,            # d_model
                 num_hidden_layers: int = 6,
                 num_attention_heads: int = 4,      # head dim = hidden_size / heads
                 intermediate_size: int = 688,      # SwiGLU hidden width (≈ 8/3 · d, multiple of 16)
                 max_position_embeddings: int = 256,  # context the model was trained at
                 rope_theta: float = 10000.0,
                 rms_norm_eps: float = 1e-5,
                 is_causal: bool = False,           # True: the autoregressive twin
                 shift_logits: bool = False,        # Dream-style: position i is read from hidden i-1
                 absolute_positions: bool = False,  # + a learned embedding per position (fixed layouts: puzzles)
                 structure: list | None = None,     # [[id per position], ...]: + one embedding table each
                                                    # (0 = none); e.g. a Sudoku cell's row, column, box
                 prompt_formats: list | None = None,  # a task model's questions (models.formats), as dicts
                 block_size: int = 0,               # > 0: block-causal attention (LLaDA2.x, BD3-LM): a position
                                                    # sees its own block and the blocks before it
                 mask_token_id: int | None = None,
                 tie_word_embeddings: bool = True,
                 **kwargs):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.max_position_embeddings = max_position_embeddings
        self.rope_theta = rope_theta
        self.rms_norm_eps = rms_norm_eps
        self.is_causal = is_causal
        self.shift_logits = shift_logits
        self.absolute_positions = absolute_positions
        self.structure = [list(map(int, t)) for t in structure] if structure else None
        for t in self.structure or ():
            if len(t) > max_position_embeddings or min(t, default=0) < 0:
                raise ValueError(f"structure: each table gives an id >= 0 to at most max_position_embeddings="
                                 f"{max_position_embeddings} positions, got {len(t)} ids (min {min(t, default=0)})")
        self.prompt_formats = prompt_formats
        if not isinstance(block_size, int) or block_size < 0 or (block_size and is_causal):
            raise ValueError(f"block_size must be 0 (full attention) or a block length >= 1 on a non-causal "
                             f"model, got {block_size!r} (is_causal={is_causal})")
        self.block_size = block_size
        self.mask_token_id = mask_token_id
        super().__init__(tie_word_embeddings=tie_word_embeddings, **kwargs)


def rope_tables(n: int, head_dim: int, theta: float, device=None, start: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of the rotary angles of positions start .. start+n-1, each (n, hd/2)."""
    inv = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim)
    pos = torch.arange(start, start + n, device=device, dtype=torch.float32)
    ang = torch.outer(pos, inv)                                   # (n, hd/2)
    return ang.cos(), ang.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    x1, x2 = x[..., ::2], x[..., 1::2]                          # (B, H, L, hd/2) each
    out = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
    return out.flatten(-2).type_as(x)                           # (B, H, L, hd)


class Attention(nn.Module):
    def __init__(self, cfg: TinyDLMConfig):
        super().__init__()
        self.h = cfg.num_attention_heads
        self.qkv = nn.Linear(cfg.hidden_size, 3 * cfg.hidden_size, bias=False)
        self.out = nn.Linear(cfg.hidden_size, cfg.hidden_size, bias=False)
        self.is_causal = cfg.is_causal

    def forward(self, x, cos, sin, attn_mask=None, past=None, start=0, write=False):
        """x (B, W, D): positions start .. start+W-1 (W = L without `past`). past: this layer's
        (K, V), each (B, H, L, hd), from an earlier pass over all L positions; the window's fresh
        keys and values replace theirs, the rest are reused (a KV cache): in new tensors, or with
        `write` in `past` itself (no allocation). Returns the output (B, W, D) and the (K, V) used."""
        B, W, D = x.shape
        q, k, v = self.qkv(x).view(B, W, 3, self.h, D // self.h).permute(2, 0, 3, 1, 4)  # 3×(B, H, W, hd)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if past is not None:
            k, v = window_kv(past, k, v, start, write)                                     # (B, H, L, hd)
        elif attn_mask is not None and self.is_causal:          # pad mask and causal mask together
            attn_mask = attn_mask & torch.ones(W, W, dtype=torch.bool, device=x.device).tril()
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask,
                                           is_causal=self.is_causal and attn_mask is None)
        return self.out(y.transpose(1, 2).reshape(B, W, D)), (k, v)


class SwiGLU(nn.Module):
    def __init__(self, cfg: TinyDLMConfig):
        super().__init__()
        self.gate_up = nn.Linear(cfg.hidden_size, 2 * cfg.intermediate_size, bias=False)
        self.down = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x):
        gate, up = self.gate_up(x).chunk(2, dim=-1)
        return self.down(F.silu(gate) * up)


class Block(nn.Module):
    def __init__(self, cfg: TinyDLMConfig):
        super().__init__()
        self.norm1 = nn.RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.attn = Attention(cfg)
        self.norm2 = nn.RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.mlp = SwiGLU(cfg)

    def forward(self, x, cos, sin, attn_mask=None, past=None, start=0, write=False):
        a, kv = self.attn(self.norm1(x), cos, sin, attn_mask, past, start, write)
        x = x + a
        return x + self.mlp(self.norm2(x)), kv


class TinyDLM(PreTrainedModel):
    """Bidirectional (or, with is_causal, causal) transformer returning logits (B, L, V)."""
    config_class = TinyDLMConfig
    base_model_prefix = "tiny"
    _tied_weights_keys = {"lm_head.weight": "embed.weight"}

    def __init__(self, config: TinyDLMConfig):
        super().__init__(config)
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        if config.absolute_positions:      # a bidirectional model with RoPE alone sees only relative offsets
            self.positions = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        tables = config.structure or []
        self.structure = nn.ModuleList(nn.Embedding(max(t) + 1, config.hidden_size, padding_idx=0) for t in tables)
        ids = torch.zeros(len(tables), config.max_position_embeddings, dtype=torch.long)   # (T, L_max)
        for i, t in enumerate(tables):
            ids[i, :len(t)] = torch.tensor(t, dtype=torch.long)
        self.register_buffer("structure_ids", ids)          # saved with the weights
        self.layers = nn.ModuleList(Block(config) for _ in range(config.num_hidden_layers))
        self.norm = nn.RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if getattr(module, "padding_idx", None) is not None:
                with torch.no_grad():
                    module.weight[module.padding_idx].zero_()
        elif isinstance(module, nn.RMSNorm):
            nn.init.ones_(module.weight)

    def get_input_embeddings(self):
        return self.embed

    def set_input_embeddings(self, value):
        self.embed = value

    def get_output_embeddings(self):
        return self.lm_head

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                labels: torch.Tensor | None = None, layout: torch.Tensor | None = None, **kwargs) -> MaskedLMOutput:
        L = input_ids.shape[1]
        if L > self.config.max_position_embeddings and attention_mask is not None:   # left padding is not context
            L = int(attention_mask.sum(-1).max())                 # (read only then: no device sync per step)
        if L > self.config.max_position_embeddings:
            raise ValueError(f"input length {L} exceeds the model's context "
                             f"max_position_embeddings={self.config.max_position_embeddings}")
        logits, _ = self.run(input_ids, attention_mask, layout=layout)   # (B, L, V)
        if self.config.shift_logits:   # AR-initialised diffusion (Dream): hidden i-1 predicts token i
            logits = torch.cat([logits[:, :1], logits[:, :-1]], dim=1)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), ignore_index=-100)
        return MaskedLMOutput(loss=loss, logits=logits)


    def run(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, past=None,
            start: int = 0, write: bool = False, layout: torch.Tensor | None = None) -> tuple[torch.Tensor, list]:
        """Unshifted logits of positions start .. start+W-1 and every layer's (K, V).
        input_ids (B, W); without `past` the window is the whole sequence (start 0). With `past`
        (the list this method returned for the full sequence), only the window is recomputed and
        the other positions' keys and values are reused: labkit.models.kv_cache builds on this.
        `write`: the window's keys and values are written into `past` in place (buffers that
        keep their storage from step to step). A causal model's cache may also end where the
        window starts (the window's K/V are appended; not with `write`). `layout` (L, L) or
        (B, L, L) bool [query, key]: which keys each query may see, on top of the rest (training
        only: DiffuLLaMA's attention annealed from causal to full)."""
        W = input_ids.shape[1]
        L = W if past is None else max(past[0][0].shape[2], start + W)   # keys the window sees
        if past is not None and past[0][0].shape[2] < start:
            raise ValueError(f"the cache holds {past[0][0].shape[2]} positions; a window at {start} leaves a gap")
        hd = self.config.hidden_size // self.config.num_attention_heads
        cos, sin = rope_tables(W, hd, self.config.rope_theta, input_ids.device, start)   # (W, hd/2)
        mask = None
        if attention_mask is not None:                      # (B, ≥L) 1 = real token, 0 = padding
            mask = attention_mask.bool()[:, None, None, :L]  # (B, 1, 1, L): keys a query may see
        if getattr(self.config, "block_size", 0):            # block-causal: keys in the query's block or before
            blocks = block_causal_mask(start, W, L, self.config.block_size, input_ids.device)   # (W, L)
            mask = blocks if mask is None else mask & blocks                                      # (B, 1, W, L)
        if layout is not None:
            if past is not None:
                raise ValueError("layout is a training-time attention pattern; it cannot be used with a KV cache")
            layout = layout if layout.ndim == 2 else layout[:, None]                              # (.., L, L)
            mask = layout if mask is None else mask & layout
        if past is not None and self.config.is_causal:      # window query i sees keys <= start + i
            ar = torch.arange(L, device=input_ids.device)
            causal = ar[None, :] <= (start + torch.arange(W, device=input_ids.device))[:, None]  # (W, L)
            mask = causal if mask is None else mask & causal                                     # (B, 1, W, L)
        x = self.embed(input_ids)                           # (B, W, D)
        if self.config.absolute_positions or len(self.structure):
            pos = self.layout_positions(attention_mask, start, W, input_ids.device)   # (W,) or (B, W)
            if self.config.absolute_positions:
                x = x + self.positions(pos)
            for table, ids in zip(self.structure, self.structure_ids):
                x = x + table(ids[pos])
        kvs = []
        for i, layer in enumerate(self.layers):
            x, kv = layer(x, cos, sin, mask, None if past is None else past[i], start, write)
            kvs.append(kv)
        return self.lm_head(self.norm(x)), kvs              # (B, W, V)


    def run_two_streams(self, noisy: torch.Tensor, clean: torch.Tensor, block: int | None = None,
                        attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Block-diffusion training in one pass (BD3-LM, LLaDA2.x): the noisy canvas and the clean
        sequence side by side (2L positions, each half at positions 0..L-1 for RoPE). A noisy block
        sees itself and the clean blocks before it; the clean stream is causal by block. Returns the
        noisy stream's logits (B, L, V), position i predicting token i: block k's are those of a plain
        forward of the clean blocks before k followed by noisy block k. `block`: the block length
        (default the model's; a block-size warm-up trains at smaller ones). With `shift_logits` (an AR
        model converted, Fast-dLLM v2's token shift) position i is read from hidden i-1: inside a block
        the noisy stream's, at a block's first position the clean stream's last hidden of the block
        before (what the decoding loop's plain forward over committed blocks computes).
        `attention_mask` (B, L), 1 = real token: left padding is hidden from every query, as the
        decoding loop hides it (a padding query still sees itself, so no row of the mask is empty)."""
        b = block or getattr(self.config, "block_size", 0)
        if not b:
            raise ValueError("run_two_streams needs a block model (config block_size > 0) or block >= 1")
        if self.config.absolute_positions or len(self.structure):
            raise ValueError("run_two_streams: the task models' position tables are not supported")
        B, L = noisy.shape
        hd = self.config.hidden_size // self.config.num_attention_heads
        cos, sin = rope_tables(L, hd, self.config.rope_theta, noisy.device)          # (L, hd/2)
        cos, sin = torch.cat([cos, cos]), torch.cat([sin, sin])                       # (2L, hd/2)
        mask = two_stream_mask(L, b, noisy.device)                                    # (2L, 2L)
        if attention_mask is not None:
            keys = attention_mask.bool().repeat(1, 2)                                 # (B, 2L)
            eye = torch.eye(2 * L, dtype=torch.bool, device=noisy.device)
            mask = (mask & keys[:, None, None, :]) | eye                              # (B, 1, 2L, 2L)
        x = self.embed(torch.cat([noisy, clean], 1))                                  # (B, 2L, D)
        for layer in self.layers:
            x, _ = layer(x, cos, sin, mask)
        h = self.norm(x)
        if not self.config.shift_logits:
            return self.lm_head(h[:, :L])                                             # (B, L, V)
        first = torch.arange(L, device=noisy.device) % b == 0                         # (L,) a block's first
        first[0] = False                                                              # position 0: itself
        src = torch.where(first, torch.arange(L, device=noisy.device) - 1 + L,        # clean hidden i-1
                          (torch.arange(L, device=noisy.device) - 1).clamp_min(0))    # noisy hidden i-1
        return self.lm_head(h[:, src])                                                # (B, L, V)

    def layout_positions(self, attention_mask: torch.Tensor | None, start: int, W: int, device) -> torch.Tensor:
        """Positions start .. start+W-1 counted from each row's first real token: (W,) without an
        attention mask, else (B, W) (left padding shifts a row's text, not its positions). The
        learned and structure embeddings are read at these; RoPE sees only offsets and needs none."""
        if attention_mask is None:
            return torch.arange(start, start + W, device=device)
        pos = (attention_mask.long().cumsum(-1) - 1).clamp_min(0)          # (B, ≥L)
        return pos[:, start:start + W]


def block_causal_mask(start: int, W: int, L: int, block: int, device=None) -> torch.Tensor:
    """(W, L) bool: query start+i may see key j when j's block is the query's block or an earlier one,
    blocks of `block` positions counted from position 0 of the input (left padding included, so a
    prompt that should end on a block boundary is padded to one). Keys of earlier blocks never see a
    later block, so their keys and values are final once their block is: a prefix KV cache is exact."""
    q = (start + torch.arange(W, device=device)) // block                  # (W,) each query's block
    k = torch.arange(L, device=device) // block                             # (L,)
    return k[None, :] <= q[:, None]


def two_stream_mask(L: int, block: int, device=None) -> torch.Tensor:
    """(2L, 2L) bool [query, key] of block-diffusion training (`TinyDLM.run_two_streams`): positions
    0..L-1 the noisy canvas, L..2L-1 the clean sequence. A noisy query sees its own noisy block and
    the clean blocks before it; a clean query sees its own clean block and the clean ones before
    (`block_causal_mask`); nothing sees a noisy block but itself."""
    blk = torch.arange(L, device=device) // block
    same, before = blk[:, None] == blk[None, :], blk[None, :] < blk[:, None]         # (L, L): [query, key]
    return torch.cat([torch.cat([same, before], 1),                                  # noisy queries
                      torch.cat([torch.zeros_like(same), same | before], 1)])         # clean queries


def register() -> None:
    """Make AutoConfig / AutoModelForMaskedLM (and ForCausalLM, for the AR twin) know the model."""
    try:
        AutoConfig.register(TinyDLMConfig.model_type, TinyDLMConfig)
    except ValueError:                                      # already registered
        pass
    for auto in (AutoModelForMaskedLM, AutoModelForCausalLM):
        try:
            auto.register(TinyDLMConfig, TinyDLM)
        except ValueError:
            pass
