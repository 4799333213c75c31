"""Prompt formats: how a task model reads a question typed as plain text.

A task model (labkit.tasks) was trained on one layout, e.g. `S<36 cells>=<36 digits>`, but a person
types only the question: the 36 cells of a Sudoku, "12345+67890", "abcd>". A `PromptFormat` says
how such text becomes what the model reads: the prompt, and an answer canvas of `answer` masks
after it; or, with `blanks`, the question itself laid on the canvas ("in place"): its blank
characters become masks and every other character is fixed (a Sudoku's clues stay in their cells).

Formats are data, kept in the model's config.json ("prompt_formats") when it is trained; the
decoding loop applies them (`fit`), so `generate(lm, "..3.1.....")` needs no other setting.

    PromptFormat(r"S?([1-6.]{36})=?", "S", 36, blanks=".")   # the masked Sudoku model: the grid in place
    PromptFormat(r"A?(\\d{5}\\+\\d{5})=?", "A{}=", 6)          # addition: the sum after "A12345+67890="
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class PromptFormat:
    pattern: str        # the question: a regex matched against the whole text; group 1 is its body
    prompt: str         # what the model reads before the canvas; "{}" stands for the body
    answer: int         # the canvas: answer tokens
    blanks: str = ""    # "" = a canvas of masks; else the body is the canvas, these characters masks
    reads: str = ""     # "" = the canvas is the answer; "steps" = (cell, digit) steps laid into the
                        # question's grid (labkit.tasks.solver.read_steps) before it is scored

    def __post_init__(self):
        if re.compile(self.pattern).groups < 1:
            raise ValueError(f"PromptFormat pattern must have a group (the question's body), got {self.pattern!r}")
        if not isinstance(self.answer, int) or self.answer < 1:
            raise ValueError(f"PromptFormat answer must be a token count >= 1, got {self.answer!r}")
        if self.reads not in ("", "steps"):
            raise ValueError(f"PromptFormat reads must be '' or 'steps', got {self.reads!r}")

    def match(self, text: str) -> tuple[str, str | None] | None:
        """(prompt, in-place canvas text or None) for `text`, or None when it is not this question."""
        m = re.fullmatch(self.pattern, text.strip())
        if m is None:
            return None
        body = m.group(1)
        if self.blanks and len(body) != self.answer:
            raise ValueError(f"an in-place question must be {self.answer} characters, got {len(body)}: {body!r}")
        return self.prompt.replace("{}", body), (body if self.blanks else None)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Fitted:
    """Prompts fitted to a task model's formats: what the loop lays out instead of the raw text."""
    prompts: list[str]                   # what the model reads, one per row
    canvases: list[list[str | None]] | None   # in place: per row, the canvas's characters (None = a mask)
    answer: int                          # canvas tokens (every row's)


def formats_of(lm) -> tuple[PromptFormat, ...]:
    """The prompt formats a model was trained with (none for a model without them)."""
    return tuple(getattr(lm, "formats", None) or ())


def fit(lm, texts: list[str]) -> Fitted | None:
    """`texts` read through the model's formats (the first that matches each), or None when the
    model has none or no text is a question of its. A batch mixing questions and other text, or
    questions with answers of different lengths, is refused (one canvas shape per batch)."""
    formats = formats_of(lm)
    if not formats:
        return None
    found = [next(((f, m) for f in formats if (m := f.match(t)) is not None), None) for t in texts]
    if all(x is None for x in found):
        return None
    if any(x is None for x in found):
        bad = texts[found.index(None)]
        raise ValueError(f"prompt {bad!r} is not a question model {lm.name!r} reads, while others in the "
                         f"batch are; its formats: {', '.join(f.pattern for f in formats)}")
    lengths = {f.answer for f, _ in found}
    if len(lengths) > 1:
        raise ValueError(f"a batch's questions must have answers of one length, got {sorted(lengths)}")
    in_place = [f.blanks for f, _ in found]
    canvases = None
    if any(in_place):
        if not all(in_place):
            raise ValueError("a batch cannot mix in-place questions with prompt-then-answer ones")
        canvases = [[None if ch in f.blanks else ch for ch in canvas] for f, (_, canvas) in found]
    return Fitted([p for _, (p, _) in found], canvases, lengths.pop())


def fit_knobs(answer: int, block_length: int, steps: int) -> tuple[int, int, int]:
    """(gen_length, block_length, steps) for a fitted question: the canvas is the answer; the block
    is the whole answer unless a smaller block_length divides it (block_length 1: left to right);
    at most one step per answer token, and a whole number of steps per block."""
    block = block_length if 0 < block_length < answer and answer % block_length == 0 else answer
    blocks = answer // block
    return answer, block, max(blocks, min(steps, answer) // blocks * blocks)


__all__ = ["Fitted", "PromptFormat", "fit", "fit_knobs", "formats_of"]
