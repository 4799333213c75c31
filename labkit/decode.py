"""The mask loop, labkit's main decoding loop. `stream()` yields one StepRecord per forward pass;
`generate()` collects the stream into an Output (labkit.output) and hands a model whose canvas
starts from uniform noise to the recorder (labkit.recorded). Blocks, classifier-free guidance and
batching live here; what to commit at each step is the sampler rule's business."""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Callable, Iterator

import torch
from torch.profiler import record_function

from . import controls as ctl
from .accel import Accel, check_accel
from .models import formats
from .models.handle import Denoiser, model_block
from .output import Output, answer_texts, check_seed, check_stop, collect, find_stop, stopped_rows
from .prompts import chat_text, prompt_texts  # noqa: F401  (chat_text: still importable from here, its old home)
from .samplers.base import DecodeState, Sampler, StepRecord
from .samplers.knobs import BLOCK_LENGTH, CFG_SCALE, GEN_LENGTH, PENALTY_LAMBDA, STEPS, KnobError
from .samplers.low_confidence import LowConfidence
from .samplers.registry import default_rule, resolve
from .trace import Trace


def default_sampler(lm: Denoiser):
    """The rule object a model gets when none is asked for (`registry.default_rule`)."""
    return resolve(default_rule(lm))


DEFAULT_BLOCK = 32         # the decoding block when none is given and the model has no block size of its own


def block_for(lm: Denoiser) -> int:
    """The decoding block when none is given: a block-diffusion model decodes in its own blocks (in
    longer ones its later model blocks would be written from noisy earlier ones, which its training
    never shows it: notebook 13, section 5); any other model in DEFAULT_BLOCK."""
    return model_block(lm) or DEFAULT_BLOCK


def check_knobs(sampler, *, gen_length: int, block_length: int, steps: int, cfg_scale: float = 0.0,
                penalty_lambda: float = 0.0) -> int:
    """The canvas and loop knobs (samplers.knobs.LOOP), checked without a model (the CLI checks
    them before it loads one); a KnobError names the knob. Returns the number of blocks."""
    for knob, value in ((PENALTY_LAMBDA, penalty_lambda), (GEN_LENGTH, gen_length), (BLOCK_LENGTH, block_length),
                        (STEPS, steps), (CFG_SCALE, cfg_scale)):
        if knob.kind is int and not isinstance(value, int):
            raise KnobError(knob.name, f"{knob.name} must be {knob.allowed()}, got {value!r}")
        knob.check(value)
    if gen_length % block_length:
        raise KnobError("block_length", f"gen_length ({gen_length}) must be a multiple of block_length ({block_length})")
    num_blocks = gen_length // block_length
    budgeted = sampler.uses_step_budget                     # threshold / editing / AR rules are not
    if budgeted and steps % num_blocks:
        raise KnobError("steps", f"steps ({steps}) must be divisible by the number of blocks "
                                 f"gen_length / block_length = {num_blocks}")
    if budgeted and steps > gen_length:
        raise KnobError("steps", f"steps ({steps}) must be at most gen_length ({gen_length}): "
                                 f"each step commits at least one token")
    return num_blocks


def _check(lm: Denoiser, sampler, prompts, gen_length, block_length, steps, cfg_scale, penalty_lambda):
    causal = lm.kind == "causal"
    if causal and not sampler.decodes_causal:
        raise ValueError(f"model {lm.name!r} is causal (kind='causal'): it can only be decoded left "
                         f"to right, with sampler=Autoregressive(); {type(sampler).__name__} needs "
                         f"a masked diffusion model")
    if lm.family is not None and lm.family.noise == "uniform":
        raise ValueError(f"model {lm.name!r} ({lm.family.name}) starts from uniform random tokens, not masks: the mask "
                         f"loop cannot stream it; lk.generate runs its own generate(), recorded "
                         f"(labkit.recorded.generate_recorded)")
    if not causal and (lm.mask_id is None or lm.mask_id < 0):
        raise ValueError(f"model {lm.name!r} has no mask token; diffusion decoding needs one")
    if causal and cfg_scale:
        raise ValueError("cfg_scale must be 0 for a causal model (guidance masks the prompt)")
    prompts = prompt_texts(lm, prompts)
    num_blocks = check_knobs(sampler, gen_length=gen_length, block_length=block_length, steps=steps,
                             cfg_scale=cfg_scale, penalty_lambda=penalty_lambda)
    b = model_block(lm)
    if b and block_length % b:
        raise KnobError("block_length", f"block_length must be a multiple of model {lm.name!r}'s block size "
                                        f"({b}: a decoding block is whole model blocks), got {block_length}")
    encoded = [lm.encode(p) for p in prompts]
    P = padded_length(lm, max(map(len, encoded)))
    if lm.max_length is not None and P + gen_length > lm.max_length:
        raise ValueError(f"prompt ({P} tokens) + gen_length ({gen_length}) exceeds the model's "
                         f"context of {lm.max_length} tokens: shorten the prompt or gen_length")
    return encoded, num_blocks, P


def padded_length(lm: Denoiser, longest: int) -> int:
    """P, the canvas's first position: the longest prompt, rounded up to the model's block size for a
    block-diffusion model (more left padding), so that every decoding block is whole model blocks."""
    b = model_block(lm)
    return -(-longest // b) * b if b else longest


def _model_fn(lm: Denoiser, attention_mask, prompt_pos, cfg_scale, penalty_lambda=0.0, writers: bool = False
              ) -> Callable[[torch.Tensor], torch.Tensor]:
    """x (B, L) → logits (B, L, V) in the model's dtype, with classifier-free guidance when cfg_scale > 0: the
    unconditional pass sees the prompt positions masked, in one batch of 2B with the conditional.
    Works with or without an attention mask (LLaDA's generate.py crashes without one).
    A causal model runs only on the decided prefix and its logits are shifted right by one, so
    logits[:, i] is always the prediction for position i (into one buffer for the run, refreshed from
    the wrapper's `fresh_from` on: a KV cache's first recomputed position). `penalty_lambda` (SGLang's anti-stutter
    knob) subtracts λ from each position's logit of the token written just before it.
    A KV cache that hands out its own logits buffer (`shares_logits`) is copied first when
    something adds into the logits (`writers`: penalty_lambda, controls)."""
    copy = writers and getattr(lm, "shares_logits", False)
    shifted: list[torch.Tensor] = []        # the causal path's logits buffer, kept from call to call

    def causal_forward(x):
        B, L = x.shape
        undecided = x == lm.mask_id
        upto = int(torch.where(undecided.any(-1), undecided.int().argmax(-1), L).max())  # longest prefix
        inp = x[:, :upto].masked_fill(undecided[:, :upto], lm.pad_id)
        am = None if attention_mask is None else attention_mask[:, :upto]
        out = lm(inp, am)                                                  # (B, upto, V)
        n = min(upto, L - 1)
        kept = not writers and shifted and shifted[0].shape == (B, L, out.shape[-1]) and shifted[0].dtype == out.dtype
        if not kept:
            shifted[:] = [out.new_zeros(B, L, out.shape[-1])]
        lo = min(getattr(lm, "fresh_from", 0), n) if kept else 0     # a KV cache recomputed from fresh_from on
        logits = shifted[0]
        logits[:, lo + 1:n + 1] = out[:, lo:n]
        return logits

    def forward(x):
        if lm.kind == "causal":
            logits = causal_forward(x)
        elif cfg_scale == 0:
            logits = lm(x, attention_mask)
            logits = logits.clone() if copy else logits
        else:
            un_x = x.masked_fill(prompt_pos, lm.mask_id)
            am = None if attention_mask is None else torch.cat([attention_mask, attention_mask])
            cond, un = lm(torch.cat([x, un_x]), am).chunk(2)
            logits = un + (cfg_scale + 1) * (cond - un)
        # committing a mask would commit nothing (a trained denoiser gives it ~0 anyway; this
        # keeps random and hub models honest). Rules slice the block and cast to float32.
        if lm.mask_id is not None and lm.mask_id >= 0:
            logits[..., lm.mask_id] = float("-inf")
        if penalty_lambda:
            prev = x[:, :-1]                                                # (B, L-1)
            hit = (prev != lm.mask_id).to(logits.dtype) * -penalty_lambda
            logits[:, 1:].scatter_add_(-1, prev.clamp_min(0)[..., None], hit[..., None])
        return logits
    return forward


@dataclass
class _Run:
    """One run's canvas and loop state: built by _prepare, advanced step by step by _records."""
    lm: Denoiser
    sampler: Sampler
    controls: tuple
    canvas: ctl.Canvas
    model: Callable[[torch.Tensor], torch.Tensor]     # x (B, L) → logits (B, L, V)
    x: torch.Tensor                  # (B, L) long: padding + prompt + canvas
    frozen: torch.Tensor             # (B, L) bool: prompt, padding, pinned: never touched by a rule
    prompt_len: int                  # P: the canvas starts here
    num_blocks: int
    block_length: int
    steps_per_block: int
    eos_early_stop: bool
    generator: torch.Generator
    done: torch.Tensor               # (B,) bool: rows stopped at an EOS for good
    stop_seqs: tuple = ()            # (m,) long tensors: token sequences that end an answer (`stop`)
    accel: Accel = Accel()
    global_step: int = 0

    @property
    def steps_known(self) -> bool:
        """Every row takes every step of every block, so the loop need not read the device to
        know when a block ends: LLaDA's fixed-count rule with no controls and no EOS early stop
        (each block starts with block_length >= steps_per_block masks and ceil(m / r) commits
        leave at least one mask until the last step)."""
        return (self.accel.sync == "block" and type(self.sampler) is LowConfidence and not self.controls
                and not self.eos_early_stop and not self.stop_seqs)


def _prepare(lm: Denoiser, prompt, sampler: Sampler, *, gen_length: int, block_length: int, steps: int,
             cfg_scale: float, eos_early_stop: bool, penalty_lambda: float, generator, seed, controls,
             accel: Accel | None = None, canvases=None, stop=()) -> _Run:
    """Check every knob, then lay out the canvas: prompts left-padded to P tokens (a multiple of a
    block model's block size: `padded_length`), gen_length
    masks after them, an in-place question's fixed characters (`canvases`, formats.fit) and
    controls' fixed text written and frozen."""
    encoded, num_blocks, P = _check(lm, sampler, prompt, gen_length, block_length, steps, cfg_scale, penalty_lambda)
    stop_seqs = tuple(torch.tensor(lm.encode(text), dtype=torch.long, device=lm.device) for text in check_stop(stop))
    generator = _generator(lm, generator, seed)
    B = len(encoded)
    x = torch.full((B, P + gen_length), lm.mask_id, dtype=torch.long)
    attention = torch.ones_like(x)
    for b, ids in enumerate(encoded):                   # left padding
        x[b, :P - len(ids)] = lm.pad_id
        x[b, P - len(ids):P] = torch.tensor(ids, dtype=torch.long)
        attention[b, :P - len(ids)] = 0
    x, attention = x.to(lm.device), attention.to(lm.device)
    frozen = torch.zeros_like(x, dtype=torch.bool)
    frozen[:, :P] = True                                # prompt and padding are never touched
    for b, canvas in enumerate(canvases or ()):         # in place: a question's given characters
        for i, ch in enumerate(canvas):
            if ch is not None:
                x[b, P + i] = _one_token(lm, ch)
                frozen[b, P + i] = True
    canvas = ctl.Canvas(lm=lm, prompt_len=P, gen_length=gen_length)
    ctl.setup(controls, x, frozen, canvas)              # pins, templates, re-noised text
    attention_mask = attention if (attention == 0).any() else None
    model = _model_fn(lm, attention_mask, frozen & attention.bool(), cfg_scale, penalty_lambda,
                      writers=bool(penalty_lambda or controls))
    return _Run(lm=lm, sampler=sampler, controls=controls, canvas=canvas, model=model, x=x, frozen=frozen,
                prompt_len=P, num_blocks=num_blocks, block_length=block_length,
                steps_per_block=steps // num_blocks, eos_early_stop=eos_early_stop, generator=generator,
                done=torch.zeros(B, dtype=torch.bool, device=x.device), accel=check_accel(accel), stop_seqs=stop_seqs)


def _one_token(lm: Denoiser, ch: str) -> int:
    ids = lm.encode(ch)
    if len(ids) != 1:
        raise ValueError(f"an in-place question's character {ch!r} must be one token of model {lm.name!r}")
    return ids[0]


def fit_question(lm: Denoiser, prompt, knobs: dict) -> tuple[object, list | None, dict]:
    """A task model's question (formats.fit) → (prompts, in-place canvases or None, knobs with
    gen_length, block_length and steps fitted to its answer); anything else passes unchanged."""
    fitted = formats.fit(lm, prompt_texts(lm, prompt)) if formats.formats_of(lm) else None
    if fitted is None:
        return prompt, None, knobs
    gen_length, block_length, steps = formats.fit_knobs(fitted.answer, knobs["block_length"], knobs["steps"])
    return fitted.prompts, fitted.canvases, {**knobs, "gen_length": gen_length, "block_length": block_length,
                                             "steps": steps}


def _generator(lm: Denoiser, generator: torch.Generator | None, seed) -> torch.Generator:
    check_seed(seed)
    if generator is None:
        return torch.Generator(device=lm.device).manual_seed(0 if seed is None else int(seed))
    if seed is not None:
        raise ValueError("pass either seed or generator, not both")
    if generator.device.type != lm.device.type:
        raise ValueError(f"generator is on {generator.device.type} but the model is on {lm.device.type}: "
                         f"create it with torch.Generator(device={str(lm.device)!r})")
    return generator


def _records(run: _Run, trace: Trace | None) -> Iterator[StepRecord]:
    """Every block of the run in turn, one StepRecord per forward pass."""
    for block in range(run.num_blocks):
        if run.done.all():
            return
        for rec in _block(run, block):
            if trace is not None:
                with record_function("labkit.record"):
                    trace.append(rec, to_host=run.accel.trace == "host")
            yield rec


def _block(run: _Run, block: int) -> Iterator[StepRecord]:
    """The steps of one block. LLaDA's rule spends exactly its step budget; threshold rules run
    until the block is full (each step commits at least one token per unfinished row), as in
    Fast-dLLM; editing rules then take up to max_post_steps more (SGLang's bound)."""
    lm, sampler, B = run.lm, run.sampler, run.x.shape[0]
    s = run.prompt_len + block * run.block_length
    e = s + run.block_length
    if lm.begin_block is not None:                      # a KV-cache wrapper refreshes here
        lm.begin_block(s, e)
    max_post = sampler.max_post_steps
    budget = run.steps_per_block if sampler.uses_step_budget else run.block_length + max_post
    post = torch.zeros(B, dtype=torch.long, device=run.x.device)      # post steps taken per row
    converged = torch.zeros(B, dtype=torch.bool, device=run.x.device)
    stop_ids = torch.tensor(lm.stop_ids, dtype=torch.long, device=run.x.device)
    if not run.eos_early_stop:
        stop_ids = stop_ids[:0]
    watch_eos = stop_ids.numel() > 0 or bool(run.stop_seqs)
    editable = (~run.frozen[:, s:e]).any(-1)                             # (B,) a fully pinned block is skipped
    for step in range(budget):
        state = DecodeState(x=run.x, frozen=run.frozen, block_start=s, block_end=e, block=block, step=step,
                            steps=budget, global_step=run.global_step, mask_id=lm.mask_id, stop_ids=lm.stop_ids)
        if run.steps_known:                                              # every row live: nothing to read
            live = full = None
        else:
            full = ~state.masked.any(-1)                                 # (B,)
            if run.controls:                                             # controls may pin more as they go
                editable = (~run.frozen[:, s:e]).any(-1)
            open_ = ~full | ((post < max_post) & ~converged) if max_post else ~full
            live = ~run.done & editable & open_
            if not live.any():                                           # the stop test: one bit
                break
        rec = _step(run, state, live)
        if live is not None and max_post:                                # post steps: only editing rules take them
            changed = (rec.committed | rec.edited).any(-1)
            post += (live & full).long()
            converged |= live & full & ~changed
        run.x = rec.tokens
        if watch_eos and not max_post:
            run.done |= stopped_rows(run.x, run.prompt_len, stop_ids, lm.mask_id, run.stop_seqs)
        run.global_step += 1
        yield rec
    if watch_eos and max_post:                          # editing rules: checked when the block is done
        run.done |= stopped_rows(run.x, run.prompt_len, stop_ids, lm.mask_id, run.stop_seqs)


def _step(run: _Run, state: DecodeState, live: torch.Tensor) -> StepRecord:
    """One forward pass and the rule (with the controls around it, if any); rows not `live`
    are left as they were. The record is timed and says which rows took part."""
    t0 = time.perf_counter()
    with record_function("labkit.forward"):
        logits = run.model(state.x)
    if run.controls:
        rec, run.frozen = ctl.controlled_step(run.controls, run.sampler, logits, state, live, run.generator,
                                              run.canvas)
    else:
        with record_function("labkit.rule"):
            rec = run.sampler.step(logits, state, run.generator)
    rec = _only_rows(rec, live, state.x, check=run.accel.sync == "step")
    if run.accel.sync == "block":                         # no wait for the device: the run is timed
        return replace(rec, active=live)
    if state.x.device.type == "cuda":
        torch.cuda.synchronize(state.x.device)
    return replace(rec, seconds=time.perf_counter() - t0, active=live)


def stream(lm: Denoiser, prompt, sampler=None, *, gen_length: int = 64, block_length: int | None = None,
           steps: int = 64, cfg_scale: float = 0.0, eos_early_stop: bool = False,
           penalty_lambda: float = 0.0, generator: torch.Generator | None = None,
           seed: int | None = None, controls=(), accel: Accel | None = None, stop=()) -> Iterator[StepRecord]:
    """Yield one StepRecord per forward pass: the mask loop (the continuous sampler and the
    DiffusionGemma recorder are the other loops, in continuous.py and recorded.py).

    prompt: a string or a list of strings (a batch, left-padded with an attention mask).
    sampler: a rule object (lk.Threshold(), ...) or a rule name ("speed", "threshold", ...;
    labkit.samplers.registry.NAMES); None is LLaDA's rule (left to right for a causal model).
    The canvas is gen_length masks after the prompt, decoded in gen_length / block_length
    semi-autoregressive blocks of steps / num_blocks steps each (block_length None: the model's own
    block size for a block-diffusion model, else DEFAULT_BLOCK; `block_for`). Every knob is checked when
    stream() is called, before the first step. A task model's question (a Sudoku's 36 cells,
    "12345+67890": labkit.models.formats) is read in its trained layout, the canvas fitted to its
    answer (gen_length = the answer, one block unless a smaller block_length divides it, at most
    one step per token); a Sudoku's clues are fixed in their cells.

    Rows finish independently: a row whose block is done (no masks left and, for editing rules,
    converged or out of post steps) is left untouched while the others go on, and with
    `eos_early_stop` a row stops for good once it has written an EOS / end-of-turn token with
    everything before it decided (checked every step; for editing rules when the block is done,
    as LLaDA2.1 does). A row's result never depends on what else is in the batch.

    `controls`: labkit.controls hooks (Pin, Infill, Keywords, Ban, ReNoise) in any combination;
    positions they fix are frozen, and records then carry `pinned` (fixed answer positions).

    `accel`: an lk.Accel (how often the loop reads the device; labkit.accel). Never changes
    what is written.

    `stop`: strings that end an answer (OpenAI's `stop`): a row stops for good once one of them is
    written in full, as its tokens, with everything before it decided (no `eos_early_stop`
    needed); texts are cut before it. With a block model the answer's length is then not fixed in
    advance: the canvas is a maximum, and blocks after the stop are never decoded."""
    sampler = resolve(sampler) or default_sampler(lm)
    knobs = dict(gen_length=gen_length, block_length=block_for(lm) if block_length is None else block_length, steps=steps,
                 cfg_scale=cfg_scale, eos_early_stop=eos_early_stop, penalty_lambda=penalty_lambda)
    prompt, canvases, knobs = fit_question(lm, prompt, knobs)
    run = _prepare(lm, prompt, sampler, generator=generator, seed=seed, controls=ctl.check(controls),
                   accel=check_accel(accel), canvases=canvases, stop=stop, **knobs)
    return _records(run, None)


def _only_rows(rec: StepRecord, live: torch.Tensor | None, x: torch.Tensor, check: bool = True) -> StepRecord:
    """The record with every row that is not live left as it was (nothing committed or edited).
    live None: every row is. `check`: skip the work when all rows are live (reads the device)."""
    if live is None or (check and live.all()):
        return rec
    keep = ~live[:, None]                                                # (B, 1)
    return replace(rec, tokens=torch.where(keep, x, rec.tokens), candidates=torch.where(keep, x, rec.candidates),
                   confidence=rec.confidence.masked_fill(keep, float("nan")),
                   committed=rec.committed & ~keep, edited=rec.edited & ~keep)


def generate(lm: Denoiser, prompt, sampler=None, *, on_step: Callable[[StepRecord], None] | None = None,
             gen_length: int = 64, block_length: int | None = None, steps: int = 64, cfg_scale: float = 0.0,
             eos_early_stop: bool = False, penalty_lambda: float = 0.0,
             generator: torch.Generator | None = None, seed: int | None = None, controls=(),
             on_start: Callable[[Trace], None] | None = None, accel: Accel | None = None, stop=()) -> Output:
    """stream() collected into an Output(ids, texts, trace, stats). Texts end at the first EOS.
    `on_start(trace)` is called with the run's trace before the first step, and `on_step(rec)`
    after each step once the trace holds it (the lab panel draws the trace as it fills); an
    exception raised by either stops the run there.
    stats: nfe (forward passes of the batch), gen_tokens (decided answer tokens, all rows, less
    the characters an in-place question fixed: a Sudoku's clues are not written by the model),
    row_nfe (forward passes summed over rows: each row counts the steps it took part in),
    tpf (gen_tokens / row_nfe: tokens per forward pass as each row saw it), seconds,
    tps (tokens per second, all rows). `accel`: as in stream().
    A model whose canvas starts from uniform noise (DiffusionGemma) has no mask to fill: it runs
    its own generate(), recorded step by step (labkit.recorded.generate_uniform)."""
    block_length = block_for(lm) if block_length is None else block_length
    if getattr(lm.family, "noise", None) == "uniform":
        if stop:
            raise ValueError("stop: a model whose canvas starts from uniform noise runs its own generate(), "
                             "which has no stop strings")
        from .recorded import generate_uniform  # the published families and transformers: DiffusionGemma only
        return generate_uniform(lm, prompt, sampler, on_step=on_step, on_start=on_start, gen_length=gen_length,
                                block_length=block_length, steps=steps, cfg_scale=cfg_scale,
                                eos_early_stop=eos_early_stop, penalty_lambda=penalty_lambda, generator=generator,
                                seed=seed, controls=controls, accel=accel)
    sampler = resolve(sampler) or default_sampler(lm)
    controls = ctl.check(controls)
    accel = check_accel(accel)
    stop = check_stop(stop)
    knobs = dict(gen_length=gen_length, block_length=block_length, steps=steps, cfg_scale=cfg_scale,
                 eos_early_stop=eos_early_stop, penalty_lambda=penalty_lambda)
    t0 = time.perf_counter()
    prompt, canvases, knobs = fit_question(lm, prompt, knobs)
    run = _prepare(lm, prompt, sampler, generator=generator, seed=seed, controls=controls, accel=accel,
                   canvases=canvases, stop=stop, **knobs)
    trace = Trace(prompt_len=run.prompt_len, mask_id=lm.mask_id, init=run.x.cpu())
    trace.meta.update(sampler=repr(sampler), **knobs, seed=seed, batch=run.x.shape[0],
                      controls=[repr(c) for c in controls], **({"stop": list(stop)} if stop else {}))
    if on_start is not None:
        on_start(trace)
    for rec in _records(run, trace):
        if on_step is not None:
            on_step(rec)
    trace.to_host()                                 # records kept on the device (accel.trace) come over
    seconds = time.perf_counter() - t0
    final, P = trace.final, trace.prompt_len
    given = sum(ch is not None for canvas in canvases or () for ch in canvas)   # an in-place question's own
    gen_tokens = int((final[:, P:] != lm.mask_id).sum()) - given
    texts = [t[:find_stop(t, stop)] for t in answer_texts(lm, final, P)]     # find_stop: None keeps it whole
    return collect(trace, texts, seconds=seconds, gen_tokens=gen_tokens)
