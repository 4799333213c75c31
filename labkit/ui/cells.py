"""What every view of a trace reads: one batch row's generated region as cells (its state at each
step, the confidence a token was written with, the step each position was committed at, token
strings), the checks of a trace and a row, the state palette, and the two containers a notebook
renders (`Html`, the pyplot-free PNG figure). The figures (`viz.py`) and the HTML and grid views
(`grids.py`) are drawn from these; everything here is still reachable as `viz.<name>`."""
from __future__ import annotations

import functools
import html
import io

import numpy as np

from ..models.handle import Denoiser

KINDS = ("state", "confidence", "commit_step", "edits")
MASKED, NEW, EARLIER, EDITED, PINNED = 0, 1, 2, 3, 4
STATE_NAMES = ("masked", "committed now", "committed earlier", "edited now", "pinned")
STATE_COLORS = ("#e5e7eb", "#f59e0b", "#3b82f6", "#c026d3", "#059669")
MASK_GLYPH = "▢"


class Html(str):
    """An HTML string that a notebook renders (and tests compare as a plain str)."""

    def _repr_html_(self) -> str:
        return str(self)


def check_trace(trace, row) -> None:
    """Refuse an empty trace or a row outside its batch (ValueError)."""
    if not len(trace):
        raise ValueError("trace has no steps to show")
    B = trace.init.shape[0]
    if isinstance(row, bool) or not isinstance(row, (int, np.integer)) or not 0 <= row < B:
        raise ValueError(f"row must be an integer in [0, {B}) for this batch of {B}, got {row!r}")


def _check_kind(kind) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")


def _gen(t, trace, row) -> np.ndarray:
    """(S, B, L) tensor → (S, N) numpy array of one row's generated region."""
    return t[:, row, trace.prompt_len:].numpy()


def _state(trace, row) -> np.ndarray:
    """(S, N) int8: MASKED, NEW (committed at this step), EARLIER (written before), EDITED,
    PINNED (fixed by a control: Pin, Infill, ReNoise's kept text, a placed or written keyword)."""
    s = np.full(_gen(trace.tokens(), trace, row).shape, EARLIER, dtype=np.int8)
    pinned = trace.pinned()
    if pinned is not None:
        s[_gen(pinned, trace, row)] = PINNED
    s[_gen(trace.masked(), trace, row)] = MASKED
    s[_gen(trace.committed(), trace, row)] = NEW
    s[_gen(trace.edits(), trace, row)] = EDITED
    return s


def has_edits(trace, row) -> bool:
    """Whether any step of `row` edited a written token (token → token)."""
    return bool(_gen(trace.edits(), trace, row).any())


def _write_confidence(trace, row) -> np.ndarray:
    """(S, N) float32 in [0, 1]: confidence of the tokens written (committed or edited) at each
    step, nan elsewhere."""
    conf = _gen(trace.confidence(), trace, row).astype(np.float32)
    wrote = _gen(trace.committed() | trace.edits(), trace, row)
    return np.where(wrote, np.clip(conf, 0.0, 1.0), np.float32(np.nan)).astype(np.float32)


def _commit_step(trace, row) -> np.ndarray:
    """(1, N) float32: the step each position was first committed at, nan if never."""
    cs = trace.commit_step()[row, trace.prompt_len:].numpy().astype(np.float32)
    return np.where(cs < 0, np.nan, cs)[None]


def _strings(lm: Denoiser, ids) -> list[str]:
    """Display strings for ids (masks as the mask glyph, newlines as ↵)."""
    out = lm.token_strings(list(ids))
    return [s.replace("\n", "↵") for s in out]


def _cell_text(trace, lm: Denoiser, row, final_only=False, escape=True) -> np.ndarray:
    """(S, N) or (1, N) object array of token strings at each step (masks as ▢), HTML-escaped
    for plotly unless `escape` is False."""
    toks = _gen(trace.tokens(), trace, row)                       # (S, N)
    if final_only:
        toks = toks[-1:]
    uniq, inv = np.unique(toks, return_inverse=True)
    table = np.array([html.escape(s) if escape else s for s in _strings(lm, uniq)], dtype=object)
    table[uniq == trace.mask_id] = MASK_GLYPH
    return table[inv.reshape(toks.shape)]


@functools.cache
def png_figure():
    """A matplotlib Figure class that renders itself in a notebook: a pyplot-free Figure has no
    display hook of its own, and a bare one shows as `<Figure size ...>`."""
    from matplotlib.figure import Figure  # matplotlib on the first figure: the text views need none

    class PngFigure(Figure):
        def _repr_png_(self) -> bytes:
            buf = io.BytesIO()
            self.savefig(buf, format="png", dpi=90)
            return buf.getvalue()
    return PngFigure
