"""The standalone HTML report of one run: `to_html(trace, lm, path)` writes a single offline page
(plotly JS inlined) with the run's stats, its final canvas, the step slider, the heatmaps and the
token grid of every step. Every piece is a figure of `ui/viz.py`; this module only lays them out.
`labkit generate --html` writes it."""
from __future__ import annotations

import html
from pathlib import Path

from ..models.handle import Denoiser
from .viz import check_trace, has_edits, heatmap, stats_table, step_slider, token_grid, token_grid_steps


def to_html(trace, lm: Denoiser, path, title: str = "labkit generation", row: int = 0,
            stats: dict | None = None) -> Path:
    """Write a standalone HTML report (plotly JS inlined, so it works offline): the step slider,
    the state / confidence (/ edits) heatmaps and the token grid of every step. Returns the Path."""
    check_trace(trace, row)
    path = Path(path)
    figs = [step_slider(trace, lm, row), heatmap(trace, lm, "state", row),
            heatmap(trace, lm, "confidence", row)]
    if has_edits(trace, row):
        figs.append(heatmap(trace, lm, "edits", row))
    plots = [f.to_html(full_html=False, include_plotlyjs=i == 0) for i, f in enumerate(figs)]
    info = {**(stats or {}), **trace.meta, "steps recorded": len(trace), "row": row}
    body = "\n".join([f"<h1>{html.escape(title)}</h1>", stats_table(info),
                      "<h2>Final canvas</h2>", token_grid(trace, lm, row=row), *plots,
                      "<h2>Every step</h2>", token_grid_steps(trace, lm, row)])
    doc = (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
           f'</head><body style="font-family:sans-serif;margin:1.5em">\n{body}\n</body></html>\n')
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc, encoding="utf-8")
    return path
