"""KV caching for block decoding, as wrappers around the model (Fast-dLLM's prefix and dual cache).

    fast = PrefixCache(lm)            # or DualCache(lm)
    out = lk.generate(fast, prompt, any_rule, gen_length=128, block_length=32, steps=128)

Within a block, the tokens before it do not change, so their keys and values barely do. At the
first step of every block the wrapper runs the full canvas and keeps every layer's keys and values;
at the block's other steps it recomputes only
- PrefixCache: the block and everything after it (the prefix's K/V are reused);
- DualCache: the block alone (the prefix's and the still-masked suffix's K/V are reused).
Reused K/V are those of the block's first step: an approximation (a committed token changes the
hidden states of every position attending to it), which is why outputs can differ from uncached
decoding; `labkit bench cache` measures how often. Logits outside the recomputed window are the
block's first-step logits: rules that read only the active block (all of labkit's, except
DraftEdit's multi-block editing) see fresh values.

The loop tells the wrapper where each block starts (`begin_block`); any rule and any control work
unchanged. Needs a labkit TinyDLM network (its `run()` takes a K/V cache); masked models only.
"""
from __future__ import annotations

import torch


class _BlockCache:
    mode = ""

    def __init__(self, lm):
        if getattr(lm, "kind", "masked") != "masked":
            raise ValueError(f"{type(self).__name__} is for masked diffusion models; {lm.name!r} is {lm.kind}")
        if not hasattr(lm.net, "run"):
            raise ValueError(f"{type(self).__name__} needs a labkit TinyDLM network (with run() and a K/V "
                             f"cache); {lm.name!r} is {type(lm.net).__name__}")
        self.lm = lm
        self.shift = bool(getattr(lm.net.config, "shift_logits", False))
        self.full_passes = self.window_passes = 0
        self._block: tuple[int, int] | None = None
        self._kv = self._logits = None

    def __getattr__(self, name):                 # everything else is the wrapped model's
        if "lm" not in self.__dict__:            # not set up yet (e.g. during unpickling)
            raise AttributeError(name)
        return getattr(self.lm, name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.lm!r})"

    def begin_block(self, start: int, end: int) -> None:
        """Called by the decoding loop when a block starts: the next call runs the full canvas."""
        self._block, self._kv, self._logits = (start, end), None, None

    def _window(self, L: int) -> tuple[int, int]:
        s, e = self._block
        return s, (L if self.mode == "prefix" else e)

    @torch.no_grad()
    def __call__(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        net = self.lm.net
        if self._block is None or self._kv is None or self._kv[0][0].shape[0] != x.shape[0]:
            raw, self._kv = net.run(x, attention_mask)                    # (B, L, V), per-layer K/V
            self._logits = self._shifted(raw)
            self.full_passes += 1
            return self._logits.clone()        # the loop and controls write into what they get
        s, e = self._window(x.shape[1])
        a = s - 1 if self.shift else s          # shifted logits: position i is read from hidden i-1
        raw, _ = net.run(x[:, a:e], attention_mask, past=self._kv, start=a)   # (B, e - a, V)
        logits = self._logits.clone()
        logits[:, s:e] = raw[:, :e - s] if self.shift else raw
        self.window_passes += 1
        return logits

    def _shifted(self, raw: torch.Tensor) -> torch.Tensor:
        return torch.cat([raw[:, :1], raw[:, :-1]], dim=1) if self.shift else raw


class PrefixCache(_BlockCache):
    """Reuse the keys and values of the positions before the active block."""
    mode = "prefix"


class DualCache(_BlockCache):
    """Reuse the keys and values before and after the active block: recompute the block alone."""
    mode = "dual"


__all__ = ["DualCache", "PrefixCache"]
