"""Controls over spans of the answer: fixed text (Pin), templates with gaps (Infill), and
re-noising part of an existing text (ReNoise)."""
from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from ..models.handle import Denoiser
from .base import Control, _encode, _pin, _stop_id

GAP = re.compile(r"_{3,}(?:\{(\d+)\})?")      # "___" or "___{n}"


@dataclass(frozen=True)
class Pin(Control):
    """Fixed `text` at answer offset `position` (in tokens), the same in every row."""
    position: int
    text: str

    def __post_init__(self):
        if not isinstance(self.position, int) or isinstance(self.position, bool) or self.position < 0:
            raise ValueError(f"Pin position must be an integer >= 0, got {self.position!r}")
        if not isinstance(self.text, str) or not self.text:
            raise ValueError(f"Pin text must be non-empty, got {self.text!r}")

    def setup(self, x, frozen, canvas):
        ids = canvas.lm.encode(self.text)
        if self.position + len(ids) > canvas.gen_length:
            raise ValueError(f"Pin at {self.position} of {self.text!r} ({len(ids)} tokens) reaches past "
                             f"gen_length {canvas.gen_length}: positions must be in 0..{canvas.gen_length - len(ids)}")
        _pin(x, frozen, canvas.prompt_len + self.position, ids, f"Pin {self.text!r} at {self.position}")


def parse_template(template: str, gap_tokens: int = 4) -> list[str | int]:
    """"To be, or ___ to be" → ["To be, or ", 4, " to be"]: text parts and gap lengths (tokens)."""
    if not isinstance(template, str):
        raise ValueError(f"Infill template must be a string, got {template!r}")
    parts: list[str | int] = []
    pos = 0
    for m in GAP.finditer(template):
        if m.start() > pos:
            parts.append(template[pos:m.start()])
        n = int(m.group(1)) if m.group(1) else gap_tokens
        if n < 1:
            raise ValueError(f"a gap must be at least 1 token, got ___{{{n}}} in {template!r}")
        parts.append(n)
        pos = m.end()
    if pos < len(template):
        parts.append(template[pos:])
    if not any(isinstance(p, int) for p in parts):
        raise ValueError(f"Infill template {template!r} has no gap: mark each gap with ___ "
                         f"(or ___{{n}} for n tokens)")
    return parts


@dataclass(frozen=True)
class Infill(Control):
    """The answer is `template` with its gaps (___, or ___{n} for n tokens) filled by the model;
    the template's text is kept byte-identical and the answer ends after it."""
    template: str
    gap_tokens: int = 4              # length of a gap written as plain ___

    def __post_init__(self):
        if not isinstance(self.gap_tokens, int) or self.gap_tokens < 1:
            raise ValueError(f"gap_tokens must be an integer >= 1, got {self.gap_tokens!r}")
        parse_template(self.template, self.gap_tokens)

    def layout(self, lm: Denoiser) -> list[int | None]:
        """Answer token ids, None at gap positions."""
        out: list[int | None] = []
        for part in parse_template(self.template, self.gap_tokens):
            out += [None] * part if isinstance(part, int) else _encode(lm, part, "template text")
        return out

    def setup(self, x, frozen, canvas):
        layout = self.layout(canvas.lm)
        if len(layout) > canvas.gen_length:
            raise ValueError(f"Infill template needs {len(layout)} tokens but gen_length is "
                             f"{canvas.gen_length}: pass gen_length >= {len(layout)}")
        ids = [t if t is not None else canvas.lm.mask_id for t in layout]
        ids += [_stop_id(canvas.lm)] * (canvas.gen_length - len(ids))
        span = slice(canvas.prompt_len, canvas.end)
        keep = torch.tensor([i != canvas.lm.mask_id for i in ids], device=x.device)
        if (frozen[:, span] & keep).any():
            raise ValueError("Infill overlaps another pinned position; Infill fixes the whole answer")
        x[:, span] = torch.where(keep, torch.tensor(ids, device=x.device), x[:, span])
        frozen[:, span] |= keep


@dataclass(frozen=True)
class ReNoise(Control):
    """Rewrite part of `text`: its tokens fill the answer, the chosen ones are masked again and
    denoised, the rest is kept byte-identical. Choose either `spans` (character ranges (start, end)
    of `text`, or substrings of it; every token touching one is re-masked) or `ratio` (that share of
    the tokens, drawn with `seed`)."""
    text: str
    spans: tuple = ()
    ratio: float | None = None
    seed: int = 0

    def __post_init__(self):
        if not isinstance(self.text, str) or not self.text:
            raise ValueError(f"ReNoise text must be non-empty, got {self.text!r}")
        if bool(self.spans) == (self.ratio is not None):
            raise ValueError("ReNoise needs exactly one of spans=[(start, end) or 'substring', ...] and ratio")
        if self.ratio is not None and not 0 < self.ratio <= 1:
            raise ValueError(f"ReNoise ratio must be in (0, 1], got {self.ratio!r}")
        for s in self.char_spans():
            if not (isinstance(s[0], int) and isinstance(s[1], int) and 0 <= s[0] < s[1] <= len(self.text)):
                raise ValueError(f"ReNoise span {s!r} must satisfy 0 <= start < end <= len(text) = {len(self.text)}")

    def char_spans(self) -> list[tuple[int, int]]:
        out = []
        for s in self.spans:
            if isinstance(s, str):
                at = self.text.find(s)
                if not s or at < 0:
                    raise ValueError(f"ReNoise span {s!r} does not occur in the text")
                out.append((at, at + len(s)))
            else:
                out.append(tuple(s))
        return out

    def noised(self, lm: Denoiser) -> tuple[list[int], list[bool]]:
        """The text's token ids and, per token, whether it is re-masked."""
        ids = _encode(lm, self.text, "ReNoise text")
        if self.ratio is not None:
            g = torch.Generator().manual_seed(self.seed)
            k = max(1, round(self.ratio * len(ids)))
            chosen = set(torch.randperm(len(ids), generator=g)[:k].tolist())
            return ids, [i in chosen for i in range(len(ids))]
        ends = [len(lm.decode(ids[:i + 1])) for i in range(len(ids))]          # char end per token
        starts = [0] + ends[:-1]
        spans = self.char_spans()
        return ids, [any(a < e and s < b for s, e in spans) for a, b in zip(starts, ends)]

    def kept_text(self, lm: Denoiser) -> list[str]:
        """The runs of text that must come back unchanged, in order."""
        return [piece for piece, kept in self._runs(lm) if kept]

    def _runs(self, lm: Denoiser) -> list[tuple[str, bool]]:
        ids, noise = self.noised(lm)
        runs: list[tuple[list[int], bool]] = []
        for t, n in zip(ids, noise):
            if runs and runs[-1][1] == (not n):
                runs[-1][0].append(t)
            else:
                runs.append(([t], not n))
        return [(lm.decode(r), kept) for r, kept in runs]

    def pattern(self, lm: Denoiser) -> re.Pattern:
        """A result keeps the text iff it fullmatches this: kept runs verbatim, re-noised ones free."""
        return re.compile("".join(re.escape(p) if kept else ".*?" for p, kept in self._runs(lm)), re.S)

    def setup(self, x, frozen, canvas):
        ids, noise = self.noised(canvas.lm)
        if len(ids) > canvas.gen_length:
            raise ValueError(f"ReNoise text is {len(ids)} tokens but gen_length is {canvas.gen_length}: "
                             f"pass gen_length >= {len(ids)}")
        span = slice(canvas.prompt_len, canvas.end)
        if frozen[:, span].any():
            raise ValueError("ReNoise overlaps another pinned position; ReNoise fixes the whole answer")
        full = ids + [_stop_id(canvas.lm)] * (canvas.gen_length - len(ids))
        keep = torch.tensor([not n for n in noise] + [True] * (canvas.gen_length - len(ids)), device=x.device)
        x[:, span] = torch.where(keep, torch.tensor(full, device=x.device), x[:, span])
        frozen[:, span] |= keep


# --- words ------------------------------------------------------------------------------------------
