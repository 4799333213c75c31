"""Controls over words anywhere in the answer: Keywords that must appear and words to Ban."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import torch

from ..models.handle import Denoiser
from .base import Control

KEYWORD_METHODS = ("place", "boost", "boost_only")


def _check_words(words, what: str) -> tuple[str, ...]:
    if isinstance(words, str):
        words = (words,)
    words = tuple(words)
    if not words:
        raise ValueError(f"{what} needs at least one word")
    for w in words:
        if not isinstance(w, str) or not w.strip():
            raise ValueError(f"{what}: empty keyword {w!r}; give non-empty words")
    return words


def variants(lm: Denoiser, word: str) -> list[list[int]]:
    """Token sequences that write `word` inside text: with a leading space, lower and capitalised."""
    w = word.strip()
    return _encode_all(lm.tokenizer, tuple(dict.fromkeys([" " + w, " " + w[:1].upper() + w[1:], " " + w.lower()])))


@functools.lru_cache(maxsize=512)
def _encode_all(tokenizer, forms: tuple[str, ...]) -> list[list[int]]:
    """Token ids of each form, cached: controls ask for them at every step. A form the tokenizer
    can only write with its unknown token is dropped (unless every form needs it)."""
    seqs = [tokenizer(f, add_special_tokens=False)["input_ids"] for f in forms]
    unk = tokenizer.unk_token_id
    known = [s for s in seqs if unk is None or unk not in s]
    return known or seqs


def _occurs(x: torch.Tensor, seq: list[int], lo: int, hi: int, glue: torch.Tensor | None = None) -> torch.Tensor:
    """(B, L) bool: positions covered by an occurrence of seq inside x[:, lo:hi]. With `glue`
    ((V,) bool: tokens that go on with a word), an occurrence followed by such a token does not count."""
    B, L = x.shape
    n = len(seq)
    hit = torch.zeros(B, L, dtype=torch.bool, device=x.device)
    if hi - lo < n:
        return hit
    windows = x[:, lo:hi].unfold(1, n, 1)                                        # (B, W, n)
    starts = (windows == torch.tensor(seq, device=x.device)).all(-1)            # (B, W)
    if glue is not None:
        after = torch.full_like(starts, False)
        nxt = x[:, lo + n:hi]                                                    # token after each start
        after[:, :nxt.shape[1]] = glue[nxt.clamp_min(0)] & (nxt >= 0)
        starts &= ~after
    for j in range(n):
        hit[:, lo + j:lo + j + starts.shape[1]] |= starts
    return hit


@functools.lru_cache(maxsize=4)
def _glue_ids(tokenizer, vocab_size: int) -> torch.Tensor:
    """(V,) bool: tokens whose text starts with a letter or digit, i.e. that would go on with
    the word before them ("hour" + "ly")."""
    text = [tokenizer.decode([i]) for i in range(vocab_size)]
    return torch.tensor([bool(t) and t[0].isalnum() for t in text])


def glue_ids(lm: Denoiser, vocab_size: int) -> torch.Tensor:
    return _glue_ids(lm.tokenizer, vocab_size)


def contains_word(text: str, word: str) -> bool:
    """The hit test of the benchmark: `word` appears as a whole word, any case; an elision or a
    possessive after it counts ("love's"), another letter does not ("lovely")."""
    return re.search(rf"(?<![A-Za-z']){re.escape(word.strip())}(?![A-Za-z])", text, re.IGNORECASE) is not None


@dataclass(frozen=True)
class Keywords(Control):
    """Every word in `words` appears in the answer, where it fits best (see the module docstring)."""
    words: tuple
    method: str = "place"
    strength: float = 4.0            # logit boost at the deadline (boost, boost_only)
    deadline: float = 0.5            # share of the answer decided by which missing words are placed

    def __post_init__(self):
        object.__setattr__(self, "words", _check_words(self.words, "Keywords"))
        if self.method not in KEYWORD_METHODS:
            raise ValueError(f"Keywords method must be one of {KEYWORD_METHODS}, got {self.method!r}")
        if not self.strength >= 0:
            raise ValueError(f"Keywords strength must be >= 0, got {self.strength!r}")
        if not 0 <= self.deadline <= 1:
            raise ValueError(f"Keywords deadline must be in [0, 1], got {self.deadline!r}")

    def _forms(self, lm: Denoiser) -> list[list[list[int]]]:
        return [variants(lm, w) for w in self.words]

    def setup(self, x, frozen, canvas):
        forms = self._forms(canvas.lm)
        free = int((~frozen[0, canvas.prompt_len:canvas.end]).sum())
        for w, f in zip(self.words, forms):
            if len(f[0]) > canvas.gen_length:
                raise ValueError(f"keyword {w!r} is {len(f[0])} tokens, longer than the canvas "
                                 f"(gen_length {canvas.gen_length})")
        need = sum(len(f[0]) for f in forms)
        if need > free:
            raise ValueError(f"the keywords need {need} tokens but only {free} answer positions are free "
                             f"(gen_length {canvas.gen_length}): use fewer keywords or a longer gen_length")

    def _found(self, x, canvas, glue) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, K) bool: keyword k is written in the row as a word of its own; (B, L) bool: the
        positions those occurrences cover."""
        forms = self._forms(canvas.lm)
        found = torch.zeros(x.shape[0], len(forms), dtype=torch.bool, device=x.device)
        cover = torch.zeros_like(x, dtype=torch.bool)
        for k, f in enumerate(forms):
            for seq in f:
                hit = _occurs(x, seq, canvas.prompt_len, canvas.end, glue)
                found[:, k] |= hit.any(-1)
                cover |= hit
        return found, cover

    def _progress(self, x, canvas) -> torch.Tensor:       # (B,) share of the answer decided
        return (x[:, canvas.prompt_len:canvas.end] != canvas.lm.mask_id).float().mean(-1)

    def place(self, logits, x, frozen, live, canvas):
        glue = glue_ids(canvas.lm, logits.shape[-1]).to(x.device)
        found, cover = self._found(x, canvas, glue)
        frozen |= cover                                        # written keywords are kept from now on
        if self.method == "boost_only":
            return
        due = live & (self._progress(x, canvas) >= (0.0 if self.method == "place" else self.deadline))
        if not (due[:, None] & ~found).any():
            return
        logp = torch.log_softmax(logits.float(), -1)          # (B, L, V)
        forms = self._forms(canvas.lm)
        P, E = canvas.prompt_len, canvas.end
        near = cover.clone()                                   # keep words apart: no span touching another
        near[:, 1:] |= cover[:, :-1]
        near[:, :-1] |= cover[:, 1:]
        for b in due.nonzero().flatten().tolist():
            free = (x[b] == canvas.lm.mask_id) & ~frozen[b] & ~near[b]
            best = None                                        # one word per step: the next sees it
            for k in (k for k in range(len(forms)) if not found[b, k]):
                for seq in forms[k]:
                    n = len(seq)
                    if E - P < n:
                        continue
                    ok = free[P:E].unfold(0, n, 1).all(-1)                                  # (W,)
                    nxt = x[b, P + n:E]                            # no decided letter right after it
                    ok[:nxt.shape[0]] &= ~(glue[nxt.clamp_min(0)] & (nxt != canvas.lm.mask_id))
                    pos = P + torch.arange(ok.shape[0], device=x.device)[:, None] + torch.arange(n, device=x.device)
                    score = logp[b, pos, torch.tensor(seq, device=x.device)].sum(-1)        # (W,)
                    score = score.masked_fill(~ok, float("-inf"))
                    i = int(score.argmax())
                    if ok[i] and (best is None or score[i] > best[0]):
                        best = (float(score[i]), P + i, seq)
            if best is not None:                               # None: no free span fits any more
                _, start, seq = best
                x[b, start:start + len(seq)] = torch.tensor(seq, device=x.device)
                frozen[b, start:start + len(seq)] = True

    def bias(self, logits, x, frozen, canvas):
        glue = glue_ids(canvas.lm, logits.shape[-1]).to(x.device)
        found, cover = self._found(x, canvas, glue)
        masked = (x == canvas.lm.mask_id) & ~frozen                                  # (B, L)
        after = torch.zeros_like(masked)     # the position right after a keyword: no letter may go on
        after[:, 1:] = cover[:, :-1] & ~cover[:, 1:] & ~frozen[:, 1:]     # with it (commit or edit)
        logits.masked_fill_(after[..., None] & glue.to(logits.device), float("-inf"))
        grow = self._progress(x, canvas) / self.deadline if self.deadline else torch.ones(x.shape[0])
        boost = self.strength * grow.clamp(max=1.0).to(logits.device)                  # (B,)
        if self.strength:
            for k, forms in enumerate(self._forms(canvas.lm)):
                want = (masked & ~found[:, k, None]).to(logits.dtype) * boost[:, None]  # (B, L)
                for seq in forms:
                    logits[:, :, seq[0]] += want
                    for j in range(1, len(seq)):                # continue a keyword already begun
                        begun = _occurs(x, seq[:j], canvas.prompt_len, canvas.end)
                        nxt = torch.zeros_like(masked)
                        nxt[:, 1:] = begun[:, :-1] & masked[:, 1:]
                        logits[:, :, seq[j]] += nxt.to(logits.dtype) * self.strength
        if canvas.lm.stop_ids:                     # no end of text while a keyword is missing
            ban = (~found.all(-1))[:, None] & masked
            for s in canvas.lm.stop_ids:
                logits[:, :, s] = logits[:, :, s].masked_fill(ban, float("-inf"))


@dataclass(frozen=True)
class Topic(Control):
    """A soft steer towards a topic: at every step `strength` is added to the logits, at masked
    positions, of the first token of each way to write each of `words` (with and without a leading
    space, three casings), and of a word's next token right after its begun part. Nothing is
    forced (Keywords forces): the model writes a topic word where it fits and the strength tips it.
    Composes with every rule and control, as logits bias (seed 004: steering by adjusting logits)."""
    words: tuple = ()
    strength: float = 2.0

    def __post_init__(self):
        object.__setattr__(self, "words", _check_words(self.words, "Topic"))
        if isinstance(self.strength, bool) or not isinstance(self.strength, (int, float)) or not self.strength >= 0:
            raise ValueError(f"Topic strength must be a number >= 0 (logit units), got {self.strength!r}")

    def _seqs(self, lm: Denoiser) -> list[list[int]]:
        forms = {lead + f for w in self.words for f in (w.strip(), w.strip().lower(), w.strip().capitalize())
                 for lead in ("", " ")}
        return _encode_all(lm.tokenizer, tuple(sorted(forms)))

    def bias(self, logits, x, frozen, canvas):
        if not self.strength:
            return
        masked = (x == canvas.lm.mask_id).to(logits.dtype) * self.strength       # (B, L)
        for seq in self._seqs(canvas.lm):
            logits[:, :, seq[0]] += masked
            for j in range(1, len(seq)):                # go on with a topic word already begun
                begun = _occurs(x, seq[:j], canvas.prompt_len, canvas.end)
                nxt = torch.zeros_like(masked)
                nxt[:, 1:] = begun[:, :-1].to(logits.dtype) * masked[:, 1:]
                logits[:, :, seq[j]] += nxt


@dataclass(frozen=True)
class Ban(Control):
    """Never write `words` (any case, as whole tokens sequences); `eos=True` also forbids the end of text."""
    words: tuple = ()
    eos: bool = False

    def __post_init__(self):
        if self.words or not self.eos:
            object.__setattr__(self, "words", _check_words(self.words, "Ban"))

    def _seqs(self, lm: Denoiser) -> list[list[int]]:
        """Every way to write a banned word: with and without a leading space, in three casings."""
        forms = {lead + f for w in self.words for f in (w.strip(), w.strip().lower(), w.strip().capitalize())
                 for lead in ("", " ")}
        return _encode_all(lm.tokenizer, tuple(sorted(forms)))

    def bias(self, logits, x, frozen, canvas):
        if self.eos:
            logits[:, :, list(canvas.lm.stop_ids)] = float("-inf")
        undecided = x == canvas.lm.mask_id
        for seq in self._seqs(canvas.lm):
            if len(seq) == 1:
                logits[:, :, seq[0]] = float("-inf")
                continue
            for j, t in enumerate(seq):            # the last missing token of a banned sequence
                logits[:, :, t] = logits[:, :, t].masked_fill(_completes(x, undecided, seq, j), float("-inf"))

    def fix(self, tokens, logits, x, canvas):
        """Tokens committed in the same step can still finish a banned word: swap the later one for
        the best token that does not."""
        for seq in self._seqs(canvas.lm):
            if len(seq) == 1:
                continue
            for _ in range(tokens.shape[1]):
                hit = _occurs(tokens, seq, canvas.prompt_len, canvas.end) & (tokens != x)
                if not hit.any():
                    break
                b, i = (int(v) for v in hit.nonzero()[-1])
                masked_logits = logits[b, i].clone()
                masked_logits[seq] = float("-inf")
                masked_logits[canvas.lm.mask_id] = float("-inf")
                tokens[b, i] = int(masked_logits.argmax())


def _completes(x, undecided, seq, j) -> torch.Tensor:
    """(B, L) bool: positions i where writing seq[j] would finish seq (every other token is there)."""
    L = x.shape[1]
    out = undecided.clone()
    for k, t in enumerate(seq):
        if k == j:
            continue
        shifted = torch.zeros_like(out)                # position i needs x[i - j + k] == t
        off = k - j
        if off > 0:
            shifted[:, :L - off] = x[:, off:] == t
        else:
            shifted[:, -off:] = x[:, :L + off] == t
        out &= shifted                             # out of range: False, so edges need no care
    return out


# --- the loop's side --------------------------------------------------------------------------------
