"""The hook protocol of content controls and the loop's side of it: checked, set up before
step 0, and applied around the rule at every step (`controlled_step`)."""
from __future__ import annotations

from dataclasses import dataclass, replace

import torch
from torch.profiler import record_function

from ..models.handle import Denoiser


@dataclass(frozen=True)
class Canvas:
    """What a control knows about the run: the model (tokenizer), where the answer starts, how long
    it is."""
    lm: object
    prompt_len: int          # P: the answer occupies positions P .. P + gen_length - 1
    gen_length: int

    @property
    def end(self) -> int:
        return self.prompt_len + self.gen_length


def _encode(lm: Denoiser, text: str, what: str) -> list[int]:
    ids = lm.encode(text)
    if lm.decode(ids) != text:
        raise ValueError(f"{what} {text!r} does not survive the tokenizer's round trip "
                         f"(it decodes to {lm.decode(ids)!r}), so it cannot be kept byte-identical")
    return ids


def _stop_id(lm: Denoiser) -> int:
    if not lm.stop_ids:
        raise ValueError(f"model {lm.name!r} has no end-of-text token; Infill and ReNoise need one "
                         f"to end the answer after the template")
    return lm.stop_ids[0]


def _pin(x: torch.Tensor, frozen: torch.Tensor, start: int, ids: list[int], what: str) -> None:
    """Write ids at absolute positions start.. in every row and freeze them (in place)."""
    span = slice(start, start + len(ids))
    if frozen[:, span].any():
        taken = int(frozen[0, span].nonzero()[0]) + start
        raise ValueError(f"{what} overlaps another pinned position (answer offset {taken})")
    x[:, span] = torch.tensor(ids, dtype=x.dtype, device=x.device)
    frozen[:, span] = True


class Control:
    """Base of every control: each hook does nothing unless overridden."""

    def setup(self, x: torch.Tensor, frozen: torch.Tensor, canvas: Canvas) -> None:
        """Before step 0: write into x (B, L) and frozen (B, L) in place."""

    def place(self, logits: torch.Tensor, x: torch.Tensor, frozen: torch.Tensor, live: torch.Tensor,
              canvas: Canvas) -> None:
        """Before the rule: may write into masked positions of live rows and freeze them (in place)."""

    def bias(self, logits: torch.Tensor, x: torch.Tensor, frozen: torch.Tensor, canvas: Canvas) -> None:
        """Before the rule: add to logits (B, L, V) in place."""

    def fix(self, tokens: torch.Tensor, logits: torch.Tensor, x: torch.Tensor, canvas: Canvas) -> None:
        """After the rule: repair tokens (B, L) in place (x is the canvas before the step)."""


# --- fixed text -----------------------------------------------------------------------------------


def check(controls) -> tuple[Control, ...]:
    controls = tuple(controls or ())
    for c in controls:
        if not isinstance(c, Control):
            raise ValueError(f"controls must be labkit.controls objects (Pin, Infill, Keywords, Ban, "
                             f"ReNoise), got {c!r}")
    return controls


def setup(controls, x, frozen, canvas: Canvas) -> None:
    for c in controls:
        c.setup(x, frozen, canvas)


def apply(controls, logits, x, frozen, live, canvas: Canvas) -> tuple[torch.Tensor, torch.Tensor]:
    """Before the rule: placements (into a copy of x and frozen), then biases (in place on logits).
    Returns the new x and frozen."""
    x, frozen = x.clone(), frozen.clone()
    for c in controls:
        c.place(logits, x, frozen, live, canvas)
    for c in controls:
        c.bias(logits, x, frozen, canvas)
    stops = list(canvas.lm.stop_ids)
    if stops:          # no end of text before the last fixed answer position
        P, E = canvas.prompt_len, canvas.end
        fixed = frozen[:, P:E]
        last = torch.where(fixed.any(-1), fixed.shape[1] - 1 - fixed.flip(-1).int().argmax(-1), -1)   # (B,)
        before = torch.zeros_like(frozen)
        before[:, P:E] = torch.arange(E - P, device=x.device)[None, :] < last[:, None]
        before &= ~frozen
        logits[:, :, stops] = logits[:, :, stops].masked_fill(before[..., None], float("-inf"))
    return x, frozen


def fix(controls, tokens, logits, x, canvas: Canvas) -> torch.Tensor:
    tokens = tokens.clone()
    for c in controls:
        c.fix(tokens, logits, x, canvas)
    return tokens


def controlled_step(controls, rule, logits, state, live, generator, canvas: Canvas):
    """One step of `rule` with the controls around it, the one place the loop applies them:
    placements and biases before the rule, repairs after it, frozen positions restored. Placed
    tokens count as committed at this step; the record's `pinned` marks every fixed answer
    position. Returns (record, frozen after this step)."""
    with record_function("labkit.controls"):
        x, frozen = apply(controls, logits, state.x, state.frozen, live, canvas)
    with record_function("labkit.rule"):
        rec = rule.step(logits, replace(state, x=x, frozen=frozen), generator)
    with record_function("labkit.controls"):
        tokens = torch.where(frozen, x, fix(controls, rec.tokens, logits, x, canvas))
    placed = x != state.x
    answer = torch.arange(x.shape[1], device=x.device) >= canvas.prompt_len
    rec = replace(rec, tokens=tokens, committed=(rec.committed & (tokens != x)) | placed,
                  edited=rec.edited & (tokens != x), pinned=frozen & answer)
    return rec, frozen


__all__ = ["Canvas", "Control", "apply", "check", "controlled_step", "fix", "setup"]
