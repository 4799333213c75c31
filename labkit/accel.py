"""How the decoding loop runs on an accelerator: options that change how fast a run goes, never
what it writes (tests/test_accel.py checks each against the default, token for token).

    out = lk.generate(lm, prompt, gen_length=256, block_length=32, steps=256, accel=lk.Accel.GPU)

On a GPU the host only enqueues work; every time it reads a device value (`if mask.any()`,
`.item()`, `.cpu()`) it waits for the device to finish, and the device then idles while the host
prepares the next step. The default (`Accel()`) reads what the lab's views need after every step:
each step is timed (the device synchronised) and its record copied to the CPU. `Accel.GPU`:
- `sync="block"`: no timing synchronisation per step (records carry `seconds=nan`; time the run).
  LLaDA's fixed-count rule (LowConfidence) without controls or EOS early stop then reads nothing
  from the device inside a block, since its step count is known in advance; the other rules read
  one bit per step, the stop test their official code also makes (is the block done?).
- `trace="device"`: records stay on the device in compact dtypes and go to the CPU in one copy
  when the run ends (callbacks such as `on_step` then receive device tensors).

`compiled(lm, mode)` wraps a model in `torch.compile` (mode "reduce-overhead" captures the
forward pass in CUDA graphs on a GPU); the canvas keeps one shape for a whole run, so a run
compiles once per shape.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from .models.handle import Denoiser, Wrapper
from .models.kv_cache import COMPILE_MODES  # the modes live with the caches, below the loop

SYNCS = ("step", "block")
TRACES = ("host", "device")


@dataclass(frozen=True)
class Accel:
    sync: str = "step"      # "step": time every step (synchronised); "block": no per-step host round trip
    trace: str = "host"     # "host": records copied to the CPU each step; "device": once, at the end
    GPU: ClassVar["Accel"]

    def __post_init__(self):
        if self.sync not in SYNCS:
            raise ValueError(f"sync must be one of {SYNCS}, got {self.sync!r}")
        if self.trace not in TRACES:
            raise ValueError(f"trace must be one of {TRACES}, got {self.trace!r}")


Accel.GPU = Accel(sync="block", trace="device")


def check_accel(accel) -> Accel:
    if accel is None:
        return Accel()
    if not isinstance(accel, Accel):
        raise ValueError(f"accel must be an lk.Accel (e.g. lk.Accel.GPU) or None, got {accel!r}")
    return accel


class Compiled(Wrapper):
    """The model's forward pass through torch.compile (fullgraph: one graph, no Python in between).
    dynamic=False: one graph per canvas shape, which a run keeps from its first step to its last."""

    def __init__(self, lm: Denoiser, mode: str = "default", backend: str = "inductor"):
        if mode not in COMPILE_MODES:
            raise ValueError(f"mode must be one of {COMPILE_MODES}, got {mode!r}")
        if isinstance(lm, Wrapper):
            raise ValueError(f"compile the model itself, not a wrapper ({type(lm).__name__}); KV caches "
                             f"take compile= themselves")
        super().__init__(lm)
        self.mode = mode
        self._forward = torch.compile(self._eager, mode=mode, backend=backend, fullgraph=True, dynamic=False)

    def _eager(self, x: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        return self.lm(x, attention_mask)

    @torch.no_grad()
    def __call__(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """x (B, L) → logits (B, L, V), a fresh tensor the caller may write into."""
        out = self._forward(x, attention_mask)
        return out.clone() if self.mode in ("reduce-overhead", "max-autotune") else out


def compiled(lm: Denoiser, mode: str = "default", backend: str = "inductor") -> Compiled:
    """`lm` with its forward pass compiled (torch.compile; "reduce-overhead": CUDA graphs on a GPU)."""
    return Compiled(lm, mode, backend)


__all__ = ["COMPILE_MODES", "SYNCS", "TRACES", "Accel", "check_accel", "Compiled", "compiled"]
