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
import threading
import time

from .. import defaults
from ..controls import Keywords
from ..decode import generate
from ..models.handle import Denoiser
from ..models.load import EMBEDDED, load
from ..samplers import registry
from ..trace import Trace
from . import viz

# the rules the sampler menu offers (S and Q mode are buttons: draft_edit with their thresholds)
SAMPLERS = tuple(n for n in registry.NAMES if n not in registry.PRESETS)
PRESETS = {"S mode": "speed", "Q mode": "quality"}       # button → registry preset
KNOBS = ("steps", "temperature", "top_p", "threshold", "editing_threshold", "factor", "entropy_bound")
USES = {name: {k for k in KNOBS if k in registry.knobs(name)} | {"temperature"}
        | ({"steps"} if registry.budgeted(name) else set()) for name in registry.NAMES}
MAX_GEN_LENGTH = 256     # the gen_length slider's end
PROMPT_ROOM = 16          # context positions the slider leaves for a prompt
VIEWS = ("state", "confidence", "commit_step", "edits")
LIVE_EVERY = 0.25         # seconds between token-grid redraws while a run decodes
_MIME = "application/vnd.plotly.v1+json"


class Stopped(Exception):
    """Raised inside a run when Stop is pressed; the panel keeps what was decoded so far."""


def make_rule(name: str, *, temperature: float = 0.0, threshold: float = 0.9, editing_threshold: float = 0.5,
              factor: float = 1.0, entropy_bound: float = 0.1, top_p: float | None = None):
    """The sampler rule the panel's choices describe: the knobs `name` reads, the rest ignored;
    at temperature > 0 top_p (None: the lab's nucleus, registry.DEFAULT_TOP_P), as in `labkit generate`."""
    given = dict(threshold=threshold, editing_threshold=editing_threshold, factor=factor,
                 entropy_bound=entropy_bound)
    reads = registry.knobs(name)                       # ValueError for an unknown name
    return registry.rule(name, **registry.sampling(temperature, top_p),
                         **{k: v for k, v in given.items() if k in reads})


def preset_knobs(preset: str) -> dict:
    """The thresholds of a registry preset ("speed" / "quality"), read off the rule itself."""
    rule = registry.rule(preset)
    return dict(threshold=rule.threshold, editing_threshold=rule.editing_threshold)


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


def _show(output, figs: list[dict]) -> None:
    """Replace an Output widget's content with these figures (one message, no flicker, and the
    same in a headless test as in the browser)."""
    output.outputs = tuple({"output_type": "display_data", "data": {_MIME: fig}, "metadata": {}}
                           for fig in figs)


def _report(message, error: str) -> str:
    """Show `error` (or clear it) in a panel's message line; returns it for the panel's state."""
    message.value = f'<div style="color:#b91c1c">⚠ {html.escape(error)}</div>' if error else ""
    return error


def _notice(widget, text: str | None) -> str:
    """Show a note (amber: true, but worth knowing) or clear it; returns the text."""
    widget.value = f'<div style="color:#92400e">ⓘ {html.escape(text)}</div>' if text else ""
    return text or ""


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

    def enable(self, on: bool) -> None:
        self.slider.disabled = self.play.disabled = not on


def _step_budget(rule_name: str, settings: dict, max_post: int) -> str:
    """'of 64' for a rule that spends its step budget, 'of at most 128' for one that runs until
    each block is done."""
    if registry.budgeted(rule_name):
        return f"of {settings['steps']}"
    blocks = settings["gen_length"] // settings["block_length"]
    return f"of at most {blocks * (settings['block_length'] + max_post)}"


class _Models:
    """The panel's model menu: the handle it was opened with plus the embedded models, each
    loaded on first use (on the handle's device) and kept."""

    def __init__(self, lm: Denoiser):
        self.loaded = {lm.name: lm}
        self.names = tuple(dict.fromkeys([lm.name, *EMBEDDED]))
        self.device = lm.device

    def get(self, name: str):
        if name not in self.loaded:
            if name not in EMBEDDED:
                raise ValueError(f"model must be one of {self.names}, got {name!r}")
            self.loaded[name] = load(name, device=self.device)
        return self.loaded[name]


class Lab:
    """The panel: model, prompt, sampler and knobs, Generate; a step scrubber driving heatmaps of
    the mask state, confidence, commit step and edits, the token grid at that step, and the run's
    stats. While a run decodes, the token grid follows it (redrawn every `live_every` seconds; 0:
    every step; None: not at all) and so does the mask-state heatmap (at most every fourth grid
    redraw and 5% of the time), a progress line counts the steps, Generate becomes Stop, and the
    other controls wait until the run is done.

    From code: `lab.run()` decodes and returns when done; the buttons (`.click()`) start the same
    run in the background, as the mouse does, and `lab.wait()` waits for it."""

    def __init__(self, lm: Denoiser, prompt: str = "ROMEO:\nBut soft, what light", *, sampler: str | None = None,
                 gen_length: int = 64, block_length: int = 32, steps: int = 64, temperature: float = 0.0,
                 threshold: float = 0.9, editing_threshold: float = 0.5, seed: int = 0, keywords: str = "",
                 views: tuple[str, ...] = VIEWS, run: bool = True, live_every: float = LIVE_EVERY):
        bad = sorted(set(views) - set(VIEWS))
        if bad:
            raise ValueError(f"views must be drawn from {VIEWS}, got {bad}")
        self.views = tuple(views)
        self.live_every = live_every
        self.models = _Models(lm)
        self.lm = lm
        choices = self._sampler_choices(lm)
        if sampler is None:                 # the family's default (LLaDA2.x: Q mode), else low_confidence
            own = lm.family.default_sampler if lm.family is not None else None
            if own in registry.PRESETS:     # a preset is draft_edit with its thresholds
                own, (threshold, editing_threshold) = "draft_edit", preset_knobs(own).values()
            sampler = own if own in choices else choices[0]
        if sampler not in choices:
            raise ValueError(f"sampler must be one of {', '.join(choices)} for model {lm.name!r}, got {sampler!r}")
        self._controls(prompt, choices, sampler, keywords, seed)
        self._knobs(lm, gen_length, block_length, steps, temperature, threshold, editing_threshold)
        self._outputs()
        self._wire()
        if run:
            self.run()

    def _controls(self, prompt: str, choices, sampler: str, keywords: str, seed: int) -> None:
        import ipywidgets as w
        style = {"description_width": "110px"}
        self.model = w.Dropdown(options=self.models.names, value=self.lm.name, description="model", style=style)
        self.model_chosen = False       # set when the user picks a model; presets then keep it
        self.prompt = w.Textarea(prompt, description="prompt", layout=w.Layout(width="520px", height="64px"))
        self.chat = w.Checkbox(False, description="as a chat message", indent=False,
                               tooltip="send the prompt through the model's chat template (instruct models)")
        self.sampler = w.Dropdown(options=choices, value=sampler, description="sampler", style=style)
        self.presets = {label: w.Button(description=label, tooltip=f"{name}: DraftEdit {preset_knobs(name)}")
                        for label, name in PRESETS.items()}
        self.keywords = w.Text(keywords, description="keywords", placeholder="crown, night, sword",
                               style=style, layout=w.Layout(width="340px"))
        self.seed = w.IntText(seed, description="seed", style=style, layout=w.Layout(width="220px"))
        self.generate_button = w.Button(description="Generate", button_style="primary", icon="play")
        self.progress = w.HTML()

    def _knobs(self, lm: Denoiser, gen_length, block_length, steps, temperature, threshold, editing_threshold) -> None:
        import ipywidgets as w
        sl = dict(continuous_update=False, style={"description_width": "110px"}, layout=w.Layout(width="330px"))
        longest = min(MAX_GEN_LENGTH, lm.max_length - PROMPT_ROOM) if lm.max_length else MAX_GEN_LENGTH
        self.gen_length = w.IntSlider(gen_length, min=8, max=max(8, longest), step=8,
                                      description="gen_length", **sl)
        self.block_length = w.IntSlider(block_length, min=4, max=128, step=4, description="block_length", **sl)
        self.steps = w.IntSlider(steps, min=1, max=256, description="steps", **sl)
        self.temperature = w.FloatSlider(temperature, min=0.0, max=2.0, step=0.05, description="temperature", **sl)
        self.top_p = w.FloatSlider(registry.DEFAULT_TOP_P, min=0.05, max=1.0, step=0.05, description="top_p",
                                   description_tooltip="the nucleus sampled from at temperature > 0 "
                                                       f"(lab default {registry.DEFAULT_TOP_P})", **sl)
        self.threshold = w.FloatSlider(threshold, min=0.05, max=1.0, step=0.05, description="threshold", **sl)
        self.editing_threshold = w.FloatSlider(editing_threshold, min=0.0, max=1.0, step=0.05,
                                               description="editing_threshold", **sl)
        self.factor = w.FloatSlider(1.0, min=0.1, max=4.0, step=0.1, description="factor", **sl)
        self.entropy_bound = w.FloatSlider(0.1, min=0.01, max=2.0, step=0.01, description="entropy_bound", **sl)

    def _outputs(self) -> None:
        import ipywidgets as w
        self.scrubber = _Scrubber(self.show_step)
        self.grid, self.stats, self.message, self.note = w.HTML(), w.HTML(), w.HTML(), w.HTML()
        self.heatmaps = w.Output()
        self.out = None                 # the last finished Output (ids, texts, trace, stats)
        self.trace = None               # the trace on screen: the last run, finished or stopped
        self.figures: dict[str, dict] = {}
        self.step = 0
        self.error = ""
        self.notice = ""                # the note under the knobs (model switched, not parallel, ...)
        self.render_seconds = 0.0       # Generate → everything re-rendered, last press
        self.redraws = 0                # live redraws during the last run
        self.running = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._switching = False

    def _wire(self) -> None:
        import ipywidgets as w
        self.generate_button.on_click(lambda _: self._press())
        for label, button in self.presets.items():
            button.on_click(lambda _, label=label: self.start(lambda: self.apply_preset(label)))
        self.sampler.observe(lambda _: self._enable(), names="value")
        self.temperature.observe(lambda _: self._enable(), names="value")
        self.model.observe(self._model_changed, names="value")
        self._enable()
        knobs = [self.gen_length, self.block_length, self.steps, self.temperature, self.top_p, self.threshold,
                 self.editing_threshold, self.factor, self.entropy_bound]
        self.widget = w.VBox([
            w.HBox([self.model, self.prompt, self.chat]),
            w.HBox([self.sampler, *self.presets.values()]),
            w.GridBox(knobs, layout=w.Layout(grid_template_columns="repeat(2, 340px)")),
            w.HBox([self.keywords, self.seed, self.generate_button, self.progress]),
            self.message, self.note, self.scrubber.box, self.grid, self.stats, self.heatmaps,
        ])

    # --- choices ---------------------------------------------------------------------------
    @staticmethod
    def _sampler_choices(lm: Denoiser) -> tuple[str, ...]:
        """A causal model decodes left to right only; a masked one takes every diffusion rule."""
        return tuple(n for n in registry.names_for(lm.kind) if n in SAMPLERS)

    def prompt_value(self):
        """The prompt box as the loop takes it: text, or one user message when `chat` is ticked."""
        return [{"role": "user", "content": self.prompt.value}] if self.chat.value else self.prompt.value

    def _enable(self) -> None:
        self.chat.disabled = not getattr(self.lm.tokenizer, "chat_template", None)   # no template: text only
        if self.chat.disabled:
            self.chat.value = False
        uses = USES[self.sampler.value]
        for knob in KNOBS:
            getattr(self, knob).disabled = knob not in uses
        self.top_p.disabled = self.temperature.value == 0             # greedy: no nucleus
        random_draws = self.temperature.value > 0 or self.sampler.value == "random"
        self.seed.disabled = not random_draws
        self.seed.description_tooltip = ("" if random_draws else
                                         "temperature 0 is greedy: the seed changes nothing")

    def _model_changed(self, change) -> None:
        if self._switching and change["new"] == self.lm.name:
            return                                  # putting the menu back after a failed load
        if not self._switching:
            self.model_chosen = True
        self._use_model(change["new"])

    def _use_model(self, name: str) -> None:
        """Make `name` the panel's model (loading it on first use) and offer its rules."""
        try:
            lm = self.models.get(name)
        except (ValueError, FileNotFoundError) as e:
            self.error = _report(self.message, str(e))
            self._switching = True                  # the menu shows the model in use
            try:
                self.model.value = self.lm.name
            finally:
                self._switching = False
            return
        self.lm = lm
        choices = self._sampler_choices(lm)
        if tuple(self.sampler.options) != choices:
            keep = self.sampler.value if self.sampler.value in choices else choices[0]
            self.sampler.options = choices
            self.sampler.value = keep
        self._enable()

    def select_model(self, name: str) -> None:
        """Choose the model, as the menu does (presets then keep it)."""
        self.model.value = name

    # --- settings --------------------------------------------------------------------------
    def rule(self):
        return make_rule(self.sampler.value, temperature=self.temperature.value, top_p=self.top_p.value,
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

    def apply_preset(self, label: str):
        """S mode / Q mode: DraftEdit with LLaDA2.1's thresholds and block 32 (the whole answer
        when gen_length is not a multiple of 32), then Generate. Unless the user picked the model,
        an embedded model that cannot decode in parallel gives way to defaults.PARALLEL_MODEL."""
        if label not in PRESETS:
            raise ValueError(f"preset must be one of {tuple(PRESETS)}, got {label!r}")
        switched = None
        if (not self.model_chosen and self.lm.name in EMBEDDED and self.lm.name != defaults.PARALLEL_MODEL):
            switched = self.lm.name
            self._switching = True
            try:
                self.model.value = defaults.PARALLEL_MODEL
            finally:
                self._switching = False
        if self.lm.kind == "causal":
            self.error = _report(self.message, f"{label} needs a masked diffusion model; {self.lm.name} is "
                                 f"causal (left to right only): pick another model in the menu")
            return None
        self.sampler.value = "draft_edit"
        knobs = preset_knobs(PRESETS[label])
        self.threshold.value = knobs["threshold"]
        self.editing_threshold.value = knobs["editing_threshold"]
        self.block_length.value = 32 if self.gen_length.value % 32 == 0 else self.gen_length.value
        out = self.run()
        if switched and out is not None and not self.notice:
            self.notice = _notice(self.note, f"{label} runs on {defaults.PARALLEL_MODEL}, the lab's model for "
                                  f"parallel decoding ({switched} commits about one token per forward "
                                  f"pass); pick a model in the menu to keep your own")
        return out

    # --- running ---------------------------------------------------------------------------
    def _press(self) -> None:
        """Generate, or Stop while a run is decoding."""
        if self.running:
            self.stop()
        else:
            self.start(self.run)

    def start(self, job=None) -> None:
        """Run `job` (default: Generate) in the background, so the panel stays live. The panel is
        busy (Generate reads Stop) from now until the job, drawing included, is done."""
        if self.running or (self._thread is not None and self._thread.is_alive()):
            return
        self._stop.clear()
        self.running = True                 # before the thread starts: a second press means Stop
        self._busy(True)
        self._thread = threading.Thread(target=self._background, args=(job or self.run,), daemon=True)
        self._thread.start()

    def _background(self, job) -> None:
        try:
            job()
        except Exception as e:              # a background thread has nowhere else to report
            self.error = _report(self.message, f"{type(e).__name__}: {e}")
        finally:
            self._stop.clear()              # a late Stop does not carry over to the next run
            self.running = False
            self._busy(False)

    def stop(self) -> None:
        """Stop the run that is decoding after its current step; what it decoded stays on screen."""
        self._stop.set()

    def wait(self, timeout: float | None = None) -> None:
        """Wait for a run started by a button (or `start`) to finish."""
        if self._thread is not None:
            self._thread.join(timeout)

    def _busy(self, on: bool) -> None:
        """While a run is busy, Generate reads Stop and every other control waits."""
        b = self.generate_button
        b.description, b.icon, b.button_style = ("Stop", "stop", "warning") if on else ("Generate", "play", "primary")
        self.scrubber.enable(not on)
        for control in (self.model, self.prompt, self.chat, self.sampler, self.keywords, self.seed, self.gen_length,
                        self.block_length, *self.presets.values()):
            control.disabled = on
        if on:
            for knob in KNOBS:
                getattr(self, knob).disabled = True
        else:
            self.progress.value = ""
            self._enable()

    def run(self):
        """Generate with the panel's settings, drawing the run as it decodes, then re-render every
        view. A bad combination of knobs shows its message in the panel and keeps the last good
        run on screen; Stop keeps the steps decoded so far. From code it returns when done; while
        a run started by a button decodes, it is refused with a message."""
        mine = threading.current_thread() is self._thread       # the body of a background job
        if self.running and not mine:
            self.error = _report(self.message, "a run is still decoding: press Stop or wait for it")
            return None
        if not mine:                        # a run from code owns the panel until it is drawn
            self._stop.clear()
            self.running = True
            self._busy(True)
        try:
            return self._run()
        finally:
            if not mine:
                self.running = False
                self._busy(False)

    def _run(self):
        t0 = time.perf_counter()
        lm, rule_name = self.lm, self.sampler.value         # fixed for this run
        try:
            rule, controls, settings = self.rule(), self.controls(), self.settings()
        except ValueError as e:
            self.error = _report(self.message, str(e))
            return None
        self.redraws = 0
        started: list[Trace] = []           # the run's trace, handed over before its first step
        budget = _step_budget(rule_name, settings, rule.max_post_steps)
        start = time.perf_counter()
        next_grid, next_heat = [start + (self.live_every or 0)], [start + 4 * (self.live_every or 0)]

        def on_step(rec):
            self.progress.value = f"decoding: step {rec.step + 1} {budget} · block {rec.block + 1}"
            if self._stop.is_set():
                raise Stopped
            now = time.perf_counter()
            if self.live_every is None or now < next_grid[0]:
                return
            heat = now >= next_heat[0]
            self._draw_live(started[0], heat)
            self.redraws += 1
            next_grid[0] = now + self.live_every
            if heat:       # the heatmap costs ~50 ms: at most every 4 grid redraws and 5% of the time
                cost = time.perf_counter() - now
                next_heat[0] = now + (max(4 * self.live_every, 20 * cost) if self.live_every else 0.0)

        try:
            out = generate(lm, self.prompt_value(), rule, controls=controls, on_start=started.append,
                           on_step=on_step, **settings)
        except ValueError as e:
            self.error = _report(self.message, str(e))
            return None
        except Stopped:
            out = None
        self.error = _report(self.message, "")
        if out is None:                     # stopped
            trace = started[0]
            if not len(trace):
                return None
            self.notice = _notice(self.note, f"stopped after {len(trace)} steps; Generate decodes again")
            self.stats.value = viz.stats_table({"model": lm.name, "sampler": repr(rule), "NFE": len(trace),
                                                "stopped": "yes"})
            self._draw(trace, step=len(trace) - 1)
            self.render_seconds = time.perf_counter() - t0
            return None
        self.out = out
        self.notice = _notice(self.note, defaults.parallel_note(lm.name, rule_name, out.stats["tpf"]))
        s = out.stats
        self.stats.value = viz.stats_table({
            "model": lm.name, "sampler": out.trace.meta["sampler"], "NFE": s["nfe"], "TPF": s["tpf"],
            "tokens/s": s["tps"], "decode s": s["seconds"], "answer": out.texts[0][:120]})
        self._draw(out.trace, step=len(out.trace) - 1)
        self.render_seconds = time.perf_counter() - t0
        return out

    def _draw(self, trace, step: int) -> None:
        """Build the heatmaps of `trace`, reset the scrubber to it and point every view at `step`."""
        self.trace = trace
        self.figures = {kind: figure_dict(trace, self.lm, kind) for kind in self.views
                        if kind != "edits" or viz._has_edits(trace, 0)}
        self.step = -1                      # force the redraw even if the slider does not move
        self.scrubber.reset(len(trace))
        if self.step != len(trace) - 1:
            self.show_step(len(trace) - 1)

    def _draw_live(self, trace, heatmap: bool) -> None:
        """The run so far, while it decodes: the token grid and the step label (cheap), and with
        `heatmap` the mask-state heatmap too; the other views appear when the run is done."""
        self.trace = trace
        if heatmap and "state" in self.views:
            self.figures = {"state": figure_dict(trace, self.lm, "state")}
        self._point(len(trace) - 1, figures=heatmap and "state" in self.views)

    def show_step(self, step: int) -> None:
        """Point every view at `step`: marker on the heatmaps, token grid, step label."""
        if self.trace is None:
            return
        self._point(step)

    def _point(self, step: int, figures: bool = True) -> None:
        trace = self.trace
        step = max(0, min(int(step), len(trace) - 1))
        self.step = step
        rec = trace[step]
        masks = int((rec.tokens[0, trace.prompt_len:] == trace.mask_id).sum())   # this step only
        self.scrubber.label.value = (f"block {rec.block} · {int(rec.committed[0].sum())} committed"
                                     f" · {int(rec.edited[0].sum())} edited · {masks} masks left")
        self.grid.value = viz.token_grid(trace, self.lm, step=step)
        if figures:
            self.figures = {k: with_marker(f, step) for k, f in self.figures.items()}
            _show(self.heatmaps, list(self.figures.values()))

    def _ipython_display_(self):
        from IPython.display import display
        display(self.widget)


class Compare:
    """Two samplers on the same model, prompt, seed and canvas, aligned step by step: one scrubber
    moves both; a run that finished earlier stays on its last step. `left` / `right` are rule
    names (labkit.samplers.registry.NAMES, "speed" and "quality" included)."""

    def __init__(self, lm: Denoiser, prompt: str = "ROMEO:\nBut soft, what light", *, left: str = "low_confidence",
                 right: str = "speed", gen_length: int = 64, block_length: int = 32, steps: int = 64,
                 seed: int = 0, left_knobs: dict | None = None, right_knobs: dict | None = None,
                 run: bool = True):
        import ipywidgets as w
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
        self.canvas = dict(gen_length=gen_length, block_length=block_length, steps=steps)
        self.generate_button = w.Button(description="Compare", button_style="primary")
        self.scrubber = _Scrubber(self.show_step)
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
            self.error = _report(self.message, str(e))
            return None
        self.error = _report(self.message, "")
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
            _show(self.panes[side]["heatmap"], [self.figures[side]])
        lens = {side: len(o.trace) for side, o in self.outs.items()}
        self.scrubber.label.value = f"step {self.step} · steps taken: left {lens['left']}, right {lens['right']}"

    def _ipython_display_(self):
        from IPython.display import display
        display(self.widget)
