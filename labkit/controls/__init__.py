"""Content controls: hooks the decoding loop runs around every sampler rule.

A diffusion LM's canvas is whole at every step, so content can be steered by writing into it and
by shaping the logits before the rule picks. Pass any combination to `generate(..., controls=[...])`:

- `Pin(position, text)`: fixed text at a fixed offset of the answer.
- `Infill(template)`: "To be, or ___ to be"; the model writes only the gaps (`___{n}`: n tokens).
- `Keywords(words)`: each word appears somewhere, where the model finds it fits best.
- `Ban(words, eos=False)`: never write these words (and, with eos=True, no end of text).
- `ReNoise(text, spans=... | ratio=...)`: re-mask part of an existing text and denoise only that.

How they act, per step (decode.stream calls `apply` before the rule and `fix` after it):
- `setup` writes fixed tokens into the canvas before step 0 and freezes them. A frozen position is
  never committed or edited by any rule (DecodeState.frozen), and the loop restores it if one tried.
- `place` may write tokens into masked positions of a live row and freeze them (keyword placement);
  those count as committed at that step.
- `bias` adds to the logits every rule reads (keyword boosts, bans).
- `fix` repairs what the rule wrote (a banned word finished by a parallel commit).

One rule holds for all of them: no end-of-text token is written before the last frozen answer
position, so a decoded answer never stops short of text the user fixed.

Keyword methods (`Keywords(method=...)`), compared in notebooks/06_controls.ipynb:
- "place" (default): at the first steps, each keyword is placed at the free span where the model
  finds it most likely (sum of log-probabilities of its tokens there, at that step's logits), one
  word per step so the next placement sees the last; then the model writes around them.
- "boost": every step adds `strength * min(1, progress / deadline)` to the logits of each missing
  keyword's first token at masked positions (progress = share of the answer decided), and to the
  next token of a keyword already begun; a keyword still missing at the deadline is placed as above.
- "boost_only": boosting without placement (no guarantee; for comparison).
Either placing method makes every keyword appear when it fits at all. Measured by `labkit bench
controls` (30 triples x 4 samples, tiny): both land all three words in every sample; gen-PPL is
1.34x that of unconstrained samples with "place" and 1.53x with "boost", whose late placements
land in whatever span is left.
Keyword tokens the model writes itself, and placed ones, are frozen: edits never touch them.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import torch

KEYWORD_METHODS = ("place", "boost", "boost_only")
GAP = re.compile(r"_{3,}(?:\{(\d+)\})?")      # "___" or "___{n}"


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


def _encode(lm, text: str, what: str) -> list[int]:
    ids = lm.encode(text)
    if lm.decode(ids) != text:
        raise ValueError(f"{what} {text!r} does not survive the tokenizer's round trip "
                         f"(it decodes to {lm.decode(ids)!r}), so it cannot be kept byte-identical")
    return ids


def _stop_id(lm) -> int:
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

    def layout(self, lm) -> list[int | None]:
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

    def noised(self, lm) -> tuple[list[int], list[bool]]:
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

    def kept_text(self, lm) -> list[str]:
        """The runs of text that must come back unchanged, in order."""
        return [piece for piece, kept in self._runs(lm) if kept]

    def _runs(self, lm) -> list[tuple[str, bool]]:
        ids, noise = self.noised(lm)
        runs: list[tuple[list[int], bool]] = []
        for t, n in zip(ids, noise):
            if runs and runs[-1][1] == (not n):
                runs[-1][0].append(t)
            else:
                runs.append(([t], not n))
        return [(lm.decode(r), kept) for r, kept in runs]

    def pattern(self, lm) -> re.Pattern:
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


def variants(lm, word: str) -> list[list[int]]:
    """Token sequences that write `word` inside text: with a leading space, lower and capitalised."""
    w = word.strip()
    return _encode_all(lm.tokenizer, tuple(dict.fromkeys([" " + w, " " + w[:1].upper() + w[1:], " " + w.lower()])))


@functools.lru_cache(maxsize=512)
def _encode_all(tokenizer, forms: tuple[str, ...]) -> list[list[int]]:
    """Token ids of each form, cached: controls ask for them at every step."""
    return [tokenizer(f, add_special_tokens=False)["input_ids"] for f in forms]


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


def glue_ids(lm, vocab_size: int) -> torch.Tensor:
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

    def _forms(self, lm) -> list[list[list[int]]]:
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
class Ban(Control):
    """Never write `words` (any case, as whole tokens sequences); `eos=True` also forbids the end of text."""
    words: tuple = ()
    eos: bool = False

    def __post_init__(self):
        if self.words or not self.eos:
            object.__setattr__(self, "words", _check_words(self.words, "Ban"))

    def _seqs(self, lm) -> list[list[int]]:
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


__all__ = ["Ban", "Canvas", "Control", "Infill", "Keywords", "KEYWORD_METHODS", "Pin", "ReNoise",
           "contains_word", "parse_template", "variants"]
