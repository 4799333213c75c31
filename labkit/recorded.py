"""The second decoding loop: DiffusionGemma's own `generate()`, recorded step by step as a labkit Trace.

DiffusionGemma (labkit.models.families.diffusion_gemma) is block ("canvas") diffusion over *uniform* noise: each
canvas starts as random token ids, never masks, so the mask loop (labkit.decode) has nothing to fill. Here the
model's own `generate()` runs instead, and every denoising step is recorded; `lk.generate(lm, ...)` on such a
model comes here (`generate_uniform`: the loop's knobs mapped onto generate()'s), `generate_recorded` takes
generate()'s own settings.

How the run is recorded. The recorder is a streamer of transformers' draft protocol (`put(prompt)` once,
`put_draft(value=argmax canvas)` after every denoising step, `put(canvas)` after each canvas, `end()`); the
protocol carries only the argmax drafts, so a hook around the model's `_denoising_step` (installed on the
instance for the call, removed after) also reads what the step left: the canvas x_{t-1}, the sampler's
`accepted_token_mask` and the processed logits. One StepRecord per draft (= per decoder forward pass):

    tokens      the canvas as labkit's views read it: accepted positions hold their token, positions still
                holding random noise hold NOISED (= the trace's mask_id, text_config.vocab_size: an id outside
                the canvas's range [0, V), so the views draw it as an undecided ▢); future canvases are NOISED too.
                The last step of each canvas holds the canvas as generate() returned it (the argmax read-out,
                with pads after an EOS), so the trace's last record equals the generated sequence.
    candidates  the canvas the model actually holds: the accepted token, or the noise token at a noised position
                (the last step of a canvas: the returned tokens).
    confidence  p(token) under the processed (temperature-scheduled) logits where a token is shown, nan elsewhere.
    committed   noised → token at this step (accepted for the first time, or again after re-noising).
    edited      token → different token (an accepted token replaced by another sample, or by the read-out).
    active      rows that denoised this step (a batch row that met the stability/confidence stop is carried).

A re-noised position shows as masked again: the "noised" state of the views. `Recorded.drafts` keeps the argmax
drafts the streamer received, (S, B, L) with the same layout.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from torch import Tensor

from .accel import Accel, check_accel
from .models.families.diffusion_gemma import DiffusionGemma
from .output import Output, answer_texts, check_seed, collect
from .prompts import prompt_texts
from .samplers.base import StepRecord
from .trace import Trace

SAMPLER_NAME = "DiffusionGemma generate() (entropy-bound, uniform noise)"


@dataclass
class _Seen:
    """What one denoising step left, read by the hook around `_denoising_step` ((B, C) each, on the CPU)."""
    canvas: Tensor       # long: x_{t-1}, accepted tokens plus fresh noise
    accepted: Tensor     # bool: the sampler's accepted positions
    p_canvas: Tensor     # float: p(canvas token) under the processed logits
    p_argmax: Tensor     # float: p(argmax token)
    live: Tensor         # (B,) bool: rows not finished before this step


class DraftRecorder:
    """A streamer of transformers' draft protocol that keeps everything it is sent: the prompt (first `put`),
    one argmax draft per denoising step (`put_draft`, with the hook's `_Seen` of that step), and each finished
    canvas (later `put`s)."""
    _takes_logits = False            # generate() sends the argmax canvas, not the (B, C, V) logits

    def __init__(self):
        self.prompt: Tensor | None = None
        self.canvases: list[Tensor] = []
        self.drafts: list[tuple[int, Tensor, _Seen]] = []    # (canvas index, argmax draft, what the step left)
        self.ended = False
        self._seen: _Seen | None = None

    def observe(self, seen: _Seen) -> None:
        self._seen = seen

    def put(self, value: Tensor) -> None:
        if self.prompt is None:
            self.prompt = value.clone()
        else:
            self.canvases.append(value.clone())

    def put_draft(self, value: Tensor | None = None, **kwargs) -> None:
        if self._seen is None:
            raise RuntimeError("DiffusionGemma's generate() sent a draft without a denoising step labkit could "
                               "read (transformers' _denoising_step changed?); cannot record the noised state")
        self.drafts.append((len(self.canvases), value.clone(), self._seen))
        self._seen = None

    def end(self) -> None:
        self.ended = True


def _observe(recorder: DraftRecorder, kwargs: dict, out: tuple, finished_before: Tensor) -> None:
    canvas, argmax, logits = out[0], out[1], out[2]
    probs = torch.softmax(logits.float(), -1)
    recorder.observe(_Seen(canvas=canvas.cpu(), accepted=kwargs["sampler"].accepted_token_mask.cpu(),
                           p_canvas=probs.gather(-1, canvas[..., None]).squeeze(-1).cpu(),
                           p_argmax=probs.gather(-1, argmax[..., None]).squeeze(-1).cpu(),
                           live=(~finished_before).cpu()))


def _run(net, recorder: DraftRecorder, input_ids: Tensor, settings: dict):
    """net.generate() with the recorder as its streamer and the step hook installed on the instance."""
    original = net._denoising_step

    def step(**kwargs):
        finished_before = kwargs["finished_denoising"].clone()      # updated in place by the step
        out = original(**kwargs)
        _observe(recorder, kwargs, out, finished_before)
        return out

    net._denoising_step = step
    try:
        return net.generate(input_ids, streamer=recorder, **settings)
    finally:
        del net._denoising_step


def _layout(recorder: DraftRecorder, noised: int) -> tuple[Tensor, int, int]:
    """init (B, L): the prompt, then NOISED over every canvas generate() produced; P; canvas length."""
    prompt, n = recorder.prompt.long(), len(recorder.canvases)
    c = recorder.canvases[0].shape[1] if n else 0
    init = torch.full((prompt.shape[0], prompt.shape[1] + n * c), noised, dtype=torch.long)
    init[:, :prompt.shape[1]] = prompt
    return init, prompt.shape[1], c


def _records(recorder: DraftRecorder, noised: int):
    """The Trace's records, one per draft, and the argmax drafts (S, B, L) in the same layout."""
    init, P, C = _layout(recorder, noised)
    prev, records, drafts = init.clone(), [], []
    last_of = {b: i for i, (b, _, _) in enumerate(recorder.drafts)}    # the read-out step of each canvas
    for i, (b, draft, seen) in enumerate(recorder.drafts):
        s, e = P + b * C, P + (b + 1) * C
        live = seen.live[:, None]
        if last_of[b] == i:                           # the read-out: generate() appends this canvas
            shown, cand, conf = recorder.canvases[b].long(), recorder.canvases[b].long(), seen.p_argmax
        else:
            shown = torch.where(seen.accepted, seen.canvas, torch.full_like(seen.canvas, noised))
            cand, conf = seen.canvas, seen.p_canvas.masked_fill(~seen.accepted, float("nan"))
        tokens, candidates, confidence = prev.clone(), prev.clone(), torch.full(init.shape, float("nan"))
        tokens[:, s:e] = torch.where(live, shown, prev[:, s:e])
        candidates[:, s:e] = torch.where(live, cand, prev[:, s:e])
        confidence[:, s:e] = conf.masked_fill(~live, float("nan"))
        was, now = prev != noised, tokens != noised
        confidence = confidence.masked_fill(~now, float("nan"))
        full_draft = prev.clone()
        full_draft[:, s:e] = draft
        records.append(StepRecord(step=i, block=b, tokens=tokens, candidates=candidates, confidence=confidence,
                                  committed=~was & now, edited=was & now & (prev != tokens), active=seen.live))
        drafts.append(full_draft)
        prev = tokens
    return init, P, records, (torch.stack(drafts) if drafts else init.new_empty((0, *init.shape)))


@dataclass(frozen=True)
class Recorded(Output):
    """labkit's Output plus what only generate() knows: the argmax drafts the streamer received
    ((S, B, L), same layout as the trace) and generate()'s sequences (B, L)."""
    drafts: Tensor | None = None
    sequences: Tensor | None = None


def _prompt_ids(lm, prompt) -> tuple[Tensor, Tensor | None]:
    """Prompt text(s) or chat messages → input_ids (B, P), left-padded with the pad id, and the attention
    mask (None when no row is padded)."""
    encoded = [lm.encode(p) for p in prompt_texts(lm, prompt)]
    if not all(encoded):
        raise ValueError("a prompt encodes to no tokens")
    P = max(map(len, encoded))
    ids = torch.full((len(encoded), P), lm.pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for b, row in enumerate(encoded):
        ids[b, P - len(row):] = torch.tensor(row, dtype=torch.long)
        mask[b, P - len(row):] = 1
    return ids, (None if bool(mask.all()) else mask)



def _trace(recorder: DraftRecorder, noised: int, seed, settings: dict) -> tuple[Trace, Tensor]:
    """The run as a Trace (meta: sampler, noise, noised_id, canvas layout, seed, generate()'s settings) and the
    argmax drafts (S, B, L)."""
    init, P, records, drafts = _records(recorder, noised)
    C = recorder.canvases[0].shape[1] if recorder.canvases else 0
    trace = Trace(prompt_len=P, mask_id=noised, init=init,
                  meta=dict(sampler=SAMPLER_NAME, noise="uniform", noised_id=noised, gen_length=init.shape[1] - P,
                            block_length=C, seed=seed, batch=init.shape[0],
                            settings={k: repr(v) for k, v in settings.items() if k != "attention_mask"}))
    for rec in records:
        trace.append(rec)
    return trace, drafts


def generate_recorded(lm, prompt, *, seed: int | None = 0, **settings) -> Recorded:
    """Run DiffusionGemma's own `generate()` on `prompt` (text, a batch of texts, or chat messages) and record
    every denoising step as a labkit Trace (see the module docstring for what each record holds).

    settings: DiffusionGemmaGenerationConfig fields passed to generate() as they are (max_new_tokens,
    max_denoising_steps, sampler_config, t_min, t_max, stability_threshold, confidence_threshold, eos_token_id,
    ...); unset ones come from the checkpoint's generation_config.json, then transformers' defaults.
    seed: torch's global RNG is seeded for the call (generate() draws its noise from it) and restored after;
    None draws from it as it stands. Returns a `Recorded` Output: ids (= the last record's tokens = generate()'s
    sequences), texts, trace, stats, drafts, sequences."""
    if not isinstance(getattr(lm, "family", None), DiffusionGemma):
        raise ValueError(f"generate_recorded runs DiffusionGemma's own generate(); model {lm.name!r} is "
                         f"{getattr(lm.family, 'name', None) or lm.kind}: use labkit.generate")
    check_seed(seed)
    ids, mask = _prompt_ids(lm, prompt)
    settings = {**settings, **({"attention_mask": mask.to(lm.device)} if mask is not None else {})}
    noised = int(lm.net.config.get_text_config().vocab_size)
    recorder, t0 = DraftRecorder(), time.perf_counter()
    with torch.random.fork_rng(devices=[lm.device] if lm.device.type == "cuda" else []):
        if seed is not None:
            torch.manual_seed(int(seed))
        out = _run(lm.net, recorder, ids.to(lm.device), settings)
    seconds = time.perf_counter() - t0
    sequences = (out if isinstance(out, Tensor) else out.sequences).cpu()
    trace, drafts = _trace(recorder, noised, seed, settings)
    final, P = trace.final.long(), trace.prompt_len
    extra = {}
    if not isinstance(out, Tensor) and out.tokens_per_forward is not None:
        extra["tokens_per_forward"] = [round(float(t), 4) for t in out.tokens_per_forward]
    return collect(trace, answer_texts(lm, final, P), seconds=seconds, gen_tokens=int((final[:, P:] != lm.pad_id).sum()),
                   extra_stats=extra, cls=Recorded, drafts=drafts, sequences=sequences)


def _refuse_loop_options(lm, **given) -> None:
    """The mask loop's options generate() has no counterpart for: each must be left unset."""
    unset = {"sampler": None, "cfg_scale": 0, "penalty_lambda": 0, "generator": None, "on_step": None,
             "on_start": None}
    for name, value in given.items():
        if name == "controls":
            bad = bool(value)
        elif name == "accel":
            bad = check_accel(value) != Accel()
        else:
            bad = value is not unset[name] and value != unset[name]
        if bad:
            raise ValueError(f"{name} cannot be honoured on {lm.name!r}: DiffusionGemma runs its own generate() "
                             f"(uniform noise, its entropy-bound sampler), recorded step by step; leave {name} unset")


def _canvases(lm, gen_length: int, block_length: int, steps: int) -> int:
    """The loop's canvas knobs checked against the model's fixed canvas; returns the number of canvases."""
    C = int(lm.net.config.canvas_length)
    for name, v in (("gen_length", gen_length), ("block_length", block_length), ("steps", steps)):
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if block_length != C:
        raise ValueError(f"block_length must be {C}, the canvas length of {lm.name!r} (DiffusionGemma decodes "
                         f"whole canvases), got {block_length}")
    if gen_length % C:
        raise ValueError(f"gen_length must be a multiple of the canvas length {C} of {lm.name!r}, got {gen_length}")
    n = gen_length // C
    if steps % n:
        raise ValueError(f"steps must be a multiple of the {n} canvases (each canvas takes steps / {n} denoising "
                         f"steps at most), got {steps}")
    return n


def generate_uniform(lm, prompt, sampler=None, *, gen_length: int = 64, block_length: int = 32, steps: int = 64,
                     seed: int | None = None, eos_early_stop: bool = False, **loop_options) -> Recorded:
    """lk.generate on a uniform-noise model: its own generate(), recorded (generate_recorded), with the loop's
    knobs mapped onto generate()'s: gen_length → max_new_tokens (a whole number of canvases), block_length = the
    model's canvas length, steps → max_denoising_steps = steps / canvases (a canvas may stop earlier, at
    generate()'s stability and confidence stops), seed None → 0 as in the mask loop. A row always ends at its
    EOS (generate() pads after it), whatever eos_early_stop says. The loop's other options (sampler, cfg_scale,
    penalty_lambda, generator, controls, on_step, on_start, a non-default accel) are refused in one line."""
    _refuse_loop_options(lm, sampler=sampler, **loop_options)
    n = _canvases(lm, gen_length, block_length, steps)
    check_seed(seed)
    return generate_recorded(lm, prompt, seed=0 if seed is None else seed, max_new_tokens=gen_length,
                             max_denoising_steps=steps // n)


__all__ = ["DraftRecorder", "Recorded", "SAMPLER_NAME", "generate_recorded", "generate_uniform"]
