"""What the docs and cards read from a model's weights file, without loading the model."""
from __future__ import annotations

import math
from pathlib import Path

from safetensors import safe_open

BUFFERS = ("structure_ids",)     # saved with the weights (labkit.models.tiny_net), not parameters


def parameters(folder: Path) -> int:
    """The parameters in folder/model.safetensors: tied embeddings are stored once, the buffers
    left out (the count `sum(p.numel() for p in lm.net.parameters())` gives)."""
    with safe_open(folder / "model.safetensors", "pt") as f:
        return sum(math.prod(f.get_slice(k).get_shape()) for k in f.keys() if k not in BUFFERS)
