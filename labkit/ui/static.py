"""Plotly figures that survive GitHub, nbviewer and a printout: each figure a notebook shows also
carries a static PNG, a matplotlib drawing of the same data (heatmaps, lines and markers, bars, the
vertical and horizontal lines of its shapes, titles), in the same output. A viewer that cannot
run plotly shows the PNG; JupyterLab's plotly renderer shows the PNG too until the pointer enters
the figure, then draws the interactive one in its place (zoom, hover, legend).

    lk.viz.notebook_mode()        # first cell: every plotly figure shown after it carries its PNG
    figure_png(fig.to_dict())     # the PNG bytes of one figure

No browser and no extra package: the drawing reads the figure's own data.
"""
from __future__ import annotations

import base64
import io
import re

import matplotlib as mpl
import numpy as np
import plotly.io as pio
from matplotlib.colors import LinearSegmentedColormap, to_rgba
from matplotlib.figure import Figure
from plotly.io._base_renderers import PlotlyRenderer

PLOTLY_MIME = "application/vnd.plotly.v1+json"
RENDERER = "labkit"             # plotly renderer name: plotly's mimetype JSON plus image/png
DPI = 72                        # plotly's pixel sizes drawn 1:1 at this resolution


def _array(v) -> np.ndarray:
    """A trace's data as numpy: a list, an array, or plotly's typed-array JSON {dtype, bdata, shape}."""
    if isinstance(v, dict) and "bdata" in v:
        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        shape = v.get("shape")
        if isinstance(shape, str):
            shape = tuple(int(n) for n in shape.split(","))
        return a.reshape(shape) if shape else a
    if isinstance(v, (list, tuple)) and v and isinstance(v[0], dict) and "bdata" in v[0]:
        return np.stack([_array(r) for r in v])
    return np.asarray(v, dtype=object if isinstance(v, (list, tuple)) and v and isinstance(v[0], str) else None)


def _color(c):
    """A plotly colour ("#abc", "rgb(1,2,3)", "rgba(...)", a name) as matplotlib RGBA."""
    m = re.fullmatch(r"\s*rgba?\(([^)]*)\)\s*", str(c))
    if m:
        parts = [float(p) for p in m.group(1).split(",")]
        return tuple(p / 255 for p in parts[:3]) + ((parts[3],) if len(parts) > 3 else (1.0,))
    return to_rgba(c)


def _cmap(scale):
    if isinstance(scale, str) or scale is None:
        return mpl.colormaps.get((scale or "viridis").lower(), mpl.colormaps["viridis"]).with_extremes(bad="white")
    stops = [(float(v), _color(c)) for v, c in scale]
    return LinearSegmentedColormap.from_list("plotly", stops).with_extremes(bad="white")


def _text(v) -> str:
    return (v.get("text") if isinstance(v, dict) else v) or ""


def _heatmap(ax, t: dict) -> None:
    z = np.asarray(_array(t["z"]), dtype=np.float64)
    if z.ndim == 1:
        z = z[None]
    lo = t.get("zmin", np.nanmin(z) if np.isfinite(z).any() else 0.0)
    hi = t.get("zmax", np.nanmax(z) if np.isfinite(z).any() else 1.0)
    im = ax.imshow(np.ma.masked_invalid(z), aspect="auto", interpolation="nearest", cmap=_cmap(t.get("colorscale")),
                   vmin=lo, vmax=hi, origin="lower")
    if t.get("showscale") is not False:
        bar = t.get("colorbar") or {}
        cb = ax.figure.colorbar(im, ax=ax, pad=0.01, fraction=0.04, label=_text(bar.get("title")))
        if bar.get("tickvals") is not None and bar.get("ticktext") is not None:
            cb.set_ticks(list(bar["tickvals"]), labels=list(bar["ticktext"]))


def _scatter(ax, t: dict) -> None:
    y = _array(t.get("y", []))
    x = _array(t["x"]) if "x" in t else np.arange(len(y))
    mode = t.get("mode", "lines")
    style = ("-" if "lines" in mode else "") + ("o" if "markers" in mode else "")
    color = (t.get("line") or {}).get("color") or (t.get("marker") or {}).get("color")
    kw = {"color": _color(color)} if isinstance(color, str) else {}
    ax.plot(x, y, style or "-", label=t.get("name"), ms=3, **kw)


def _bar(ax, t: dict) -> None:
    y = _array(t.get("y", []))
    x = _array(t["x"]) if "x" in t else np.arange(len(y))
    ax.bar([str(v) for v in x] if x.dtype == object else x, y, label=t.get("name"))


DRAW = {"heatmap": _heatmap, "scatter": _scatter, "scattergl": _scatter, "bar": _bar}


def _axis_key(ref: str, axis: str) -> str:
    """"x2" → "xaxis2"; "x" → "xaxis"."""
    return axis + "axis" + ref[1:]


def _place(fig, layout: dict, xref: str, yref: str, panels: dict):
    """The matplotlib axes of a plotly (x, y) axis pair, placed at their layout domains."""
    if (xref, yref) not in panels:
        xd = (layout.get(_axis_key(xref, "x")) or {}).get("domain", [0, 1])
        yd = (layout.get(_axis_key(yref, "y")) or {}).get("domain", [0, 1])
        left, bottom = 0.07 + 0.76 * xd[0], 0.14 + 0.74 * yd[0]      # room for a colour bar's labels
        panels[xref, yref] = fig.add_axes((left, bottom, 0.76 * (xd[1] - xd[0]) - 0.03,
                                           0.74 * (yd[1] - yd[0]) - 0.06))
    return panels[xref, yref]


def _finish(ax, layout: dict, xref: str, yref: str) -> None:
    xa, ya = layout.get(_axis_key(xref, "x")) or {}, layout.get(_axis_key(yref, "y")) or {}
    ax.set_xlabel(_text(xa.get("title")))
    ax.set_ylabel(_text(ya.get("title")))
    if ya.get("autorange") == "reversed":
        ax.invert_yaxis()
    if ya.get("showticklabels") is False:
        ax.set_yticks([])
    if ya.get("type") == "log":
        ax.set_yscale("log")
    if xa.get("type") == "log":
        ax.set_xscale("log")


def _shapes(layout: dict, panels: dict) -> None:
    for s in layout.get("shapes") or ():
        if s.get("type") != "line":
            continue
        ax = panels.get((s.get("xref", "x").replace(" domain", ""), s.get("yref", "y").replace(" domain", "")))
        ax = ax or next(iter(panels.values()), None)
        if ax is None:
            continue
        color = _color((s.get("line") or {}).get("color", "black"))
        if s.get("x0") == s.get("x1"):
            ax.axvline(float(s["x0"]), color=color, lw=0.8, ls=":")
        elif s.get("y0") == s.get("y1"):
            ax.axhline(float(s["y0"]), color=color, lw=0.8, ls=":")


def figure_png(fig_dict: dict, dpi: int = DPI) -> bytes:
    """PNG bytes of a plotly figure (as a dict: `fig.to_dict()` or its JSON), drawn with matplotlib
    from its data. A trace kind without a drawing here is named on the image instead of drawn."""
    layout = fig_dict.get("layout") or {}
    width, height = layout.get("width") or 900, layout.get("height") or 450
    fig = Figure(figsize=(width / 100, height / 100))
    panels, skipped = {}, []
    for t in fig_dict.get("data") or ():
        kind = t.get("type", "scatter")
        ax = _place(fig, layout, t.get("xaxis", "x"), t.get("yaxis", "y"), panels)
        if kind in DRAW:
            DRAW[kind](ax, t)
        else:
            skipped.append(kind)
    for (xref, yref), ax in panels.items():
        _finish(ax, layout, xref, yref)
        if any(line.get_label() and not line.get_label().startswith("_") for line in ax.get_lines()):
            ax.legend(fontsize=7)
    _shapes(layout, panels)
    title = _text(layout.get("title"))
    if title or skipped:
        fig.suptitle(title + (f"  (not drawn here: {', '.join(sorted(set(skipped)))})" if skipped else ""),
                     fontsize=10)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def register() -> str:
    """Register the "labkit" plotly renderer (plotly's mimetype JSON plus image/png) and return its name."""
    class WithPng(PlotlyRenderer):
        def to_mimebundle(self, fig_dict):
            bundle = super().to_mimebundle(fig_dict)
            bundle["image/png"] = base64.b64encode(figure_png(bundle[PLOTLY_MIME])).decode("ascii")
            return bundle

    pio.renderers[RENDERER] = WithPng()
    return RENDERER
