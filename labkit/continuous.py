"""Sampling a continuous-diffusion LM (`labkit.models.continuous_net`): start the canvas as
Gaussian noise x_1 ~ N(0, I) in embedding space and denoise it over N steps with the DDIM update
(deterministic, η = 0) from the model's x0 prediction:

    t_i = 1 − i/N,  ᾱ_i = ᾱ(t_i)
    x0_hat = f(x_t, t)                                    (B, L, D), optionally clamped to the
                                                          nearest embedding (the "clamping trick")
    ε_hat  = (x_t − √ᾱ_t · x0_hat) / √(1 − ᾱ_t)
    x_s    = √ᾱ_s · x0_hat + √(1 − ᾱ_s) · ε_hat           (s = the next, smaller time)

ᾱ(0) = 1, so the last step lands on x0_hat; rounding it to the nearest embedding gives the tokens.

Conditioning (a prompt prefix, keyword `anchors` at chosen canvas positions) replaces the model's
x0 prediction at those positions by their true embeddings each step. With the DDIM update this keeps
them exactly on their forward-noised path √ᾱ_t · e + √(1 − ᾱ_t) · ε, the noise level the model
saw in training at every position, while the free positions are denoised around them (the
"replacement" method of inpainting). A placed keyword is there by construction; what such a test
measures is whether the text around it reads well.

Each step is recorded as a labkit StepRecord, so the lab's views work on the trace:
tokens = the nearest token to x0_hat at every position; confidence = softmax(x0_hat · Eᵀ) of that
token; committed = step 0 (the first reading of every free canvas position); edited = a position
whose nearest token changed; pinned = anchor positions. The distance from x0_hat to its nearest
embedding, per step and position, is in trace.meta["distance"] ((S, B, N) nested lists).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterator

import torch
from torch import Tensor

from .output import Output, collect
from .samplers.base import StepRecord
from .trace import Trace

SAMPLER_NAME = "continuous-ddim"


@dataclass(frozen=True)
class ContinuousStep:
    """One denoising step of the continuous sampler."""
    record: StepRecord     # tokens / confidence / committed / edited, (B, L) each
    distance: Tensor       # (B, L) float: ‖x0_hat − E[nearest]‖ (0 on prompt and anchors)
    t: float               # the time of the step's input x_t
    alpha_bar: float       # ᾱ(t)


@dataclass(frozen=True)
class _Canvas:
    ids: Tensor            # (B, L) long: prompt ids, anchor ids, mask_id elsewhere
    fixed: Tensor          # (B, L) bool: prompt and anchor positions
    anchors: Tensor        # (B, L) bool: anchor positions only
    prompt_len: int


def nearest(x: Tensor, E: Tensor) -> tuple[Tensor, Tensor]:
    """x (B, L, D), E (V, D) → the nearest row of E to each vector (B, L) long and its Euclidean
    distance (B, L)."""
    B, L, D = x.shape
    ids = torch.cdist(x.reshape(1, B * L, D).float(), E[None].float())[0].argmin(-1).view(B, L)   # (B, L)
    return ids, (x.float() - E[ids].float()).norm(dim=-1)          # exact distance to the chosen row


def _canvas(model, tokenizer, prompt: str | None, anchors: dict | None, length: int, batch: int,
            device) -> _Canvas:
    """The canvas of `batch` rows: prompt prefix, then `length` free positions with anchors."""
    p_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"] if prompt else []
    P, L = len(p_ids), len(p_ids) + length
    if L > model.config.max_len:
        raise ValueError(f"prompt ({P} tokens) + length ({length}) = {L} exceeds the model's context "
                         f"max_len={model.config.max_len}")
    mask_id = tokenizer.mask_token_id if tokenizer.mask_token_id is not None else -1
    ids = torch.full((batch, L), mask_id, dtype=torch.long)
    ids[:, :P] = torch.tensor(p_ids, dtype=torch.long)
    anchor = torch.zeros(batch, L, dtype=torch.bool)
    for pos, text in sorted((anchors or {}).items()):
        a_ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        if not isinstance(pos, int) or pos < 0 or pos + len(a_ids) > length:
            raise ValueError(f"anchors: {text!r} at canvas position {pos!r} ({len(a_ids)} tokens) does not fit "
                             f"in [0, {length})")
        if anchor[0, P + pos:P + pos + len(a_ids)].any():
            raise ValueError(f"anchors: {text!r} at position {pos} overlaps another anchor")
        ids[:, P + pos:P + pos + len(a_ids)] = torch.tensor(a_ids, dtype=torch.long)
        anchor[:, P + pos:P + pos + len(a_ids)] = True
    fixed = anchor.clone()
    fixed[:, :P] = True
    return _Canvas(ids.to(device), fixed.to(device), anchor.to(device), P)


def _check(length: int, steps: int, batch: int, seed) -> None:
    for name, v in (("length", length), ("steps", steps), ("batch", batch)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")


def _record(i: int, ids: Tensor, prob: Tensor, prev: Tensor | None, cv: _Canvas) -> StepRecord:
    """The StepRecord of step i: ids (B, L) the nearest tokens, prob (B, L) their probability."""
    free = ~cv.fixed                                                        # (B, L)
    committed = free if prev is None else torch.zeros_like(free)
    edited = torch.zeros_like(free) if prev is None else free & (ids != prev)
    confidence = torch.where(torch.arange(ids.shape[1], device=ids.device)[None] < cv.prompt_len,
                             torch.full_like(prob, float("nan")), prob)
    return StepRecord(step=i, block=0, tokens=ids, candidates=ids, confidence=confidence, committed=committed,
                      edited=edited, pinned=cv.anchors if cv.anchors.any() else None)


@torch.no_grad()
def stream_continuous(model, tokenizer, *, schedule: Callable[[Tensor], Tensor], prompt: str | None = None,
                      anchors: dict[int, str] | None = None, length: int = 32, steps: int = 50, seed: int = 0,
                      clamp: bool = False, batch: int = 1) -> Iterator[ContinuousStep]:
    """Yield one ContinuousStep per denoising step (see the module docstring). `schedule` maps t
    (tensor in [0, 1]) to ᾱ(t), e.g. labkit.training.schedules.schedule("cosine"); use the one the
    model was trained with. `anchors` {canvas position: text} fixes text at those positions."""
    _check(length, steps, batch, seed)
    dev = next(model.parameters()).device
    cv = _canvas(model, tokenizer, prompt, anchors, length, batch, dev)
    E = model.embedding_matrix()                                            # (V, D)
    e_fixed = E[cv.ids.clamp_min(0)]                                        # (B, L, D)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn((batch, cv.ids.shape[1], E.shape[1]), generator=g).to(dev)   # x_1 (B, L, D)
    ts = torch.linspace(1.0, 0.0, steps + 1)
    ab = torch.as_tensor(schedule(ts)).float().clamp(0.0, 1.0)              # (steps + 1,)
    prev = None
    for i in range(steps):
        t0 = time.perf_counter()
        x0_hat = torch.where(cv.fixed[..., None], e_fixed, model(x, ts[i].expand(batch).to(dev)))
        ids, dist = nearest(x0_hat, E)                                      # (B, L) each
        prob = torch.softmax(model.logits(x0_hat).float(), -1).gather(-1, ids[..., None])[..., 0]
        x0_use = E[ids] if clamp else x0_hat                                # the clamping trick
        a_t, a_s = ab[i].item(), ab[i + 1].item()
        eps_hat = (x - a_t ** 0.5 * x0_use) / max(1 - a_t, 1e-12) ** 0.5
        x = a_s ** 0.5 * x0_use + (1 - a_s) ** 0.5 * eps_hat
        rec = _record(i, ids, prob, prev, cv)
        prev = ids
        yield ContinuousStep(record=StepRecord(**{**rec.__dict__, "seconds": time.perf_counter() - t0}),
                             distance=torch.where(cv.fixed, torch.zeros_like(dist), dist), t=float(ts[i]),
                             alpha_bar=a_t)


def generate_continuous(model, tokenizer, *, schedule: Callable[[Tensor], Tensor], prompt: str | None = None,
                        anchors: dict[int, str] | None = None, length: int = 32, steps: int = 50, seed: int = 0,
                        clamp: bool = False, batch: int = 1,
                        on_step: Callable[[ContinuousStep], None] | None = None) -> Output:
    """Run `stream_continuous` to the end: an Output whose ids are the last step's rounding
    (B, P + length), texts the decoded canvases, and trace the records (meta: sampler, schedule,
    steps, clamp, t, ᾱ and the per-step distances)."""
    start = time.perf_counter()
    trace, dists, ts, abs_ = None, [], [], []
    for st in stream_continuous(model, tokenizer, schedule=schedule, prompt=prompt, anchors=anchors,
                                length=length, steps=steps, seed=seed, clamp=clamp, batch=batch):
        rec = st.record
        if trace is None:
            P = int(rec.tokens.shape[1] - length)
            init = torch.where(rec.committed, torch.full_like(rec.tokens, _mask_id(tokenizer)), rec.tokens)
            trace = Trace(prompt_len=P, mask_id=_mask_id(tokenizer), init=init.cpu())
        trace.append(rec)
        dists.append(st.distance[:, trace.prompt_len:].cpu())
        ts.append(st.t)
        abs_.append(st.alpha_bar)
        if on_step is not None:
            on_step(st)
    seconds = time.perf_counter() - start
    trace.meta.update(sampler=SAMPLER_NAME, schedule=getattr(schedule, "name", repr(schedule)), steps=steps,
                      clamp=clamp, gen_length=length, t=[round(v, 5) for v in ts],
                      alpha_bar=[round(v, 6) for v in abs_],
                      distance=torch.stack(dists).round(decimals=4).tolist())     # (S, B, N)
    texts = [tokenizer.decode(row[trace.prompt_len:].tolist(), skip_special_tokens=True) for row in trace.final]
    return collect(trace, texts, seconds=seconds, gen_tokens=batch * length, per_row=False)


class Vocabulary:
    """A tokenizer as the lab's views read a model (`token_strings`, `decode`): pass it as `lm` to
    labkit.ui.viz (heatmap, token_grid, step_slider) for a continuous trace's token strings."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.mask_id = _mask_id(tokenizer)

    def token_strings(self, ids) -> list[str]:
        return [self.tokenizer.decode([int(i)]) for i in ids]

    def decode(self, ids, skip_special: bool = True) -> str:
        return self.tokenizer.decode([int(i) for i in ids], skip_special_tokens=skip_special)


def _mask_id(tokenizer) -> int:
    return tokenizer.mask_token_id if tokenizer.mask_token_id is not None else -1


def distances(trace: Trace) -> Tensor:
    """(S, B, N) float: the distance from x0_hat to its nearest embedding, per step and generated
    position (from trace.meta, so a saved and loaded trace has it too)."""
    if "distance" not in trace.meta:
        raise ValueError("this trace has no per-step distances: it was not made by generate_continuous")
    return torch.tensor(trace.meta["distance"], dtype=torch.float32)


def settle_step(trace: Trace) -> Tensor:
    """(B, N) long: per generated position, the first step from which its nearest token never
    changes again (0: it was right from the first reading)."""
    toks = trace.tokens()[:, :, trace.prompt_len:].long()                  # (S, B, N)
    differs = toks != toks[-1:]                                             # (S, B, N)
    S = toks.shape[0]
    last_diff = torch.where(differs.any(0), S - 1 - differs.flip(0).int().argmax(0), torch.full_like(toks[0], -1))
    return last_diff + 1


__all__ = ["ContinuousStep", "SAMPLER_NAME", "Vocabulary", "distances", "generate_continuous", "nearest", "settle_step",
           "stream_continuous"]
