"""Golden logits for tests/test_family_llada2.py from the published LLaDA2.x modeling code.

The published remote code (modeling_llada2_moe.py + configuration_llada2_moe.py of the HF repo
inclusionAI/LLaDA2.0-mini, or a vendored copy of them) needs transformers 4.x, so this runs in two steps:

    # 1. with labkit's venv: the test's tiny random checkpoint, into a folder
    .venv/bin/python benchmarks/make_family_fixtures_llada2.py write /tmp/llada2_tiny
    # 2. with transformers 4.57 first on the path (e.g. pip install --target /tmp/refenv/site --no-deps
    #    transformers==4.57.1 huggingface_hub==0.36.0 tokenizers==0.22.1) and REF a folder holding the two
    #    published files: the reference's logits under the official block-diffusion mask, into the fixture
    PYTHONPATH=/tmp/refenv/site .venv/bin/python benchmarks/make_family_fixtures_llada2.py golden /tmp/llada2_tiny REF

The fixture (tests/fixtures/llada2/golden.safetensors) holds the input ids, the reference's float32
logits and a checksum of the weights, so the test notices if its random checkpoint ever changes.
"""
from __future__ import annotations

import argparse
import importlib
import json
import shutil
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "llada2" / "golden.safetensors"
INPUTS = ([5, 17, 3, 40, 92, 92, 8, 92, 61, 2, 92, 77],                          # 3 blocks of 4
          [60, 61, 62, 1, 2, 3, 92, 92, 92, 92, 10, 11, 12, 92, 13, 92])          # 4 blocks of 4


def checksum(weights: dict) -> torch.Tensor:
    return torch.stack([weights[k].double().sum() for k in sorted(weights)]).sum().reshape(1)


def write(folder: Path) -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    from test_family_llada2 import write_checkpoint

    write_checkpoint(folder)
    print(f"wrote the tiny checkpoint to {folder}")


def _reference(folder: Path, ref: Path):
    """The published LLaDA2MoeModelLM on the tiny checkpoint, imported as a package from `ref`."""
    pkg = folder / "llada2_reference"
    pkg.mkdir(exist_ok=True)
    for name in ("modeling_llada2_moe.py", "configuration_llada2_moe.py"):
        shutil.copy(ref / name, pkg / name)
    (pkg / "__init__.py").write_text("")
    sys.path.insert(0, str(folder))
    modeling = importlib.import_module("llada2_reference.modeling_llada2_moe")
    cfg = json.loads((folder / "config.json").read_text())
    config = modeling.LLaDA2MoeConfig(**{k: v for k, v in cfg.items() if k not in ("auto_map", "architectures")})
    config._attn_implementation = "sdpa"
    net = modeling.LLaDA2MoeModelLM(config).float().eval()
    from safetensors.torch import load_file

    weights = load_file(str(folder / "model.safetensors"))
    missing, unexpected = net.load_state_dict(weights, strict=False)
    assert not missing and not unexpected, (missing, unexpected)
    return net, weights, cfg["block_size"]


def golden(folder: Path, ref: Path) -> None:
    import transformers
    from safetensors.torch import save_file

    net, weights, block = _reference(folder, ref)
    out = {"checksum": checksum(weights)}
    for n, ids in enumerate(INPUTS):
        L = len(ids)
        blocks = torch.arange(L) // block
        mask = (blocks[None, :] <= blocks[:, None]).float().log()[None, None]          # official: log(block tril)
        with torch.no_grad():
            logits = net(torch.tensor([ids]), attention_mask=mask, position_ids=torch.arange(L)[None]).logits
        out[f"ids_{n}"], out[f"logits_{n}"] = torch.tensor(ids), logits[0].float()
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    save_file(out, str(FIXTURE), metadata={"transformers": transformers.__version__, "torch": torch.__version__})
    print(f"wrote {FIXTURE} with transformers {transformers.__version__}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("step", choices=("write", "golden"))
    p.add_argument("folder", type=Path)
    p.add_argument("ref", type=Path, nargs="?", help="folder with the published modeling/configuration files")
    a = p.parse_args()
    write(a.folder) if a.step == "write" else golden(a.folder, a.ref)


if __name__ == "__main__":
    main()
