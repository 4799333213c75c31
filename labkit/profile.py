"""Profiling hooks: time each denoising step, measure peak memory, export a torch.profiler trace,
and watch submodules of the network.

    timer = StepTimer(lm.device)
    out = lk.generate(lm, prompt, on_step=timer)
    timer.summary()        # nfe, tokens, tpf, tps, seconds, step_ms (mean, median, p90), ttft_s

    with peak_memory(lm.device) as mem:
        lk.generate(lm, prompt)
    mem["peak_bytes"]

    profile_generate(lm, prompt, "trace.json")      # open in chrome://tracing or Perfetto

    with observe(lm, ["net.layers.0.attn"], "shapes") as obs:
        lk.generate(lm, prompt)
    obs.shapes

On a GPU the timer records CUDA events (the loop synchronises after every step anyway) and memory
is `torch.cuda.max_memory_allocated`; on a CPU it uses perf_counter and the process's peak resident
set size (VmHWM), reset at the start of the region where Linux allows it.
"""
from __future__ import annotations

import contextlib
import resource
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from .decode import generate
from .models.handle import Denoiser

WHAT = ("timings", "shapes", "activations")


class StepTimer:
    """An `on_step` hook: wall time of every step (the time since the previous step, or since the
    timer was made / reset for the first), the tokens each step committed, and the time to the
    first committed token."""

    def __init__(self, device: str | torch.device = "cpu"):
        self.device = torch.device(device)
        self.reset()

    def reset(self) -> "StepTimer":
        self.committed: list[int] = []           # answer tokens committed at each step (all rows)
        self._cuda = self.device.type == "cuda"
        if self._cuda:
            self._events = [torch.cuda.Event(enable_timing=True)]
            self._events[0].record()
        self._times = [time.perf_counter()]
        return self

    def __call__(self, rec) -> None:
        rows = rec.active if rec.active is not None else torch.ones(rec.committed.shape[0], dtype=torch.bool)
        if self._cuda:
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            self._events.append(ev)
        self._times.append(time.perf_counter())
        self.committed.append(int(rec.committed[rows.to(rec.committed.device)].sum()))

    @property
    def nfe(self) -> int:
        return len(self.committed)

    def step_seconds(self) -> list[float]:
        """Seconds per step: CUDA event time on a GPU, perf_counter time on a CPU."""
        if self._cuda:
            torch.cuda.synchronize(self.device)
            return [a.elapsed_time(b) / 1000 for a, b in zip(self._events, self._events[1:])]
        return [b - a for a, b in zip(self._times, self._times[1:])]

    def summary(self) -> dict:
        steps = self.step_seconds()
        if not steps:
            raise ValueError("the timer saw no steps: pass it as generate(..., on_step=timer)")
        total, tokens = sum(steps), sum(self.committed)
        first = next((i for i, n in enumerate(self.committed) if n), None)
        ms = sorted(s * 1000 for s in steps)
        return {"nfe": self.nfe, "tokens": tokens, "tpf": round(tokens / self.nfe, 4),
                "seconds": round(total, 6), "tps": round(tokens / total, 2) if total else float("inf"),
                "step_ms_mean": round(statistics.fmean(ms), 3), "step_ms_median": round(statistics.median(ms), 3),
                "step_ms_p90": round(ms[min(len(ms) - 1, int(0.9 * len(ms)))], 3),
                "ttft_s": None if first is None else round(sum(steps[:first + 1]), 6)}


def _vm_hwm() -> int | None:
    """Peak resident set size of this process in bytes (Linux VmHWM), None elsewhere."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _reset_hwm() -> bool:
    """Reset VmHWM to the current RSS (Linux: write 5 to clear_refs); False where not allowed."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


@contextlib.contextmanager
def peak_memory(device: str | torch.device = "cpu"):
    """Yields a dict filled on exit: peak_bytes, kind ("cuda" or "rss"), and for "rss" whether the
    peak is the region's (`region`: True) or the whole process's so far (False)."""
    device = torch.device(device)
    result: dict = {}
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        try:
            yield result
        finally:
            torch.cuda.synchronize(device)
            result.update(peak_bytes=int(torch.cuda.max_memory_allocated(device)), kind="cuda", region=True)
        return
    region = _reset_hwm()
    try:
        yield result
    finally:
        peak = _vm_hwm()
        if peak is None:                       # no /proc: ru_maxrss (KiB on Linux, bytes on macOS)
            peak, region = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, False
        result.update(peak_bytes=int(peak), kind="rss", region=region)


def profile_generate(lm: Denoiser, prompt, path, sampler=None, **settings) -> Path:
    """Run generate() under torch.profiler and write a chrome trace to `path`. The loop marks its
    parts with record_function spans: labkit.forward, labkit.controls, labkit.rule, labkit.record."""
    acts = [torch.profiler.ProfilerActivity.CPU]
    if lm.device.type == "cuda":
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with torch.profiler.profile(activities=acts) as prof:
        generate(lm, prompt, sampler, **settings)
    prof.export_chrome_trace(str(path))
    return path


@dataclass
class Observation:
    """What observe() collected, per submodule name (one entry per forward call)."""
    timings: dict = field(default_factory=dict)      # name → [seconds]
    shapes: dict = field(default_factory=dict)       # name → [output shape]
    activations: dict = field(default_factory=dict)  # name → [output tensor, on the CPU]


@contextlib.contextmanager
def observe(lm: Denoiser, names, what: str = "timings"):
    """Register forward hooks on the submodules `names` of `lm.net` (as in net.named_modules()) and
    collect `what` ("timings", "shapes" or "activations"). The hooks are always removed, also
    when the block raises."""
    if what not in WHAT:
        raise ValueError(f"what must be one of {WHAT}, got {what!r}")
    names = [names] if isinstance(names, str) else list(names)
    modules = dict(lm.net.named_modules())
    missing = [n for n in names if n not in modules]
    if missing:
        some = [n for n in modules if n][:8]
        raise ValueError(f"no submodule named {missing} in {lm.name!r}; names look like {some}")
    obs = Observation()
    store = getattr(obs, what)
    handles, started = [], {}
    cuda = lm.device.type == "cuda"

    def pre(name):
        def hook(module, args):
            if cuda:
                torch.cuda.synchronize(lm.device)
            started[name] = time.perf_counter()
        return hook

    def post(name):
        def hook(module, args, output):
            out = output[0] if isinstance(output, (tuple, list)) else output
            if what == "timings":
                if cuda:
                    torch.cuda.synchronize(lm.device)
                store.setdefault(name, []).append(time.perf_counter() - started.pop(name))
            elif what == "shapes":
                store.setdefault(name, []).append(tuple(out.shape))
            else:
                store.setdefault(name, []).append(out.detach().to("cpu"))
        return hook

    try:
        for n in names:
            if what == "timings":
                handles.append(modules[n].register_forward_pre_hook(pre(n)))
            handles.append(modules[n].register_forward_hook(post(n)))
        yield obs
    finally:
        for h in handles:
            h.remove()


__all__ = ["Observation", "StepTimer", "WHAT", "observe", "peak_memory", "profile_generate"]
