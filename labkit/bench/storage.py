"""Storing a committed model at 16 bits, where its figures hold: `store_16bit` halves the weights
file (float16: 10 mantissa bits, ample range for a tiny model's weights; `labkit.load` reads it back
into float32) and records, in training.json, the held-out bits per token before and after."""
from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from ..eval.likelihood import predicted_bits
from ..models.load import load
from .likelihood import pick_windows

HOLD_WINDOWS = 16          # held-out windows the check reads
HOLD_TOLERANCE = 0.005     # bits per token the 16-bit weights may lose


def store_16bit(folder: str | Path, windows: int = HOLD_WINDOWS, tolerance: float = HOLD_TOLERANCE) -> dict:
    """Rewrite folder/model.safetensors in float16 if the model's bits per predicted token on
    `windows` held-out windows (eval.likelihood.predicted_bits, one fixed seed) move by at most
    `tolerance`; else leave it at 32 bits. Returns (and writes into training.json as `stored`) the
    two figures, the bytes before and after, and the decision."""
    folder = Path(folder)
    path = folder / "model.safetensors"
    state = load_file(path)
    if all(v.dtype == torch.float16 for v in state.values() if v.is_floating_point()):
        raise ValueError(f"{path} is stored at 16 bits already")
    lm = load(str(folder))
    w = pick_windows(lm, windows)
    before = predicted_bits(lm, w, mc_num=4, seed=0)["bits_per_token"]
    half = {k: v.half() if v.is_floating_point() else v for k, v in state.items()}
    with torch.no_grad():
        for name, p in lm.net.state_dict().items():
            if name in half and p.is_floating_point():
                p.copy_(half[name].float())
    after = predicted_bits(lm, w, mc_num=4, seed=0)["bits_per_token"]
    size = path.stat().st_size
    keep = abs(after - before) <= tolerance
    if keep:
        save_file(half, path, metadata={"format": "pt"})
    record = {"bits": 16 if keep else 32, "bits_per_token_32": round(before, 4), "bits_per_token_16": round(after, 4),
              "windows": len(w), "bytes_32": size, "bytes": path.stat().st_size}
    training = folder / "training.json"
    if training.is_file():
        t = json.loads(training.read_text())
        t["stored"] = record
        training.write_text(json.dumps(t, indent=1))
    return record


__all__ = ["HOLD_TOLERANCE", "HOLD_WINDOWS", "store_16bit"]
