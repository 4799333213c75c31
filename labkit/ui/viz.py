"""Figures from traces: how a canvas went from masks to text, step by step.

Every function is a pure function of a `Trace` (plus `lm`, used only for token strings): none
runs the model, none calls `plt.show()`. Each takes `row` (the batch row) and shows the generated
region, canvas positions `trace.prompt_len` onward.

    heatmap(trace, lm, kind="state")     plotly: steps (top to bottom) × positions
    heatmap_matplotlib(trace, kind=...)  the same, static
    step_slider(trace, lm)               plotly: a step scrubber that needs no kernel
    continuous_heatmap(trace, lm)        plotly: a continuous-diffusion trace's nearest tokens

and, reachable from here as from their own module:

    token_grid(trace, lm, step=None)     HTML: the canvas at one step, coloured spans   (ui/grids.py)
    token_grid_steps(trace, lm)          HTML: every step, one numbered line each
    canvas_grid / commit_grid            a puzzle's answer in its grid: HTML / the commit order
    stats_table(stats)                   HTML: a dict as a two-column table
    check_trace, has_edits, MASKED, ...  a trace read as cells, the state palette  (ui/cells.py)

Their neighbours, still reachable from here: `to_html` (the standalone HTML report) lives in
`ui/report.py`, `loss_figure` / `LiveLoss` (training loss curves) in `ui/training_views.py`.
"""
from __future__ import annotations

import importlib

import numpy as np

from ..models.handle import Denoiser
from .cells import (
    EARLIER,
    EDITED,
    KINDS,
    MASK_GLYPH,
    MASKED,
    NEW,
    PINNED,
    STATE_COLORS,
    STATE_NAMES,
    Html,
    _cell_text,
    _check_kind,
    _commit_step,
    _gen,
    _state,
    _write_confidence,
    check_trace,
    has_edits,
    png_figure,
)
from .grids import canvas_grid, commit_grid, stats_table, token_grid, token_grid_steps

# plotly and matplotlib (and static.py, which needs both) are imported by the functions that draw, so
# lk.viz and `labkit generate` import without them: a figure brings them.


def notebook_mode() -> None:
    """Show plotly figures through JupyterLab's plotly mime renderer (no 4 MB of inlined plotly.js
    per notebook), each with a static PNG twin in the same output (labkit.ui.static), so GitHub,
    nbviewer and a printout show it too; in JupyterLab the interactive figure replaces the PNG when
    the pointer enters it. Call it once in a notebook's first cell."""
    import plotly.io as pio  # on first use: see the note above

    from .static import register  # on first use: see the note above
    pio.renderers.default = register()


# --- what a heatmap draws ---------------------------------------------------------------------
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
    import plotly.graph_objects as go  # on first use: see the note above
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
    import plotly.graph_objects as go  # on first use: see the note above
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
def heatmap_matplotlib(trace, lm=None, kind: str = "state", row: int = 0, ax=None):
    """Static matplotlib version of `heatmap`; draws on `ax` when given (its figure is returned),
    else on a new pyplot-free figure that a notebook shows as a PNG."""
    import matplotlib as mpl  # on first use: see the note above
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


# --- continuous diffusion (labkit.continuous) ------------------------------------------------
CONTINUOUS_VALUES = ("distance", "probability")


def continuous_heatmap(trace, lm=None, value: str = "distance", row: int = 0):
    """plotly Figure of a continuous-diffusion trace (labkit.continuous.generate_continuous):
    steps (y) × generated positions (x), coloured at every cell (not only where a token was written)
    by `value`: "distance", from x0_hat to its nearest embedding (trace.meta["distance"]), or
    "probability", the nearest token's softmax probability (the record's confidence). Hover shows
    the nearest token at that step when `lm` (a DLM or a continuous.Vocabulary) is given."""
    import plotly.graph_objects as go  # on first use: see the note above
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


__all__ = ["CONTINUOUS_VALUES", "EARLIER", "EDITED", "KINDS", "MASK_GLYPH", "MASKED", "NEW", "PINNED", "STATE_COLORS",
           "STATE_NAMES", "Html", "canvas_grid", "check_trace", "commit_grid", "continuous_heatmap", "has_edits",
           "heatmap", "heatmap_matplotlib", "notebook_mode", "png_figure", "stats_table", "step_slider", "token_grid",
           "token_grid_steps"]
