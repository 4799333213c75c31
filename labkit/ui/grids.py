"""Views of a trace as text and grids: the canvas at a step as coloured HTML spans (`token_grid`),
every step one line (`token_grid_steps`), a puzzle's answer laid out in its grid (`canvas_grid`,
HTML; `commit_grid`, matplotlib: the order its cells were committed in) and a stats table. Each
is a pure function of a `Trace` (plus `lm` for token strings); `viz.<name>` reaches them too."""
from __future__ import annotations

import html

import numpy as np

from ..models.handle import Denoiser
from .cells import MASK_GLYPH, Html, _commit_step, _gen, _strings, check_trace, png_figure

_CSS = ("<style>.lk-grid{font-family:ui-monospace,monospace;white-space:pre-wrap;line-height:1.9}"
        ".lk-grid span{border-radius:3px;padding:0 1px}"
        ".lk-m{color:#9ca3af;background:#f3f4f6}.lk-r{background:#fecaca}.lk-o{background:#fed7aa}"
        ".lk-g{background:#bbf7d0}.lk-b{background:#dbeafe}.lk-e{outline:2px solid #c026d3}"
        ".lk-p{background:#d1fae5;outline:2px solid #059669}"
        ".lk-n{color:#6b7280;user-select:none}"
        ".lk-stats{border-collapse:collapse;font-family:sans-serif;font-size:13px}"
        ".lk-stats td,.lk-stats th{border:1px solid #ddd;padding:2px 8px;text-align:left}</style>")


def _conf_class(c: float) -> str:
    """LLaDA demo colours: red < 0.3 ≤ orange < 0.7 ≤ green (nan counts as low)."""
    return "lk-g" if c >= 0.7 else "lk-o" if c >= 0.3 else "lk-r"


def _rows(trace, lm: Denoiser, row) -> dict:
    """One row's generated region as (S, N) numpy arrays, plus raw token strings by id."""
    toks = _gen(trace.tokens(), trace, row)
    uniq = np.unique(toks)
    pinned = trace.pinned()
    return dict(toks=toks, conf=_gen(trace.confidence(), trace, row).astype(np.float32),
                pinned=np.zeros(toks.shape, bool) if pinned is None else _gen(pinned, trace, row),
                new=_gen(trace.committed(), trace, row), edit=_gen(trace.edits(), trace, row),
                strings=dict(zip(uniq.tolist(), lm.token_strings(uniq.tolist()))))


def _spans(a: dict, s: int, mask_id: int, breaks: bool = True) -> str:
    """Step s's canvas as inline spans; newlines as ↵ (followed by <br> when `breaks`)."""
    out = []
    for tok, c, new, edit, pin in zip(a["toks"][s].tolist(), a["conf"][s], a["new"][s], a["edit"][s],
                                      a["pinned"][s]):
        if tok == mask_id:
            out.append(f'<span class="lk-m">{MASK_GLYPH}</span>')
            continue
        raw = a["strings"][tok]
        cls = (_conf_class(c) + (" lk-e" if edit else "")) if new or edit else "lk-p" if pin else "lk-b"
        tip = f' title="conf {c:.2f}"' if new or edit else ""
        text = html.escape(raw).replace("\n", "↵")
        out.append(f'<span class="{cls}"{tip}>{text}</span>')
        if breaks:
            out.append("<br>" * raw.count("\n"))
    return "".join(out)


def token_grid(trace, lm: Denoiser, step: int | None = None, row: int = 0) -> str:
    """HTML: the canvas after `step` (default: the last). Masks are grey ▢, tokens committed at
    this step are coloured by confidence (red < 0.3, orange < 0.7, green), earlier ones blue,
    edited ones outlined, pinned ones green with an outline; hover a new token for its confidence."""
    check_trace(trace, row)
    S = len(trace)
    step = S - 1 if step is None else step
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or not -S <= step < S:
        raise ValueError(f"step must be an integer in [0, {S}) (or negative from the end), got {step!r}")
    return Html(f'{_CSS}<div class="lk-grid">{_spans(_rows(trace, lm, row), step % S, trace.mask_id)}</div>')


def token_grid_steps(trace, lm: Denoiser, row: int = 0) -> str:
    """HTML: every step's canvas, one numbered line per step (newlines shown as ↵ only)."""
    check_trace(trace, row)
    a, w = _rows(trace, lm, row), len(str(len(trace) - 1))
    lines = [f'<div><span class="lk-n">{s:>{w}} </span>{_spans(a, s, trace.mask_id, False)}</div>'
             for s in range(len(trace))]
    return Html(f'{_CSS}<div class="lk-grid" style="white-space:pre">{"".join(lines)}</div>')


def commit_grid(trace, lm: Denoiser, columns: int, row: int = 0, cells: int | None = None, ax=None,
                title: str | None = None):
    """Matplotlib figure: the first `cells` answer positions (default all) laid out `columns` wide
    (a Sudoku's 6 × 6), each coloured by the step it was committed at and labelled with its final
    token: the order a puzzle was solved in."""
    import matplotlib as mpl  # matplotlib on the first figure: the text views need none
    check_trace(trace, row)
    if not isinstance(columns, int) or columns < 1:
        raise ValueError(f"columns must be a positive integer, got {columns!r}")
    steps = _commit_step(trace, row)[0]                           # (N,)
    n = len(steps) if cells is None else cells
    if not 1 <= n <= len(steps) or n % columns:
        raise ValueError(f"cells must be a multiple of columns ({columns}) in [1, {len(steps)}], got {n}")
    z = steps[:n].reshape(-1, columns)
    labels = np.asarray(_strings(lm, trace.final[row, trace.prompt_len:trace.prompt_len + n].tolist())).reshape(z.shape)
    fig = png_figure()(figsize=(0.5 * columns + 1.5, 0.5 * z.shape[0] + 0.6), layout="constrained") if ax is None \
        else ax.figure
    ax = ax or fig.add_subplot()
    im = ax.imshow(z, cmap=mpl.colormaps["viridis"], vmin=0, vmax=max(1, len(trace) - 1))
    for (i, j), text in np.ndenumerate(labels):
        ax.text(j, i, text, ha="center", va="center", color="white" if z[i, j] < len(trace) / 2 else "black")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title or "committed at step (colour) · final token")
    fig.colorbar(im, ax=ax, shrink=0.8)
    return fig


def canvas_grid(trace, lm: Denoiser, columns: int, step: int | None = None, row: int = 0) -> str:
    """HTML: the answer canvas after `step` laid out `columns` wide (a puzzle's grid): masks ▢,
    tokens committed at that step bold, earlier ones plain; the panel shows it for a Sudoku."""
    check_trace(trace, row)
    step = len(trace) - 1 if step is None else step
    rec = trace[step]
    toks = rec.tokens[row, trace.prompt_len:].tolist()
    new = rec.committed[row, trace.prompt_len:].tolist()
    cells = []
    for t, fresh in zip(toks, new):
        text = "▢" if t == trace.mask_id else html.escape(_strings(lm, [t])[0])
        cells.append(("<b style='color:#c2410c'>{}</b>" if fresh else "{}").format(text))
    rows = ["<tr>" + "".join(f"<td style='width:1.6em;text-align:center;border:1px solid #ccc'>{c}</td>"
                             for c in cells[r:r + columns]) + "</tr>" for r in range(0, len(cells), columns)]
    return Html(f"<table style='font-family:monospace;border-collapse:collapse'>{''.join(rows)}</table>")


def stats_table(stats: dict) -> str:
    """A small two-column HTML table of a dict (e.g. Output.stats or Trace.meta)."""
    def fmt(v):
        return f"{v:.4g}" if isinstance(v, float) else str(v)
    rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(fmt(v))}</td></tr>"
                   for k, v in stats.items())
    return Html(f'{_CSS}<table class="lk-stats">{rows}</table>')
