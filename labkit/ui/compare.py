"""Compare: two samplers on the same model, prompt, seed and canvas, side by side, one scrubber
moving both (`lk.widgets.Compare(lm)`). Like the Lab panel, it writes what it shows to Python
attributes (`cmp.outs`, `cmp.figures`, `cmp.panes[side]["grid"].value`, `cmp.error`)."""
from __future__ import annotations

import html

from .. import defaults
from ..decode import block_for, generate
from ..models.handle import Denoiser
from ..samplers import registry
from . import viz
from .plumbing import Scrubber, figure_dict, show_error, show_figures, with_marker


class Compare:
    """Two samplers on the same model, prompt, seed and canvas, aligned step by step: one scrubber
    moves both; a run that finished earlier stays on its last step. `left` / `right` are rule
    names (labkit.samplers.registry.NAMES, "speed" and "quality" included)."""

    def __init__(self, lm: Denoiser, prompt: str = "ROMEO:\nBut soft, what light", *, left: str = "low_confidence",
                 right: str = "speed", gen_length: int = 64, block_length: int | None = None, steps: int = 64,
                 seed: int = 0, left_knobs: dict | None = None, right_knobs: dict | None = None,
                 run: bool = True):
        import ipywidgets as w  # the lab's extra: only when a Compare is built
        self.lm = lm
        choices = registry.names_for(lm.kind)
        for side, name in (("left", left), ("right", right)):
            if name not in choices:
                raise ValueError(f"{side} must be one of {', '.join(choices)} for model {lm.name!r}, got {name!r}")
        self.prompt = w.Textarea(prompt, description="prompt", layout=w.Layout(width="520px", height="64px"))
        self.left = w.Dropdown(options=choices, value=left, description="left")
        self.right = w.Dropdown(options=choices, value=right, description="right")
        self.knobs = {"left": dict(left_knobs or {}), "right": dict(right_knobs or {})}
        self.seed = w.IntText(seed, description="seed", layout=w.Layout(width="220px"))
        block_length = block_for(lm) if block_length is None else block_length    # a block model: its own
        self.canvas = dict(gen_length=gen_length, block_length=block_length, steps=steps)
        self.generate_button = w.Button(description="Compare", button_style="primary")
        self.scrubber = Scrubber(self.show_step)
        self.panes = {side: dict(title=w.HTML(), grid=w.HTML(), heatmap=w.Output()) for side in ("left", "right")}
        self.message = w.HTML()
        self.outs: dict[str, object] = {}
        self.figures: dict[str, dict] = {}
        self.notes: dict[str, str] = {}
        self.step = 0
        self.error = ""
        self.generate_button.on_click(lambda _: self.run())
        col = lambda p: w.VBox([p["title"], p["grid"], p["heatmap"]], layout=w.Layout(width="50%"))  # noqa: E731
        self.widget = w.VBox([self.prompt, w.HBox([self.left, self.right, self.seed, self.generate_button]),
                              self.message, self.scrubber.box,
                              w.HBox([col(self.panes["left"]), col(self.panes["right"])])])
        if run:
            self.run()

    def _rule(self, side: str):
        name = getattr(self, side).value
        knobs = {k: v for k, v in self.knobs[side].items() if k in registry.knobs(name)}
        sampling = registry.sampling(knobs.pop("temperature", 0.0), knobs.pop("top_p", None))
        return registry.rule(name, **sampling, **knobs)

    def run(self):
        try:
            outs = {side: generate(self.lm, self.prompt.value, self._rule(side), seed=self.seed.value, **self.canvas)
                    for side in ("left", "right")}
        except ValueError as e:
            self.error = show_error(self.message, str(e))
            return None
        self.error = show_error(self.message, "")
        self.outs = outs
        self.figures = {side: figure_dict(o.trace, self.lm, "state") for side, o in outs.items()}
        self.notes = {}
        for side, o in outs.items():
            s = o.stats
            note = defaults.parallel_note(self.lm.name, getattr(self, side).value, s["tpf"])
            if note:
                self.notes[side] = note
            self.panes[side]["title"].value = (
                f"<b>{html.escape(o.trace.meta['sampler'])}</b><br>NFE {s['nfe']} · TPF {s['tpf']:.2f} · "
                f"{s['tps']:.0f} tok/s" + (f'<div style="color:#92400e">ⓘ {html.escape(note)}</div>' if note else ""))
        n = max(len(o.trace) for o in outs.values())
        self.step = -1
        self.scrubber.reset(n)
        if self.step != n - 1:
            self.show_step(n - 1)
        return outs

    def show_step(self, step: int) -> None:
        if not self.outs:
            return
        self.step = int(step)
        for side, o in self.outs.items():
            s = min(self.step, len(o.trace) - 1)
            self.panes[side]["grid"].value = viz.token_grid(o.trace, self.lm, step=s)
            self.figures[side] = with_marker(self.figures[side], s)
            show_figures(self.panes[side]["heatmap"], [self.figures[side]])
        lens = {side: len(o.trace) for side, o in self.outs.items()}
        self.scrubber.label.value = f"step {self.step} · steps taken: left {lens['left']}, right {lens['right']}"

    def _ipython_display_(self):
        from IPython.display import display  # the lab's extra (with ipywidgets)
        display(self.widget)
