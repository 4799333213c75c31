"""Golden logits for labkit's LLaDA-8B family, made once by hand with the published modeling code.

    python benchmarks/make_family_fixtures_llada.py --reference /tmp/llada_ref/modeling_llada.py

`--reference` is a copy of GSAI-ML's modeling_llada.py with its configuration_llada.py in the same
folder (fetched by hand, never kept in this repository). The script builds a tiny random
checkpoint in the published layout (fixed seed), runs the reference model's forward on it in
float32 on the CPU with a left-padded batch and its attention mask, and writes
tests/fixtures/llada/{config.json, model.safetensors, inputs.json, logits.pt}, which
tests/test_family_llada.py compares labkit's logits with (1e-4). Not run in CI.

transformers 5 cannot load the reference through from_pretrained; the model is built directly from
its config class and the weights are put in with load_state_dict, so post_init and tied-weight
bookkeeping (what v5 breaks) are never needed. The reference must take the attention mask (the
October 2025 upstream file); an older copy that ignores it is refused.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import sys
import types
from pathlib import Path

import torch
from safetensors.torch import save_file

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "llada"
SEED = 1234

CONFIG = {"activation_type": "silu", "alibi": False, "alibi_bias_max": 8.0, "architectures": ["LLaDAModelLM"],
          "attention_dropout": 0.0, "attention_layer_norm": False, "attention_layer_norm_with_affine": True,
          "auto_map": {"AutoConfig": "configuration_llada.LLaDAConfig", "AutoModelForCausalLM": "modeling_llada.LLaDAModelLM",
                       "AutoModel": "modeling_llada.LLaDAModelLM"},
          "bias_for_layer_norm": False, "block_group_size": 1, "block_type": "llama", "d_model": 32,
          "embedding_dropout": 0.0, "embedding_size": 96, "eos_token_id": 87, "flash_attention": False,
          "include_bias": False, "include_qkv_bias": False, "init_cutoff_factor": None, "init_device": "meta",
          "init_fn": "mitchell", "init_std": 0.02, "input_emb_norm": False, "layer_norm_type": "rms",
          "layer_norm_with_affine": True, "mask_token_id": 90, "max_sequence_length": 64, "mlp_hidden_size": 64,
          "mlp_ratio": 4, "model_type": "llada", "multi_query_attention": None, "n_heads": 4, "n_kv_heads": 4,
          "n_layers": 2, "pad_token_id": 87, "precision": "amp_bf16", "residual_dropout": 0.0, "rms_norm_eps": 1e-05,
          "rope": True, "rope_full_precision": True, "rope_theta": 500000.0, "scale_logits": False,
          "transformers_version": "4.46.3", "use_cache": False, "vocab_size": 96, "weight_tying": False}
INPUTS = {"input_ids": [[5, 17, 90, 90, 33, 2, 64, 90, 90, 12], [87, 87, 87, 9, 90, 14, 90, 90, 6, 90]],
          "attention_mask": [[1] * 10, [0, 0, 0] + [1] * 7]}


def weights(cfg: dict, seed: int) -> dict[str, torch.Tensor]:
    """Random float32 weights under the published parameter names."""
    g = torch.Generator().manual_seed(seed)
    d, f, v = cfg["d_model"], cfg["mlp_hidden_size"], cfg["embedding_size"]
    kv = cfg["n_kv_heads"] * d // cfg["n_heads"]
    rnd = lambda *s, std=0.3: torch.randn(*s, generator=g) * std
    w = {"model.transformer.wte.weight": rnd(v, d, std=1.0), "model.transformer.ln_f.weight": 1 + rnd(d, std=0.1),
         "model.transformer.ff_out.weight": rnd(v, d)}
    for i in range(cfg["n_layers"]):
        p = f"model.transformer.blocks.{i}."
        w |= {p + "attn_norm.weight": 1 + rnd(d, std=0.1), p + "ff_norm.weight": 1 + rnd(d, std=0.1),
              p + "q_proj.weight": rnd(d, d), p + "k_proj.weight": rnd(kv, d), p + "v_proj.weight": rnd(kv, d),
              p + "attn_out.weight": rnd(d, d, std=0.15), p + "ff_proj.weight": rnd(f, d), p + "up_proj.weight": rnd(f, d),
              p + "ff_out.weight": rnd(d, f, std=0.1)}
    return w


def import_reference(modeling: Path) -> types.ModuleType:
    """modeling_llada.py imported as a module of a throwaway package (it imports .configuration_llada)."""
    if not (modeling.parent / "configuration_llada.py").is_file():
        sys.exit(f"{modeling.parent} has no configuration_llada.py next to {modeling.name}")
    pkg = types.ModuleType("llada_reference")
    pkg.__path__ = [str(modeling.parent)]
    sys.modules["llada_reference"] = pkg
    spec = importlib.util.spec_from_file_location("llada_reference.modeling_llada", modeling)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def reference_logits(ref: types.ModuleType, cfg: dict, w: dict) -> torch.Tensor:
    run_cfg = {k: v for k, v in cfg.items() if k not in ("auto_map", "architectures", "transformers_version")}
    config = ref.LLaDAConfig(**run_cfg)
    net = ref.LLaDAModelLM(config, init_params=False).float().eval()   # built on the CPU by the reference itself
    missing, unexpected = net.load_state_dict(w, strict=False)
    if missing or unexpected:
        sys.exit(f"reference parameter names differ: missing {missing[:4]}, unexpected {unexpected[:4]}")
    x, mask = torch.tensor(INPUTS["input_ids"]), torch.tensor(INPUTS["attention_mask"])
    with torch.no_grad():
        logits = net(input_ids=x, attention_mask=mask, use_cache=False, return_dict=True).logits.float()  # (B, L, V)
        unmasked = net(input_ids=x, use_cache=False, return_dict=True).logits.float()
    if torch.equal(logits, unmasked):
        sys.exit("the reference ignores attention_mask (a pre-October-2025 copy): use the current upstream file")
    return logits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference", type=Path, required=True, help="path to the published modeling_llada.py")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    torch.manual_seed(SEED)
    ref = import_reference(args.reference.resolve())
    w = weights(CONFIG, SEED)
    logits = reference_logits(ref, CONFIG, w)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "config.json").write_text(json.dumps(CONFIG, indent=2) + "\n")
    save_file(w, str(args.out / "model.safetensors"))
    sha = hashlib.sha256(args.reference.read_bytes()).hexdigest()
    (args.out / "inputs.json").write_text(json.dumps({**INPUTS, "reference_sha256": sha, "seed": SEED}) + "\n")
    torch.save(logits.clone(), args.out / "logits.pt")
    print(f"wrote {args.out}: logits {tuple(logits.shape)}, reference sha256 {sha[:16]}")


if __name__ == "__main__":
    main()
