"""Train the embedded model from scratch: LLaDA's masked-diffusion loss (or next-token loss for
the autoregressive twin), a plain AdamW loop with checkpoints every few minutes and exact resume.

    python -m labkit train --out runs/tiny        # resumes from runs/tiny/ckpt.pt if present
"""
from __future__ import annotations

import dataclasses
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from ..models.tiny_net import TinyDLM, TinyDLMConfig
from .distill import block_distill_loss, t2t_noise


@dataclass(frozen=True)
class TrainConfig:
    objective: str = "diffusion"   # "diffusion" (masked, bidirectional) or "ar" (causal twin)
    vocab_size: int = 2048         # BPE vocabulary, specials included
    hidden_size: int = 256
    num_layers: int = 6
    num_heads: int = 4
    intermediate_size: int = 688
    seq_len: int = 256             # training window = the model's context
    batch_size: int = 16
    steps: int = 3000
    lr: float = 2e-3               # peak; linear warmup then cosine to lr * min_lr_ratio
    min_lr_ratio: float = 0.1
    warmup: int = 100
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    eps: float = 1e-3              # t ~ U(eps, 1): smallest masking probability
    short_batch_prob: float = 0.1  # share of batches cut to a random shorter length (LLaDA uses 1%)
    bf16: bool = True              # CPU autocast: ~2x faster matmuls on AVX512-BF16 machines
    seed: int = 0
    ckpt_every: int = 200          # steps between resumable checkpoints
    cap_weight: float = 0.0        # CAP: entropy penalty on correct masked predictions (0 = off)
    edit_prob: float = 0.0         # T2T training: share of unmasked tokens swapped for noise (0 = off)
    edit_stutter: float = 0.0      # share of that noise that copies a neighbour (a parallel draft's collision)
    init_from: str = ""            # "" = random init; else a model folder or embedded name ("tiny-ar")
    shift_logits: bool = False     # Dream-style AR adaptation: hidden i-1 predicts token i
    distill: int = 0               # > 0: self-distil on the init model's answers to this many prompts
    distill_length: int = 128      # answer tokens the teacher writes per prompt
    distill_block: int = 32        # block length of the teacher's decoding and the student's canvases
    distill_temperature: float = 0.0  # the teacher's sampling temperature (0 = greedy answers)
    distill_top_p: float = 1.0     # ... within this nucleus (1.0 = the whole distribution)
    distill_mix: float = 0.0       # share of each distillation batch drawn from the corpus instead
                                   # (plain masked diffusion: keeps the variety of real text)

    def __post_init__(self):
        if self.objective not in ("diffusion", "ar"):
            raise ValueError(f"objective must be 'diffusion' or 'ar', got {self.objective!r}")
        for name in ("steps", "batch_size", "ckpt_every"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if self.seq_len < 8:
            raise ValueError(f"seq_len must be >= 8, got {self.seq_len}")
        if not 0 <= self.edit_prob < 1:
            raise ValueError(f"edit_prob must be in [0, 1), got {self.edit_prob}")
        if not 0 <= self.edit_stutter <= 1:
            raise ValueError(f"edit_stutter must be in [0, 1], got {self.edit_stutter}")
        if not self.distill_temperature >= 0:
            raise ValueError(f"distill_temperature must be >= 0, got {self.distill_temperature}")
        if not 0 < self.distill_top_p <= 1:
            raise ValueError(f"distill_top_p must be in (0, 1], got {self.distill_top_p}")
        if not 0 <= self.distill_mix < 1:
            raise ValueError(f"distill_mix must be in [0, 1), got {self.distill_mix}")
        if self.distill_mix and not self.distill:
            raise ValueError("distill_mix mixes corpus rows into distillation batches; set distill > 0 too")
        if round(self.batch_size * self.distill_mix) >= self.batch_size:
            raise ValueError(f"distill_mix={self.distill_mix} leaves no teacher row in a batch of "
                             f"{self.batch_size}; use a smaller distill_mix or a larger batch_size")
        if not self.cap_weight >= 0:
            raise ValueError(f"cap_weight must be >= 0, got {self.cap_weight}")
        if (self.cap_weight or self.edit_prob or self.shift_logits or self.distill) and self.objective != "diffusion":
            raise ValueError("shift_logits, cap_weight, edit_prob and distill apply to objective='diffusion' only")
        if self.distill < 0 or (self.distill and not self.init_from):
            raise ValueError(f"distill must be 0 (off) or a prompt count > 0 with init_from set (the "
                             f"teacher), got distill={self.distill}, init_from={self.init_from!r}")


# The committed models, each reproducible with `labkit train --recipe NAME` (`make model`):
# tiny-ar first (from scratch), then tiny adapted from it, then tiny-cap distilled from tiny.
RECIPES = {
    "tiny-ar": TrainConfig(objective="ar"),
    "tiny": TrainConfig(init_from="tiny-ar", shift_logits=True, steps=2400, lr=1e-3),
    # self-distilled on tiny's own greedy answers to 512 training prompts, with CAP and T2T noise
    # (half of it neighbour copies: the stutters a parallel draft makes); chosen among 9 variants
    # trained side by side by benchmarks/recipe_sweep.py (results in benchmarks/results/recipe_sweep.json;
    # distill_mix 0.25 / 0.5 were tried since: sampled text loops more and S mode is worse)
    "tiny-cap": TrainConfig(init_from="tiny", shift_logits=True, steps=2000, lr=5e-4, warmup=50,
                            cap_weight=0.5, edit_prob=0.2, edit_stutter=0.5, distill=512),
}


def masked_diffusion_loss(logits_fn, x0: torch.Tensor, mask_id: int, *, eps: float = 1e-3,
                          prompt_len: int = 0, generator: torch.Generator | None = None,
                          t: torch.Tensor | None = None, cap_weight: float = 0.0,
                          edit_prob: float = 0.0, edit_stutter: float = 0.0,
                          edit_weight: float = 1.0) -> torch.Tensor:
    """LLaDA pre-training loss: t ~ U(eps, 1) per row, mask each token with probability t,
    cross-entropy on masked positions weighted by 1/t, averaged over all B·L answer tokens.
    `prompt_len` positions are never masked (SFT). t is stratified across the batch.

    Two optional terms for the confident, self-correcting models parallel decoding needs:
    - `cap_weight` (LLaDA2.0's CAP, after dParallel): + λ · mean entropy of the predictions at
      masked positions the model already gets right, which sharpens them and so lets threshold
      rules commit more tokens per forward;
    - `edit_prob` (T2T training, as LLaDA2.1 needs for draft-and-edit): each unmasked token is
      swapped with probability edit_prob for a token drawn from elsewhere in the batch (unigram
      noise; with `edit_stutter`, that share of it copies a neighbour instead, see `t2t_noise`),
      and every unmasked position learns to predict its clean token (copy it, or correct it),
      weighted by `edit_weight`. A pure masked-diffusion model is never trained on filled
      positions, so without this its T2T proposals there are noise."""
    B, L = x0.shape
    if t is None:   # low-discrepancy: one uniform offset, rows evenly spaced in [0, 1)
        u = (torch.rand(1, generator=generator) + torch.arange(B) / B) % 1.0
        t = (1 - eps) * u + eps                                          # (B,)
    t = t.to(x0.device)
    masked = torch.rand(B, L, generator=generator).to(x0.device) < t[:, None]   # (B, L)
    masked[:, :prompt_len] = False
    xt = torch.where(masked, torch.full_like(x0, mask_id), x0)
    answer = torch.ones_like(masked)
    answer[:, :prompt_len] = False
    if edit_prob:
        filled = ~masked & answer
        xt = torch.where(filled, t2t_noise(x0, filled, edit_prob, edit_stutter, generator), xt)
    logits = logits_fn(xt)                                               # (B, L, V)
    logp = F.log_softmax(logits[masked].float(), -1)                     # (M, V)
    ce = -logp.gather(-1, x0[masked][:, None]).squeeze(-1)               # (M,)
    weight = (1.0 / t)[:, None].expand(B, L)[masked]
    loss = (ce * weight).sum() / (B * (L - prompt_len))
    if cap_weight:
        right = logp.argmax(-1) == x0[masked]                            # (M,)
        entropy = -(logp.exp() * logp).sum(-1)
        loss = loss + cap_weight * (entropy * right).sum() / right.sum().clamp_min(1)
    if edit_prob:
        loss = loss + edit_weight * F.cross_entropy(logits[filled].float(), x0[filled])
    return loss


def ar_loss(logits_fn, x0: torch.Tensor) -> torch.Tensor:
    logits = logits_fn(x0[:, :-1])                                       # (B, L-1, V)
    return F.cross_entropy(logits.flatten(0, 1).float(), x0[:, 1:].flatten())


class Corpus:
    """Token stream of the training plays, one speech at a time, with speech start offsets.
    Batches are a pure function of (seed, step), so a resumed run sees the same data."""

    def __init__(self, tokenizer, texts: list[str]):
        ids, starts = [], []
        for text in texts:
            for speech in text.split("\n\n"):
                starts.append(len(ids))
                ids.extend(tokenizer(speech.strip("\n") + "\n\n")["input_ids"])
            ids.append(tokenizer.eos_token_id)
        self.ids = torch.tensor(ids, dtype=torch.long)            # (N,)
        self.starts = torch.tensor(starts, dtype=torch.long)      # (S,)

    def batch(self, cfg: TrainConfig, step: int) -> torch.Tensor:
        g = torch.Generator().manual_seed(cfg.seed * 1_000_003 + step)
        L = cfg.seq_len
        if torch.rand(1, generator=g).item() < cfg.short_batch_prob:
            L = int(torch.randint(min(32, cfg.seq_len // 2), cfg.seq_len, (1,), generator=g))
        n_max = len(self.ids) - L - 1
        at_speech = torch.rand(cfg.batch_size, generator=g) < 0.5
        speech = self.starts[torch.randint(len(self.starts), (cfg.batch_size,), generator=g)]
        anywhere = torch.randint(n_max, (cfg.batch_size,), generator=g)
        start = torch.where(at_speech, speech.clamp(max=n_max), anywhere)
        return self.ids[start[:, None] + torch.arange(L)]         # (B, L)


def lr_at(cfg: TrainConfig, step: int) -> float:
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def build_model(cfg: TrainConfig, tokenizer) -> TinyDLM:
    mcfg = TinyDLMConfig(vocab_size=len(tokenizer), hidden_size=cfg.hidden_size,
                         num_hidden_layers=cfg.num_layers, num_attention_heads=cfg.num_heads,
                         intermediate_size=cfg.intermediate_size, max_position_embeddings=cfg.seq_len,
                         is_causal=cfg.objective == "ar", shift_logits=cfg.shift_logits,
                         mask_token_id=tokenizer.mask_token_id,
                         pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
    with torch.random.fork_rng():
        torch.manual_seed(cfg.seed)
        model = TinyDLM(mcfg)
    if cfg.init_from:
        src = init_folder(cfg.init_from)
        from safetensors.torch import load_file
        state = load_file(src / "model.safetensors")
        theirs = {k: tuple(v.shape) for k, v in state.items()}
        ours = {k: tuple(v.shape) for k, v in model.state_dict().items() if k != "lm_head.weight"}
        if {k: v for k, v in theirs.items() if k != "lm_head.weight"} != ours:
            raise ValueError(f"init_from={cfg.init_from!r}: its weights do not fit this TrainConfig's "
                             f"shape (vocab, hidden_size, layers, heads, intermediate_size must match)")
        model.load_state_dict(state, strict=False)
        model.tie_weights()
    return model


def init_folder(init_from: str) -> Path:
    """The model folder named by `TrainConfig.init_from`: an embedded name or a path."""
    from ..models.load import EMBEDDED, weights_dir
    src = weights_dir() / EMBEDDED[init_from] if init_from in EMBEDDED else Path(init_from)
    if not (src / "model.safetensors").is_file():
        raise FileNotFoundError(f"init_from={init_from!r}: no model.safetensors in {src}")
    return src


def distill_rows(cfg: TrainConfig, out: Path, tokenizer, log,
                 device: str | torch.device = "cpu") -> tuple[torch.Tensor, torch.Tensor, int]:
    """The teacher's (init_from's) answers to `cfg.distill` training prompts (greedy, or sampled at
    distill_temperature), packed; decoded once into out/trajectories.pt (resumable: it is the slow
    part)."""
    from ..models.load import load
    from .distill import make_trajectories, pack, train_prompts
    teacher = load(str(init_folder(cfg.init_from)), device=device)
    top_p = cfg.distill_top_p if cfg.distill_top_p < 1 else None
    traj = make_trajectories(teacher, train_prompts(cfg.distill, cfg.seed), out / "trajectories.pt",
                             gen_length=cfg.distill_length, block_length=cfg.distill_block,
                             temperature=cfg.distill_temperature, top_p=top_p, seed=cfg.seed, log=log)
    ids, attn, P = pack(tokenizer, traj)
    return ids.to(device), attn.to(device), P                          # (N, P + G) each, on the device


def train(cfg: TrainConfig, out: str | Path, *, progress: bool = True, log=print,
          device: str | torch.device = "cpu") -> Path:
    """Train into `out`; resume from `out/ckpt.pt` when present. Returns the folder of the final
    model (safetensors + config + tokenizer), loadable with `labkit.load(out)`. `device` ("cuda")
    runs the same recipe on a GPU: batches and noise are drawn on the CPU as before, so only the
    arithmetic moves (its results differ from the CPU's in the last bits, not in kind)."""
    from tqdm.auto import tqdm

    from ..models.tokenizer import load_tokenizer, train_tokenizer
    from .corpus import HELDOUT, load_plays

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    texts = list(load_plays("train").values())
    if (out / "tokenizer.json").is_file():
        tokenizer = load_tokenizer(out)
    elif cfg.init_from:                                  # keep the token ids the weights were trained on
        tokenizer = load_tokenizer(init_folder(cfg.init_from))
        tokenizer.save_pretrained(out)
    else:
        tokenizer = train_tokenizer(texts, cfg.vocab_size)
        tokenizer.save_pretrained(out)
    corpus = Corpus(tokenizer, texts) if not cfg.distill or cfg.distill_mix else None   # None: teacher rows
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' but torch sees no GPU here; use device='cpu'")
    model = build_model(cfg, tokenizer).to(device)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr, betas=(0.9, 0.95))
    step, seconds, history = 0, 0.0, []
    ckpt = out / "ckpt.pt"
    if ckpt.is_file():
        state = torch.load(ckpt, map_location=device, weights_only=False)
        saved = {**dataclasses.asdict(TrainConfig()), **state["config"]}   # fields added since: defaults
        if saved != dataclasses.asdict(cfg):
            raise ValueError(f"{ckpt} was written with another TrainConfig; use a new --out folder "
                             f"or delete it to start over")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        step, seconds, history = state["step"], state["seconds"], state["history"]
        log(f"resuming from step {step} ({seconds / 60:.1f} min trained)")

    mask_id = tokenizer.mask_token_id
    logits_fn = lambda x, attn=None: model(x, attn).logits                 # noqa: E731
    if cfg.distill:
        teacher_rows = distill_rows(cfg, out, tokenizer, log, device)
    model.train()
    bar = tqdm(total=cfg.steps, initial=step, disable=not progress, desc=f"train {cfg.objective}")
    t0, loss_ema = time.perf_counter(), None
    while step < cfg.steps:
        x0 = corpus.batch(cfg, step).to(device) if corpus is not None else None   # (B, L)
        g = torch.Generator().manual_seed(cfg.seed * 7_919 + step)
        for group in opt.param_groups:
            group["lr"] = lr_at(cfg, step)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=cfg.bf16):
            if cfg.distill:
                ids, attn, P = teacher_rows
                n_corpus = round(cfg.batch_size * cfg.distill_mix)         # the rest: teacher answers
                rows = torch.randint(len(ids), (cfg.batch_size - n_corpus,), generator=g).to(device)
                loss = block_distill_loss(logits_fn, ids[rows], attn[rows], P, cfg.distill_block, mask_id,
                                          eps=cfg.eps, generator=g, cap_weight=cfg.cap_weight,
                                          edit_prob=cfg.edit_prob, edit_stutter=cfg.edit_stutter)
                if n_corpus:                 # each part is a per-token mean: weight them by their rows
                    plain = masked_diffusion_loss(logits_fn, x0[:n_corpus], mask_id, eps=cfg.eps, generator=g,
                                                  cap_weight=cfg.cap_weight, edit_prob=cfg.edit_prob,
                                                  edit_stutter=cfg.edit_stutter)
                    loss = (loss * len(rows) + plain * n_corpus) / cfg.batch_size
            elif cfg.objective == "diffusion":
                loss = masked_diffusion_loss(logits_fn, x0, mask_id, eps=cfg.eps, generator=g,
                                             cap_weight=cfg.cap_weight, edit_prob=cfg.edit_prob,
                                             edit_stutter=cfg.edit_stutter)
            else:
                loss = ar_loss(logits_fn, x0)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        loss_ema = loss.item() if loss_ema is None else 0.98 * loss_ema + 0.02 * loss.item()
        bar.update(1)
        bar.set_postfix(loss=f"{loss_ema:.3f}", lr=f"{lr_at(cfg, step - 1):.1e}")
        if step % 50 == 0:
            history.append((step, round(loss_ema, 4)))
        if step % cfg.ckpt_every == 0 or step == cfg.steps:
            now = time.perf_counter()
            seconds, t0 = seconds + now - t0, now
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                        "seconds": seconds, "history": history, "config": dataclasses.asdict(cfg)},
                       ckpt.with_suffix(".tmp"))
            ckpt.with_suffix(".tmp").replace(ckpt)          # never leave a half-written checkpoint
    bar.close()
    model.cpu().save_pretrained(out, safe_serialization=True)
    (out / "training.json").write_text(json.dumps(
        {"config": dataclasses.asdict(cfg), "train_seconds": round(seconds, 1), "device": device.type,
         "loss_history": history, "heldout_plays": HELDOUT},
        indent=1))
    return out
