"""`labkit bench panel`: the panel's Generate → every view re-rendered, in a quiet process and
next to a busy neighbour, under each thread setting; and the cost of drawing a run live."""
from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

from .. import defaults, threads
from ..models.load import load
from ..ui import widgets
from ..ui.widgets import LIVE_EVERY, preset_knobs
from .common import metadata

PANEL_TOKENS = 64           # bench_panel: answer length, and steps (one token per step)
SCRUB_POSITIONS = 16        # regenerate_latency: scrubber moves timed per run
BUSY_NEIGHBOUR_START_S = 3  # busy_neighbour: time for the neighbour to import torch and start spinning
CHILD_TIMEOUT_S = 900       # one panel child process
LIVE_ROUNDS = 3             # bench_panel: live drawing on / off, interleaved, this many times each


def regenerate_latency(lm, repeats: int = 5, live_every: float | None = LIVE_EVERY, **settings) -> dict:
    """The panel's responsiveness, on a headless Lab: seconds from pressing Generate to every view
    re-rendered (median and max of `repeats` presses, each with a new seed), split into decoding
    and rendering, the seconds one move of the step scrubber takes, and the live redraws made.
    `first_press_s` is the first run of a new panel in this process (first-call costs included)."""
    lab = widgets.Lab(lm, run=False, live_every=live_every, **settings)
    lab.run()                                           # warm-up (first-call costs)
    first = lab.render_seconds
    total, decode, redraws = [], [], []
    for i in range(repeats):
        lab.seed.value = i + 1
        lab.start()
        lab.wait()
        total.append(lab.render_seconds)
        decode.append(lab.out.stats["seconds"])
        redraws.append(lab.redraws)
    scrub = []
    for s in range(0, len(lab.out.trace), max(1, len(lab.out.trace) // SCRUB_POSITIONS)):
        t0 = time.perf_counter()
        lab.scrubber.slider.value = s
        scrub.append(time.perf_counter() - t0)
    return {"generate_median_s": round(float(np.median(total)), 3), "generate_max_s": round(max(total), 3),
            "decode_median_s": round(float(np.median(decode)), 3),
            "render_median_s": round(float(np.median(np.subtract(total, decode))), 3),
            "first_press_s": round(first, 3), "live_redraws_median": float(np.median(redraws)),
            "scrub_median_s": round(float(np.median(scrub)), 4), "steps": len(lab.out.trace),
            "gen_length": lab.gen_length.value, "sampler": lab.out.trace.meta["sampler"],
            "model": lm.name, "figure_bytes": sum(len(json.dumps(f)) for f in lab.figures.values())}


BUSY_NEIGHBOUR = ("import torch\nx = torch.randn(768, 768)\n"
             "while True:\n    x = torch.tanh(x @ x)\n")     # a CPU-bound torch job, torch's default threads
THREAD_CANDIDATES = {                                          # name → environment of the panel's process
    "labkit default": {},
    "torch default threads": {"LABKIT_THREADS": "torch"},
    "torch default + OMP passive": {"LABKIT_THREADS": "torch", "OMP_WAIT_POLICY": "PASSIVE"},
}
_CHILD = """
import json, sys, torch, labkit as lk
from labkit.bench.panel import regenerate_latency
lm = lk.load({model!r})
r = regenerate_latency(lm, repeats={repeats}, live_every={live!r}, gen_length={tokens}, steps={tokens})
r["threads"] = torch.get_num_threads()
print("RESULT " + json.dumps(r))
"""


def _panel_child(model: str, repeats: int, env: dict, live: float | None, timeout: float) -> dict:
    """regenerate_latency in a fresh process (thread pools and OpenMP settings start anew)."""
    code = _CHILD.format(model=model, repeats=repeats, live=live, tokens=PANEL_TOKENS)
    full_env = {k: v for k, v in os.environ.items() if k not in ("LABKIT_THREADS", "OMP_WAIT_POLICY")}
    r = subprocess.run([sys.executable, "-c", code], env={**full_env, **env}, capture_output=True,
                       text=True, timeout=timeout)
    line = [x for x in r.stdout.splitlines() if x.startswith("RESULT ")]
    if r.returncode or not line:
        raise RuntimeError(f"panel benchmark child failed ({r.returncode}): {r.stderr.strip()[-400:]}")
    return json.loads(line[0][len("RESULT "):])


class busy_neighbour:
    """A CPU-bound process beside the benchmark for the duration of a `with` block."""

    def __enter__(self):
        self.proc = subprocess.Popen([sys.executable, "-c", BUSY_NEIGHBOUR])
        time.sleep(BUSY_NEIGHBOUR_START_S)
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


def bench_panel(model: str = "tiny", *, repeats: int = 5, rounds: int = 2, log=None) -> dict:
    """The panel's Generate → every view re-rendered (64 tokens, 64 steps, greedy, on `model`),
    `repeats` presses per run, each thread setting in a fresh process, quiet and next to a busy
    neighbour, all settings taken in turn for `rounds` rounds (so drift in the machine hits them
    alike); plus S mode on the parallel model and the cost of drawing the run live (on and off
    interleaved, three times each). `summary`: per setting, the median over rounds of the median
    press, the slowest press and the slowest first press."""
    for name, v in (("repeats", repeats), ("rounds", rounds)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    rows = []
    for round_ in range(rounds):
        for busy in (False, True):                 # JSON "neighbour": the run had a busy_neighbour beside it
            for name, env in THREAD_CANDIDATES.items():
                if log:
                    log(f"panel: round {round_ + 1}, {name}{' + busy neighbour' if busy else ''}")
                with busy_neighbour() if busy else contextlib.nullcontext():
                    r = _panel_child(model, repeats, env, LIVE_EVERY, timeout=CHILD_TIMEOUT_S)
                rows.append({"candidate": name, "env": env, "neighbour": busy, "round": round_, **r})
    summary = []
    for busy in (False, True):
        for name in THREAD_CANDIDATES:
            mine = [r for r in rows if r["candidate"] == name and r["neighbour"] == busy]
            summary.append({"candidate": name, "neighbour": busy, "threads": mine[0]["threads"],
                            "generate_median_s": round(statistics.median(r["generate_median_s"] for r in mine), 3),
                            "generate_max_s": max(r["generate_max_s"] for r in mine),
                            "first_press_max_s": max(r["first_press_s"] for r in mine),
                            "per_round": [r["generate_median_s"] for r in mine]})
    if log:
        log("panel: live drawing on / off, S mode")
    lm = load(model)
    knobs = dict(gen_length=PANEL_TOKENS, steps=PANEL_TOKENS)
    runs = {"on": [], "off": []}
    for _ in range(LIVE_ROUNDS):               # interleaved, so drift in the machine hits both alike
        runs["on"].append(regenerate_latency(lm, repeats=repeats, live_every=LIVE_EVERY, **knobs))
        runs["off"].append(regenerate_latency(lm, repeats=repeats, live_every=None, **knobs))
    live = {k: {"generate_median_s": statistics.median(r["generate_median_s"] for r in v),
                "live_redraws_median": statistics.median(r["live_redraws_median"] for r in v)}
            for k, v in runs.items()}
    live["cost_ratio"] = round(live["on"]["generate_median_s"] / live["off"]["generate_median_s"], 3)
    s_mode = regenerate_latency(load(defaults.PARALLEL_MODEL), repeats=repeats, gen_length=PANEL_TOKENS,
                                sampler="draft_edit", **preset_knobs("speed"))
    return {"model": model, "cores": threads.cores(), "summary": summary, "rows": rows, "live": live,
            "s_mode": s_mode, "repeats": repeats, "rounds": rounds, "meta": metadata(lm)}
