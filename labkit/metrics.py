"""Text quality metrics that need no model: distinct-n and word validity."""
from __future__ import annotations

import re
from functools import lru_cache

_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)*")


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def distinct_n(ids, n: int = 2) -> float:
    """Share of distinct n-grams among all n-grams of one token sequence (1.0 = no repeats)."""
    ids = [int(i) for i in ids]
    grams = [tuple(ids[i:i + n]) for i in range(len(ids) - n + 1)]
    return len(set(grams)) / len(grams) if grams else 0.0


@lru_cache(maxsize=1)
def training_vocabulary() -> frozenset[str]:
    """Every word form that occurs in the training plays (lower-cased)."""
    from .data import load_plays
    return frozenset(w for text in load_plays("train").values() for w in words(text))


def word_validity(texts: list[str], vocabulary: frozenset[str] | None = None) -> float:
    """Share of the words in `texts` that occur in the training plays."""
    vocabulary = training_vocabulary() if vocabulary is None else vocabulary
    ws = [w for t in texts for w in words(t)]
    return sum(w in vocabulary for w in ws) / len(ws) if ws else 0.0
