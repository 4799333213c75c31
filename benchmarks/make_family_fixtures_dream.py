"""Golden logits for labkit's Dream family (tests/test_family_dream.py), from Dream's published modeling code.

Run by hand, not in CI, with a folder holding the published configuration_dream.py, modeling_dream.py and
generation_utils.py (Dream-org/Dream-v0-Instruct-7B; never copied into this repository):

    python benchmarks/make_family_fixtures_dream.py --reference /tmp/dream_ref

It builds a tiny random checkpoint in the published layout (fixed seed), runs the reference forward the way
Dream's own sampler calls it (left-padded batch: 4-D boolean mask key-valid AND query-valid, position ids
cumsum(mask) - 1 with pads at 1; unpadded: no mask, positions 0..L-1) and writes tests/fixtures/dream/:
config.json, model.safetensors (the weights) and reference.safetensors (input_ids, attention_mask, and the
reference's raw logits, before Dream's sampler shift, of the padded call and of the unpadded one).

Only what transformers 5 breaks is patched: the rope type "default" (gone from ROPE_INIT_FUNCTIONS) is mapped to
transformers' own default-RoPE function, and the rotary inv_freq buffer is checked to hold real frequencies.
"""
from __future__ import annotations

import argparse
import importlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

import torch
from safetensors.torch import save_file

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "dream"
SEED = 0
CONFIG = {
    "architectures": ["DreamModel"], "attention_dropout": 0.0,
    "auto_map": {"AutoConfig": "configuration_dream.DreamConfig", "AutoModel": "modeling_dream.DreamModel"},
    "bos_token_id": 1, "eos_token_id": 1, "pad_token_id": 1, "mask_token_id": 5, "hidden_act": "silu",
    "hidden_size": 32, "initializer_range": 0.02, "intermediate_size": 64, "max_position_embeddings": 64,
    "max_window_layers": 2, "model_type": "Dream", "num_attention_heads": 4, "num_hidden_layers": 2,
    "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000.0,
    "sliding_window": None, "tie_word_embeddings": False, "torch_dtype": "float32", "transformers_version": "4.46.2",
    "use_cache": False, "use_mrope": False, "use_sliding_window": False, "vocab_size": 96,
}


def weights(c: dict, seed: int = SEED) -> dict[str, torch.Tensor]:
    """Random float32 weights under the published parameter names (norm weights near 1)."""
    g = torch.Generator().manual_seed(seed)
    d, i, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    hd = d // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    shapes = {"model.embed_tokens.weight": (v, d), "model.norm.weight": (d,), "lm_head.weight": (v, d)}
    for n in range(c["num_hidden_layers"]):
        p = f"model.layers.{n}."
        shapes.update({p + "input_layernorm.weight": (d,), p + "post_attention_layernorm.weight": (d,),
                       p + "self_attn.q_proj.weight": (q, d), p + "self_attn.q_proj.bias": (q,),
                       p + "self_attn.k_proj.weight": (kv, d), p + "self_attn.k_proj.bias": (kv,),
                       p + "self_attn.v_proj.weight": (kv, d), p + "self_attn.v_proj.bias": (kv,),
                       p + "self_attn.o_proj.weight": (d, q), p + "mlp.gate_proj.weight": (i, d),
                       p + "mlp.up_proj.weight": (i, d), p + "mlp.down_proj.weight": (d, i)})
    out = {}
    for name, shape in shapes.items():
        t = torch.randn(shape, generator=g)
        out[name] = (1 + 0.1 * t) if name.endswith("norm.weight") else 0.3 * t
    return out


def inputs(c: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """Two rows of 10 tokens; row 1 left-padded by 3 pads."""
    g = torch.Generator().manual_seed(SEED + 1)
    ids = torch.randint(0, c["vocab_size"], (2, 10), generator=g)
    mask = torch.ones(2, 10, dtype=torch.long)
    mask[1, :3] = 0
    ids[1, :3] = c["pad_token_id"]
    ids[:, -4:] = c["mask_token_id"]                  # a canvas of masks at the end, as in decoding
    return ids, mask


def reference_module(folder: Path):
    """The published modeling_dream as a package (its relative imports need one), patched for transformers 5."""
    import transformers.modeling_rope_utils as rope_utils
    from transformers.models.qwen2.modeling_qwen2 import Qwen2RotaryEmbedding

    def default_rope(config, device=None, **kwargs):
        if getattr(config, "rope_parameters", None) is None:
            config.rope_parameters = {"rope_type": "default", "rope_theta": config.rope_theta}
        inv_freq, scale = Qwen2RotaryEmbedding.compute_default_rope_parameters(config)
        return inv_freq.to(device) if device is not None else inv_freq, scale

    rope_utils.ROPE_INIT_FUNCTIONS.setdefault("default", default_rope)
    pkg = Path(tempfile.mkdtemp()) / "dream_reference"
    pkg.mkdir()
    for f in ("configuration_dream.py", "modeling_dream.py", "generation_utils.py"):
        shutil.copy(folder / f, pkg / f)
    (pkg / "__init__.py").write_text("")
    sys.path.insert(0, str(pkg.parent))
    return importlib.import_module("dream_reference.modeling_dream"), importlib.import_module(
        "dream_reference.configuration_dream")


def reference_logits(folder: Path, state: dict, ids: torch.Tensor, mask: torch.Tensor) -> dict:
    modeling, configuration = reference_module(folder)
    cfg = configuration.DreamConfig(**{k: v for k, v in CONFIG.items() if k not in ("architectures", "auto_map")})
    cfg._attn_implementation = "sdpa"
    net = modeling.DreamModel(cfg).eval()
    missing, unexpected = net.load_state_dict(state, strict=False)
    assert not unexpected and all("inv_freq" in k for k in missing), (missing, unexpected)
    rot = net.model.rotary_emb                        # the known trap: inv_freq must be real frequencies
    hd = CONFIG["hidden_size"] // CONFIG["num_attention_heads"]
    want = 1.0 / CONFIG["rope_theta"] ** (torch.arange(0, hd, 2).float() / hd)
    assert torch.allclose(rot.inv_freq, want), rot.inv_freq
    with torch.no_grad():
        pos = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)            # as Dream's diffusion_generate
        four_d = torch.logical_and(mask[:, None, None, :].bool(), mask[:, None, :, None].bool())
        padded = net(ids, four_d, pos, use_cache=False).logits
        full = net(ids, "full", None, use_cache=False).logits
    assert torch.isfinite(padded[mask.bool()]).all() and torch.isfinite(full).all()
    return {"logits_padded": padded.contiguous(), "logits_full": full.contiguous()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference", type=Path, required=True, help="folder with the published modeling_dream.py etc.")
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args()
    torch.manual_seed(SEED)
    state = weights(CONFIG)
    ids, mask = inputs(CONFIG)
    ref = reference_logits(a.reference, state, ids, mask)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "config.json").write_text(json.dumps(CONFIG, indent=2) + "\n")
    save_file(state, str(a.out / "model.safetensors"), metadata={"format": "pt"})
    save_file({"input_ids": ids, "attention_mask": mask, **ref}, str(a.out / "reference.safetensors"))
    for f in sorted(a.out.iterdir()):
        print(f"{f}  {f.stat().st_size / 1024:.1f} KB")


if __name__ == "__main__":
    main()
