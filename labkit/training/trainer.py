"""The skeleton every trainer shares (the supervised `loop.train`, the from-scratch `scratch.train_scratch`,
the RL `rl.train_rl`); each trainer is its own loss and step on top of it:

- `RunState`: the step, the training seconds and the history a run carries and checkpoints;
- `lr_at`: the one learning-rate schedule (linear warm-up, cosine decay to lr · min_lr_ratio) of
  the supervised and from-scratch trainers (RL keeps its rate constant, as the GRPO recipes do);
- `optimizer_step`: backward, gradient clipping, the update;
- `save_checkpoint` / `resume`: one checkpoint file per run, written atomically, and one rule for
  resuming (the stored config must be the run's, fields added since at their defaults);
- `fit`: the loop itself (progress bar, step, the trainer's bookkeeping, checkpoints, a step or
  wall-clock budget);
- `save_model` / `snapshot`: the model folder a run ends with (weights, config, tokenizer files from
  `models.load.TOKENIZER_FILES`, training.json) and the copies a training curve keeps.
"""
from __future__ import annotations

import dataclasses
import json
import math
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch

from ..models.load import TOKENIZER_FILES

RECORD = "training.json"       # what a trained model's folder says about its training


@dataclass
class RunState:
    """What a run carries from step to step, and its checkpoint keeps."""
    step: int = 0                  # optimiser steps (RL: rollout batches) taken
    seconds: float = 0.0           # training time up to the last `tick`
    since: float = 0.0             # perf_counter() when the time not yet in `seconds` began
    history: list = field(default_factory=list)

    def elapsed(self) -> float:
        """Training seconds so far, the running stretch included."""
        return self.seconds + time.perf_counter() - self.since

    def tick(self) -> None:
        """Fold the running stretch into `seconds` (before a checkpoint)."""
        now = time.perf_counter()
        self.seconds, self.since = self.seconds + now - self.since, now


def lr_at(cfg, step: int) -> float:
    """cfg.lr warmed up linearly over cfg.warmup steps, then decayed on a cosine to
    cfg.lr · cfg.min_lr_ratio at cfg.steps (constant with warmup 0 and min_lr_ratio 1)."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = min(1.0, (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup))
    return cfg.lr * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def set_lr(opt: torch.optim.Optimizer, lr: float) -> None:
    for group in opt.param_groups:
        group["lr"] = lr


def optimizer_step(loss: torch.Tensor, model: torch.nn.Module, opt: torch.optim.Optimizer, grad_clip: float) -> None:
    """Backward, gradients clipped to norm `grad_clip`, one update, gradients cleared."""
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    opt.step()
    opt.zero_grad(set_to_none=True)


def same_config(stored: dict, cfg) -> bool:
    """A stored config (a checkpoint's, a record's) is the dataclass `cfg`: equal fields (compared as
    JSON, so tuples and lists agree), and the fields added to cfg's class since it was written at
    their defaults."""
    now = json.loads(json.dumps(dataclasses.asdict(cfg)))
    default = json.loads(json.dumps(dataclasses.asdict(type(cfg)())))
    stored = json.loads(json.dumps(stored))
    return set(stored) <= set(now) and all(stored.get(k, default[k]) == v for k, v in now.items())


def save_checkpoint(path: Path, model: torch.nn.Module, opt: torch.optim.Optimizer, state: RunState, cfg,
                    **extra) -> None:
    """Model, optimiser, run state, config and `extra` into `path`, through a temporary file (a
    half-written checkpoint is never left)."""
    state.tick()
    tmp = path.with_suffix(".tmp")
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": state.step, "seconds": state.seconds,
                "history": state.history, "config": dataclasses.asdict(cfg), **extra}, tmp)
    tmp.replace(path)


def resume(path: Path, model: torch.nn.Module, opt: torch.optim.Optimizer, state: RunState, cfg,
           device: str | torch.device, log=print) -> dict | None:
    """Load `path`'s checkpoint, if there is one, into model, opt and state; returns the whole
    checkpoint (for a trainer's extra fields), None when there is none. A checkpoint written with
    another config is refused."""
    if not path.is_file():
        return None
    ckpt = torch.load(path, map_location=device, weights_only=False)
    if not same_config(ckpt["config"], cfg):
        raise ValueError(f"{path} was written with another {type(cfg).__name__}; use a new --out folder "
                         f"or delete it to start over")
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["opt"])
    state.step, state.seconds, state.history = ckpt["step"], ckpt["seconds"], ckpt["history"]
    log(f"resuming from step {state.step} ({state.seconds / 60:.1f} min trained)")
    return ckpt


def fit(state: RunState, end: int, step: Callable[[], object], *, after: Callable[[object], None] | None = None,
        checkpoint: Callable[[], None] | None = None, ckpt_every: int = 0, final: int | None = None,
        seconds: float | None = None, progress: bool = True, desc: str = "train",
        postfix: Callable[[object], dict] | None = None) -> None:
    """Call `step()` (which takes one step and advances state.step) until state.step reaches `end`,
    or `seconds` of wall clock have passed. After each: `after(result)` (the trainer's bookkeeping),
    then `checkpoint()` every `ckpt_every` steps, at `end` and at `final` (the run's last step)."""
    from tqdm.auto import tqdm  # picks its bar on import (in a notebook kernel, with ipywidgets): when a run trains

    bar = tqdm(total=end, initial=min(state.step, end), disable=not progress, desc=desc)
    state.since = start = time.perf_counter()
    while state.step < end:
        result = step()
        bar.update(1)
        if after is not None:
            after(result)
        if postfix is not None:
            bar.set_postfix(postfix(result))
        if checkpoint is not None and (state.step % ckpt_every == 0 or state.step in (end, final)):
            checkpoint()
        if seconds is not None and time.perf_counter() - start >= seconds:
            break
    bar.close()


def copy_tokenizer(src: Path, dst: Path) -> None:
    """The tokenizer files (`TOKENIZER_FILES` and the special-tokens map) of folder src into dst."""
    for name in (*TOKENIZER_FILES, "special_tokens_map.json"):
        if (src / name).is_file() and (src / name).resolve() != (dst / name).resolve():
            shutil.copy(src / name, dst / name)


def save_model(net: torch.nn.Module, folder: Path, record: dict, tokenizer_from: Path | None = None) -> Path:
    """The model folder a run ends with: the weights and config (safetensors), the tokenizer files of
    `tokenizer_from` (when they are not there already) and `record` as training.json."""
    folder.mkdir(parents=True, exist_ok=True)
    net.save_pretrained(folder, safe_serialization=True)
    if tokenizer_from is not None:
        copy_tokenizer(tokenizer_from, folder)
    return write_record(folder, record)


def write_record(folder: Path, record: dict) -> Path:
    """`record` as the folder's training.json; returns the folder."""
    (folder / RECORD).write_text(json.dumps(record, indent=1))
    return folder


def snapshot(net: torch.nn.Module, out: Path, state: RunState, cfg) -> Path:
    """The model as it is at state.step, into out/step-N/ (weights, config, tokenizer and
    snapshot.json with the step and training seconds): the points of a training curve."""
    folder = out / f"step-{state.step}"
    folder.mkdir(exist_ok=True)
    net.save_pretrained(folder, safe_serialization=True)
    copy_tokenizer(out, folder)
    (folder / "snapshot.json").write_text(json.dumps({"step": state.step, "train_seconds": round(state.elapsed(), 1),
                                                      "config": dataclasses.asdict(cfg)}, indent=1))
    return folder


__all__ = ["RECORD", "RunState", "copy_tokenizer", "fit", "lr_at", "optimizer_step", "resume", "same_config",
           "save_checkpoint", "save_model", "set_lr", "snapshot", "write_record"]
