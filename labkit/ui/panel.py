"""The Lab panel: turn the knobs and scrub through one denoising run (`lk.widgets.Lab(lm)`).

Every callback writes its result to Python attributes (`lab.out`, `lab.figures`, `lab.grid.value`,
`lab.error`, `lab.render_seconds`) so tests can drive the panel headless (`slider.value = x`,
`button.click()`) and read what a person would see.

Where `Lab`'s parts are:

    the knobs      knob_names, uses, make_rule, preset_knobs, knob_widget and `_Knobs` (the widgets
                   built from the knob descriptions, which of them the chosen rule reads, the
                   rule they describe): the section below
    the models     `ModelMenu` and `_ModelChoice` (switching the model, and the rules it offers)
    Lab            building the panel, reading its settings, the S / Q mode presets
    a run          `Running` and `Drawing` in `ui/panel_run.py`
"""
from __future__ import annotations

from .. import defaults
from ..controls import Keywords
from ..decode import block_for
from ..models.formats import formats_of
from ..models.handle import Denoiser, model_block
from ..models.load import EMBEDDED, load
from ..samplers import knobs as kn  # `knobs`: the keyword arguments of make_rule below
from ..samplers import registry
from ..tasks import answer_length, example_prompt, is_task_model, model_tasks
from .panel_run import Drawing, Running
from .plumbing import Scrubber, show_error, show_notice

MAX_GEN_LENGTH = 256     # the gen_length slider's end
PROMPT_ROOM = 16          # context positions the slider leaves for a prompt
VIEWS = ("state", "confidence", "commit_step", "edits")
DEFAULT_PROMPT = "ROMEO:\nBut soft, what light"
LIVE_EVERY = 0.25         # seconds between token-grid redraws while a run decodes


# --- the knobs and the rule they describe ------------------------------------------------------
# the rules the sampler menu offers (S and Q mode are buttons: draft_edit with their thresholds)
SAMPLERS = tuple(n for n in registry.NAMES if n not in registry.PRESETS)
PRESETS = {"S mode": "speed", "Q mode": "quality"}       # button → registry preset


def knob_names() -> tuple[str, ...]:
    """The knobs the panel shows, besides gen_length and block_length: steps, the sampling knobs
    and every rule knob of the registry (read now: a rule added to the registry brings its knobs)."""
    return ("steps", "temperature", "top_p", *registry.rule_knobs())


def uses(name: str) -> set[str]:
    """The panel knobs rule `name` reads (top_p counts only at temperature > 0: `_enable`)."""
    return ({k for k in knob_names() if k in registry.knobs(name)} | {"temperature"}
            | ({"steps"} if registry.budgeted(name) else set()))


def make_rule(name: str, *, temperature: float = 0.0, top_p: float | None = None, **knobs):
    """The sampler rule the panel's choices describe: the knobs `name` reads, the rest ignored;
    at temperature > 0 top_p (None: the lab's nucleus, registry.DEFAULT_TOP_P), as in `labkit generate`."""
    reads = registry.knobs(name)                       # KnobError for an unknown name
    return registry.rule(name, **registry.sampling(temperature, top_p),
                         **{k: v for k, v in knobs.items() if k in reads})


def preset_knobs(preset: str) -> dict:
    """The thresholds of a registry preset ("speed" / "quality"), read off the rule itself."""
    rule = registry.rule(preset)
    return dict(threshold=rule.threshold, editing_threshold=rule.editing_threshold)


def knob_widget(knob, value, **sl):
    """The widget of one described knob: a slider over its panel range, a menu of its choices."""
    import ipywidgets as w  # the lab's extra: the panel's knob tables import without it

    tip = dict(description_tooltip=f"{knob.help} ({knob.allowed()})")
    if knob.kind is str:
        return w.Dropdown(options=knob.choices, value=value, description=knob.name, style=sl["style"],
                          layout=sl["layout"], **tip)
    lo, hi, step = knob.slider
    slider = w.IntSlider if knob.kind is int else w.FloatSlider
    return slider(value, min=lo, max=hi, step=step, description=knob.name, **sl, **tip)


class _Knobs:
    """Lab's knob widgets (gen_length and block_length, then one per `knob_names()`, each built
    from its description with the chosen rule's own default), which of them the chosen rule reads
    (`_enable`; `Lab._busy` greys every knob out while a run decodes), and the rule they describe
    (`rule()`). Choosing another rule in the menu puts its own defaults on the knobs it reads."""

    def _knobs(self, lm: Denoiser, sampler: str, gen_length, block_length, steps, temperature, given: dict) -> None:
        import ipywidgets as w  # the lab's extra: the panel's knob tables import without it

        sl = dict(continuous_update=False, style={"description_width": "110px"}, layout=w.Layout(width="330px"))
        longest = min(MAX_GEN_LENGTH, lm.max_length - PROMPT_ROOM) if lm.max_length else MAX_GEN_LENGTH
        longest = max([longest, *(f.answer for f in formats_of(lm))])   # a task model: its answers fit
        self.gen_length = w.IntSlider(gen_length, min=1, max=max(8, longest), step=1,
                                      description="gen_length", **sl)
        self.block_length = w.IntSlider(block_length, min=1, max=128, step=1, description="block_length", **sl)
        self.steps = knob_widget(kn.STEPS, steps, **sl)
        self.temperature = knob_widget(kn.TEMPERATURE, temperature, **sl)
        self.top_p = knob_widget(kn.TOP_P, registry.DEFAULT_TOP_P, **sl)
        self.top_p.description_tooltip = ("the nucleus sampled from at temperature > 0 "
                                          f"(lab default {registry.DEFAULT_TOP_P})")
        for name, knob in registry.rule_knobs().items():
            value = given.get(name)
            setattr(self, name, knob_widget(knob, self._own_default(name, sampler) if value is None else value, **sl))

    @staticmethod
    def _own_default(knob: str, sampler: str):
        """The value a knob starts at: the rule's own, or (a knob it does not read) its first reader's."""
        for name in (sampler, *registry.readers(knob)):
            own = registry.defaults(name)
            if own.get(knob) is not None:
                return own[knob]
        return None

    def knob_widgets(self) -> list:
        return [getattr(self, k) for k in knob_names()]

    def _rule_changed(self, change) -> None:
        """Another rule in the menu: its own defaults on the rule knobs it reads."""
        own = registry.defaults(change["new"])
        for name in registry.rule_knobs():
            if name in own and own[name] is not None:
                getattr(self, name).value = own[name]
        self._enable()

    def _enable(self) -> None:
        self.chat.disabled = not getattr(self.lm.tokenizer, "chat_template", None)   # no template: text only
        if self.chat.disabled:
            self.chat.value = False
        used = uses(self.sampler.value)
        for knob in knob_names():
            getattr(self, knob).disabled = knob not in used
        self.top_p.disabled = self.temperature.value == 0             # greedy: no nucleus
        random_draws = self.temperature.value > 0 or self.sampler.value == "random"
        self.seed.disabled = not random_draws
        self.seed.description_tooltip = ("" if random_draws else
                                         "temperature 0 is greedy: the seed changes nothing")

    def rule(self):
        rule_knobs = {k: getattr(self, k).value for k in registry.rule_knobs()}
        return make_rule(self.sampler.value, temperature=self.temperature.value, top_p=self.top_p.value, **rule_knobs)


# --- the models --------------------------------------------------------------------------------
class ModelMenu:
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


class _ModelChoice:
    """Switching Lab's model from its menu: load it (a failed load leaves the menu on the model in
    use), then offer the rules it decodes with."""

    @staticmethod
    def _sampler_choices(lm: Denoiser) -> tuple[str, ...]:
        """A causal model decodes left to right only; a masked one takes every diffusion rule."""
        return tuple(n for n in registry.names_for(lm.kind) if n not in registry.PRESETS)

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
            self.error = show_error(self.message, str(e))
            self._switching = True                  # the menu shows the model in use
            try:
                self.model.value = self.lm.name
            finally:
                self._switching = False
            return
        old, self.lm = self.lm, lm
        if model_block(lm) or model_block(old):      # into or out of a block model: its own blocks, or the default
            self.block_length.value = self._default_block()
        choices = self._sampler_choices(lm)
        if tuple(self.sampler.options) != choices:
            keep = self.sampler.value if self.sampler.value in choices else choices[0]
            self.sampler.options = choices
            self.sampler.value = keep
        self._enable()

    def _default_block(self) -> int:
        """The model's own block size for a block model; else 32, or the whole answer when gen_length
        is not a multiple of 32."""
        own = model_block(self.lm)
        return own or (32 if self.gen_length.value % 32 == 0 else self.gen_length.value)

    def select_model(self, name: str) -> None:
        """Choose the model, as the menu does (presets then keep it)."""
        self.model.value = name


# --- the panel ---------------------------------------------------------------------------------
class Lab(_Knobs, _ModelChoice, Running, Drawing):
    """The panel: model, prompt, sampler and knobs, Generate; a step scrubber driving heatmaps of
    the mask state, confidence, commit step and edits, the token grid at that step, and the run's
    stats. While a run decodes, the token grid follows it (redrawn every `live_every` seconds; 0:
    every step; None: not at all) and so does the mask-state heatmap (at most every fourth grid
    redraw and 5% of the time), a progress line counts the steps, Generate becomes Stop, and the
    other controls wait until the run is done.

    From code: `lab.run()` decodes and returns when done; the buttons (`.click()`) start the same
    run in the background, as the mouse does, and `lab.wait()` waits for it."""

    def __init__(self, lm: Denoiser, prompt: str = DEFAULT_PROMPT, *, sampler: str | None = None,
                 gen_length: int = 64, block_length: int | None = None, steps: int = 64, temperature: float = 0.0,
                 seed: int = 0, keywords: str = "", views: tuple[str, ...] = VIEWS, run: bool = True,
                 live_every: float = LIVE_EVERY, **knobs):
        """`knobs`: values for rule knobs (threshold=0.8, ...); a knob not given starts at the rule's own default."""
        bad = sorted(set(views) - set(VIEWS))
        if bad:
            raise ValueError(f"views must be drawn from {VIEWS}, got {bad}")
        self.views = tuple(views)
        if is_task_model(lm.name) and prompt == DEFAULT_PROMPT:
            prompt = example_prompt(model_tasks(lm.name)[0])    # a task model answers puzzles, not plays
        self.live_every = live_every
        self.models = ModelMenu(lm)
        self.lm = lm
        choices = self._sampler_choices(lm)
        unknown = sorted(set(knobs) - set(registry.rule_knobs()))
        if unknown:
            raise ValueError(f"{unknown[0]}: not a knob of the panel (rule knobs: {', '.join(registry.rule_knobs())})")
        if sampler is None:                 # the model's own (LLaDA2.x: Q mode), else low_confidence
            own = registry.default_rule(lm)
            if own in registry.PRESETS:     # a preset is draft_edit with its thresholds
                own, knobs = "draft_edit", {**preset_knobs(own), **knobs}
            sampler = own if own in choices else choices[0]
        if sampler not in choices:
            raise ValueError(f"sampler must be one of {', '.join(choices)} for model {lm.name!r}, got {sampler!r}")
        self._controls(prompt, choices, sampler, keywords, seed)
        block_length = block_for(lm) if block_length is None else block_length    # a block model: its own blocks
        self._knobs(lm, sampler, gen_length, block_length, steps, temperature, knobs)
        self._outputs()
        self._wire()
        if run:
            self.run()

    # --- building ------------------------------------------------------------------------------
    def _controls(self, prompt: str, choices, sampler: str, keywords: str, seed: int) -> None:
        import ipywidgets as w  # the lab's extra: the panel's knob tables import without it
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

    def _outputs(self) -> None:
        import ipywidgets as w  # the lab's extra: the panel's knob tables import without it
        self.scrubber = Scrubber(self.show_step)
        self.grid, self.stats, self.message, self.note = w.HTML(), w.HTML(), w.HTML(), w.HTML()
        self.heatmaps = w.Output()
        self.out = None                 # the last finished Output (ids, texts, trace, stats)
        self.trace = None               # the trace on screen: the last run, finished or stopped
        self.figures: dict[str, dict] = {}
        self.step = 0
        self.error = ""
        self.notice = ""                # the note under the knobs (model switched, not parallel, ...)
        self._init_running()
        self._switching = False

    def _wire(self) -> None:
        import ipywidgets as w  # the lab's extra: the panel's knob tables import without it
        self.generate_button.on_click(lambda _: self._press())
        for label, button in self.presets.items():
            button.on_click(lambda _, label=label: self.start(lambda: self.apply_preset(label)))
        self.sampler.observe(self._rule_changed, names="value")
        self.temperature.observe(lambda _: self._enable(), names="value")
        self.model.observe(self._model_changed, names="value")
        self._enable()
        knobs = [self.gen_length, self.block_length, *self.knob_widgets()]
        self.widget = w.VBox([
            w.HBox([self.model, self.prompt, self.chat]),
            w.HBox([self.sampler, *self.presets.values()]),
            w.GridBox(knobs, layout=w.Layout(grid_template_columns="repeat(2, 340px)")),
            w.HBox([self.keywords, self.seed, self.generate_button, self.progress]),
            self.message, self.note, self.scrubber.box, self.grid, self.stats, self.heatmaps,
        ])

    def _busy(self, on: bool) -> None:
        """While a run is busy, Generate reads Stop and every other control waits."""
        b = self.generate_button
        b.description, b.icon, b.button_style = ("Stop", "stop", "warning") if on else ("Generate", "play", "primary")
        self.scrubber.enable(not on)
        for control in (self.model, self.prompt, self.chat, self.sampler, self.keywords, self.seed, self.gen_length,
                        self.block_length, *self.presets.values()):
            control.disabled = on
        if on:
            for knob in self.knob_widgets():
                knob.disabled = True
        else:
            self.progress.value = ""
            self._enable()

    # --- settings ------------------------------------------------------------------------------
    def prompt_value(self):
        """The prompt box as the loop takes it: text, or one user message when `chat` is ticked."""
        return [{"role": "user", "content": self.prompt.value}] if self.chat.value else self.prompt.value

    def controls(self) -> list:
        """The keyword box as a Keywords control: comma-separated words, each must appear."""
        words = [k.strip() for k in self.keywords.value.split(",")]
        if not any(words):
            return []
        if not all(words):
            raise ValueError(f"keywords: empty keyword in {self.keywords.value!r}; separate words with commas")
        return [Keywords(words)]

    def settings(self) -> dict:
        self._fit_to_task()
        return dict(gen_length=self.gen_length.value, block_length=self.block_length.value,
                    steps=self.steps.value, seed=self.seed.value)

    def _fit_to_task(self) -> None:
        """A task model asked a task's question (labkit.tasks): the canvas is the answer's length,
        one block, one step per token (set on the sliders, where it shows)."""
        n = answer_length(self.prompt.value) if is_task_model(self.lm.name) else None
        if n is not None and (self.gen_length.value, self.block_length.value) != (n, n):
            self.gen_length.value, self.block_length.value, self.steps.value = n, n, n

    def apply_preset(self, label: str):
        """S mode / Q mode: DraftEdit with LLaDA2.1's thresholds and block 32 (a block model: its own
        block size; the whole answer when gen_length is not a multiple of 32), then Generate. Unless the user picked the model,
        an embedded model that cannot decode in parallel gives way to defaults.PARALLEL_MODEL."""
        if label not in PRESETS:
            raise ValueError(f"preset must be one of {tuple(PRESETS)}, got {label!r}")
        switched = None
        if (not self.model_chosen and self.lm.name in EMBEDDED and self.lm.name != defaults.PARALLEL_MODEL
                and not is_task_model(self.lm.name)):       # a task model is sure enough on puzzles
            switched = self.lm.name
            self._switching = True
            try:
                self.model.value = defaults.PARALLEL_MODEL
            finally:
                self._switching = False
        if self.lm.kind == "causal":
            self.error = show_error(self.message, f"{label} needs a masked diffusion model; {self.lm.name} is "
                                    f"causal (left to right only): pick another model in the menu")
            return None
        self.sampler.value = "draft_edit"
        knobs = preset_knobs(PRESETS[label])
        self.threshold.value = knobs["threshold"]
        self.editing_threshold.value = knobs["editing_threshold"]
        self.block_length.value = self._default_block()
        out = self.run()
        if switched and out is not None and not self.notice:
            self.notice = show_notice(self.note, f"{label} runs on {defaults.PARALLEL_MODEL}, the lab's model for "
                                      f"parallel decoding ({switched} commits about one token per forward "
                                      f"pass); pick a model in the menu to keep your own")
        return out

    def _ipython_display_(self):
        from IPython.display import display  # the lab's extra (with ipywidgets)
        display(self.widget)
