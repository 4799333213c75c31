"""The interactive lab: a panel to turn the knobs and scrub through one denoising run.

    lab = lk.widgets.Lab(lm)          # display it (last expression of a cell)
    cmp = lk.widgets.Compare(lm)      # two samplers, same prompt and seed, step by step

Every callback writes its result to Python attributes (`lab.out`, `lab.figures`, `lab.grid.value`,
`lab.error`, `lab.render_seconds`) so tests can drive the panel headless (`slider.value = x`,
`button.click()`) and read what a person would see.

How views stay light: heatmaps are plotly figure dicts built once per Generate, with z sent as
int8 / float16 typed arrays (base64), never as lists; moving the step scrubber only moves a marker
line in each figure and swaps the token grid's HTML. Nothing is accumulated per step.
"""
from __future__ import annotations

import html
import json
import time

import numpy as np

from . import viz
from .control import Keywords
from .decode import generate
from .samplers import Autoregressive, DraftEdit, EntropyBound, LowConfidence, Threshold

SAMPLERS = ("low_confidence", "random", "threshold", "factor", "entropy_bound", "draft_edit",
            "autoregressive")
PRESETS = {"S mode": dict(threshold=0.5, editing_threshold=0.0),    # LLaDA2.1's speed mode
           "Q mode": dict(threshold=0.7, editing_threshold=0.5)}    # ... and quality mode
USES = {  # which knobs each rule reads (the rest are disabled in the panel)
    "low_confidence": {"steps", "temperature"}, "random": {"steps", "temperature"},
    "threshold": {"threshold", "temperature"}, "factor": {"factor", "temperature"},
    "entropy_bound": {"entropy_bound", "temperature"},
    "draft_edit": {"threshold", "editing_threshold", "temperature"}, "autoregressive": {"temperature"},
}
VIEWS = ("state", "confidence", "commit_step", "edits")
_MIME = "application/vnd.plotly.v1+json"


def make_rule(name: str, *, temperature: float = 0.0, threshold: float = 0.9,
              editing_threshold: float = 0.5, factor: float = 1.0, entropy_bound: float = 0.1):
    """The sampler rule the panel's choices describe."""
    if name not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS}, got {name!r}")
    top_p = 0.9 if temperature > 0 else None
    if name in ("low_confidence", "random"):
        return LowConfidence(temperature=temperature, top_p=top_p, remasking="random" if name == "random"
                             else "low_confidence")
    if name == "threshold":
        return Threshold(threshold=threshold, temperature=temperature, top_p=top_p)
    if name == "factor":
        return Threshold(threshold=None, factor=factor, temperature=temperature, top_p=top_p)
    if name == "entropy_bound":
        return EntropyBound(entropy_bound=entropy_bound, temperature=temperature, top_p=top_p)
    if name == "draft_edit":
        return DraftEdit(threshold=threshold, editing_threshold=editing_threshold,
                         temperature=temperature, top_p=top_p)
    return Autoregressive(temperature=temperature, top_p=top_p)


def figure_dict(trace, lm, kind: str, row: int = 0) -> dict:
    """A heatmap as a plain plotly JSON dict (typed arrays stay base64), plus a step marker shape
    as the last layout shape, so moving the marker is a dict edit, not a rebuild."""
    fig = viz.heatmap(trace, lm, kind, row)
    if kind != "commit_step":
        fig.add_hrect(y0=-0.5, y1=0.5, line=dict(color="#111827", width=2), fillcolor="rgba(0,0,0,0)")
    fig.update_layout(margin=dict(l=50, r=20, t=40, b=40))
    return json.loads(fig.to_json())


def set_marker(fig: dict, step: int) -> None:
    shapes = fig["layout"].get("shapes") or []
    if shapes and shapes[-1].get("type") == "rect":
        shapes[-1].update(y0=step - 0.5, y1=step + 0.5)


def _show(output, figs: list[dict]) -> None:
    """Replace an Output widget's content with these figures (one message, no flicker, and the
    same in a headless test as in the browser)."""
    output.outputs = tuple({"output_type": "display_data", "data": {_MIME: fig}, "metadata": {}}
                           for fig in figs)


def _report(message, error: str) -> str:
    """Show `error` (or clear it) in a panel's message line; returns it for the panel's state."""
    message.value = f'<div style="color:#b91c1c">⚠ {html.escape(error)}</div>' if error else ""
    return error


class _Scrubber:
    """Play + step slider. jslink keeps them in step in the browser; link does it in Python."""

    def __init__(self, on_step):
        import ipywidgets as w
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


class Lab:
    """The panel: prompt, sampler and knobs, Generate; a step scrubber driving heatmaps of the mask
    state, confidence, commit step and edits, the token grid at that step, and the run's stats."""

    def __init__(self, lm, prompt: str = "ROMEO:\nBut soft, what light", *, sampler: str = "low_confidence",
                 gen_length: int = 64, block_length: int = 32, steps: int = 64, temperature: float = 0.0,
                 threshold: float = 0.9, editing_threshold: float = 0.5, seed: int = 0, keywords: str = "",
                 views: tuple[str, ...] = VIEWS, run: bool = True):
        import ipywidgets as w
        self.lm = lm
        bad = sorted(set(views) - set(VIEWS))
        if bad:
            raise ValueError(f"views must be drawn from {VIEWS}, got {bad}")
        self.views = tuple(views)
        sl = dict(continuous_update=False, style={"description_width": "110px"},
                  layout=w.Layout(width="330px"))
        self.prompt = w.Textarea(prompt, description="prompt", layout=w.Layout(width="520px", height="64px"))
        choices = SAMPLERS if lm.kind == "causal" else SAMPLERS[:-1]
        self.sampler = w.Dropdown(options=choices, value=sampler, description="sampler", style=sl["style"])
        self.presets = {name: w.Button(description=name, tooltip=f"DraftEdit {knobs}")
                        for name, knobs in PRESETS.items()}
        self.gen_length = w.IntSlider(gen_length, min=8, max=min(256, lm.max_length - 16), step=8,
                                      description="gen_length", **sl)
        self.block_length = w.IntSlider(block_length, min=4, max=128, step=4, description="block_length", **sl)
        self.steps = w.IntSlider(steps, min=1, max=256, description="steps", **sl)
        self.temperature = w.FloatSlider(temperature, min=0.0, max=2.0, step=0.05, description="temperature", **sl)
        self.threshold = w.FloatSlider(threshold, min=0.05, max=1.0, step=0.05, description="threshold", **sl)
        self.editing_threshold = w.FloatSlider(editing_threshold, min=0.0, max=1.0, step=0.05,
                                               description="editing_threshold", **sl)
        self.factor = w.FloatSlider(1.0, min=0.1, max=4.0, step=0.1, description="factor", **sl)
        self.entropy_bound = w.FloatSlider(0.1, min=0.01, max=2.0, step=0.01, description="entropy_bound", **sl)
        self.keywords = w.Text(keywords, description="keywords", placeholder="crown, night, sword",
                               style=sl["style"], layout=w.Layout(width="340px"))
        self.seed = w.IntText(seed, description="seed", style=sl["style"], layout=w.Layout(width="220px"))
        self.generate_button = w.Button(description="Generate", button_style="primary", icon="play")
        self.scrubber = _Scrubber(self.show_step)
        self.grid = w.HTML()
        self.stats = w.HTML()
        self.message = w.HTML()
        self.heatmaps = w.Output()

        self.out = None                 # the last Output (ids, texts, trace, stats)
        self.figures: dict[str, dict] = {}
        self.step = 0
        self.error = ""
        self.render_seconds = 0.0       # Generate → everything re-rendered, last press

        self.generate_button.on_click(lambda _: self.run())
        for name, button in self.presets.items():
            button.on_click(lambda _, name=name: self.apply_preset(name))
        self.sampler.observe(lambda _: self._enable(), names="value")
        self._enable()
        knobs = [self.gen_length, self.block_length, self.steps, self.temperature, self.threshold,
                 self.editing_threshold, self.factor, self.entropy_bound]
        self.widget = w.VBox([
            self.prompt,
            w.HBox([self.sampler, *self.presets.values()]),
            w.GridBox(knobs, layout=w.Layout(grid_template_columns="repeat(2, 340px)")),
            w.HBox([self.keywords, self.seed, self.generate_button]),
            self.message, self.scrubber.box, self.grid, self.stats, self.heatmaps,
        ])
        if run:
            self.run()

    # --- callbacks -------------------------------------------------------------------------
    def _enable(self) -> None:
        uses = USES[self.sampler.value]
        for knob in ("steps", "temperature", "threshold", "editing_threshold", "factor", "entropy_bound"):
            getattr(self, knob).disabled = knob not in uses

    def rule(self):
        return make_rule(self.sampler.value, temperature=self.temperature.value,
                         threshold=self.threshold.value, editing_threshold=self.editing_threshold.value,
                         factor=self.factor.value, entropy_bound=self.entropy_bound.value)

    def controls(self) -> list:
        """The keyword box as a Keywords control: comma-separated words, each must appear."""
        words = [k.strip() for k in self.keywords.value.split(",")]
        if not any(words):
            return []
        if not all(words):
            raise ValueError(f"keywords: empty keyword in {self.keywords.value!r}; separate words with commas")
        return [Keywords(words)]

    def settings(self) -> dict:
        return dict(gen_length=self.gen_length.value, block_length=self.block_length.value,
                    steps=self.steps.value, seed=self.seed.value)

    def apply_preset(self, name: str) -> None:
        """S mode / Q mode: DraftEdit with LLaDA2.1's thresholds and block 32 (the whole answer
        when gen_length is not a multiple of 32), then Generate."""
        if name not in PRESETS:
            raise ValueError(f"preset must be one of {tuple(PRESETS)}, got {name!r}")
        self.sampler.value = "draft_edit"
        self.threshold.value = PRESETS[name]["threshold"]
        self.editing_threshold.value = PRESETS[name]["editing_threshold"]
        self.block_length.value = 32 if self.gen_length.value % 32 == 0 else self.gen_length.value
        self.run()

    def run(self):
        """Generate with the panel's settings and re-render every view. A bad combination of
        knobs shows its message in the panel and keeps the last good run on screen."""
        t0 = time.perf_counter()
        try:
            out = generate(self.lm, self.prompt.value, self.rule(), controls=self.controls(), **self.settings())
        except ValueError as e:
            self.error = _report(self.message, str(e))
            return None
        self.error = _report(self.message, "")
        self.out = out
        self.figures = {kind: figure_dict(out.trace, self.lm, kind) for kind in self.views
                        if kind != "edits" or viz._has_edits(out.trace, 0)}
        s = out.stats
        self.stats.value = viz.stats_table({
            "sampler": out.trace.meta["sampler"], "NFE": s["nfe"], "TPF": s["tpf"],
            "tokens/s": s["tps"], "decode s": s["seconds"], "answer": out.texts[0][:120]})
        self.step = -1                      # force the redraw even if the slider does not move
        self.scrubber.reset(len(out.trace))
        if self.step != len(out.trace) - 1:
            self.show_step(len(out.trace) - 1)
        self.render_seconds = time.perf_counter() - t0
        return out

    def show_step(self, step: int) -> None:
        """Point every view at `step`: marker on the heatmaps, token grid, step label."""
        if self.out is None:
            return
        trace = self.out.trace
        step = max(0, min(int(step), len(trace) - 1))
        self.step = step
        rec = trace[step]
        masks = int((rec.tokens[0, trace.prompt_len:] == trace.mask_id).sum())   # this step only
        self.scrubber.label.value = (f"block {rec.block} · {int(rec.committed[0].sum())} committed"
                                     f" · {int(rec.edited[0].sum())} edited · {masks} masks left")
        self.grid.value = viz.token_grid(trace, self.lm, step=step)
        for fig in self.figures.values():
            set_marker(fig, step)
        _show(self.heatmaps, list(self.figures.values()))

    def _ipython_display_(self):
        from IPython.display import display
        display(self.widget)


class Compare:
    """Two samplers on the same prompt, seed and canvas, aligned step by step: one scrubber moves
    both; a run that finished earlier stays on its last step."""

    def __init__(self, lm, prompt: str = "ROMEO:\nBut soft, what light", *, left: str = "low_confidence",
                 right: str = "draft_edit", gen_length: int = 64, block_length: int = 32, steps: int = 64,
                 seed: int = 0, left_knobs: dict | None = None, right_knobs: dict | None = None,
                 run: bool = True):
        import ipywidgets as w
        self.lm = lm
        self.prompt = w.Textarea(prompt, description="prompt", layout=w.Layout(width="520px", height="64px"))
        choices = SAMPLERS if lm.kind == "causal" else SAMPLERS[:-1]
        self.left = w.Dropdown(options=choices, value=left, description="left")
        self.right = w.Dropdown(options=choices, value=right, description="right")
        self.knobs = {"left": dict(left_knobs or {}), "right": dict(right_knobs or PRESETS["S mode"])}
        self.seed = w.IntText(seed, description="seed", layout=w.Layout(width="220px"))
        self.canvas = dict(gen_length=gen_length, block_length=block_length, steps=steps)
        self.generate_button = w.Button(description="Compare", button_style="primary")
        self.scrubber = _Scrubber(self.show_step)
        self.panes = {side: dict(title=w.HTML(), grid=w.HTML(), heatmap=w.Output()) for side in ("left", "right")}
        self.message = w.HTML()
        self.outs: dict[str, object] = {}
        self.figures: dict[str, dict] = {}
        self.step = 0
        self.error = ""
        self.generate_button.on_click(lambda _: self.run())
        col = lambda p: w.VBox([p["title"], p["grid"], p["heatmap"]], layout=w.Layout(width="50%"))  # noqa: E731
        self.widget = w.VBox([self.prompt, w.HBox([self.left, self.right, self.seed, self.generate_button]),
                              self.message, self.scrubber.box,
                              w.HBox([col(self.panes["left"]), col(self.panes["right"])])])
        if run:
            self.run()

    def run(self):
        try:
            outs = {side: generate(self.lm, self.prompt.value,
                                   make_rule(getattr(self, side).value, **self.knobs[side]),
                                   seed=self.seed.value, **self.canvas)
                    for side in ("left", "right")}
        except ValueError as e:
            self.error = _report(self.message, str(e))
            return None
        self.error = _report(self.message, "")
        self.outs = outs
        self.figures = {side: figure_dict(o.trace, self.lm, "state") for side, o in outs.items()}
        for side, o in outs.items():
            s = o.stats
            self.panes[side]["title"].value = (f"<b>{html.escape(o.trace.meta['sampler'])}</b><br>"
                                               f"NFE {s['nfe']} · TPF {s['tpf']:.2f} · {s['tps']:.0f} tok/s")
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
            set_marker(self.figures[side], s)
            _show(self.panes[side]["heatmap"], [self.figures[side]])
        lens = {side: len(o.trace) for side, o in self.outs.items()}
        self.scrubber.label.value = f"step {self.step} · steps taken: left {lens['left']}, right {lens['right']}"

    def _ipython_display_(self):
        from IPython.display import display
        display(self.widget)


def regenerate_latency(lm, repeats: int = 5, **settings) -> dict:
    """The panel's responsiveness, on a headless Lab: seconds from pressing Generate to every view
    re-rendered (median and max of `repeats` presses, each with a new seed), split into decoding
    and rendering, and the seconds one move of the step scrubber takes."""
    lab = Lab(lm, run=False, **settings)
    lab.run()                                           # warm-up (first-call costs)
    total, decode = [], []
    for i in range(repeats):
        lab.seed.value = i + 1
        lab.generate_button.click()
        total.append(lab.render_seconds)
        decode.append(lab.out.stats["seconds"])
    scrub = []
    for s in range(0, len(lab.out.trace), max(1, len(lab.out.trace) // 16)):
        t0 = time.perf_counter()
        lab.scrubber.slider.value = s
        scrub.append(time.perf_counter() - t0)
    return {"generate_median_s": round(float(np.median(total)), 3), "generate_max_s": round(max(total), 3),
            "decode_median_s": round(float(np.median(decode)), 3),
            "render_median_s": round(float(np.median(np.subtract(total, decode))), 3),
            "scrub_median_s": round(float(np.median(scrub)), 4), "steps": len(lab.out.trace),
            "gen_length": lab.gen_length.value, "sampler": lab.out.trace.meta["sampler"],
            "figure_bytes": sum(len(json.dumps(f)) for f in lab.figures.values())}
