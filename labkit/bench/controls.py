"""`labkit bench controls`: how often keyword control lands its words, what it costs in fluency,
and whether infilling and re-noise editing keep the text they must keep.

Keywords: each triple is paired with one held-out prompt and sampled `samples` times (one batch,
the lab's default sampler: low-confidence, temperature 1.0, top-p 0.9, gen_length 64), with
`Keywords(triple)` and without any control (same prompts, same seeds). Reported:
- hit_at_least_2 / hit_all_3: share of samples whose text holds at least 2 / all 3 words, each
  as a whole word in any case (`control.contains_word`);
- gen_ppl_ratio: gen-PPL (under the AR twin) of the keyword samples over that of the unconstrained.
Infill: for held-out speeches, the line after the prompt with a run of words cut out becomes the
template "before ___{n} after" (n = the cut's token count). ReNoise: the same lines with 30% of
their tokens re-masked. For both, kept_identical is the share of results in which every kept
piece of text comes back byte for byte, in order; gen_ppl of the results is reported next to
that of the original lines.
"""
from __future__ import annotations

import random
import time

from .. import defaults
from ..controls import Infill, Keywords, ReNoise, contains_word
from ..decode import generate
from ..eval.intervals import paired_ratio
from ..eval.metrics import gen_nats, ppl_of
from ..training.prompts import heldout_lines, sample_prompts

# Nouns among the most frequent words of the held-out plays (The Tempest, Macbeth), counted
# with metrics.words; the last eight take two or three tokens of the embedded tokenizer.
KEYWORD_POOL = (
    "lady", "king", "lord", "night", "sleep", "father", "heart", "life", "love", "hand", "master",
    "nature", "blood", "death", "eyes", "spirit", "business", "name", "power", "hour", "heaven",
    "honour", "hope", "grace", "earth", "light", "wife", "devil", "place", "deed", "peace",
    "daughter", "sword", "tongue", "head", "brother", "fear", "time", "crown", "queen",
    "island", "spirits", "monster", "ship", "murder", "thunder", "storm", "wine")


def keyword_triples(n: int = 30, seed: int = 0) -> list[tuple[str, str, str]]:
    """n triples of distinct words from KEYWORD_POOL, drawn with `seed`."""
    rng = random.Random(seed)
    return [tuple(rng.sample(KEYWORD_POOL, 3)) for _ in range(n)]


def parse_keywords(specs: list[str]) -> list[tuple[str, ...]]:
    """["crown,night,sword", ...] (the CLI's repeated --keywords) → [("crown", "night", "sword"), ...]."""
    out = []
    for spec in specs:
        words = tuple(w.strip() for w in spec.split(","))
        if len(words) < 2 or not all(words):
            raise ValueError(f"--keywords takes comma-separated words, at least two and none empty, "
                             f"got {spec!r}")
        out.append(words)
    return out


def bench_keywords(lm, ar, triples, *, method: str = "place", samples: int = 4, gen_length: int = 64,
                   seed: int = 0, sampler=None, unconstrained: list[str] | None = None) -> dict:
    """Hit rates and gen-PPL ratio of Keywords(method) over `triples` (one held-out prompt each),
    the ratio with its 95% bootstrap interval over samples (each paired with the unconstrained sample
    of the same prompt and seed: labkit.eval.intervals.paired_ratio).
    Pass `unconstrained` (texts from a previous call, same triples) to skip re-sampling them."""
    if not isinstance(samples, int) or samples < 1:
        raise ValueError(f"samples must be a positive integer, got {samples!r}")
    sampler = sampler or defaults.sampler()
    knobs = dict(gen_length=gen_length, block_length=min(gen_length, defaults.BLOCK_LENGTH), steps=gen_length)
    prompts = sample_prompts(len(triples))
    texts, free, rows = [], [], []
    seconds = 0.0                                   # decoding with the control only
    for i, (prompt, words) in enumerate(zip(prompts, triples)):
        batch = [prompt] * samples
        t0 = time.perf_counter()
        texts += generate(lm, batch, sampler, seed=seed + i, controls=[Keywords(words, method=method)],
                          **knobs).texts
        seconds += time.perf_counter() - t0
        if unconstrained is None:
            free += generate(lm, batch, sampler, seed=seed + i, **knobs).texts
        rows += [(prompt, words)] * samples
    free = unconstrained if unconstrained is not None else free
    hits = [sum(contains_word(t, w) for w in words) for t, (_, words) in zip(texts, rows)]
    k = len(triples[0]) if triples else 3
    ps = [p for p, _ in rows]
    nats, nats_free = gen_nats(ar, ps, texts), gen_nats(ar, ps, free)
    ratio, lo, hi = paired_ratio(nats, nats_free)                                    # samples paired by seed
    ppl, ppl_free = ppl_of(nats), ppl_of(nats_free)
    return {"method": method, "triples": len(triples), "samples": len(texts),
            "hit_at_least_2": round(sum(h >= 2 for h in hits) / len(hits), 4),
            "hit_all_3": round(sum(h >= k for h in hits) / len(hits), 4),
            "gen_ppl": round(ppl, 3), "gen_ppl_unconstrained": round(ppl_free, 3),
            "gen_ppl_ratio": round(ppl / ppl_free, 3), "gen_ppl_ratio_ci95": [round(lo, 3), round(hi, 3)],
            "seconds": round(seconds, 1),
            "texts": texts, "unconstrained": free}


def infill_template(lm, line: str) -> tuple[str, str, str]:
    """Cut the middle third of the line's words: (before, after, template with ___{n})."""
    words = line.split(" ")
    a, b = len(words) // 3, max(len(words) // 3 + 1, 2 * len(words) // 3)
    before, cut, after = " ".join(words[:a]) + " ", " ".join(words[a:b]), " " + " ".join(words[b:])
    return before, after, f"{before}___{{{len(lm.encode(cut))}}}{after}"


def bench_edit(lm, ar, *, n: int = 24, ratio: float = 0.3, seed: int = 0, sampler=None) -> dict:
    """Infill and ReNoise on held-out lines: kept text byte-identical (share), gen-PPL, and the
    edited text's gen-PPL over the original lines' with its 95% bootstrap interval (paired by line)."""
    sampler = sampler or defaults.sampler()
    pairs = heldout_lines(n)
    prompts, lines = [p for p, _ in pairs], [line for _, line in pairs]
    out = {}
    infill_texts, infill_kept = [], []
    renoise_texts, renoise_kept = [], []
    for i, (prompt, line) in enumerate(pairs):
        before, after, template = infill_template(lm, line)
        control = Infill(template)
        n_tokens = len(control.layout(lm))
        text = generate(lm, prompt, sampler, controls=[control], gen_length=n_tokens, block_length=n_tokens,
                        steps=n_tokens, seed=seed + i).text
        infill_texts.append(text)
        infill_kept.append(text.startswith(before) and text.endswith(after) and len(text) >= len(before + after))
        edit = ReNoise(line, ratio=ratio, seed=seed + i)
        n_tokens = len(lm.encode(line))
        text = generate(lm, prompt, sampler, controls=[edit], gen_length=n_tokens, block_length=n_tokens,
                        steps=n_tokens, seed=seed + i).text
        renoise_texts.append(text)
        renoise_kept.append(edit.pattern(lm).fullmatch(text) is not None)
    nats_original = gen_nats(ar, prompts, lines)
    original = ppl_of(nats_original)
    for name, texts, kept in (("infill", infill_texts, infill_kept), ("renoise", renoise_texts, renoise_kept)):
        nats = gen_nats(ar, prompts, texts)
        ratio_ci = paired_ratio(nats, nats_original)[1:]                              # each line with its edit
        out[name] = {"samples": len(texts), "kept_identical": round(sum(kept) / len(kept), 4),
                     "gen_ppl": round(ppl_of(nats), 3), "gen_ppl_original": round(original, 3),
                     "gen_ppl_ratio_ci95": [round(v, 3) for v in ratio_ci],
                     "examples": [{"original": line, "result": t} for line, t in list(zip(lines, texts))[:3]]}
    out["renoise"]["ratio"] = ratio
    return out
