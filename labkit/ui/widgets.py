"""The interactive lab: a panel to turn the knobs and scrub through one denoising run.

    lab = lk.widgets.Lab(lm)          # display it (last expression of a cell)
    cmp = lk.widgets.Compare(lm)      # two samplers, same prompt and seed, step by step

This module is the front door; nothing is defined here. The rooms behind it:

    ui/panel.py       Lab, its knobs (knob_names, uses, make_rule, preset_knobs) and its model menu
    ui/panel_run.py   a run of the panel: Generate / Stop in the background, live and final drawing
    ui/compare.py     Compare
    ui/plumbing.py    what both share: heatmap dicts and their step marker, the scrubber, message lines
    ui/viz.py         the figures themselves (pure functions of a trace)
"""
from __future__ import annotations

from .compare import Compare
from .panel import (
    LIVE_EVERY,
    MAX_GEN_LENGTH,
    PRESETS,
    PROMPT_ROOM,
    SAMPLERS,
    VIEWS,
    Lab,
    knob_names,
    make_rule,
    preset_knobs,
    uses,
)
from .panel_run import Stopped
from .plumbing import MIME, figure_dict, marker_step, with_marker

_MIME = MIME    # the name the tests read a shown figure's mime type by

__all__ = ["LIVE_EVERY", "MAX_GEN_LENGTH", "MIME", "PRESETS", "PROMPT_ROOM", "SAMPLERS", "VIEWS", "knob_names", "uses",
           "Compare", "Lab", "Stopped", "figure_dict", "make_rule", "marker_step", "preset_knobs", "with_marker"]
