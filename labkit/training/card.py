"""The figures an embedded model's card shows, kept as data: `labkit eval --model NAME --card`
stores its result as eval.json in the model's folder, beside training.json (the training run's
record) and config.json. The card itself (README.md) is written from these files outside the
package: `python -m benchmarks.docgen cards NAME` (benchmarks/docgen/cards.py)."""
from __future__ import annotations

import json
from pathlib import Path

from ..models.load import model_folder

EVAL_FILE = "eval.json"


def save_eval(model: str, result: dict) -> Path:
    """`result` (what `labkit eval --json` prints: the held-out plays' figures, or the task suite's
    exact match) written as eval.json into the model's folder (an embedded name or a path). Returns its path."""
    folder = model_folder(model)
    if not (folder / "training.json").is_file():
        raise FileNotFoundError(f"{folder} has no training.json: --card stores figures for a model trained by labkit")
    path = folder / EVAL_FILE
    path.write_text(json.dumps(result, indent=1) + "\n")
    return path
