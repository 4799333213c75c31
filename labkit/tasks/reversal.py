"""Reversal: facts "A>B" between two made-up names, as in LLaDA's reversed-poem test.

A name is NAME letters. Every fact is trained in its forward layout, `RA>B` (A's partner is B).
The "two-way" facts are also trained in the reversed layout, `RB<A`, so that a model knows what
the `<` layout asks; the "one-way" facts never are, and they are the test:

- forward:           prompt `RA>`, answer B (recall of a trained fact);
- backward, infill:  the training layout with A masked, `R____>B` (only a masked model can be
                     asked this: its canvas is filled around text on both sides);
- backward, reversed surface order: prompt `RB<`, answer A (the form a left-to-right model can be
                     asked; the reversal curse predicts it fails).

Facts are trained whole (the loss covers the names on both sides), like text in pre-training, not
as prompt and answer. Names are drawn without repeats, so each B has exactly one A.
"""
from __future__ import annotations

import random
import string

NAME = 4
ONE_WAY = 300               # facts trained forward only: the held-out questions are about these
TWO_WAY = 200               # facts trained in both layouts


def names(rng: random.Random, n: int) -> list[str]:
    seen: set[str] = set()
    while len(seen) < n:
        seen.add("".join(rng.choice(string.ascii_lowercase) for _ in range(NAME)))
    out = sorted(seen)
    rng.shuffle(out)
    return out


def facts(seed: int) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(one_way, two_way): the fact pairs (A, B) of a task seed; 2 · (ONE_WAY + TWO_WAY) distinct names."""
    rng = random.Random(f"reversal-{seed}")
    pool = names(rng, 2 * (ONE_WAY + TWO_WAY))
    pairs = list(zip(pool[0::2], pool[1::2]))
    return pairs[:ONE_WAY], pairs[ONE_WAY:]


def forward(a: str, b: str) -> tuple[str, str]:
    return f"R{a}>", b


def backward(a: str, b: str) -> tuple[str, str]:
    return f"R{b}<", a


def infill_template(b: str) -> str:
    """The answer canvas of a backward infill query after the prompt "R": A's letters are gaps."""
    return f"___{{{NAME}}}>{b}"
