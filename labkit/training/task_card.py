"""The task models' card (README.md in the folder of `tiny-task` / `tiny-task-ar`), written from
their training.json and a `labkit.eval.exact` result: what they are, how they were trained, and
their held-out exact-match accuracy per task, with 95% intervals."""
from __future__ import annotations

import json
import math
from pathlib import Path

from safetensors import safe_open

from ..models.load import model_folder
from ..tasks import addition, mirror, reversal, sudoku
from .loop import ADAM_BETAS


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _data_lines() -> list[str]:
    return [
        "## Data (`labkit.tasks`, built in code from a seed; one token per character)",
        f"- Sudoku {sudoku.N}×{sudoku.N}: every puzzle has one solution; training puzzles have "
        f"{sudoku.TRAIN_CLUES[0]}–{sudoku.TRAIN_CLUES[1]} clues (at least the minimal count), held-out levels "
        + ", ".join(f"{k} {lo}–{hi}" for k, (lo, hi) in sudoku.LEVELS.items()) + " clues.",
        f"- Addition of two {addition.WIDTH}-digit numbers, the sum written most-significant digit first.",
        f"- Reversal: {reversal.ONE_WAY} facts `A>B` trained forward only (the questions) and "
        f"{reversal.TWO_WAY} trained in both layouts (`A>B` and `B<A`), names of {reversal.NAME} letters.",
        f"- Mirror: {mirror.LENGTH} letters written backwards.",
        "- Held out: items whose key (solution grid, operands, letters) hashes into one bucket of ten are "
        "never trained on; the reversal questions ask trained facts in layouts never trained.",
        "",
    ]


def _model_lines(model: str, folder: Path, training: dict, cfgm: dict) -> list[str]:
    cfg = training["config"]
    with safe_open(folder / "model.safetensors", "pt") as f:
        size = sum(math.prod(f.get_slice(k).get_shape()) for k in f.keys())
    kind = "causal (the AR twin)" if cfgm.get("is_causal") else "bidirectional masked-diffusion"
    hist = training["loss_history"]
    return [
        f"# labkit `{model}`: a tiny {kind} LM trained on puzzles with exact answers",
        "",
        f"Trained from scratch by `labkit train --recipe {model}` (`make model-task` trains both twins side by "
        "side, one thread each) on a 2-core CPU; loaded by `labkit.load()`.",
        "",
        "## Model",
        f"- {size / 1e6:.2f}M parameters: {cfgm['num_hidden_layers']} layers, d_model {cfgm['hidden_size']}, "
        f"{cfgm['num_attention_heads']} heads, SwiGLU {cfgm['intermediate_size']}, RMSNorm, RoPE"
        + (" and learned absolute positions" if cfgm.get("absolute_positions") else "") + ", tied embeddings; "
        f"context {cfgm['max_position_embeddings']} tokens; {cfgm['vocab_size']} character tokens.",
        "",
        *_data_lines(),
        "## Recipe",
        f"- Objective: {cfg['objective']} ("
        + ("LLaDA's SFT masked diffusion on each row's answer, facts masked whole" if cfg["objective"] == "diffusion"
           else "next-token cross-entropy on each row's answer, facts whole") + ").",
        f"- {cfg['steps']} steps × {cfg['batch_size']} rows (one group per task, each ending in 1–4 EOS); AdamW "
        f"{ADAM_BETAS}, wd {cfg['weight_decay']}, lr {cfg['lr']} with {cfg['warmup']} warm-up steps and cosine "
        f"decay to {cfg['min_lr_ratio']}×; float32; seed {cfg['seed']}.",
        f"- Training time: {training['train_seconds'] / 60:.1f} min; loss {hist[0][1]} at step {hist[0][0]}, "
        f"{hist[-1][1]} at step {hist[-1][0]} (running mean).",
        "",
    ]


def _eval_lines(model: str, result: dict) -> list[str]:
    lines = [f"## Evaluation (`labkit eval --model {model} --tasks all`, held-out items)", "",
             f"Rule: `{result['sampler']}`, one block the length of the answer.", "",
             "| task | items | exact match | 95% interval | NFE per item |", "|---|---|---|---|---|"]
    for task, r in result["tasks"].items():
        rows = [(task, r)] + [(f"{task}: {g}", s) for g, s in r.get("groups", {}).items()]
        for label, s in rows:
            lo, hi = s["ci95"]
            lines.append(f"| {label} | {s['n']} | {_pct(s['accuracy'])} | {_pct(lo)}–{_pct(hi)} | {s['nfe_mean']} |")
    return lines + ["", "Every decoding rule, the AR twin side by side and the spread over training seeds: "
                    "docs/models.md (\"Where diffusion wins\") and notebooks/11_where_diffusion_wins.ipynb.", ""]


TASKS_JSON = Path("benchmarks") / "results" / "tasks.json"     # labkit bench tasks, from the repository root


def _target_lines(tasks_json: Path) -> list[str]:
    """The targets against `labkit bench tasks`'s measurements, where that file is at hand."""
    from ..bench.tasks import markdown_targets, targets

    if not tasks_json.is_file():
        return []
    minutes = {m: json.loads((model_folder(m) / "training.json").read_text())["train_seconds"] / 60
               for m in ("tiny-task", "tiny-task-ar")}
    rows = targets(json.loads(tasks_json.read_text()), minutes)
    return ["## Targets, and by how much they were missed", "",
            f"From `{tasks_json.as_posix()}` (every rule and the AR twin) and the training records; the training "
            "curve is `loss_history` in training.json, drawn in notebook 11.", "", markdown_targets(rows), ""]


def write_task_card(model: str, result: dict, tasks_json: Path = TASKS_JSON) -> Path:
    """Write README.md into the task model's folder (an embedded name or a path)."""
    folder = model_folder(model)
    training = json.loads((folder / "training.json").read_text())
    cfgm = json.loads((folder / "config.json").read_text())
    path = folder / "README.md"
    path.write_text("\n".join([*_model_lines(model, folder, training, cfgm), *_eval_lines(model, result),
                               *_target_lines(Path(tasks_json))]))
    return path
