"""What a decoding loop hands back, built the same way by every loop (`decode.generate`, the
continuous sampler, DiffusionGemma's recorder): an `Output` of ids, texts, trace and stats, the
stop handling (which rows have stopped, the stop strings checked, an answer cut at its first EOS /
end-of-turn token), and the seed check.

This sits below models/ (it reads a model only through `decode` and `stop_ids`), so the loops
above it share it without importing each other."""
from __future__ import annotations

import numbers
from dataclasses import dataclass

import torch

from .trace import Trace


@dataclass(frozen=True)
class Output:
    ids: torch.Tensor            # (B, L) long: padding + prompt + generated canvas
    texts: list[str]             # generated text per row (specials removed)
    trace: Trace
    stats: dict                  # nfe, gen_tokens, tpf, seconds, tps

    @property
    def text(self) -> str:
        """The generated text of the first (for a single prompt, the only) row."""
        return self.texts[0]


def check_seed(seed) -> None:
    """An integer torch.manual_seed takes (-2**63 <= seed < 2**64) or None."""
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral)
                             or not -2**63 <= seed < 2**64):
        raise ValueError(f"seed must be an integer in [-2**63, 2**64) or None, got {seed!r}")


def until_stop(ids: list[int], stop_ids) -> list[int]:
    """The generated ids up to (not including) the first EOS / end-of-turn token in `stop_ids`."""
    for i, t in enumerate(ids):
        if t in stop_ids:
            return ids[:i]
    return ids


def find_stop(text: str, stop: tuple[str, ...]) -> int | None:
    """Where the answer ends in `text`: the start of the stop string that is complete first, reading
    left to right (as a left-to-right generator would meet it); None when none occurs. The loop's
    `stop=` and the server's stop strings both end answers here."""
    found = [(at + len(s), at) for s in stop if (at := text.find(s)) >= 0]
    return min(found)[1] if found else None


def answer_texts(lm, ids: torch.Tensor, prompt_len: int) -> list[str]:
    """ids (B, L) → each row's answer (positions prompt_len onward) up to its first stop id, as text
    (`lm.decode`, `lm.stop_ids`: any Denoiser)."""
    return [lm.decode(until_stop(row[prompt_len:].tolist(), lm.stop_ids)) for row in ids]


def collect(trace: Trace, texts: list[str], *, seconds: float, gen_tokens: int, per_row: bool = True,
            extra_stats: dict | None = None, cls: type[Output] = Output, **fields) -> Output:
    """A finished run as an Output: ids = the trace's last canvas (B, L) long, and its stats:
    nfe (forward passes: one per record), gen_tokens, with `per_row` row_nfe (forward passes summed
    over rows) and tpf (gen_tokens / row_nfe), seconds, tps (gen_tokens per second), then
    `extra_stats`. `cls` and `fields`: an Output subclass and its own fields (the recorder's)."""
    stats = {"nfe": trace.nfe, "gen_tokens": gen_tokens}
    if per_row:
        row_nfe = int(trace.row_nfe().sum())
        stats.update(row_nfe=row_nfe, tpf=round(gen_tokens / max(1, row_nfe), 4))
    stats.update(seconds=round(seconds, 4), tps=round(gen_tokens / max(seconds, 1e-9), 2), **(extra_stats or {}))
    return cls(ids=trace.final.long(), texts=texts, trace=trace, stats=stats, **fields)


def check_stop(stop) -> tuple[str, ...]:
    """`stop`: a string or a sequence of non-empty strings (OpenAI's `stop`), as a tuple."""
    stop = (stop,) if isinstance(stop, str) else stop
    if not isinstance(stop, (tuple, list)) or not all(isinstance(t, str) and t for t in stop):
        raise ValueError(f"stop must be a non-empty string or a list of them, got {stop!r}")
    return tuple(stop)


def stopped_rows(x: torch.Tensor, P: int, stop_ids: torch.Tensor, mask_id: int, stop_seqs=()) -> torch.Tensor:
    """(B,) bool: the row has an EOS / EoT (or one of the token sequences `stop_seqs`, written in
    full) in its answer with every position before it decided."""
    answer = x[:, P:]                                                       # (B, A)
    B, A = answer.shape
    is_stop = torch.isin(answer, stop_ids)                                  # (B, A): where an answer may end
    for seq in stop_seqs:
        m = len(seq)
        if m <= A:
            hit = (answer.unfold(1, m, 1) == seq).all(-1)                   # (B, A - m + 1): seq starts here
            is_stop[:, :A - m + 1] |= hit
    first = torch.where(is_stop.any(-1), is_stop.int().argmax(-1), A)      # (B,)
    before = torch.arange(A, device=x.device)[None, :] < first[:, None]
    return is_stop.any(-1) & ~((answer == mask_id) & before).any(-1)


__all__ = ["Output", "answer_texts", "check_seed", "check_stop", "collect", "find_stop", "stopped_rows", "until_stop"]
