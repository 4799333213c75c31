"""What the `labkit` subcommands share: model flags, loading, notes, output files."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from ..bench.common import save as save_json
from ..checkout import root
from ..models.load import load

# A user's bench run writes here by default, never over the committed figures that notebooks and
# tests read; the make targets that refresh those pass --out benchmarks/results.
SCRATCH = "runs/bench"


def committed() -> Path:
    """benchmarks/results of the lab's checkout: the committed figures (the package does not ship them)."""
    return root("the committed benchmark results (benchmarks/results)") / "benchmarks" / "results"


def bench_input(a, name: str) -> str:
    """A result another benchmark wrote: --out's copy if there is one, else the committed one."""
    mine = Path(a.out) / name
    return str(mine if mine.is_file() else committed() / name)


def note(text: str) -> None:
    print(f"labkit: note: {text}", file=sys.stderr)


def output_file(value: str | None, flag: str, suffix: str):
    """The file an output flag names: its folder must exist and it must not be a folder. A
    name without the suffix gets it (the file written is the one reported)."""
    if value is None:
        return None
    path = Path(value).expanduser()
    if path.is_dir() or value.endswith(("/", "\\")):
        raise ValueError(f"{flag} takes a file name, got the folder {value!r} (e.g. {flag} {value.rstrip('/')}/run{suffix})")
    if not path.parent.is_dir():
        raise ValueError(f"{flag}: folder {str(path.parent)!r} does not exist; create it first")
    return path if path.suffix.lower() == suffix else path.with_name(path.name + suffix)


def save(a, name: str, result):
    """Write `result` as JSON to a.out / name (creating the folder); return the folder."""
    return save_json(result, Path(a.out) / name).parent


def report(a, name: str, result: dict, print_table) -> int:
    """Save `result` as a.out / name; print it as one JSON object with --json, else as a table."""
    out = save(a, name, result)
    if a.json:
        print(json.dumps(result))
    else:
        print_table(result)
        print(f"written: {out / name}")
    return 0


def progress_log(a):
    """A progress printer to stderr, or None with --quiet."""
    return (lambda m: print(m, file=sys.stderr)) if not a.quiet else None


def load_model(a):
    dtype = {"auto": None, "float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[a.dtype]
    return load(a.model, device=a.device, dtype=dtype, trust_remote_code=a.trust_remote_code,
                device_map=getattr(a, "device_map", None))


class Given(argparse.Action):
    """Store the value and remember that the flag was given (a default cannot tell)."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_given", True)


def model_args(p: argparse.ArgumentParser, default: str | None = "tiny", help_default: str = "tiny") -> None:
    p.add_argument("--model", default=default, help=f"'tiny', 'tiny-cap', 'tiny-ar', a model folder, or a "
                   f"hub id (default: {help_default})")
    p.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, ... (default: cpu)")
    p.add_argument("--device-map", choices=["auto"], help="auto: spread a published checkpoint over every "
                   "visible GPU (accelerate), instead of --device")
    p.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"])
    p.add_argument("--trust-remote-code", action="store_true", help="needed by LLaDA / Dream hub models")
