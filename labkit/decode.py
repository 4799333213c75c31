"""The one decoding loop. `stream()` yields one StepRecord per forward pass; `generate()` collects
the stream into an Output. Blocks, classifier-free guidance and batching live here; what to
commit at each step is the sampler rule's business."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterator

import torch

from .samplers.base import DecodeState, StepRecord
from .samplers.low_confidence import LowConfidence
from .trace import Trace


@dataclass(frozen=True)
class Output:
    ids: torch.Tensor            # (B, L) long: padding + prompt + generated canvas
    texts: list[str]             # generated text per row (specials removed)
    trace: Trace
    stats: dict                  # nfe, gen_tokens, tpf, seconds, tps

    @property
    def text(self) -> str:
        """The generated text of the first (for a single prompt, the only) row."""
        return self.texts[0]


def _check(lm, prompts, gen_length, block_length, steps, cfg_scale):
    if getattr(lm, "kind", "masked") != "masked" or lm.mask_id is None or lm.mask_id < 0:
        raise ValueError(f"model {lm.name!r} is not a masked diffusion model (kind={lm.kind!r}); "
                         f"diffusion decoding needs a mask token")
    if isinstance(prompts, str):
        prompts = [prompts]
    if not isinstance(prompts, (list, tuple)) or not prompts:
        raise ValueError("prompt must be a non-empty string or a non-empty list of strings")
    for p in prompts:
        if not isinstance(p, str) or not p.strip():
            raise ValueError(f"prompt must be non-empty text, got {p!r}")
    for name, v in (("gen_length", gen_length), ("block_length", block_length), ("steps", steps)):
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if gen_length % block_length:
        raise ValueError(f"gen_length ({gen_length}) must be a multiple of block_length ({block_length})")
    num_blocks = gen_length // block_length
    if steps % num_blocks:
        raise ValueError(f"steps ({steps}) must be divisible by the number of blocks "
                         f"gen_length / block_length = {num_blocks}")
    if steps > gen_length:
        raise ValueError(f"steps ({steps}) must be at most gen_length ({gen_length}): "
                         f"each step commits at least one token")
    if not cfg_scale >= 0:
        raise ValueError(f"cfg_scale must be >= 0, got {cfg_scale}")
    encoded = [lm.encode(p) for p in prompts]
    longest = max(map(len, encoded))
    if lm.max_length is not None and longest + gen_length > lm.max_length:
        raise ValueError(f"prompt ({longest} tokens) + gen_length ({gen_length}) exceeds the model's "
                         f"context of {lm.max_length} tokens: shorten the prompt or gen_length")
    return encoded, num_blocks


def _model_fn(lm, attention_mask, prompt_pos, cfg_scale) -> Callable[[torch.Tensor], torch.Tensor]:
    """x (B, L) → logits (B, L, V) in the model's dtype, with classifier-free guidance when cfg_scale > 0: the
    unconditional pass sees the prompt positions masked, in one batch of 2B with the conditional.
    Works with or without an attention mask (LLaDA's generate.py crashes without one)."""
    def forward(x):
        if cfg_scale == 0:
            logits = lm(x, attention_mask)
        else:
            un_x = x.masked_fill(prompt_pos, lm.mask_id)
            am = None if attention_mask is None else torch.cat([attention_mask, attention_mask])
            cond, un = lm(torch.cat([x, un_x]), am).chunk(2)
            logits = un + (cfg_scale + 1) * (cond - un)
        # committing a mask would commit nothing (a trained denoiser gives it ~0 anyway; this
        # keeps random and hub models honest). Rules slice the block and cast to float32.
        logits[..., lm.mask_id] = float("-inf")
        return logits
    return forward


def stream(lm, prompt, sampler=None, *, gen_length: int = 64, block_length: int = 32,
           steps: int = 64, cfg_scale: float = 0.0, generator: torch.Generator | None = None,
           seed: int | None = None, trace: Trace | None = None) -> Iterator[StepRecord]:
    """Yield one StepRecord per forward pass. The only decoding loop in labkit.

    prompt: a string or a list of strings (a batch, left-padded with an attention mask).
    The canvas is gen_length masks after the prompt, decoded in gen_length / block_length
    semi-autoregressive blocks of steps / num_blocks steps each. Pass `trace` to have the
    records collected as they are yielded."""
    sampler = sampler if sampler is not None else LowConfidence()
    encoded, num_blocks = _check(lm, prompt, gen_length, block_length, steps, cfg_scale)
    if generator is None:
        generator = torch.Generator(device=lm.device).manual_seed(0 if seed is None else seed)
    elif seed is not None:
        raise ValueError("pass either seed or generator, not both")
    elif generator.device.type != lm.device.type:
        raise ValueError(f"generator is on {generator.device.type} but the model is on {lm.device.type}: "
                         f"create it with torch.Generator(device={str(lm.device)!r})")
    B, P = len(encoded), max(map(len, encoded))
    L = P + gen_length
    x = torch.full((B, L), lm.mask_id, dtype=torch.long)
    attention = torch.ones(B, L, dtype=torch.long)
    for b, ids in enumerate(encoded):                   # left padding
        x[b, :P - len(ids)] = lm.pad_id
        x[b, P - len(ids):P] = torch.tensor(ids, dtype=torch.long)
        attention[b, :P - len(ids)] = 0
    x, attention = x.to(lm.device), attention.to(lm.device)
    frozen = torch.zeros(B, L, dtype=torch.bool, device=lm.device)
    frozen[:, :P] = True                                # prompt and padding are never touched
    attention_mask = attention if (attention == 0).any() else None
    model = _model_fn(lm, attention_mask, frozen & attention.bool(), cfg_scale)
    if trace is not None:
        trace.prompt_len, trace.mask_id, trace.init = P, lm.mask_id, x.cpu()
    steps_per_block, global_step = steps // num_blocks, 0
    for block in range(num_blocks):
        s, e = P + block * block_length, P + (block + 1) * block_length
        # LLaDA's rule spends exactly its step budget; threshold rules run until the block is
        # full (each step commits at least one token per unfinished row), as in Fast-dLLM.
        budget = steps_per_block if getattr(sampler, "uses_step_budget", True) else block_length
        for step in range(budget):
            state = DecodeState(x=x, frozen=frozen, block_start=s, block_end=e, block=block, step=step,
                                steps=budget, global_step=global_step, mask_id=lm.mask_id,
                                stop_ids=lm.stop_ids)
            if not state.masked.any():
                break
            t0 = time.perf_counter()
            rec = sampler.step(model(x), state, generator)
            if x.device.type == "cuda":
                torch.cuda.synchronize(x.device)
            rec = StepRecord(**{**rec.__dict__, "seconds": time.perf_counter() - t0})
            x = rec.tokens
            if trace is not None:
                trace.append(rec)
            global_step += 1
            yield rec


def generate(lm, prompt, sampler=None, *, on_step: Callable[[StepRecord], None] | None = None,
             gen_length: int = 64, block_length: int = 32, steps: int = 64, cfg_scale: float = 0.0,
             generator: torch.Generator | None = None, seed: int | None = None) -> Output:
    """stream() collected into an Output(ids, texts, trace, stats). Texts end at the first EOS."""
    sampler = sampler if sampler is not None else LowConfidence()
    trace = Trace(prompt_len=0, mask_id=lm.mask_id, init=torch.empty(0, 0, dtype=torch.long))
    t0 = time.perf_counter()
    knobs = dict(gen_length=gen_length, block_length=block_length, steps=steps, cfg_scale=cfg_scale)
    for rec in stream(lm, prompt, sampler, trace=trace, generator=generator, seed=seed, **knobs):
        if on_step is not None:
            on_step(rec)
    seconds = time.perf_counter() - t0
    final = trace.final
    P = trace.prompt_len
    texts = [lm.decode(_until_stop(row[P:].tolist(), lm.stop_ids)) for row in final]
    gen_tokens = int((final[:, P:] != lm.mask_id).sum())
    trace.meta.update(sampler=repr(sampler), **knobs, seed=seed, batch=final.shape[0])
    stats = {"nfe": trace.nfe, "gen_tokens": gen_tokens,
             "tpf": round(gen_tokens / final.shape[0] / max(1, trace.nfe), 4),
             "seconds": round(seconds, 4), "tps": round(gen_tokens / max(seconds, 1e-9), 2)}
    return Output(ids=final.long(), texts=texts, trace=trace, stats=stats)


def _until_stop(ids: list[int], stop_ids: tuple[int, ...]) -> list[int]:
    """The generated ids up to (not including) the first EOS / end-of-turn token."""
    for i, t in enumerate(ids):
        if t in stop_ids:
            return ids[:i]
    return ids
