"""DiffusionGemma (google/diffusiongemma-26B-A4B-it), native in transformers 5.x, drawn in the lab.

DiffusionGemma is block ("canvas") diffusion over *uniform* noise: each canvas of `canvas_length` tokens starts as
random token ids, never masks. Every denoising step the decoder reads the canvas (plus the encoder's cache of the
prompt and earlier canvases, plus self-conditioning on the previous step's logits); the entropy-bound sampler
accepts the lowest-entropy sampled tokens and re-noises every other position with fresh random ids (the accepted
set is recomputed each step: nothing is frozen). After the last step the *argmax* canvas is appended to the text.
labkit's mask loop cannot decode this (there is no mask token), so the family has no mask id and `labkit.generate`
refuses it; `generate_recorded` runs the model's own `generate()` instead and records it as a labkit Trace.

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

import functools
import time
from dataclasses import dataclass

import torch
from torch import Tensor

from .base import Family, FamilyError, transformers_placement


class DiffusionGemma(Family):
    name = "DiffusionGemma"
    model_type = "diffusion_gemma"
    kind = "masked"                  # a bidirectional denoiser over each canvas
    noise = "uniform"                # canvases start as random token ids; there is no mask token
    context_keys = ("max_position_embeddings",)
    memory = "DiffusionGemma 26B-A4B: about 52 GB (26B parameters, 4B active)"

    def claims(self, config: dict) -> bool:
        return config.get("model_type") == self.model_type

    def build(self, path, config, *, dtype, device, trust_remote_code):
        """The class transformers' own auto mapping gives `diffusion_gemma` (DiffusionGemmaForBlockDiffusion: the
        encoder-decoder plus its LM head and generate()). No remote code."""
        import transformers
        from transformers.models.auto import modeling_auto as auto

        cls_name = auto.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES.get(self.model_type)
        cls = getattr(transformers, cls_name or "", None)
        if cls is None or not hasattr(cls, "generate"):
            raise FamilyError(f"this transformers ({transformers.__version__}) has no DiffusionGemma model with a "
                              f"language-model head; DiffusionGemma needs transformers >= 5.12")
        placed = transformers_placement(device)
        net, info = cls.from_pretrained(path, dtype=dtype, output_loading_info=True, **placed)
        missing = sorted(info.get("missing_keys") or ())
        if missing:
            raise FamilyError(f"DiffusionGemma checkpoint {str(path)!r} lacks {len(missing)} weights of {cls_name} "
                              f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''})")
        return (net if placed else net.to(device)).eval()

    def mask_id(self, config: dict, tokenizer) -> int | None:
        return None                  # uniform noise: the canvas never holds a mask (Gemma's <mask> is not one)

    def context_length(self, config: dict) -> int | None:
        return super().context_length(config.get("text_config") or config)

    def forward(self, net, x: Tensor, attention_mask: Tensor | None) -> Tensor:
        """x (B, L) → logits (B, L, V): one decoder pass over x as a canvas after a one-token context (BOS),
        without self-conditioning (the first denoising step's view). Used for checks, not for decoding."""
        from transformers import DynamicCache

        b, n = x.shape
        text = net.config.get_text_config()
        first = text.bos_token_id if text.bos_token_id is not None else (text.pad_token_id or 0)
        context = torch.full((b, 1), first, dtype=x.dtype, device=x.device)
        mask = None
        if attention_mask is not None:
            mask = torch.cat([torch.ones_like(attention_mask[:, :1]), attention_mask], -1).bool()
        out = net(input_ids=context, cache=DynamicCache(config=net.config.get_text_config(decoder=True)),
                  position_ids=torch.zeros(1, 1, dtype=torch.int32, device=x.device), decoder_input_ids=x,
                  decoder_attention_mask=mask,
                  decoder_position_ids=torch.arange(1, n + 1, dtype=torch.int32, device=x.device)[None])
        return out.logits


# --- recording generate() -------------------------------------------------------------------------------------
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
    from ...samplers.base import StepRecord

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


@functools.cache
def _recorded_class():
    from ...decode import Output

    @dataclass(frozen=True)
    class Recorded(Output):
        """labkit's Output plus what only generate() knows: the argmax drafts the streamer received
        ((S, B, L), same layout as the trace) and transformers' tokens_per_forward per row."""
        drafts: Tensor | None = None
        sequences: Tensor | None = None
    return Recorded


def _prompt_ids(lm, prompt) -> tuple[Tensor, Tensor | None]:
    """Prompt text(s) or chat messages → input_ids (B, P), left-padded with the pad id, and the attention
    mask (None when no row is padded)."""
    from ...decode import prompt_texts

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


def generate_recorded(lm, prompt, *, seed: int | None = 0, **settings):
    """Run DiffusionGemma's own `generate()` on `prompt` (text, a batch of texts, or chat messages) and record
    every denoising step as a labkit Trace (see the module docstring for what each record holds).

    settings: DiffusionGemmaGenerationConfig fields passed to generate() as they are (max_new_tokens,
    max_denoising_steps, sampler_config, t_min, t_max, stability_threshold, confidence_threshold, eos_token_id,
    ...); unset ones come from the checkpoint's generation_config.json, then transformers' defaults.
    seed: torch's global RNG is seeded for the call (generate() draws its noise from it) and restored after;
    None draws from it as it stands. Returns a `Recorded` Output: ids (= the last record's tokens = generate()'s
    sequences), texts, trace, stats, drafts, sequences."""
    from ...decode import _until_stop, check_seed
    from ...trace import Trace

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
    init, P, records, drafts = _records(recorder, noised)
    C = recorder.canvases[0].shape[1] if recorder.canvases else 0
    trace = Trace(prompt_len=P, mask_id=noised, init=init,
                  meta=dict(sampler="DiffusionGemma generate() (entropy-bound, uniform noise)", noise="uniform",
                            noised_id=noised, gen_length=init.shape[1] - P, block_length=C, seed=seed,
                            batch=init.shape[0], settings={k: repr(v) for k, v in settings.items()
                                                           if k != "attention_mask"}))
    for rec in records:
        trace.append(rec)
    final = trace.final.long()
    texts = [lm.decode(_until_stop(row[P:].tolist(), lm.stop_ids)) for row in final]
    gen_tokens = int((final[:, P:] != lm.pad_id).sum())
    row_nfe = int(trace.row_nfe().sum())
    stats = {"nfe": trace.nfe, "gen_tokens": gen_tokens, "row_nfe": row_nfe,
             "tpf": round(gen_tokens / max(1, row_nfe), 4), "seconds": round(seconds, 4),
             "tps": round(gen_tokens / max(seconds, 1e-9), 2)}
    if not isinstance(out, Tensor) and out.tokens_per_forward is not None:
        stats["tokens_per_forward"] = [round(float(t), 4) for t in out.tokens_per_forward]
    return _recorded_class()(ids=final, texts=texts, trace=trace, stats=stats, drafts=drafts, sequences=sequences)


from . import register  # noqa: E402  (registered once the class exists)

DIFFUSION_GEMMA = register(DiffusionGemma())

__all__ = ["DIFFUSION_GEMMA", "DiffusionGemma", "DraftRecorder", "generate_recorded"]
