"""A continuous-diffusion LM's denoiser (Diffusion-LM style): tokens live as vectors in an
embedding space, Gaussian noise is added to those vectors, and the network predicts the clean
vectors x0 from noisy ones x_t and the time t.

    e0     = embed(x0)                      (B, L, D)   rows of E, scaled to norm √D
    x0_hat = net(x_t, t)                    (B, L, D)   the predicted clean embeddings
    logits = x0_hat · Eᵀ                    (B, L, V)   back to tokens through the embedding matrix

The embedding rows are normalised to length √D (unit variance per coordinate, the noise's own
scale), so they cannot shrink to make the x0 regression trivial, and the nearest embedding to a
vector (Euclidean distance) is also the token of its largest logit. The Transformer is
tiny_net's block (RoPE, RMSNorm, SwiGLU), bidirectional; the time enters as a sinusoidal
embedding through an MLP, added at every position. Saved as model.safetensors + config.json.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from .tiny_net import Block, TinyDLMConfig, rope_tables

MODEL_TYPE = "labkit-continuous-dlm"
TIME_SCALE = 1000.0        # t ∈ [0, 1] is read as 0 .. 1000 by the sinusoidal embedding


@dataclass(frozen=True)
class ContinuousConfig:
    vocab_size: int = 2048          # the tokenizer's vocabulary, specials included
    embed_dim: int = 64             # D: the diffusion space (Diffusion-LM uses 16–128)
    hidden_size: int = 128          # the Transformer's width
    num_layers: int = 2
    num_heads: int = 4
    intermediate_size: int = 352    # SwiGLU width (≈ 8/3 · hidden, multiple of 16)
    max_len: int = 128              # context: the longest canvas the model is used on
    rope_theta: float = 10000.0

    def __post_init__(self):
        for name in ("vocab_size", "embed_dim", "hidden_size", "num_layers", "num_heads", "intermediate_size",
                     "max_len"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) <= 0:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        if self.hidden_size % self.num_heads or (self.hidden_size // self.num_heads) % 2:
            raise ValueError(f"hidden_size must split into num_heads heads of even width, got "
                             f"hidden_size={self.hidden_size}, num_heads={self.num_heads}")

    def block_config(self) -> TinyDLMConfig:
        """The fields tiny_net's Block reads."""
        return TinyDLMConfig(vocab_size=self.vocab_size, hidden_size=self.hidden_size,
                             num_hidden_layers=self.num_layers, num_attention_heads=self.num_heads,
                             intermediate_size=self.intermediate_size, max_position_embeddings=self.max_len,
                             rope_theta=self.rope_theta, is_causal=False)


def time_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    """Sinusoidal embedding of t (B,) in [0, 1] → (B, dim) (as for positions, at t · TIME_SCALE)."""
    half = dim // 2
    freq = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
    ang = (t.float() * TIME_SCALE)[:, None] * freq[None, :]           # (B, dim/2)
    return torch.cat([ang.sin(), ang.cos()], dim=-1)


class ContinuousDenoiser(nn.Module):
    """x_t (B, L, D) and t (B,) → x0_hat (B, L, D); `logits(x0_hat)` → (B, L, V)."""

    def __init__(self, config: ContinuousConfig):
        super().__init__()
        self.config = config
        H, D = config.hidden_size, config.embed_dim
        self.embed = nn.Embedding(config.vocab_size, D)
        self.in_proj = nn.Linear(D, H)
        self.time_mlp = nn.Sequential(nn.Linear(H, 4 * H), nn.SiLU(), nn.Linear(4 * H, H))
        bc = config.block_config()
        self.layers = nn.ModuleList(Block(bc) for _ in range(config.num_layers))
        self.norm = nn.RMSNorm(H)
        self.out_proj = nn.Linear(H, D)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
        nn.init.normal_(self.embed.weight, std=1.0)

    def embedding_matrix(self) -> torch.Tensor:
        """E (V, D): every token's embedding, rows of length √D."""
        w = self.embed.weight
        return w * (math.sqrt(w.shape[1]) / w.norm(dim=-1, keepdim=True).clamp_min(1e-6))

    def embed_tokens(self, ids: torch.Tensor) -> torch.Tensor:
        """ids (B, L) long → e0 (B, L, D)."""
        return self.embedding_matrix()[ids]

    def logits(self, x0_hat: torch.Tensor) -> torch.Tensor:
        """x0_hat (B, L, D) → x0_hat · Eᵀ (B, L, V)."""
        return x0_hat @ self.embedding_matrix().T

    def forward(self, x_t: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """x_t (B, L, D), t (B,) or a scalar in [0, 1] → x0_hat (B, L, D)."""
        B, L, _ = x_t.shape
        if L > self.config.max_len:
            raise ValueError(f"canvas length {L} exceeds the model's context max_len={self.config.max_len}")
        t = torch.as_tensor(t, dtype=torch.float32, device=x_t.device)
        t = t.expand(B) if t.dim() == 0 else t                             # (B,)
        h = self.in_proj(x_t) + self.time_mlp(time_embedding(t, self.config.hidden_size))[:, None]
        hd = self.config.hidden_size // self.config.num_heads
        cos, sin = rope_tables(L, hd, self.config.rope_theta, x_t.device)   # (L, hd/2)
        for layer in self.layers:
            h, _ = layer(h, cos, sin)
        return self.out_proj(self.norm(h))                                 # (B, L, D)

    # --- save / load: model.safetensors + config.json ---------------------------------------
    def save(self, folder: str | Path, tokenizer=None) -> Path:
        """Write config.json and model.safetensors (and the tokenizer, when given) into `folder`."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.json").write_text(json.dumps({"model_type": MODEL_TYPE, **asdict(self.config)}, indent=1))
        save_file({k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()},
                  str(folder / "model.safetensors"))
        if tokenizer is not None:
            tokenizer.save_pretrained(folder)
        return folder

    @classmethod
    def load(cls, folder: str | Path) -> "ContinuousDenoiser":
        """The model saved in `folder` by `save`, in eval mode."""
        folder = Path(folder)
        if not (folder / "config.json").is_file() or not (folder / "model.safetensors").is_file():
            raise FileNotFoundError(f"{folder} has no config.json + model.safetensors of a continuous model")
        cfg = json.loads((folder / "config.json").read_text())
        if cfg.pop("model_type", None) != MODEL_TYPE:
            raise ValueError(f"{folder / 'config.json'} is not a {MODEL_TYPE} config")
        model = cls(ContinuousConfig(**cfg))
        model.load_state_dict(load_file(str(folder / "model.safetensors")))
        return model.eval()


__all__ = ["ContinuousConfig", "ContinuousDenoiser", "MODEL_TYPE", "TIME_SCALE", "time_embedding"]
