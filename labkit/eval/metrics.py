"""Quality and speed metrics of generated text.

- distinct-n, stutter rate and word validity need no model;
- gen-PPL is the perplexity of a generated answer, given its prompt, under a causal model (the
  "tiny-ar" twin for the embedded model): lower is more fluent, but loops score low too, so
  read it next to distinct-2;
- speed(out) gives NFE, TPF (tokens per forward pass, per row) and TPS of one generate() call.
"""
from __future__ import annotations

import math
import re
from functools import lru_cache

import torch
import torch.nn.functional as F

from ..training.corpus import load_plays

_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)*")
UNSCORED = -100         # target of a position gen_ppl does not score (cross_entropy's ignore_index)


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def distinct_n(ids, n: int = 2) -> float:
    """Share of distinct n-grams among all n-grams of one token sequence (1.0 = no repeats)."""
    ids = [int(i) for i in ids]
    grams = [tuple(ids[i:i + n]) for i in range(len(ids) - n + 1)]
    return len(set(grams)) / len(grams) if grams else 0.0


def stutter_rate(ids) -> float:
    """Share of tokens equal to the token just before them ("the the"), what penalty_lambda fights."""
    ids = [int(i) for i in ids]
    return sum(a == b for a, b in zip(ids, ids[1:])) / (len(ids) - 1) if len(ids) > 1 else 0.0


@torch.no_grad()
def gen_ppl(ar, prompts: list[str], texts: list[str], batch: int = 16) -> float:
    """Perplexity of `texts` given `prompts` under the causal model `ar` (a DLM of kind 'causal'):
    exp of the mean next-token NLL over every answer token of every sample (empty answers are
    skipped). Texts are re-encoded with the causal model's tokenizer and cut to its context."""
    return ppl_of(gen_nats(ar, prompts, texts, batch))


def ppl_of(rows: list[tuple[float, int]]) -> float:
    """gen-PPL from gen_nats' per-sample (nats, tokens): exp of nats per token over all samples."""
    nats, count = sum(n for n, _ in rows), sum(k for _, k in rows)
    if not count:
        raise ValueError("gen_ppl: every text is empty")
    return math.exp(nats / count)


def gen_nats(ar, prompts: list[str], texts: list[str], batch: int = 16) -> list[tuple[float, int]]:
    """Per sample, (summed next-token NLL in nats, answer tokens scored) of `texts` given `prompts`
    under the causal model `ar`: gen_ppl's parts, kept apart so that an interval can resample the
    prompts (labkit.eval.intervals). An empty answer gives (0.0, 0)."""
    if getattr(ar, "kind", None) != "causal":
        raise ValueError(f"gen_ppl needs a causal model (e.g. load('tiny-ar')), got kind={getattr(ar, 'kind', None)!r}")
    if len(prompts) != len(texts):
        raise ValueError(f"prompts ({len(prompts)}) and texts ({len(texts)}) must have the same length")
    rows, where = [], []
    for k, (prompt, text) in enumerate(zip(prompts, texts)):
        p, c = ar.encode(prompt), ar.encode(text)
        ids = (p + c)[:ar.max_length or None]
        if c and len(ids) > len(p):
            rows.append((ids, len(p)))
            where.append(k)
    out = [(0.0, 0)] * len(texts)
    for i in range(0, len(rows), batch):
        chunk = rows[i:i + batch]
        n = max(len(ids) for ids, _ in chunk)
        x = torch.full((len(chunk), n), ar.pad_id, dtype=torch.long)
        target = torch.full((len(chunk), n), UNSCORED, dtype=torch.long)
        for r, (ids, P) in enumerate(chunk):
            x[r, :len(ids)] = torch.tensor(ids)
            target[r, P:len(ids)] = torch.tensor(ids[P:])
        am = (torch.arange(n)[None, :] < torch.tensor([len(ids) for ids, _ in chunk])[:, None]).long()
        logits = ar(x.to(ar.device), am.to(ar.device)).float().cpu()[:, :-1]       # (b, n-1, V)
        nll = F.cross_entropy(logits.transpose(1, 2), target[:, 1:], ignore_index=UNSCORED,
                              reduction="none")                                   # (b, n-1)
        scored = (target[:, 1:] != UNSCORED).sum(-1)
        for r in range(len(chunk)):
            out[where[i + r]] = (float(nll[r].double().sum()), int(scored[r]))
    return out


def speed(out) -> dict:
    """NFE, TPF (decided answer tokens per forward pass, per row) and TPS of a generate() Output."""
    return {k: out.stats[k] for k in ("nfe", "tpf", "tps")}


@lru_cache(maxsize=1)
def training_vocabulary() -> frozenset[str]:
    """Every word form that occurs in the training plays (lower-cased)."""
    return frozenset(w for text in load_plays("train").values() for w in words(text))


def word_counts(texts: list[str], vocabulary: frozenset[str] | None = None) -> list[tuple[int, int]]:
    """Per text, (words found in the training plays, words): word_validity's parts, kept apart so
    that an interval can resample the prompts (labkit.eval.intervals)."""
    vocabulary = training_vocabulary() if vocabulary is None else vocabulary
    return [(sum(w in vocabulary for w in words(t)), len(words(t))) for t in texts]


def word_validity(texts: list[str], vocabulary: frozenset[str] | None = None) -> float:
    """Share of the words in `texts` that occur in the training plays."""
    vocabulary = training_vocabulary() if vocabulary is None else vocabulary
    ws = [w for t in texts for w in words(t)]
    return sum(w in vocabulary for w in ws) / len(ws) if ws else 0.0
