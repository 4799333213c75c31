"""Readable corrections: where draft-and-edit decoding turned a visibly wrong word into a right one.

A block's *draft* is the canvas at the step its last mask was committed; its *final* text is what
the block holds when decoding ends, after the post-edit (T2T) steps. The two are compared word by
word (punctuation marks count as words); a replaced span is a readable correction when the draft's
side holds a word the training plays never use, or a word written twice in a row, and the final
side holds only words the plays use, none of them doubled.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from labkit.eval.metrics import training_vocabulary

_PIECE = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)*|[^\sA-Za-z]")   # a word or one punctuation mark


@dataclass(frozen=True)
class Correction:
    row: int                # batch row
    block: int              # block index in the answer (0 = first block after the prompt)
    draft_step: int         # step whose commit filled the block's last mask
    before: str             # the draft's words that were replaced
    after: str              # the words that replaced them
    why: str                # "not a word in the plays" or "doubled word"
    draft: str              # the block's text when it was full
    final: str              # the block's text at the end


def _is_word(piece: str) -> bool:
    return piece[0].isalpha()


def _doubled(pieces: list[str], lo: int, hi: int) -> bool:
    """A word in pieces[lo:hi] equal to the word just before or after it."""
    return any(_is_word(pieces[k]) and pieces[k].lower() == pieces[k - 1].lower()
               for k in range(max(lo, 1), min(hi + 1, len(pieces))) if _is_word(pieces[k - 1]))


def _spans(draft: str, final: str, vocabulary: frozenset[str]):
    a, b = _PIECE.findall(draft), _PIECE.findall(final)
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op != "replace":
            continue
        unknown = [w for w in a[i1:i2] if _is_word(w) and w.lower() not in vocabulary]
        why = "not a word in the plays" if unknown else "doubled word" if _doubled(a, i1, i2) else None
        fixed = all(w.lower() in vocabulary for w in b[j1:j2] if _is_word(w)) and not _doubled(b, j1, j2)
        if why and fixed and any(_is_word(w) for w in b[j1:j2]):
            yield " ".join(a[i1:i2]), " ".join(b[j1:j2]), why


def corrections(out, lm, block_length: int, vocabulary: frozenset[str] | None = None) -> list[Correction]:
    """Every readable correction in one generate() output (any batch size), in block order."""
    if not isinstance(block_length, int) or block_length < 1:
        raise ValueError(f"block_length must be an integer >= 1, got {block_length!r}")
    vocabulary = training_vocabulary() if vocabulary is None else vocabulary
    tr = out.trace
    if not len(tr):
        return []
    tokens, masked, final = tr.tokens(), tr.masked(), tr.final    # (S, B, L), (S, B, L), (B, L)
    P, L = tr.prompt_len, final.shape[1]
    found = []
    for row in range(final.shape[0]):
        for block, lo in enumerate(range(P, L, block_length)):
            hi = min(lo + block_length, L)
            full = (~masked[:, row, lo:hi]).all(1).nonzero().flatten()    # steps with the block full
            if not len(full):
                continue
            step = int(full[0])
            draft, end = lm.decode(tokens[step, row, lo:hi].tolist()), lm.decode(final[row, lo:hi].tolist())
            if draft == end:
                continue
            for before, after, why in _spans(draft, end, vocabulary):
                found.append(Correction(row, block, tr.records[step].step, before, after, why, draft, end))
    return found
