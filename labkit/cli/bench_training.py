"""`labkit bench rl` and `labkit bench task-seeds`: the benchmarks that read runs trained for them.
Each runner trains what is missing first (resumable: a finished run is only read), then
labkit.bench measures; the bench modules themselves never train."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from ..bench import editor, rl, rl_sweep, tasks
from ..bench.task_tables import seeds_table
from ..training.loop import train
from ..training.recipes import RECIPES
from ..training.rl import train_rl
from .common import bench_input, progress_log, report


def _quiet_log(log):
    return log or (lambda m: None)


def train_rl_runs(log=None, **folders) -> list[Path]:
    """Every run of `rl.training_runs(**folders)` without a finished record, trained: the folders trained."""
    trained = []
    for folder, cfg in rl.training_runs(**folders).items():
        if not (folder / "training.json").is_file():
            train_rl(cfg, folder, progress=False, log=_quiet_log(log))
            trained.append(folder)
    return trained


def train_task_seeds(folder: str | Path = tasks.SEED_RUNS, seeds=tasks.SEEDS, log=None) -> list[Path]:
    """The Sudoku pair at its full recipe with each seed but 0 (the committed pair), into
    folder/<model>-seed<k>, where no finished run is (train resumes a stopped one): the folders trained."""
    trained = []
    for seed in (s for s in seeds if s):
        for name in tasks.PAIRS["sudoku"][:2]:
            run = Path(folder) / f"{name}-seed{seed}"
            if not (run / "training.json").is_file():
                train(dataclasses.replace(RECIPES[name], seed=seed), run, progress=False, log=_quiet_log(log))
                trained.append(run)
    return trained


def no_noise(p) -> None:
    p.add_argument("--no-noise", action="store_true", help="skip the gradient-noise table")


def sweep_runs(p) -> None:
    p.add_argument("--runs", help=f"comma-separated runs of the sweep (default all: {', '.join(rl_sweep.SWEEP)})")


def run_rl(a) -> int:
    log, before = progress_log(a), bench_input(a, "tasks.json")         # the starting rows, before any training
    train_rl_runs(log)
    result = rl.bench_rl(before, n=a.n, noise=not a.no_noise, log=log)
    return report(a, "rl.json", result, lambda r: print(rl.text_table(r)))


def train_editor_runs(folder: str | Path = editor.RUNS, log=None) -> list[Path]:
    """The editor, its control (`bench.editor.TRAINED`) and the editor at each draft share of
    `bench.editor.SHARES` into folder/NAME where no finished run is: the folders trained."""
    trained = []
    wanted = {name: RECIPES[name] for name in editor.TRAINED}
    wanted |= {editor.share_run(s): editor.share_config(s) for s in editor.SHARES}
    for name, cfg in wanted.items():
        run = Path(folder) / name
        if not (run / "training.json").is_file():
            train(cfg, run, progress=False, log=_quiet_log(log))
            trained.append(run)
    return trained


def run_editor(a) -> int:
    log = progress_log(a)
    train_editor_runs(log=log)
    result = editor.bench_editor(n=a.n, log=log)
    return report(a, "editor.json", result, lambda r: print(editor.text_table(r)))


def run_rl_sweep(a) -> int:
    """Each run of bench.rl_sweep.SWEEP (--runs: some of them) trained to its end where it is not
    (resumed from its checkpoint), then read."""
    names = [n.strip() for n in a.runs.split(",") if n.strip()] if a.runs else list(rl_sweep.SWEEP)
    configs = {n: rl_sweep.config(n) for n in names}
    for name, cfg in configs.items():
        if not (rl_sweep.RUNS / name / "training.json").is_file():
            train_rl(cfg, rl_sweep.RUNS / name, progress=False, log=_quiet_log(progress_log(a)))
    return report(a, "rl_sweep.json", rl_sweep.bench_rl_sweep(names=names), lambda r: print(rl_sweep.text_table(r)))


def run_task_seeds(a) -> int:
    log = progress_log(a)
    train_task_seeds(log=log)
    result = tasks.seed_runs(n=a.n, log=log)
    return report(a, "task_seeds.json", result, lambda r: print(seeds_table(r)))
