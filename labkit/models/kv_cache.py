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
unchanged. Needs a network with a KV-cache pass (labkit's TinyDLM, the LLaDA, LLaDA-MoE and Dream families); masked
models only. By default (`inplace=True`) the K/V live in one buffer per layer for the whole run:
each block's full pass and each window pass write their fresh keys and values into it, so a step
allocates no K/V and the buffers keep their addresses (what CUDA graphs need).

`CausalCache(ar)` is the autoregressive model's own, exact KV cache (what every AR server uses):
a causal position's keys and values depend only on the tokens up to it, so each call recomputes
only the positions after the longest prefix that is unchanged since the last call, usually one.
`labkit bench length` uses it for the fair AR baseline.

`BlockCache(lm)` is a block-diffusion model's exact cache (tiny-block4 and the like): everything
before the active block is final, so its keys and values are reused, and nothing after the active
block is computed. Decoding with it is token-identical to decoding without.
"""
from __future__ import annotations

import torch

from .handle import Denoiser, Wrapper, model_block

# torch.compile modes labkit offers: a cache's compile=, accel.compiled(lm, mode) and `labkit generate --compile`
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def window_kv(past, k: torch.Tensor, v: torch.Tensor, start: int, write: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """One layer's keys and values for a window pass: past (K, V), each (B, heads, L, hd), with the
    window's fresh k, v (B, heads, W, hd) in place of positions start .. start+W-1: in new tensors,
    or with `write` copied into `past` itself (no allocation). Every network's cache pass uses it."""
    W = k.shape[2]
    if write:
        past[0][:, :, start:start + W].copy_(k)
        past[1][:, :, start:start + W].copy_(v)
        return past[0], past[1]
    return (torch.cat([past[0][:, :, :start], k, past[0][:, :, start + W:]], dim=2),       # (B, heads, L, hd)
            torch.cat([past[1][:, :, :start], v, past[1][:, :, start + W:]], dim=2))


def cache_pass(lm: Denoiser):
    """The network's KV-cache pass, run(x, attention_mask, past=None, start=0, write=False) →
    (unshifted logits (B, W, V), per-layer (K, V)): a family's own (LLaDA's) or a labkit network's;
    None when the model has none."""
    if lm.family is not None:
        run = getattr(lm.family, "run", None)
        return None if run is None else (lambda *a, **k: run(lm.net, *a, **k))
    return getattr(lm.net, "run", None)


class _BlockCache(Wrapper):
    mode = ""
    shares_logits = True       # calls return the wrapper's own logits buffer (see __call__)

    def __init__(self, lm: Denoiser, inplace: bool = True, compile: str | None = None, backend: str = "inductor"):
        """inplace: keep one K/V buffer per layer for the whole run and write each pass's fresh
        keys and values into it (no allocation per step); False: new tensors at every step.
        compile: a torch.compile mode for the passes ("reduce-overhead": CUDA graphs; the buffers
        are marked as static addresses, so a graph may write into them)."""
        if lm.kind != "masked":
            raise ValueError(f"{type(self).__name__} is for masked diffusion models; {lm.name!r} is {lm.kind}")
        self._run = cache_pass(lm)
        if self._run is None:
            raise ValueError(f"{type(self).__name__} needs a network with a KV-cache pass (labkit's TinyDLM, "
                             f"the LLaDA, LLaDA-MoE or Dream family); {lm.name!r} is {type(lm.net).__name__}")
        super().__init__(lm)
        if compile is not None:
            if compile not in COMPILE_MODES:
                raise ValueError(f"compile must be None or one of {COMPILE_MODES}, got {compile!r}")
            self._run = torch.compile(self._run, mode=compile, backend=backend, fullgraph=True)
        self.compile = compile
        self.inplace = bool(inplace)
        self.shift = bool(getattr(lm.family, "shift_logits", False)
                          or getattr(getattr(lm.net, "config", None), "shift_logits", False))
        self.full_passes = self.window_passes = 0
        self._block: tuple[int, int] | None = None
        self._stale = True                   # the next call runs the full canvas
        self._kv = self._logits = None

    def begin_block(self, start: int, end: int) -> None:
        """Called by the decoding loop when a block starts: the next call runs the full canvas."""
        self._block, self._stale = (start, end), True

    def _window(self, L: int) -> tuple[int, int]:
        s, e = self._block
        return s, (L if self.mode == "prefix" else e)

    def _full(self, x: torch.Tensor, attention_mask) -> torch.Tensor:
        """The whole canvas; its keys and values become the cache (written into the buffers)."""
        B, L = x.shape
        fits = self._kv is not None and self._kv[0][0].shape[0] == B and self._kv[0][0].shape[2] == L
        if self.inplace and fits:
            raw, _ = self._run(x, attention_mask, past=self._kv, start=0, write=True)     # (B, L, V)
        else:
            raw, kv = self._run(x, attention_mask)
            own = torch.clone if self.compile else torch.Tensor.contiguous     # a graph's outputs are its own
            self._kv = [(own(k), own(v)) for k, v in kv] if self.inplace else kv
            if self.inplace and self.compile is not None:
                for t in (t for pair in self._kv for t in pair):
                    torch._dynamo.mark_static_address(t)
        self._logits, self._stale = self._shifted(raw), self._block is None
        if self.compile:
            self._logits = self._logits.clone()
        self.full_passes += 1
        return self._logits

    @torch.no_grad()
    def __call__(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """x (B, L) → logits (B, L, V): the wrapper's own buffer, fresh inside the recomputed window
        and the block's first-step values elsewhere, valid until the next call. Setting a value
        the same way at every step (the loop's mask logit at -inf) is safe; copy it before adding
        into it (the loop does when penalty_lambda or controls are on)."""
        if self._stale or self._kv is None or self._kv[0][0].shape[0] != x.shape[0]:
            return self._full(x, attention_mask)
        s, e = self._window(x.shape[1])
        a = s - 1 if self.shift else s          # shifted logits: position i is read from hidden i-1
        raw, _ = self._run(x[:, a:e], attention_mask, past=self._kv, start=a, write=self.inplace)  # (B, e - a, V)
        self._logits[:, s:e] = raw[:, :e - s] if self.shift else raw
        self.window_passes += 1
        return self._logits

    def _shifted(self, raw: torch.Tensor) -> torch.Tensor:
        return torch.cat([raw[:, :1], raw[:, :-1]], dim=1) if self.shift else raw


class PrefixCache(_BlockCache):
    """Reuse the keys and values of the positions before the active block."""
    mode = "prefix"


class DualCache(_BlockCache):
    """Reuse the keys and values before and after the active block: recompute the block alone."""
    mode = "dual"


class BlockCache(Wrapper):
    """The exact KV cache of a block-diffusion model (LLaDA2.x, BD3-LM; labkit's tiny-block models).
    A position attends to its own block and the blocks before it only, so the keys and values of
    every block before the active one are final once its tokens are. Each call compares the canvas
    with the tokens the cache was computed from, and recomputes from the first changed position's
    block (rounded down to a block boundary) to the end of the active block, over the cached prefix;
    nothing after the active block is ever computed. In a decoding block that is the block alone
    at every step, plus the finished block once at the next block's first step (its commit pass);
    the first call computes the prompt and the first block in one pass. A rule that edits an
    earlier block (DraftEdit's multi-block editing) makes the cache recompute from there, so the
    logits every rule reads equal the uncached model's (tested token for token). Logits after the
    active block are not computed (left as they were): no rule reads them."""
    shares_logits = True

    def __init__(self, lm: Denoiser):
        if lm.kind != "masked":
            raise ValueError(f"BlockCache is for masked diffusion models; {lm.name!r} is {lm.kind}")
        self.block = model_block(lm)
        if not self.block or not hasattr(lm.net, "run"):
            raise ValueError(f"BlockCache is exact only for a block-diffusion TinyDLM (config block_size > 0); "
                             f"{lm.name!r} attends over the whole canvas: use PrefixCache or DualCache")
        super().__init__(lm)
        self.shift = bool(getattr(lm.net.config, "shift_logits", False))
        self.computed = self.reused = 0          # positions recomputed / read from the cache, over all calls
        self.passes = 0
        self._end: int | None = None
        self._ids = self._mask = self._kv = self._raw = self._logits = None

    def begin_block(self, start: int, end: int) -> None:
        """Called by the decoding loop as block [start, end) starts: calls compute up to `end`."""
        if start % self.block or end % self.block:
            raise ValueError(f"a decoding block [{start}, {end}) must start and end on the model's blocks of "
                             f"{self.block} tokens (decode pads the prompt to a multiple of block_size)")
        self._end = end

    def _kept(self, x: torch.Tensor, attention_mask) -> int:
        """How many leading positions the cache computed from the same tokens (0 = none)."""
        if self._ids is None or self._ids.shape[0] != x.shape[0]:
            return 0
        if (attention_mask is None) != (self._mask is None) or (
                attention_mask is not None and not torch.equal(attention_mask[:, :self._mask.shape[1]], self._mask)):
            return 0
        n = min(x.shape[1], self._ids.shape[1])
        same = (x[:, :n] == self._ids[:, :n]).all(0)                              # (n,)
        return n if bool(same.all()) else int(same.int().argmin())

    @torch.no_grad()
    def __call__(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """x (B, L) → logits (B, L, V), exact up to the active block's end (the wrapper's own
        buffer, valid until the next call)."""
        B, L = x.shape
        e = L if self._end is None or self._end > L else self._end
        d = self._kept(x[:, :e], attention_mask)
        r = min(d // self.block * self.block, max(0, e - self.block))       # recompute [r, e): whole blocks
        past = None if r == 0 else [(k[:, :, :r], v[:, :, :r]) for k, v in self._kv]
        raw, self._kv = self.lm.net.run(x[:, r:e], attention_mask, past=past, start=r)     # (B, e - r, V)
        if self._raw is None or r == 0 or self._raw.shape[1] < L:
            grown = raw.new_zeros(B, L, raw.shape[-1])                                      # (B, L, V)
            if r:
                grown[:, :r] = self._raw[:, :r]
            self._raw, self._logits = grown, grown.clone()
        self._raw[:, r:e] = raw
        if self.shift:      # position i is read from hidden i-1; position 0 from itself
            lo = max(r, 1)
            self._logits[:, lo:e] = self._raw[:, lo - 1:e - 1]
            if r == 0:
                self._logits[:, 0] = self._raw[:, 0]
        else:
            self._logits[:, r:e] = raw
        self._ids = x[:, :e].clone()
        self._mask = None if attention_mask is None else attention_mask[:, :e].clone()
        self.passes += 1
        self.computed, self.reused = self.computed + e - r, self.reused + r
        return self._logits[:, :L]


class CausalCache(Wrapper):
    """Exact KV cache of a causal model (e.g. the tiny-ar twin): reuse every position whose tokens
    up to and including it are unchanged since the last call, recompute the rest. The decoding
    loop hands a causal model its decided prefix, one token longer each step, so an AR step
    costs a one-token forward instead of a pass over the whole prefix. Outputs equal the
    uncached model's up to float rounding (tested)."""

    def __init__(self, lm: Denoiser):
        if lm.kind != "causal":
            raise ValueError(f"CausalCache is for causal models; {lm.name!r} is {lm.kind} "
                             f"(use PrefixCache or DualCache for diffusion)")
        if not hasattr(lm.net, "run") or getattr(lm.net.config, "shift_logits", False):
            raise ValueError(f"CausalCache needs a labkit TinyDLM causal network (with run()); "
                             f"{lm.name!r} is {type(lm.net).__name__}")
        super().__init__(lm)
        self.reused = self.computed = 0           # positions taken from the cache / recomputed
        self.fresh_from = 0                       # the last call's first recomputed position
        self._ids = self._mask = self._kv = self._logits = None

    def _kept(self, x: torch.Tensor, attention_mask) -> int:
        """Length of the prefix whose cached keys and values are still exact."""
        if self._ids is None or self._ids.shape[0] != x.shape[0]:
            return 0
        n = min(x.shape[1], self._ids.shape[1])
        same = (x[:, :n] == self._ids[:, :n]).all(0)                             # (n,)
        if attention_mask is not None or self._mask is not None:
            if attention_mask is None or self._mask is None:
                return 0
            same &= (attention_mask[:, :n] == self._mask[:, :n]).all(0)
        return n if bool(same.all()) else int(same.int().argmin())

    @torch.no_grad()
    def __call__(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """x (B, n) → logits (B, n, V), like the wrapped model (a view of the cache: copy it before
        writing into it; the decoding loop does)."""
        B, n = x.shape
        d = min(self._kept(x, attention_mask), n - 1)       # recompute at least the last position
        past = None if d == 0 else [(k[:, :, :d], v[:, :, :d]) for k, v in self._kv]
        raw, self._kv = self.lm.net.run(x[:, d:], attention_mask, past=past, start=d)   # (B, n - d, V)
        if self._logits is None or d == 0 or self._logits.shape[1] < n:
            grown = raw.new_empty(B, max(n, 2 * d), raw.shape[-1])                       # (B, capacity, V)
            if d:
                grown[:, :d] = self._logits[:, :d]
            self._logits = grown
        self._logits[:, d:n] = raw
        self._ids, self._mask = x.clone(), None if attention_mask is None else attention_mask.clone()
        self.reused, self.computed, self.fresh_from = self.reused + d, self.computed + n - d, d
        return self._logits[:, :n]


__all__ = ["COMPILE_MODES", "BlockCache", "cache_pass", "CausalCache", "DualCache", "PrefixCache", "window_kv"]
