"""What the benchmarks share: device-synchronised timing, the metadata of a run, JSON results and
fixed-width text tables (the docs' markdown is written by benchmarks/docgen).

    medians, last = interleaved({"a": run_a, "b": run_b}, repeats=5)  # a, b, a, b, ...: drift hits both
    save({**result, "meta": metadata(lm)}, "out/bench.json")
    print(format_table([Column("rule", 16, align="<"), Column("seconds", 9, ".3f")], rows))
"""
from __future__ import annotations

import datetime
import json
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from .. import threads
from ..models.load import EMBEDDED, load


def check_repeats(repeats) -> None:
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a positive integer, got {repeats!r}")


def sync(device: str | torch.device) -> None:
    """Wait for the device's queued work (a no-op on the CPU), so wall time covers it."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def stopwatch(fn: Callable[[], object], device: str | torch.device = "cpu") -> tuple[float, object]:
    """Call fn() once between device syncs: (wall seconds, fn's result)."""
    sync(device)
    t0 = time.perf_counter()
    result = fn()
    sync(device)
    return time.perf_counter() - t0, result


def interleaved(fns: dict[str, Callable[[], object]], repeats: int,
                device: str | torch.device = "cpu") -> tuple[dict[str, float], dict[str, object]]:
    """`repeats` rounds, each calling every fn in turn (so load on the machine hits them alike):
    the median wall seconds of each, and each one's result from the last round."""
    check_repeats(repeats)
    times: dict[str, list[float]] = {k: [] for k in fns}
    last: dict[str, object] = {}
    for _ in range(repeats):
        for k, fn in fns.items():
            seconds, last[k] = stopwatch(fn, device)
            times[k].append(seconds)
    return {k: statistics.median(v) for k, v in times.items()}, last


def find_model(name: str, runs: str | Path = "runs"):
    """An embedded model by name, else the finished run runs/NAME (a recipe not committed)."""
    if name in EMBEDDED:
        return load(name)
    folder = Path(runs) / name
    if not (folder / "model.safetensors").is_file():
        raise FileNotFoundError(f"model {name!r} is neither embedded nor trained in {folder} "
                                f"(labkit train --recipe {name} --out {folder})")
    lm = load(str(folder))
    lm.name = name
    return lm


def train_seconds(folder: Path) -> float:
    """Training seconds of a run's snapshot (snapshot.json) or of a finished model (training.json)."""
    f = Path(folder) / "snapshot.json"
    return json.loads((f if f.is_file() else Path(folder) / "training.json").read_text())["train_seconds"]


def metadata(lm) -> dict:
    """Where and when a benchmark ran: model, device, torch version, threads, cores, UTC time."""
    return {"model": lm.name, "device": str(lm.device), "torch": torch.__version__,
            "threads": torch.get_num_threads(), "cores": threads.cores(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def save(result, path: str | Path) -> Path:
    """Write `result` as JSON (indent 1, as every committed result) to `path`, creating its folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1))
    return path


@dataclass(frozen=True)
class Column:
    title: str
    width: int
    fmt: str = ""            # format spec of the values, e.g. ".2f" ("" = as they are)
    align: str = ">"         # ">" right, "<" left


def format_table(columns: list[Column], rows, title: str = "") -> str:
    """A fixed-width text table: an optional title line, the header, one line per row (a sequence
    of values, one per column)."""
    lines = [title] if title else []
    lines.append("".join(f"{c.title:{c.align}{c.width}}" for c in columns))
    for row in rows:
        lines.append("".join(f"{v:{c.align}{c.width}{c.fmt}}" for c, v in zip(columns, row)))
    return "\n".join(lines)
