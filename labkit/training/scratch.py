"""Train a small diffusion LM from scratch, in minutes, on the lab's corpus (Shakespeare's plays):
a masked one (LLaDA's loss on a small `tiny_net.TinyDLM`) or a continuous one (Diffusion-LM's loss
on a `continuous_net.ContinuousDenoiser`), with callbacks for live loss curves and samples.

    from labkit.training.scratch import ScratchConfig, train_scratch
    res = train_scratch(ScratchConfig(objective="continuous", seconds=120),
                        on_step=lambda step, loss: ..., on_sample=lambda step, text: ...)
    res.history                     # [(step, loss), ...]
    res.generate("ROMEO:\\n")        # an Output: lk.generate (masked) or generate_continuous

Both use the embedded model's tokenizer (a BPE trained on the same plays). Batches and noise are
pure functions of (seed, step), as in `labkit.training.loop`; the learning rate warms up linearly
and decays on a cosine to lr · min_lr_ratio over `steps` (a `seconds` budget may stop it earlier).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import torch

from ..continuous import Vocabulary, generate_continuous
from ..decode import generate
from ..models.continuous_net import ContinuousConfig, ContinuousDenoiser
from ..models.handle import DLM
from ..models.load import weights_dir
from ..models.tiny_net import TinyDLM, TinyDLMConfig
from ..models.tokenizer import load_tokenizer
from ..samplers import LowConfidence
from .corpus import Corpus, load_plays
from .losses import continuous_diffusion_loss, masked_diffusion_loss
from .masking import EPS, stratified_t
from .schedules import SCHEDULES, Schedule, schedule
from .seeds import noise_seed
from .trainer import RunState, fit, lr_at, optimizer_step, save_model, set_lr, write_record

OBJECTIVES = ("masked", "continuous")
DEFAULT_SCHEDULE = {"masked": "log-linear", "continuous": "cosine"}
SAMPLE_PROMPT = "ROMEO:\n"
SAMPLE_LENGTH = 32
SAMPLE_TEMPERATURE = 0.8          # on_sample of the masked model: sampled, not greedy


@dataclass(frozen=True)
class ScratchConfig:
    objective: str = "masked"        # "masked" (LLaDA's loss, TinyDLM) or "continuous" (Diffusion-LM)
    hidden_size: int = 128           # the Transformer's width
    num_layers: int = 2
    num_heads: int = 4
    intermediate_size: int = 352     # SwiGLU width
    embed_dim: int = 64              # continuous only: D, the diffusion space
    context: int = 128               # the model's context (max positions); seq_len must fit
    seq_len: int = 64                # training window (tokens)
    batch_size: int = 16
    lr: float = 3e-3                 # peak learning rate
    min_lr_ratio: float = 0.1
    warmup: int = 20
    steps: int = 300                 # step budget (the cosine decay spans it)
    seconds: float | None = None     # wall-clock budget; training stops at whichever comes first
    seed: int = 0
    schedule: str | None = None      # None: "log-linear" (masked), "cosine" (continuous)
    rounding_weight: float = 1.0     # continuous only: weight of the rounding cross-entropy
    sample_every: int = 0            # steps between on_sample calls (0: only at the end)
    grad_clip: float = 1.0
    short_batch_prob: float = 0.0    # read by Corpus.batch: every batch is seq_len long

    def __post_init__(self):
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {self.objective!r}")
        for name in ("steps", "batch_size", "hidden_size", "num_layers", "num_heads", "embed_dim", "context"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if not (isinstance(self.lr, (int, float)) and math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be a finite number > 0, got {self.lr!r}")
        if self.seconds is not None and not self.seconds > 0:
            raise ValueError(f"seconds must be > 0 or None (no time budget), got {self.seconds!r}")
        if not 8 <= self.seq_len <= self.context:
            raise ValueError(f"seq_len must be in [8, context={self.context}] (the model's context), "
                             f"got {self.seq_len}")
        if self.schedule is not None and self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {tuple(SCHEDULES)} or None, got {self.schedule!r}")
        if self.sample_every < 0 or self.warmup < 0:
            raise ValueError(f"sample_every and warmup must be >= 0, got {self.sample_every}, {self.warmup}")
        if not self.rounding_weight >= 0:
            raise ValueError(f"rounding_weight must be >= 0, got {self.rounding_weight!r}")

    @property
    def noise_schedule(self) -> Schedule:
        return schedule(self.schedule or DEFAULT_SCHEDULE[self.objective])


@dataclass
class ScratchResult:
    """What `train_scratch` returns: the model (a DLM for the masked objective, usable by
    lk.generate and the lab's views; a ContinuousDenoiser for the continuous one, usable by
    labkit.continuous.generate_continuous), its tokenizer, schedule and (step, loss) history."""
    config: ScratchConfig
    model: Any                      # DLM (masked) or ContinuousDenoiser (continuous)
    tokenizer: Any
    schedule: Schedule
    history: list = field(default_factory=list)   # (step, loss) of every step
    seconds: float = 0.0

    @property
    def lm(self):
        """What the lab's views take as `lm`: the DLM (masked), a continuous.Vocabulary (continuous)."""
        if self.config.objective == "masked":
            return self.model
        return Vocabulary(self.tokenizer)

    def generate(self, prompt: str | None = SAMPLE_PROMPT, length: int = SAMPLE_LENGTH, steps: int | None = None,
                 seed: int = 0, **kwargs):
        """A labkit Output: lk.generate with LowConfidence (masked) or generate_continuous."""
        steps = steps or length
        if self.config.objective == "masked":
            return generate(self.model, prompt or "", kwargs.pop("sampler", LowConfidence()), gen_length=length,
                            block_length=length, steps=steps, seed=seed, **kwargs)
        return generate_continuous(self.model, self.tokenizer, schedule=self.schedule, prompt=prompt,
                                   length=length, steps=steps, seed=seed, **kwargs)

    def save(self, folder: str | Path) -> Path:
        """The model + tokenizer (lk.load(folder) for the masked one, ContinuousDenoiser.load for the
        continuous one) and training.json (config, schedule, history)."""
        folder = Path(folder)
        record = {"config": asdict(self.config), "schedule": self.schedule.name, "seconds": round(self.seconds, 1),
                  "loss_history": self.history}
        if self.config.objective == "masked":
            self.tokenizer.save_pretrained(folder)
            return save_model(self.model.net, folder, record)
        self.model.save(folder, self.tokenizer)
        return write_record(folder, record)


@lru_cache(maxsize=2)
def training_data():
    """The embedded tokenizer and the training plays' Corpus (built once per process, ~3 s)."""
    tok = load_tokenizer(weights_dir() / "tiny")
    return tok, Corpus(tok, list(load_plays("train").values()))


def _data(cfg: ScratchConfig, texts: list[str] | None):
    if texts is None:
        return training_data()
    tok, _ = training_data()
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise ValueError(f"texts must be a list of strings (plays), got {type(texts).__name__}")
    corpus = Corpus(tok, list(texts))
    if len(corpus.ids) < cfg.seq_len + 2:
        raise ValueError(f"texts: the corpus has {len(corpus.ids)} tokens, fewer than one training sequence "
                         f"(seq_len={cfg.seq_len} + 2); give more text or a smaller seq_len")
    return tok, corpus


def build(cfg: ScratchConfig, tokenizer) -> Any:
    """A fresh model of cfg's shape, initialised from cfg.seed (the caller's RNG untouched)."""
    with torch.random.fork_rng():
        torch.manual_seed(cfg.seed)
        if cfg.objective == "continuous":
            return ContinuousDenoiser(ContinuousConfig(
                vocab_size=len(tokenizer), embed_dim=cfg.embed_dim, hidden_size=cfg.hidden_size,
                num_layers=cfg.num_layers, num_heads=cfg.num_heads, intermediate_size=cfg.intermediate_size,
                max_len=cfg.context))
        net = TinyDLM(TinyDLMConfig(
            vocab_size=len(tokenizer), hidden_size=cfg.hidden_size, num_hidden_layers=cfg.num_layers,
            num_attention_heads=cfg.num_heads, intermediate_size=cfg.intermediate_size,
            max_position_embeddings=cfg.context, mask_token_id=tokenizer.mask_token_id,
            pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id))
    return DLM(net=net, tokenizer=tokenizer, mask_id=tokenizer.mask_token_id, eos_id=tokenizer.eos_token_id,
               pad_id=tokenizer.pad_token_id, name="scratch-masked", kind="masked", max_length=cfg.context)


def step_loss(cfg: ScratchConfig, model, x0: torch.Tensor, sched: Schedule, g: torch.Generator) -> torch.Tensor:
    """The objective's loss on x0 (B, L). Masked: masking rates 1 − ᾱ(u) for stratified u (with
    "log-linear" this is LLaDA's loss, the ELBO; other schedules only change the distribution of the
    masking rate, keeping the 1/t weight). Continuous: `continuous_diffusion_loss`."""
    if cfg.objective == "continuous":
        return continuous_diffusion_loss(model, x0, sched, g, rounding_weight=cfg.rounding_weight)
    t = sched.mask_rate(stratified_t(x0.shape[0], EPS, g)).clamp_min(EPS)      # (B,)
    return masked_diffusion_loss(lambda x: model.net(x).logits, x0, model.mask_id, generator=g, t=t)


def _sample(res: ScratchResult, step: int, on_sample) -> None:
    net = _net(res.model)
    net.eval()
    kw = {}
    if res.config.objective == "masked":      # greedy decoding of a young model writes only newlines
        kw = {"sampler": LowConfidence(temperature=SAMPLE_TEMPERATURE)}
    on_sample(step, res.generate(SAMPLE_PROMPT, SAMPLE_LENGTH, seed=step, **kw).texts[0])
    net.train()


def _net(model) -> torch.nn.Module:
    return model.net if isinstance(model, DLM) else model


def train_scratch(cfg: ScratchConfig = ScratchConfig(), *, texts: list[str] | None = None,
                  on_step: Callable[[int, float], None] | None = None,
                  on_sample: Callable[[int, str], None] | None = None,
                  device: str | torch.device = "cpu") -> ScratchResult:
    """Train a model of cfg's objective from scratch on `texts` (default: the training plays) for
    cfg.steps steps or cfg.seconds of wall clock, whichever ends first. on_step(step, loss) after
    every step; on_sample(step, text) every cfg.sample_every steps and at the end (a sample from
    "ROMEO:\\n"). Returns a ScratchResult with the model in eval mode."""
    tok, corpus = _data(cfg, texts)
    model = build(cfg, tok)
    net = _net(model).to(device).train()
    opt = torch.optim.AdamW(net.parameters(), lr=cfg.lr, betas=(0.9, 0.95), weight_decay=0.0)
    res = ScratchResult(cfg, model, tok, cfg.noise_schedule)
    state = RunState()                                # its steps and clock; res.history keeps (step, loss)

    def step() -> float:
        x0 = corpus.batch(cfg, state.step).to(device)                      # (B, seq_len)
        g = torch.Generator().manual_seed(noise_seed(cfg.seed, state.step))
        set_lr(opt, lr_at(cfg, state.step))
        loss = step_loss(cfg, model, x0, res.schedule, g)
        optimizer_step(loss, net, opt, cfg.grad_clip)
        state.step += 1
        return loss.item()

    def after(loss: float) -> None:
        res.history.append((state.step - 1, loss))
        if on_step is not None:
            on_step(state.step - 1, loss)
        if on_sample is not None and cfg.sample_every and state.step % cfg.sample_every == 0:
            _sample(res, state.step - 1, on_sample)

    fit(state, cfg.steps, step, after=after, seconds=cfg.seconds, progress=False)
    res.seconds = state.elapsed()
    net.eval()
    if on_sample is not None and (not cfg.sample_every or len(res.history) % cfg.sample_every):
        _sample(res, len(res.history) - 1, on_sample)
    return res


def train_masked_scratch(cfg: ScratchConfig | None = None, **kwargs) -> ScratchResult:
    """`train_scratch` with objective "masked"; kwargs go to train_scratch."""
    return train_scratch(replace(cfg or ScratchConfig(), objective="masked"), **kwargs)


def train_continuous_scratch(cfg: ScratchConfig | None = None, **kwargs) -> ScratchResult:
    """`train_scratch` with objective "continuous"; kwargs go to train_scratch."""
    return train_scratch(replace(cfg or ScratchConfig(objective="continuous"), objective="continuous"), **kwargs)


__all__ = ["DEFAULT_SCHEDULE", "OBJECTIVES", "SAMPLE_LENGTH", "SAMPLE_PROMPT", "SAMPLE_TEMPERATURE", "build",
           "lr_at", "ScratchConfig", "ScratchResult", "step_loss", "train_continuous_scratch",
           "train_masked_scratch", "train_scratch", "training_data"]
