"""Golden logits for labkit's LLaDA-MoE family, made once by hand with the published modeling code.

The published remote code (modeling_lladamoe.py + configuration_lladamoe.py of inclusionAI/LLaDA-MoE-7B-A1B,
or a vendored copy of them, e.g. dllm/pipelines/llada/models/ in the dllm repository; never kept in this
repository) imports transformers.modeling_attn_mask_utils and the "default" RoPE initialiser, both gone in
transformers 5, so the script runs with transformers 4.57 first on the path:

    pip install --target /tmp/refenv/site --no-deps transformers==4.57.1 huggingface_hub==0.36.0 tokenizers==0.22.1
    PYTHONPATH=/tmp/refenv/site .venv/bin/python benchmarks/make_family_fixtures_llada_moe.py --reference REF

REF is the folder holding the two published files. The script builds a tiny random checkpoint in the
published layout (fixed seed; the config exercises what the published forward reads: a dense layer among the
MoE ones, a shared expert, the expert-bias buffer, grouped kv heads, per-head q/k norms), builds the reference
model directly from its config class (never from_pretrained, so nothing is left on the meta device; the
rotary inv_freq buffer is checked to hold real frequencies), puts the weights in with load_state_dict, runs
its forward in float32 on the CPU on a left-padded batch with its 2-D attention mask (positions 0..L-1, as
the published code numbers them), and writes tests/fixtures/llada_moe/{config.json, model.safetensors,
inputs.json, logits.pt}, which tests/test_family_llada_moe.py compares labkit's logits with (1e-4).
Not run in CI.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

import torch
from safetensors.torch import save_file

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "llada_moe"
SEED = 4321
FILES = ("modeling_lladamoe.py", "configuration_lladamoe.py")

CONFIG = {"architectures": ["LLaDAMoEModelLM"], "model_type": "llada",
          "auto_map": {"AutoConfig": "configuration_lladamoe.LLaDAConfig",
                       "AutoModelForCausalLM": "modeling_lladamoe.LLaDAMoEModelLM",
                       "AutoModel": "modeling_lladamoe.LLaDAMoEModelLM"},
          "vocab_size": 96, "hidden_size": 32, "num_hidden_layers": 3, "num_attention_heads": 4,
          "num_key_value_heads": 2, "num_experts": 4, "num_experts_per_tok": 2, "expert_intermediate_size": 16,
          "moe_layer_freq": [1, 0, 1], "dense_intermediate_size": 48, "shared_expert_intermediate_size": 24,
          "qk_layernorm": True, "attention_bias": False, "clip_qkv": None, "hidden_act": "silu",
          "rope_theta": 50000, "rope_scaling": None, "partial_rotary_factor": 1.0, "max_position_embeddings": 64,
          "rms_norm_eps": 1e-6, "norm_topk_prob": True, "moe_router_score_function": "softmax",
          "moe_router_enable_expert_bias": True, "routed_scaling_factor": 1.0, "router_num_group": None,
          "router_topk_group": None, "output_router_logits": False, "router_aux_loss_coef": 0.01,
          "initializer_range": 0.02, "attention_dropout": 0.0, "tie_word_embeddings": False, "mask_token_id": 92,
          "eos_token_id": 89, "pad_token_id": 89, "torch_dtype": "float32", "use_cache": False,
          "transformers_version": "4.46.3"}
INPUTS = {"input_ids": [[5, 17, 92, 92, 33, 2, 64, 92, 92, 12], [89, 89, 89, 9, 92, 14, 92, 92, 6, 92]],
          "attention_mask": [[1] * 10, [0, 0, 0] + [1] * 7]}


def weights(c: dict, seed: int = SEED) -> dict[str, torch.Tensor]:
    """Random float32 weights under the published parameter names (norm weights near 1)."""
    g = torch.Generator().manual_seed(seed)
    d, v, e = c["hidden_size"], c["vocab_size"], c["num_experts"]
    hd = d // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    rnd = lambda *s, std=d ** -0.5: torch.randn(*s, generator=g) * std
    norm = lambda n: 1 + rnd(n, std=0.1)
    w = {"model.embed_tokens.weight": rnd(v, d, std=1.0), "model.norm.weight": norm(d), "lm_head.weight": rnd(v, d)}
    for i, moe in enumerate(c["moe_layer_freq"]):
        p = f"model.layers.{i}."
        w |= {p + "input_layernorm.weight": norm(d), p + "post_attention_layernorm.weight": norm(d),
              p + "self_attn.q_proj.weight": rnd(q, d), p + "self_attn.k_proj.weight": rnd(kv, d),
              p + "self_attn.v_proj.weight": rnd(kv, d), p + "self_attn.o_proj.weight": rnd(d, q),
              p + "self_attn.q_norm.weight": norm(hd), p + "self_attn.k_norm.weight": norm(hd)}
        mlps = {f"mlp.experts.{j}.": c["expert_intermediate_size"] for j in range(e)} if moe else \
            {"mlp.": c["dense_intermediate_size"]}
        if moe:                                      # the published layer has a shared expert only when MoE
            mlps["shared_expert."] = c["shared_expert_intermediate_size"]
            w |= {p + "mlp.gate.weight": rnd(e, d, std=1.0), p + "mlp.expert_bias": rnd(e, std=0.1)}
        for m, inner in mlps.items():
            w |= {p + m + "gate_proj.weight": rnd(inner, d), p + m + "up_proj.weight": rnd(inner, d),
                  p + m + "down_proj.weight": rnd(d, inner, std=inner ** -0.5)}
    return w


def import_reference(folder: Path):
    """The published modeling_lladamoe as a module of a throwaway package (it imports .configuration_lladamoe)."""
    import transformers

    if int(transformers.__version__.split(".")[0]) >= 5:
        sys.exit(f"transformers {transformers.__version__}: the published code needs 4.x (see the docstring)")
    missing = [f for f in FILES if not (folder / f).is_file()]
    if missing:
        sys.exit(f"{folder} lacks {', '.join(missing)}")
    pkg = Path(tempfile.mkdtemp()) / "lladamoe_reference"
    pkg.mkdir()
    for f in FILES:
        shutil.copy(folder / f, pkg / f)
    (pkg / "__init__.py").write_text("")
    sys.path.insert(0, str(pkg.parent))
    return importlib.import_module("lladamoe_reference.modeling_lladamoe")


def reference_logits(modeling, state: dict) -> torch.Tensor:
    run_cfg = {k: v for k, v in CONFIG.items() if k not in ("architectures", "auto_map", "model_type")}
    x, mask = torch.tensor(INPUTS["input_ids"]), torch.tensor(INPUTS["attention_mask"])
    out = {}
    for attn in ("sdpa", "eager"):
        config = modeling.LLaDAMoEConfig(**run_cfg)
        config._attn_implementation = attn
        net = modeling.LLaDAMoEModelLM(config).float().eval()      # built here, never through from_pretrained
        net.load_state_dict(state, strict=True)                    # every published name, nothing else
        rot = net.model.rotary_emb                                  # the known trap: inv_freq must be real
        hd = CONFIG["hidden_size"] // CONFIG["num_attention_heads"]
        want = 1.0 / CONFIG["rope_theta"] ** (torch.arange(0, hd, 2).float() / hd)
        assert torch.allclose(rot.inv_freq, want), rot.inv_freq
        with torch.no_grad():
            out[attn] = net(input_ids=x, attention_mask=mask, use_cache=False, return_dict=True).logits.float()
            unmasked = net(input_ids=x, use_cache=False, return_dict=True).logits.float()
        assert not torch.equal(out[attn], unmasked), "the reference ignores attention_mask"
    assert (out["sdpa"] - out["eager"]).abs().max() < 1e-5, "the reference's sdpa and eager paths disagree"
    assert torch.isfinite(out["sdpa"]).all()
    return out["sdpa"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference", type=Path, required=True, help="folder with the published modeling_lladamoe.py "
                                                                   "and configuration_lladamoe.py")
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args()
    torch.manual_seed(SEED)
    modeling = import_reference(a.reference.resolve())
    state = weights(CONFIG)
    logits = reference_logits(modeling, state)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "config.json").write_text(json.dumps(CONFIG, indent=2) + "\n")
    save_file(state, str(a.out / "model.safetensors"), metadata={"format": "pt"})
    sha = {f: hashlib.sha256((a.reference / f).read_bytes()).hexdigest() for f in FILES}
    (a.out / "inputs.json").write_text(json.dumps({**INPUTS, "reference_sha256": sha, "seed": SEED}) + "\n")
    torch.save(logits.clone(), a.out / "logits.pt")
    for f in sorted(a.out.iterdir()):
        print(f"{f}  {f.stat().st_size / 1024:.1f} KB")


if __name__ == "__main__":
    main()
