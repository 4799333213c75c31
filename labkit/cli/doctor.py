"""`labkit doctor`: is this machine ready for the lab? Python, torch and its threads, JupyterLab and
the widget extension (installed and enabled), every embedded model loading, and a 64-token
generation timed against the time stored for the course's reference machine.

    labkit doctor                 # a report; exit status 1 if anything needed is missing, each with its fix
    labkit doctor --json          # the same as one JSON object
    labkit doctor --save benchmarks/results/doctor.json   # (the project) store this machine as the reference

A slow machine is a warning, not a failure: the lab still runs, the live cells take longer. So is
a missing checkout (the lab's clone, labkit.checkout): the package alone generates, serves and
passes every other check; the report names what needs the clone (the notebooks, the course, the
committed results and the reference time, benchmarks/results/doctor.json, kept there beside the
other committed figures and written there by --save).
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import platform
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from .. import checkout
from ..decode import generate
from ..models.load import EMBEDDED, load
from ..threads import wanted

REFERENCE = Path("benchmarks") / "results" / "doctor.json"          # in the lab's checkout
NEEDS_CHECKOUT = ("the notebooks", "labkit student", "labkit slides", "labkit bench's committed inputs",
                  f"the reference time ({REFERENCE})")
WIDGETS = "@jupyter-widgets/jupyterlab-manager"
SLOW = 3.0                     # warn when the generation takes more than this many times the reference


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""              # what to run when not ok
    needed: bool = True        # a failing check that is not needed is a warning


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def python_checks() -> list[Check]:
    py = sys.version_info
    threads = torch.get_num_threads()
    pinned = wanted()
    return [Check("python", py >= (3, 10), f"{platform.python_version()} ({sys.executable})",
                  "use Python 3.10 or newer (the CI machine runs 3.11)"),
            Check("torch", True, f"{torch.__version__}, {threads} thread(s) now, labkit sets "
                                 f"{pinned if pinned is not None else 'torch default'} (LABKIT_THREADS to change)")]


def widget_extension(data_dirs=None, config_dirs=None) -> tuple[list[str], list[str]]:
    """Where the ipywidgets JupyterLab extension is installed, and the page configs that disable it."""
    from jupyter_core.paths import jupyter_config_path, jupyter_path  # the lab's extra: checked for, not required

    data_dirs = jupyter_path("labextensions") if data_dirs is None else data_dirs
    config_dirs = jupyter_config_path() if config_dirs is None else config_dirs
    found = [str(d) for d in data_dirs if (Path(d) / WIDGETS / "package.json").is_file()]
    disabled = []
    for d in config_dirs:
        page = Path(d) / "labconfig" / "page_config.json"
        if page.is_file():
            off = json.loads(page.read_text() or "{}").get("disabledExtensions", {})
            if (off.get(WIDGETS) if isinstance(off, dict) else WIDGETS in off):
                disabled.append(str(page))
    return found, disabled


def jupyter_checks(data_dirs=None, config_dirs=None) -> list[Check]:
    lab, widgets = _version("jupyterlab"), _version("ipywidgets")
    checks = [Check("jupyterlab", lab is not None, lab or "not installed", "pip install jupyterlab (or: make lab)"),
              Check("ipywidgets", widgets is not None, widgets or "not installed", "pip install ipywidgets")]
    if importlib.util.find_spec("jupyter_core") is None:
        return checks + [Check("widget extension", False, "jupyter_core missing", "pip install jupyterlab")]
    found, disabled = widget_extension(data_dirs, config_dirs)
    if not found:
        checks.append(Check("widget extension", False, f"{WIDGETS} is not installed: panels would show as text",
                            "pip install jupyterlab_widgets (it comes with ipywidgets 8)"))
    elif disabled:
        checks.append(Check("widget extension", False, f"{WIDGETS} is disabled in {', '.join(disabled)}",
                            f"jupyter labextension enable {WIDGETS}"))
    else:
        checks.append(Check("widget extension", True, f"{WIDGETS} installed in {found[0]}, enabled"))
    return checks


def model_checks(names=None) -> list[Check]:
    """Every embedded model (or `names`) loads, timed."""
    out = []
    for name in names if names is not None else EMBEDDED:
        t0 = time.perf_counter()
        try:
            lm = load(name)
            out.append(Check(f"model {name}", True, f"loads in {time.perf_counter() - t0:.2f} s "
                                                     f"({sum(p.numel() for p in lm.net.parameters()):,} parameters)"))
        except Exception as e:          # noqa: BLE001 - reported with its fix, the other checks go on
            out.append(Check(f"model {name}", False, f"does not load: {type(e).__name__}: {str(e)[:200]}",
                             "reinstall from a fresh clone (git lfs is not used: the weights are plain files), "
                             "or retrain it: docs/models.md"))
    return out


def generation_seconds(model: str = "tiny", repeats: int = 3) -> float:
    """Median seconds of one 64-token generation, one token per step (the panel's default), after a warm-up."""
    lm = load(model)
    generate(lm, "ROMEO:", gen_length=64, steps=64, block_length=32)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        generate(lm, "ROMEO:", gen_length=64, steps=64, block_length=32)
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


def checkout_check(found: Path | None) -> Check:
    """Where the lab's checkout is; without one, what needs it (a warning: the package alone runs)."""
    if found is not None:
        return Check("checkout", True, str(found))
    return Check("checkout", False, f"none from {Path.cwd()} upwards: {', '.join(NEEDS_CHECKOUT)} need it",
                 checkout.HOW, needed=False)


def reference_file(found: Path | None) -> Path | None:
    """The stored reference time in the checkout `found` (None without a checkout)."""
    return None if found is None else found / REFERENCE


def speed_check(seconds: float, reference: Path | None) -> Check:
    if reference is None:
        return Check("speed", True, f"64 tokens in {seconds:.2f} s (the reference time, {REFERENCE}, is in the "
                                    "lab's checkout: none here)", needed=False)
    ref = json.loads(reference.read_text())["generate_64_s"] if reference.is_file() else None
    if ref is None:
        return Check("speed", True, f"64 tokens in {seconds:.2f} s (no reference stored)", needed=False)
    ratio = seconds / ref
    return Check("speed", ratio <= SLOW, f"64 tokens in {seconds:.2f} s, {ratio:.1f}x the reference machine's "
                 f"{ref:.2f} s", f"a slower machine: the live cells take about {ratio:.0f}x the course's times; "
                 "close other busy programs, or show the stored outputs", needed=False)


def run(models=None, timing: bool = True, data_dirs=None, config_dirs=None) -> list[Check]:
    found = checkout.find()
    checks = python_checks() + jupyter_checks(data_dirs, config_dirs) + model_checks(models) + [checkout_check(found)]
    if timing and all(c.ok for c in checks if c.name == "model tiny"):
        checks.append(speed_check(generation_seconds(), reference_file(found)))
    return checks


def report(checks: list[Check]) -> str:
    lines = []
    for c in checks:
        mark = "ok  " if c.ok else ("FAIL" if c.needed else "warn")
        lines.append(f"{mark} {c.name:<24} {c.detail}")
        if not c.ok:
            lines.append(f"     {'':<24} fix: {c.fix}")
    bad = [c.name for c in checks if not c.ok and c.needed]
    lines.append(f"{len(checks) - len(bad)} of {len(checks)} checks pass" + (f"; missing: {', '.join(bad)}" if bad else
                                                                             ": ready for the lab"))
    return "\n".join(lines)


def exit_status(checks: list[Check]) -> int:
    return 1 if any(not c.ok and c.needed for c in checks) else 0


def _doctor(a) -> int:
    if a.save:
        seconds = generation_seconds()
        Path(a.save).write_text(json.dumps({"generate_64_s": round(seconds, 3), "machine": platform.machine(),
                                            "python": platform.python_version()}, indent=1) + "\n")
    checks = run(timing=not a.no_timing)
    print(json.dumps([asdict(c) for c in checks]) if a.json else report(checks))
    return exit_status(checks)


def add_parser(sub) -> None:
    d = sub.add_parser("doctor", help="is this machine ready for the lab? (exit 1 with the fixes if not)")
    d.add_argument("--json", action="store_true", help="print one JSON list of checks")
    d.add_argument("--no-timing", action="store_true", help="skip the 64-token generation")
    d.add_argument("--save", metavar="PATH", help="store this machine's generation time as the reference")
    d.set_defaults(fn=_doctor)
