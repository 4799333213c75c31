"""A run of the Lab panel (`ui/panel.py`): Generate decoding in the background, Stop, following the
run live while it decodes, and drawing it when done. Two mixins of `Lab`:

    Running   run() / start() / stop() / wait(), and the live redraws while a run decodes
    Drawing   build the heatmaps of a trace, and point every view at one step (the scrubber)

They read what `Lab` builds (its widgets, `rule()`, `controls()`, `settings()`, `prompt_value()`)
and call `_busy()`, which `Running` declares and `Lab` fills in; nothing here builds a widget.
"""
from __future__ import annotations

import threading
import time

from .. import defaults
from ..decode import generate
from ..samplers import registry
from ..tasks import grid_columns
from ..trace import Trace
from . import viz
from .plumbing import figure_dict, show_error, show_figures, show_notice, with_marker


class Stopped(Exception):
    """Raised inside a run when Stop is pressed; the panel keeps what was decoded so far."""


def step_budget(rule_name: str, settings: dict, max_post: int) -> str:
    """'of 64' for a rule that spends its step budget, 'of at most 128' for one that runs until
    each block is done."""
    if registry.budgeted(rule_name):
        return f"of {settings['steps']}"
    blocks = settings["gen_length"] // settings["block_length"]
    return f"of at most {blocks * (settings['block_length'] + max_post)}"


class Running:
    """Generate and Stop: a run from code returns when done; a button starts the same run on a
    background thread, so the panel stays live, and `wait()` waits for it."""

    def _init_running(self) -> None:
        self.render_seconds = 0.0       # Generate → everything re-rendered, last press
        self.redraws = 0                # live redraws during the last run
        self.running = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _busy(self, on: bool) -> None:
        """Grey the panel's controls out while a run is busy (`on`), and back: the panel says which."""
        raise NotImplementedError

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
            self.error = show_error(self.message, f"{type(e).__name__}: {e}")
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

    def run(self):
        """Generate with the panel's settings, drawing the run as it decodes, then re-render every
        view. A bad combination of knobs shows its message in the panel and keeps the last good
        run on screen; Stop keeps the steps decoded so far. From code it returns when done; while
        a run started by a button decodes, it is refused with a message."""
        mine = threading.current_thread() is self._thread       # the body of a background job
        if self.running and not mine:
            self.error = show_error(self.message, "a run is still decoding: press Stop or wait for it")
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
            self.error = show_error(self.message, str(e))
            return None
        self.redraws = 0
        started: list[Trace] = []           # the run's trace, handed over before its first step
        on_step = self._follow(started, step_budget(rule_name, settings, rule.max_post_steps))
        try:
            out = generate(lm, self.prompt_value(), rule, controls=controls, on_start=started.append,
                           on_step=on_step, **settings)
        except ValueError as e:
            self.error = show_error(self.message, str(e))
            return None
        except Stopped:
            out = None
        self.error = show_error(self.message, "")
        if out is None and not len(started[0]):     # stopped before its first step
            return None
        if out is None:
            self._show_stopped(lm, rule, started[0])
        else:
            self._show_finished(lm, rule_name, out)
        self.render_seconds = time.perf_counter() - t0
        return out

    def _follow(self, started: list[Trace], budget: str):
        """The run's on_step: count the steps, honour Stop, and redraw the run so far when due."""
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
        return on_step

    def _show_stopped(self, lm, rule, trace) -> None:
        self.notice = show_notice(self.note, f"stopped after {len(trace)} steps; Generate decodes again")
        self.stats.value = viz.stats_table({"model": lm.name, "sampler": repr(rule), "NFE": len(trace),
                                            "stopped": "yes"})
        self._draw(trace, step=len(trace) - 1)

    def _show_finished(self, lm, rule_name: str, out) -> None:
        self.out = out
        self.notice = show_notice(self.note, defaults.parallel_note(lm.name, rule_name, out.stats["tpf"]))
        s = out.stats
        self.stats.value = viz.stats_table({
            "model": lm.name, "sampler": out.trace.meta["sampler"], "NFE": s["nfe"], "TPF": s["tpf"],
            "tokens/s": s["tps"], "decode s": s["seconds"], "answer": out.texts[0][:120]})
        self._draw(out.trace, step=len(out.trace) - 1)


class Drawing:
    """The views of a trace: heatmaps built once per run (`figures`), then every scrubber move
    only moves their step marker and swaps the token grid and the step label."""

    def _draw(self, trace, step: int) -> None:
        """Build the heatmaps of `trace`, reset the scrubber to it and point every view at `step`."""
        self.trace = trace
        self.figures = {kind: figure_dict(trace, self.lm, kind) for kind in self.views
                        if kind != "edits" or viz.has_edits(trace, 0)}
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
        columns = grid_columns(self.prompt.value)
        grid = viz.token_grid(trace, self.lm, step=step)
        self.grid.value = grid if columns is None else viz.canvas_grid(trace, self.lm, columns, step=step) + grid
        if figures:
            self.figures = {k: with_marker(f, step) for k, f in self.figures.items()}
            show_figures(self.heatmaps, list(self.figures.values()))
