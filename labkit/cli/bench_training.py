"""`labkit bench rl` and `labkit bench task-seeds`: the benchmarks that read runs trained for them.
Each runner trains what is missing first (resumable: a finished run is only read), then
labkit.bench measures; the bench modules themselves never train."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from ..bench import editor, rl, tasks
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


def run_task_seeds(a) -> int:
    log = progress_log(a)
    train_task_seeds(log=log)
    result = tasks.seed_runs(n=a.n, log=log)
    return report(a, "task_seeds.json", result, lambda r: print(seeds_table(r)))
