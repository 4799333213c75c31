"""How a served answer ends, read off a row's canvas: its first max_tokens tokens cut at the first
end-of-text / end-of-turn token (`answer`), then before the stop string complete first
(`final_text`, with labkit.output.find_stop, which the decoding loop's `stop=` shares); a stream
holds back text that could still start one (`held_back`), and `completion_tokens` counts the
tokens whose text is returned (`tokens_for`). The requests these limits come from are checked in
labkit.serve.schemas (which re-exports these names)."""
from __future__ import annotations

from ..output import find_stop


def answer(lm, ids: list[int], max_tokens: int) -> tuple[list[int], str]:
    """The tokens returned from a row's canvas ids and the finish reason: the first max_tokens
    tokens cut at the first end-of-text / end-of-turn token ("stop"), else "length"."""
    head = ids[:max_tokens]
    for i, t in enumerate(head):
        if t in lm.stop_ids:
            return head[:i], "stop"
    return head, "length"


def held_back(text: str, stop: tuple[str, ...]) -> int:
    """How many characters at the end of `text` could still be the start of a stop string."""
    return max((k for s in stop for k in range(1, min(len(s) - 1, len(text)) + 1) if text.endswith(s[:k])),
               default=0)


def tokens_for(lm, ids: list[int], chars: int) -> int:
    """The fewest leading answer tokens whose text holds the first `chars` characters."""
    lo, hi = 0, len(ids)
    while lo < hi:
        mid = (lo + hi) // 2
        if len(lm.decode(ids[:mid]).rstrip("\ufffd")) >= chars:
            hi = mid
        else:
            lo = mid + 1
    return lo


def final_text(lm, ids: list[int], reason: str, stop: tuple[str, ...]) -> tuple[str, int, str]:
    """A row's answer tokens (from answer()) as (text, tokens counted, finish reason), cut before
    its first stop string (finish reason "stop")."""
    text = lm.decode(ids)
    at = find_stop(text, stop)
    if at is None:
        return text, len(ids), reason
    return text[:at], tokens_for(lm, ids, at), "stop"
