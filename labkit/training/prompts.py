"""Prompt sets cut from the plays, each in the form the notebooks prompt with ("SPEAKER:\\nfirst line\\n"):

- `sample_prompts`: held-out openings spread evenly over the held-out plays (evaluation, benchmarks);
- `train_prompts`: training-play openings in a seeded random order (the distillation teacher's prompts);
- `long_prompts`: runs of consecutive held-out speeches, long prefixes (the cache benchmark);
- `heldout_lines`: a held-out opening and the line of verse after it (the infill / re-noise benchmark).
"""
from __future__ import annotations

import torch

from . import corpus
from .corpus import SPEECH_BREAK

MIN_LONG_PROMPT_TOKENS = 48     # long_prompts: a run of speeches shorter than this is skipped


def speeches(split: str) -> list[str]:
    """Every speech of the split's plays ("train" or "heldout"), in play order."""
    return [s for text in corpus.load_plays(split).values() for s in text.split(SPEECH_BREAK)]


def has_opening(speech: str) -> bool:
    """A speaker line, a first line, and a line break after it (the last speech of a play ends
    with one, so it counts even with a single line of text)."""
    return speech.count("\n") >= 2


def opening(speech: str) -> str:
    """The speaker and the first line of a speech: "SPEAKER:\\nfirst line\\n"."""
    return "\n".join(speech.split("\n")[:2]) + "\n"


def spread(items: list, n: int) -> list:
    """n items at evenly spaced places in `items`, the first and last included (n = 1: the first)."""
    return [items[round(i * (len(items) - 1) / max(1, n - 1))] for i in range(n)]


def sample_prompts(n: int = 32) -> list[str]:
    """n prompts spread evenly over the held-out plays: a speaker name and the speech's first line."""
    return [opening(s) for s in spread([s for s in speeches("heldout") if has_opening(s)], n)]


def train_prompts(n: int, seed: int = 0) -> list[str]:
    """n prompts in the benchmark's form (speaker + the speech's first line) from training plays,
    in a random order drawn with `seed` (a longer list extends a shorter one)."""
    pool = [s for s in speeches("train") if has_opening(s)]
    g = torch.Generator().manual_seed(seed)
    return [opening(pool[i]) for i in torch.randperm(len(pool), generator=g)[:n].tolist()]


def long_prompts(lm, n: int = 8, max_tokens: int = 120) -> list[str]:
    """n prompts of consecutive held-out speeches, as many as fit in `max_tokens` (at least
    MIN_LONG_PROMPT_TOKENS tokens each), starting at n places spread evenly over the held-out
    plays: long prefixes, where caching them pays."""
    pool = [s + SPEECH_BREAK for s in speeches("heldout") if s.strip()]
    sizes = [len(lm.encode(s)) for s in pool]
    out, i = [], 0
    step = max(1, len(pool) // n)
    while len(out) < n and i < len(pool):
        j, total = i, 0
        while j < len(pool) and total + sizes[j] <= max_tokens:
            total += sizes[j]
            j += 1
        if total >= MIN_LONG_PROMPT_TOKENS:
            out.append("".join(pool[i:j]))
            i += step
        else:
            i += 1
    return out


def heldout_lines(n: int = 24, min_words: int = 8) -> list[tuple[str, str]]:
    """(prompt, line): a held-out speech's speaker and first line, and its next line of verse
    (of at least `min_words` words), for n speeches spread evenly over the held-out plays."""
    pairs = []
    for speech in speeches("heldout"):
        lines = speech.split("\n")
        if len(lines) >= 3 and len(lines[2].split()) >= min_words:
            pairs.append((opening(speech), lines[2]))
    return spread(pairs, n)
