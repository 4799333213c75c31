"""Prompt sets cut from the plays, most in the form the notebooks prompt with ("SPEAKER:\\nfirst line\\n"):

- `sample_prompts`: held-out openings spread evenly over the held-out plays (evaluation, benchmarks);
- `train_prompts`: training-play openings in a seeded random order (the distillation teacher's prompts),
  in the first-line form or mixed over `FORMS`;
- `form_prompts`: held-out prompts of one of `FORMS` (a speaker's name alone, a name and the first words
  of a line, a cut in the middle of a speech, a whole first line), spread over the held-out plays;
- `long_prompts`: runs of consecutive held-out speeches, long prefixes (the cache benchmark);
- `heldout_lines`: a held-out opening and the line of verse after it (the infill / re-noise benchmark).
"""
from __future__ import annotations

import torch

from . import corpus
from .corpus import SPEECH_BREAK
from .recipes import FORMS

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




def _words_cut(line: str, k: int) -> str:
    """The first k words of a line, as written (its spacing kept)."""
    return " ".join(line.split(" ")[:k])


def fits_form(speech: str, form: str) -> bool:
    """The speech can be cut in `form`: a first line of 2+ words ("first words"), a second line of
    2+ words ("mid-speech"), a speaker and a first line ("speaker", "first line")."""
    lines = speech.split("\n")
    if form not in FORMS:
        raise ValueError(f"form must be one of {FORMS}, got {form!r}")
    if not has_opening(speech):
        return False
    if form == "first words":
        return len(lines[1].split(" ")) >= 2
    if form == "mid-speech":
        return len(lines) >= 4 and len(lines[2].split(" ")) >= 2
    return True


def cut(speech: str, form: str, frac: float = 0.5) -> str:
    """A prompt of `form` cut from a speech that `fits_form`; `frac` in [0, 1) places the cut among
    the line's words where the form cuts inside a line (at least one word kept, one left out):
    "speaker": "SPEAKER:\\n"; "first words": "SPEAKER:\\nthe first" (no line break);
    "mid-speech": "SPEAKER:\\nfirst line\\nsecond" (cut inside the speech's second line);
    "first line": "SPEAKER:\\nfirst line\\n" (`opening`)."""
    if not fits_form(speech, form):
        raise ValueError(f"this speech cannot be cut in the {form!r} form: {speech[:60]!r}")
    lines = speech.split("\n")
    if form == "speaker":
        return lines[0] + "\n"
    if form == "first line":
        return opening(speech)
    row = 1 if form == "first words" else 2
    n = len(lines[row].split(" "))
    k = 1 + min(n - 2, int(frac * (n - 1)))                 # 1 .. n - 1 words
    return "\n".join(lines[:row]) + "\n" + _words_cut(lines[row], k)


def form_prompts(n: int, form: str) -> list[str]:
    """n held-out prompts of `form`, from speeches spread evenly over the held-out plays (cut at
    the middle of the line where the form cuts inside one)."""
    return [cut(s, form) for s in spread([s for s in speeches("heldout") if fits_form(s, form)], n)]


def sample_prompts(n: int = 32) -> list[str]:
    """n prompts spread evenly over the held-out plays: a speaker name and the speech's first line."""
    return [opening(s) for s in spread([s for s in speeches("heldout") if has_opening(s)], n)]


def train_prompts(n: int, seed: int = 0, forms: tuple[str, ...] = ("first line",)) -> list[str]:
    """n prompts from training plays' speeches in a random order drawn with `seed` (a longer list
    extends a shorter one): prompt i in forms[i % len(forms)] (the next speech that fits it), each
    cut at a random place within its line."""
    pool = [s for s in speeches("train") if has_opening(s)]
    g = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(pool), generator=g).tolist()
    if tuple(forms) == ("first line",):            # the committed models' prompts, drawn as they were
        return [opening(pool[i]) for i in order[:n]]
    fracs = torch.rand(len(pool), generator=g).tolist()
    out, j = [], 0
    while len(out) < n and j < len(order):
        form = forms[len(out) % len(forms)]
        if fits_form(pool[order[j]], form):
            out.append(cut(pool[order[j]], form, fracs[j]))
        j += 1
    if len(out) < n:
        raise ValueError(f"only {len(out)} training speeches fit forms {forms}; ask for fewer prompts")
    return out


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
