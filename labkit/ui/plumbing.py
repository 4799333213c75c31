"""What the Lab panel (`ui/panel.py`) and Compare (`ui/compare.py`) share: heatmaps as plotly JSON
dicts with a movable step marker, showing them in an Output widget, the message and notice
lines, and the step scrubber.

How views stay light: a heatmap is a plotly figure dict built once per run, with z sent as int8 /
float16 typed arrays (base64), never as lists; moving the step scrubber only moves a marker line
in each figure (`with_marker`). Nothing is accumulated per step.
"""
from __future__ import annotations

import html
import json

from ..models.handle import Denoiser
from . import viz

MIME = "application/vnd.plotly.v1+json"       # how an Output widget carries a plotly figure


# --- figures and their step marker ------------------------------------------------------------
def figure_dict(trace, lm: Denoiser, kind: str, row: int = 0) -> dict:
    """A heatmap as a plain plotly JSON dict (typed arrays stay base64), plus a step marker shape
    as the last layout shape, so moving the marker is a dict edit, not a rebuild."""
    fig = viz.heatmap(trace, lm, kind, row)
    if kind != "commit_step":
        fig.add_hrect(y0=-0.5, y1=0.5, line=dict(color="#111827", width=2), fillcolor="rgba(0,0,0,0)")
    fig.update_layout(margin=dict(l=50, r=20, t=40, b=120 if kind == "commit_step" else 40))
    return json.loads(fig.to_json())


def with_marker(fig: dict, step: int) -> dict:
    """The figure with its step marker on `step`: a new dict (new layout, new shapes list) that
    shares the heavy data with `fig`. A widget only sends what compares unequal to its last
    value, so the marker must never be moved by editing the shown dict in place."""
    shapes = fig["layout"].get("shapes") or []
    if not shapes or shapes[-1].get("type") != "rect":
        return fig
    marker = {**shapes[-1], "y0": step - 0.5, "y1": step + 0.5}
    return {**fig, "layout": {**fig["layout"], "shapes": [*shapes[:-1], marker]}}


def marker_step(fig: dict) -> int | None:
    """The step a figure's marker points at (None for figures without one)."""
    shapes = fig["layout"].get("shapes") or []
    if not shapes or shapes[-1].get("type") != "rect":
        return None
    return int(round(shapes[-1]["y0"] + 0.5))


def show_figures(output, figs: list[dict]) -> None:
    """Replace an Output widget's content with these figures (one message, no flicker, and the
    same in a headless test as in the browser)."""
    output.outputs = tuple({"output_type": "display_data", "data": {MIME: fig}, "metadata": {}}
                           for fig in figs)


# --- message lines ----------------------------------------------------------------------------
def show_error(message, error: str) -> str:
    """Show `error` (or clear it) in a panel's message line; returns it for the panel's state."""
    message.value = f'<div style="color:#b91c1c">⚠ {html.escape(error)}</div>' if error else ""
    return error


def show_notice(widget, text: str | None) -> str:
    """Show a note (amber: true, but worth knowing) or clear it; returns the text."""
    widget.value = f'<div style="color:#92400e">ⓘ {html.escape(text)}</div>' if text else ""
    return text or ""


# --- the step scrubber ------------------------------------------------------------------------
class Scrubber:
    """Play + step slider. jslink keeps them in step in the browser; link does it in Python."""

    def __init__(self, on_step):
        import ipywidgets as w  # the lab's extra: only when a scrubber is built
        self.slider = w.IntSlider(0, min=0, max=0, description="step", continuous_update=True,
                                  layout=w.Layout(width="420px"))
        self.play = w.Play(0, min=0, max=0, interval=250, description="play")
        self._link = w.jslink((self.play, "value"), (self.slider, "value"))
        self.slider.observe(lambda ch: on_step(ch["new"]), names="value")
        self.label = w.HTML()
        self.box = w.HBox([self.play, self.slider, self.label])

    def reset(self, n_steps: int) -> None:
        last = max(0, n_steps - 1)
        self.slider.max = self.play.max = last
        self.slider.value = self.play.value = last

    def enable(self, on: bool) -> None:
        self.slider.disabled = self.play.disabled = not on
