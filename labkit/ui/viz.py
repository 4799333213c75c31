"""Figures from traces: how a canvas went from masks to text, step by step.

Every function is a pure function of a `Trace` (plus `lm`, used only for token strings): none
runs the model, none calls `plt.show()`. Each takes `row` (the batch row) and shows the generated
region, canvas positions `trace.prompt_len` onward.

    heatmap(trace, lm, kind="state")     plotly: steps (top to bottom) × positions
    heatmap_matplotlib(trace, kind=...)  the same, static
    token_grid(trace, lm, step=None)     HTML: the canvas at one step, coloured spans
    token_grid_steps(trace, lm)          HTML: every step, one numbered line each
    step_slider(trace, lm)               plotly: a step scrubber that needs no kernel
    stats_table(stats)                   HTML: a dict as a two-column table
    continuous_heatmap(trace, lm)        plotly: a continuous-diffusion trace's nearest tokens

Their neighbours, still reachable from here: `to_html` (the standalone HTML report) lives in
`ui/report.py`, `loss_figure` / `LiveLoss` (training loss curves) in `ui/training_views.py`.
"""
from __future__ import annotations

import functools
import html
import importlib

import numpy as np

from ..models.handle import Denoiser

KINDS = ("state", "confidence", "commit_step", "edits")
MASKED, NEW, EARLIER, EDITED, PINNED = 0, 1, 2, 3, 4
STATE_NAMES = ("masked", "committed now", "committed earlier", "edited now", "pinned")
STATE_COLORS = ("#e5e7eb", "#f59e0b", "#3b82f6", "#c026d3", "#059669")
MASK_GLYPH = "▢"

_CSS = ("<style>.lk-grid{font-family:ui-monospace,monospace;white-space:pre-wrap;line-height:1.9}"
        ".lk-grid span{border-radius:3px;padding:0 1px}"
        ".lk-m{color:#9ca3af;background:#f3f4f6}.lk-r{background:#fecaca}.lk-o{background:#fed7aa}"
        ".lk-g{background:#bbf7d0}.lk-b{background:#dbeafe}.lk-e{outline:2px solid #c026d3}"
        ".lk-p{background:#d1fae5;outline:2px solid #059669}"
        ".lk-n{color:#6b7280;user-select:none}"
        ".lk-stats{border-collapse:collapse;font-family:sans-serif;font-size:13px}"
        ".lk-stats td,.lk-stats th{border:1px solid #ddd;padding:2px 8px;text-align:left}</style>")


def notebook_mode() -> None:
    """Show plotly figures through JupyterLab's plotly mime renderer only (no 4 MB of inlined
    plotly.js per notebook). Call it once in a notebook's first cell."""
    import plotly.io as pio
    pio.renderers.default = "plotly_mimetype"


class Html(str):
    """An HTML string that a notebook renders (and tests compare as a plain str)."""

    def _repr_html_(self) -> str:
        return str(self)


# --- shared helpers ---------------------------------------------------------------------------
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


def _matrix(trace, kind, row) -> np.ndarray:
    """The z of a heatmap of `kind`: (S, N), or (1, N) for commit_step."""
    if kind == "state":
        return _state(trace, row)
    if kind == "confidence":
        return _write_confidence(trace, row)
    if kind == "commit_step":
        return _commit_step(trace, row)
    return _gen(trace.edits(), trace, row).astype(np.int8)


def _categories(trace, kind, row) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """(names, colours) for categorical kinds, None for continuous ones."""
    if kind == "state":
        n = 5 if trace.has_pins else 4 if has_edits(trace, row) else 3
        return STATE_NAMES[:n], STATE_COLORS[:n]
    if kind == "edits":
        return ("unchanged", "edited"), ("#f3f4f6", STATE_COLORS[EDITED])
    return None


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


def _discrete_scale(colors) -> list:
    """A plotly colorscale of len(colors) flat bands for integer z in [-0.5, n - 0.5]."""
    n = len(colors)
    return [[f, c] for i, c in enumerate(colors) for f in (i / n, (i + 1) / n)]


def _block_edges(trace) -> list[int]:
    bl, n = trace.meta.get("block_length"), trace.init.shape[1] - trace.prompt_len
    return list(range(bl, n, bl)) if isinstance(bl, int) and 0 < bl < n else []


# --- plotly -----------------------------------------------------------------------------------
def heatmap(trace, lm=None, kind: str = "state", row: int = 0):
    """plotly Figure: steps (y, top to bottom) × generated positions (x).

    kind "state": masked / committed now / committed earlier (/ edited now);
    "confidence": confidence of each token where it was written, in [0, 1];
    "commit_step": one row, each position coloured by the step it was committed at;
    "edits": token→token edits per step. Hover shows the token strings when `lm` is given."""
    import plotly.graph_objects as go
    _check_kind(kind)
    check_trace(trace, row)
    z = _matrix(trace, kind, row)                                 # (S, N) or (1, N)
    hm = dict(z=z, x=np.arange(z.shape[1]), y=np.arange(z.shape[0]), xgap=0, ygap=0)
    where = "position %{x}" if kind == "commit_step" else "step %{y} · pos %{x}"
    if lm is not None:
        hm.update(text=_cell_text(trace, lm, row, final_only=kind == "commit_step"))
        where += " · %{text}"
    cats = _categories(trace, kind, row)
    if cats:
        names, colors = cats
        hm.update(colorscale=_discrete_scale(colors), zmin=-0.5, zmax=len(names) - 0.5,
                  colorbar=dict(tickvals=list(range(len(names))), ticktext=list(names)))
    elif kind == "confidence":
        hm.update(colorscale="Viridis", zmin=0, zmax=1, colorbar=dict(title="confidence"))
        where += " · conf %{z:.2f}"
    else:   # one row of cells: a horizontal colour bar under it (a vertical one would be a sliver)
        hm.update(colorscale="Viridis", zmin=0, zmax=max(1, len(trace) - 1),
                  colorbar=dict(title=dict(text="committed at step", side="top"), orientation="h",
                                x=0.5, xanchor="center", y=-0.45, yanchor="top", len=0.9, thickness=14,
                                nticks=9))
        where += " · step %{z}"
    fig = go.Figure(go.Heatmap(hovertemplate=where + "<extra></extra>", **hm))
    for e in _block_edges(trace):
        fig.add_vline(x=e - 0.5, line=dict(color="black", width=1, dash="dot"))
    one_row = kind == "commit_step"
    fig.update_layout(title=f"{kind} (row {row})", template="plotly_white",
                      xaxis_title="generated position",
                      yaxis=dict(title="" if one_row else "step", autorange="reversed",
                                 showticklabels=not one_row),
                      height=260 if one_row else min(900, 200 + 8 * z.shape[0]))
    if one_row:
        fig.update_layout(margin=dict(b=120))        # room for the colour bar under the axis
    return fig


def step_slider(trace, lm: Denoiser, row: int = 0, cols: int = 16):
    """plotly Figure with one frame per step and a slider (plus Play/Pause) that works without a
    kernel. Each frame draws the canvas after that step, wrapped `cols` positions per line,
    coloured by state, with the token text in the cells."""
    import plotly.graph_objects as go
    check_trace(trace, row)
    state = _state(trace, row)                                    # (S, N)
    text = _cell_text(trace, lm, row)                             # (S, N)
    S, N = state.shape
    cols = max(1, min(cols, N))
    R = -(-N // cols)

    def wrap(a, fill):                                            # (N,) → (R, cols)
        out = np.full(R * cols, fill, dtype=a.dtype)
        out[:N] = a
        return out.reshape(R, cols)

    names, colors = _categories(trace, "state", row)
    records = trace.records

    def frame_data(s):
        return go.Heatmap(z=wrap(state[s].astype(np.float32), np.nan), text=wrap(text[s], ""))

    def title(s):
        n_new = int((state[s] == NEW).sum() + (state[s] == EDITED).sum())
        return f"step {s} / {S - 1} · block {records[s].block} · {n_new} written · " \
               f"{int((state[s] == MASKED).sum())} masks left"

    frames = [go.Frame(name=str(s), data=[frame_data(s)], layout=dict(title_text=title(s)))
              for s in range(S)]
    base = frame_data(0)
    base.update(texttemplate="%{text}", textfont=dict(size=11), colorscale=_discrete_scale(colors),
                zmin=-0.5, zmax=len(names) - 0.5, xgap=1, ygap=1, hovertemplate="%{text}<extra></extra>",
                colorbar=dict(tickvals=list(range(len(names))), ticktext=list(names)))
    anim = dict(mode="immediate", frame=dict(duration=0, redraw=True), transition=dict(duration=0))
    play = dict(frame=dict(duration=300, redraw=True), transition=dict(duration=0), fromcurrent=True)
    fig = go.Figure(data=[base], frames=frames)
    fig.update_layout(
        title_text=title(0), template="plotly_white", height=220 + 34 * R,
        xaxis=dict(showticklabels=False), yaxis=dict(autorange="reversed", showticklabels=False),
        sliders=[dict(active=0, x=0.14, len=0.86, currentvalue=dict(prefix="step "), pad=dict(t=20),
                      steps=[dict(method="animate", label=str(s), args=[[str(s)], anim])
                             for s in range(S)])],
        updatemenus=[dict(type="buttons", direction="left", x=0, y=0, xanchor="left",
                          yanchor="top", pad=dict(t=45), showactive=False,
                          buttons=[dict(label="Play", method="animate", args=[None, play]),
                                   dict(label="Pause", method="animate", args=[[None], anim])])])
    return fig


# --- matplotlib -------------------------------------------------------------------------------
@functools.cache
def png_figure():
    """A matplotlib Figure class that renders itself in a notebook: a pyplot-free Figure has no
    display hook of its own, and a bare one shows as `<Figure size ...>`."""
    import io

    from matplotlib.figure import Figure

    class PngFigure(Figure):
        def _repr_png_(self) -> bytes:
            buf = io.BytesIO()
            self.savefig(buf, format="png", dpi=90)
            return buf.getvalue()
    return PngFigure


def heatmap_matplotlib(trace, lm=None, kind: str = "state", row: int = 0, ax=None):
    """Static matplotlib version of `heatmap`; draws on `ax` when given (its figure is returned),
    else on a new pyplot-free figure that a notebook shows as a PNG."""
    import matplotlib as mpl
    from matplotlib.colors import BoundaryNorm, ListedColormap
    _check_kind(kind)
    check_trace(trace, row)
    z = _matrix(trace, kind, row)                                 # (S, N) or (1, N)
    if ax is None:
        fig = png_figure()(figsize=(10, 2 if kind == "commit_step" else 5), layout="constrained")
        ax = fig.add_subplot()
    fig = ax.figure
    cats = _categories(trace, kind, row)
    if cats:
        names, colors = cats
        cmap = ListedColormap(colors)
        norm = BoundaryNorm(np.arange(len(names) + 1) - 0.5, len(names))
        im = ax.imshow(z, aspect="auto", interpolation="nearest", cmap=cmap, norm=norm)
        cb = fig.colorbar(im, ax=ax, ticks=range(len(names)))
        cb.ax.set_yticklabels(names)
    else:
        cmap = mpl.colormaps["viridis"].with_extremes(bad="white")
        vmax = 1 if kind == "confidence" else max(1, len(trace) - 1)
        im = ax.imshow(np.ma.masked_invalid(z), aspect="auto", interpolation="nearest",
                       cmap=cmap, vmin=0, vmax=vmax)
        fig.colorbar(im, ax=ax, label="confidence" if kind == "confidence" else "step")
    for e in _block_edges(trace):
        ax.axvline(e - 0.5, color="black", lw=0.8, ls=":")
    if kind == "commit_step":
        ax.set_yticks([])
        if lm is not None and z.shape[1] <= 64:
            ax.set_xticks(range(z.shape[1]), _cell_text(trace, lm, row, True, False)[0], rotation=90,
                          fontsize=7)
    else:
        ax.set_ylabel("step")
    ax.set_xlabel("generated position")
    ax.set_title(f"{kind} (row {row})")
    return fig


# --- HTML -------------------------------------------------------------------------------------
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
    import matplotlib as mpl
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


# --- continuous diffusion (labkit.continuous) ------------------------------------------------
CONTINUOUS_VALUES = ("distance", "probability")


def continuous_heatmap(trace, lm=None, value: str = "distance", row: int = 0):
    """plotly Figure of a continuous-diffusion trace (labkit.continuous.generate_continuous):
    steps (y) × generated positions (x), coloured at every cell (not only where a token was written)
    by `value`: "distance", from x0_hat to its nearest embedding (trace.meta["distance"]), or
    "probability", the nearest token's softmax probability (the record's confidence). Hover shows
    the nearest token at that step when `lm` (a DLM or a continuous.Vocabulary) is given."""
    import plotly.graph_objects as go
    if value not in CONTINUOUS_VALUES:
        raise ValueError(f"value must be one of {CONTINUOUS_VALUES}, got {value!r}")
    check_trace(trace, row)
    if value == "distance":
        if "distance" not in trace.meta:
            raise ValueError("this trace has no per-step distances: it was not made by generate_continuous")
        z = np.asarray(trace.meta["distance"], dtype=np.float32)[:, row]      # (S, N)
    else:
        z = _gen(trace.confidence(), trace, row).astype(np.float32)
    hm = dict(z=z, x=np.arange(z.shape[1]), y=np.arange(z.shape[0]), colorbar=dict(title=value),
              colorscale="Viridis_r" if value == "distance" else "Viridis")
    where = "step %{y} · pos %{x}"
    if lm is not None:
        hm.update(text=_cell_text(trace, lm, row))
        where += " · %{text}"
    fig = go.Figure(go.Heatmap(hovertemplate=where + f" · {value} %{{z:.3f}}<extra></extra>", **hm))
    fig.update_layout(title=f"nearest-token {value} (row {row})", template="plotly_white",
                      xaxis_title="generated position", yaxis=dict(title="step", autorange="reversed"),
                      height=min(900, 200 + 8 * z.shape[0]))
    return fig


# --- moved out, still answered for -----------------------------------------------------------
_MOVED = {"to_html": "report", "loss_figure": "training_views", "LiveLoss": "training_views"}


def __getattr__(name: str):
    """`viz.to_html`, `viz.loss_figure` and `viz.LiveLoss` (and `from labkit.ui.viz import ...`) keep
    working: they are looked up in their own modules on first use."""
    if name in _MOVED:
        return getattr(importlib.import_module(f".{_MOVED[name]}", __package__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
