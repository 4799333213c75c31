"""LLaDA-MoE (model_type "llada", MoE keys): a tiny random checkpoint in the published on-disk layout
(config keys, `model.layers.{i}.self_attn.*` with per-head q/k norms, `mlp.gate`, `mlp.experts.{j}.*`),
loaded through labkit.models.families.llada_moe: family checks, a naive float64 reference written
here (softmax top-k routing without renormalisation), the config-driven variants, detect() against
dense LLaDA-8B, the loader's errors, and golden logits of the published modeling_lladamoe.py
(tests/fixtures/llada_moe, made by hand with benchmarks/make_family_fixtures_llada_moe.py)."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
import torch
from families_common import check_family, save_tokenizer, save_weights

import labkit.models.families.llada_moe  # noqa: F401  (registers the family until families/__init__ imports it)
from labkit.models.families import FamilyError, detect
from labkit.models.families.llada import LLaDA
from labkit.models.families.llada_moe import PUBLISHED, LLaDAMoE, LLaDAMoEConfig, LLaDAMoENet, parameter_count
from labkit.models.load import load

FIXTURE = Path(__file__).parent / "fixtures" / "llada_moe"
V, D, H, HD, LAYERS, E, K, IE = 96, 32, 4, 8, 2, 4, 2, 16
SPECIALS = {"<|startoftext|>": 88, "<|endoftext|>": 89, "<|mask|>": 92, "<role>": 93, "</role>": 94, "<|role_end|>": 95}
CHAT_TEMPLATE = ("{% for m in messages %}<role>{{ m['role'] | upper }}</role>{{ m['content'] }}<|role_end|>{% endfor %}"
                 "<role>ASSISTANT</role>")


def tiny_config(**over) -> dict:
    """The config keys families.md section 2 lists for LLaDA-MoE-7B-A1B, with tiny sizes."""
    cfg = {"architectures": ["LLaDAMoEModelLM"], "model_type": "llada",
           "auto_map": {"AutoConfig": "configuration_lladamoe.LLaDAConfig",
                        "AutoModelForCausalLM": "modeling_lladamoe.LLaDAMoEModelLM",
                        "AutoModel": "modeling_lladamoe.LLaDAMoEModelLM"},
           "vocab_size": V, "hidden_size": D, "num_hidden_layers": LAYERS, "num_attention_heads": H,
           "num_key_value_heads": H, "num_experts": E, "num_experts_per_tok": K, "expert_intermediate_size": IE,
           "moe_layer_freq": [1] * LAYERS, "dense_intermediate_size": 64, "shared_expert_intermediate_size": None,
           "qk_layernorm": True, "attention_bias": False, "clip_qkv": None, "hidden_act": "silu",
           "rope_theta": 50000, "rope_scaling": None, "partial_rotary_factor": 1.0, "max_position_embeddings": 64,
           "rms_norm_eps": 1e-6, "norm_topk_prob": True, "moe_router_score_function": "softmax",
           "moe_router_enable_expert_bias": False, "routed_scaling_factor": 1.0, "router_num_group": None,
           "router_topk_group": None, "tie_word_embeddings": False, "mask_token_id": 92, "eos_token_id": 89,
           "pad_token_id": 89, "torch_dtype": "float32", "use_cache": False, "transformers_version": "4.46.3"}
    cfg.update(over)
    return cfg


def tiny_weights(cfg: dict, seed: int = 0) -> dict:
    """Random weights under the published parameter names (written out here, not taken from labkit)."""
    g = torch.Generator().manual_seed(seed)
    rnd = lambda *s, std=D ** -0.5: torch.randn(*s, generator=g) * std
    norm = lambda n: 1 + rnd(n, std=0.1)
    w = {"model.embed_tokens.weight": rnd(V, D, std=1.0), "model.norm.weight": norm(D), "lm_head.weight": rnd(V, D)}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        w |= {p + "input_layernorm.weight": norm(D), p + "post_attention_layernorm.weight": norm(D),
              p + "self_attn.q_proj.weight": rnd(H * HD, D), p + "self_attn.k_proj.weight": rnd(H * HD, D),
              p + "self_attn.v_proj.weight": rnd(H * HD, D), p + "self_attn.o_proj.weight": rnd(D, H * HD),
              p + "self_attn.q_norm.weight": norm(HD), p + "self_attn.k_norm.weight": norm(HD)}
        moe = cfg["moe_layer_freq"][i]
        mlps = {f"mlp.experts.{j}.": IE for j in range(E)} if moe else {"mlp.": cfg["dense_intermediate_size"]}
        if moe and cfg["shared_expert_intermediate_size"]:                  # MoE layers only, as upstream
            mlps["shared_expert."] = cfg["shared_expert_intermediate_size"]
        for m, inner in mlps.items():
            w |= {p + m + "gate_proj.weight": rnd(inner, D), p + m + "up_proj.weight": rnd(inner, D),
                  p + m + "down_proj.weight": rnd(D, inner, std=inner ** -0.5)}
        if moe:
            w[p + "mlp.gate.weight"] = rnd(E, D, std=1.0)
            if cfg["moe_router_enable_expert_bias"]:
                w[p + "mlp.expert_bias"] = rnd(E, std=0.1)
    return w


def write_checkpoint(folder: Path, cfg: dict, weights: dict, shards: int = 1) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(cfg, indent=2))
    save_tokenizer(folder, SPECIALS, V, mask="<|mask|>", eos="<|endoftext|>", pad="<|endoftext|>",
                   chat_template=CHAT_TEMPLATE)
    save_weights(folder, weights, shards)
    return folder


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    cfg = tiny_config()
    w = tiny_weights(cfg, seed=0)
    return write_checkpoint(tmp_path_factory.mktemp("llada_moe"), cfg, w), cfg, w


def naive_logits(w: dict, cfg: dict, ids: list[int], positions: list[int], keep: list[bool], *,
                 renormalize: bool = False) -> torch.Tensor:
    """One row in float64, one token / query at a time: RMSNorm, per-head RMSNorm of q and k,
    pairwise RoPE on (j, j + rot/2) of the first rot channels, softmax over the kept keys, softmax
    router → top-k probabilities (not renormalised), SwiGLU experts → (L, V)."""
    w = {k: t.double() for k, t in w.items()}
    eps, theta = cfg["rms_norm_eps"], cfg["rope_theta"]
    rot = int(HD * (cfg["partial_rotary_factor"] if cfg.get("partial_rotary_factor", -1) > 0 else 1.0))
    norm = lambda v, g: v / torch.sqrt((v * v).mean(-1, keepdim=True) + eps) * g
    swiglu = lambda n, p: (torch.nn.functional.silu(n @ w[p + "gate_proj.weight"].T) * (n @ w[p + "up_proj.weight"].T)
                           ) @ w[p + "down_proj.weight"].T

    def rope(v, pos):                                       # v (HD,)
        out = v.clone()
        for j in range(rot // 2):
            a = pos * theta ** (-2 * j / rot)
            out[j] = v[j] * math.cos(a) - v[j + rot // 2] * math.sin(a)
            out[j + rot // 2] = v[j + rot // 2] * math.cos(a) + v[j] * math.sin(a)
        return out

    def moe(n, p):                                          # n (d,)
        probs = torch.softmax(n @ w[p + "mlp.gate.weight"].T, 0) + w.get(p + "mlp.expert_bias", torch.zeros(E))
        top = sorted(range(E), key=lambda e: -float(probs[e]))[:K]
        total = sum(float(probs[e]) for e in top) if renormalize else 1.0
        return sum(float(probs[e]) / total * swiglu(n, p + f"mlp.experts.{e}.") for e in top)

    x, L = w["model.embed_tokens.weight"][ids], len(ids)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        n = norm(x, w[p + "input_layernorm.weight"])
        q, k, v = (n @ w[p + f"self_attn.{m}_proj.weight"].T for m in "qkv")
        att = torch.zeros(L, H * HD, dtype=torch.float64)
        for h in range(H):
            sl = slice(h * HD, (h + 1) * HD)
            ks = [rope(norm(k[t, sl], w[p + "self_attn.k_norm.weight"]), positions[t]) for t in range(L)]
            for s in range(L):
                qs = rope(norm(q[s, sl], w[p + "self_attn.q_norm.weight"]), positions[s])
                scores = torch.tensor([float(qs @ ks[t]) / math.sqrt(HD) if keep[t] else -math.inf for t in range(L)],
                                      dtype=torch.float64)
                att[s, sl] = torch.softmax(scores, 0) @ v[:, sl]
        x = x + att @ w[p + "self_attn.o_proj.weight"].T
        n = norm(x, w[p + "post_attention_layernorm.weight"])
        ff = [moe(n[t], p) if cfg["moe_layer_freq"][i] else swiglu(n[t], p + "mlp.") for t in range(L)]
        if cfg["moe_layer_freq"][i] and cfg["shared_expert_intermediate_size"]:
            ff = [f + swiglu(n[t], p + "shared_expert.") for t, f in enumerate(ff)]
        x = x + torch.stack(ff)
    return norm(x, w["model.norm.weight"]) @ w["lm_head.weight"].T


def test_detect_tells_llada_moe_from_llada_8b():
    assert isinstance(detect(tiny_config()), LLaDAMoE)
    dense = {"model_type": "llada", "architectures": ["LLaDAModelLM"], "d_model": 32, "n_layers": 2, "n_heads": 4}
    assert isinstance(detect(dense), LLaDA)
    assert not LLaDAMoE().claims(dense)
    assert not LLaDAMoE().claims({**tiny_config(), "d_model": 32})          # a dense config with stray MoE keys
    assert not LLaDAMoE().claims({k: v for k, v in tiny_config().items() if k != "num_experts"})
    assert not LLaDAMoE().claims(tiny_config(model_type="llada2_moe"))
    assert "14.7 GB" in LLaDAMoE.memory and "7.36B" in LLaDAMoE.memory


@pytest.mark.parametrize("over", [{}, {"moe_layer_freq": [0, 1], "shared_expert_intermediate_size": 24,
                                       "moe_router_enable_expert_bias": True, "attention_bias": True}])
def test_parameter_count_is_the_networks(over):
    cfg = tiny_config(**over)
    with torch.device("meta"):
        net = LLaDAMoENet(LLaDAMoEConfig.from_dict(cfg))
    assert parameter_count(cfg) == sum(t.numel() for t in net.state_dict().values())
    assert parameter_count(PUBLISHED) == 7_356_880_896                    # families.md: 14 713 761 792 B of bf16


def test_loads_and_decodes(checkpoint):
    folder, cfg, _ = checkpoint
    lm = load(str(folder))
    assert isinstance(lm.family, LLaDAMoE)
    assert (lm.mask_id, lm.eos_id, lm.pad_id, lm.eot_id, lm.max_length) == (92, 89, 89, 95, 64)
    check_family(lm)


def test_mask_id_without_config_key(checkpoint, tmp_path):
    """Third-party notes say the published config.json has no mask_token_id: "<|mask|>" is found."""
    folder, cfg, w = checkpoint
    cfg = {k: v for k, v in cfg.items() if k != "mask_token_id"}
    assert load(str(write_checkpoint(tmp_path, cfg, w))).mask_id == 92


def test_logits_match_naive_reference(checkpoint):
    folder, cfg, w = checkpoint
    lm = load(str(folder))
    ids = [5, 17, 92, 92, 33, 2, 64, 92]
    out = lm(torch.tensor([ids]))[0].double()
    assert out.shape == (len(ids), V)
    ref = naive_logits(w, cfg, ids, list(range(len(ids))), [True] * len(ids))
    assert (out - ref).abs().max() < 1e-4
    renorm = naive_logits(w, cfg, ids, list(range(len(ids))), [True] * len(ids), renormalize=True)
    assert (renorm - ref).abs().max() > 1e-2                                  # the choice matters on these weights


@pytest.mark.parametrize("official", [False, True])
def test_left_padding(checkpoint, official):
    """Pads are never attended to; positions start at 0 on each row's first real token (default) or
    run 0..T-1 over the padded row (official_positions=True, as the published code)."""
    folder, cfg, w = checkpoint
    lm = load(str(folder))
    ids, p = [5, 17, 92, 92, 33], 3
    x = torch.tensor([[89] * p + ids, [9, 12, 14, 92, 92, 92, 6, 8]])
    mask = torch.tensor([[0] * p + [1] * len(ids), [1] * 8])
    out = LLaDAMoE(official_positions=official).forward(lm.net, x, mask).double()
    positions = list(range(p, p + len(ids))) if official else list(range(len(ids)))
    ref = naive_logits(w, cfg, [89] * p + ids, [0] * p + positions, [False] * p + [True] * len(ids))
    assert (out[0, p:] - ref[p:]).abs().max() < 1e-4
    assert (out[1] - naive_logits(w, cfg, x[1].tolist(), list(range(8)), [True] * 8)).abs().max() < 1e-4
    assert (out[0, p:] - lm(torch.tensor([ids]))[0]).abs().max() < 1e-4


@pytest.mark.parametrize("over", [
    {"partial_rotary_factor": 0.5},
    {"partial_rotary_factor": -1},                                         # the config class default → full rotary
    {"moe_layer_freq": [0, 1], "shared_expert_intermediate_size": 24, "moe_router_enable_expert_bias": True},
])
def test_config_variants_match_naive_reference(tmp_path, over):
    cfg = tiny_config(**over)
    w = tiny_weights(cfg, seed=3)
    lm = load(str(write_checkpoint(tmp_path, cfg, w)))
    ids = [5, 17, 92, 33, 2, 92]
    ref = naive_logits(w, cfg, ids, list(range(6)), [True] * 6)
    assert (lm(torch.tensor([ids]))[0].double() - ref).abs().max() < 1e-4


def test_family_options(checkpoint):
    """renormalize=True: top-k weights sum to 1; rotary_factor overrides the config's."""
    folder, cfg, w = checkpoint
    ids = [5, 17, 92, 33, 2, 92]
    net = LLaDAMoE(renormalize=True).build(folder, cfg, dtype=None, device=torch.device("cpu"),
                                           trust_remote_code=False)
    ref = naive_logits(w, cfg, ids, list(range(6)), [True] * 6, renormalize=True)
    assert (net(torch.tensor([ids]))[0].double() - ref).abs().max() < 1e-4
    net = LLaDAMoE(rotary_factor=0.5).build(folder, cfg, dtype=None, device=torch.device("cpu"),
                                            trust_remote_code=False)
    ref = naive_logits(w, {**cfg, "partial_rotary_factor": 0.5}, ids, list(range(6)), [True] * 6)
    assert (net(torch.tensor([ids]))[0].double() - ref).abs().max() < 1e-4


def test_sharded_index_and_dtype(checkpoint, tmp_path):
    folder, cfg, w = checkpoint
    sharded = write_checkpoint(tmp_path / "sharded", cfg, w, shards=3)
    x = torch.tensor([[5, 17, 92, 33, 92, 2]])
    assert torch.equal(load(str(sharded))(x), load(str(folder))(x))
    lm16 = load(str(sharded), dtype=torch.bfloat16)
    assert {p.dtype for p in lm16.net.parameters()} == {torch.bfloat16}
    assert lm16(x).dtype == torch.bfloat16
    assert not any(p.is_meta for p in lm16.net.parameters())
    (sharded / "model-00002-of-00003.safetensors").unlink()
    with pytest.raises(ValueError, match="missing"):
        load(str(sharded))


@pytest.mark.parametrize("edit", ["rename", "drop", "extra"])
def test_wrong_parameter_names_are_named(checkpoint, tmp_path, edit):
    folder, cfg, w = checkpoint
    w = dict(w)
    bad = "model.layers.1.self_attn.dense.weight"
    if edit == "rename":
        w[bad] = w.pop("model.layers.1.self_attn.o_proj.weight")
    elif edit == "drop":
        del w["model.layers.0.mlp.experts.3.up_proj.weight"]
    else:
        w["model.layers.0.mlp.expert_bias"] = torch.zeros(E)                # not in a config without expert bias
    with pytest.raises(FamilyError, match="does not match the LLaDA-MoE layout") as e:
        load(str(write_checkpoint(tmp_path, cfg, w)))
    named = {"rename": ("self_attn.o_proj", "self_attn.dense"), "drop": ("experts.3.up_proj",),
             "extra": ("mlp.expert_bias",)}
    assert all(n in str(e.value) for n in named[edit])


def test_wrong_shape_and_incomplete_config(checkpoint, tmp_path):
    folder, cfg, w = checkpoint
    w = {**w, "model.layers.0.mlp.gate.weight": torch.zeros(E + 1, D)}
    with pytest.raises(FamilyError, match="mlp.gate.weight has shape"):
        load(str(write_checkpoint(tmp_path / "shape", cfg, w)))
    cfg = {k: v for k, v in cfg.items() if k != "rope_theta"}
    with pytest.raises(FamilyError, match="rope_theta"):
        load(str(write_checkpoint(tmp_path / "config", cfg, w)))
    with pytest.raises(FamilyError, match="rope scaling"):           # (transformers' tokenizer loader trips first)
        LLaDAMoEConfig.from_dict(tiny_config(rope_scaling={"rope_type": "yarn", "factor": 2.0}))
    with pytest.raises(FamilyError, match="moe_layer_freq"):
        LLaDAMoEConfig.from_dict(tiny_config(moe_layer_freq=[1]))


@pytest.mark.skipif(not (FIXTURE / "logits.pt").is_file(),
                    reason="no golden fixture (benchmarks/make_family_fixtures_llada_moe.py)")
def test_golden_logits_of_the_published_code(tmp_path):
    """tests/fixtures/llada_moe: tiny random weights (a dense layer among MoE ones, a shared expert, expert
    bias, grouped kv heads) and the logits the published modeling_lladamoe.py gave for them on a left-padded
    batch with its attention mask (made by hand with benchmarks/make_family_fixtures_llada_moe.py, not in CI)."""
    folder = tmp_path / "golden"
    shutil.copytree(FIXTURE, folder)
    cfg = json.loads((folder / "config.json").read_text())
    save_tokenizer(folder, SPECIALS, cfg["vocab_size"], mask="<|mask|>", eos="<|endoftext|>", pad="<|endoftext|>")
    lm = load(str(folder))
    assert isinstance(lm.family, LLaDAMoE)
    inputs = json.loads((FIXTURE / "inputs.json").read_text())
    x, mask = torch.tensor(inputs["input_ids"]), torch.tensor(inputs["attention_mask"])
    golden = torch.load(FIXTURE / "logits.pt", weights_only=True)
    official = LLaDAMoE(official_positions=True).forward(lm.net, x, mask)
    assert (official - golden).abs().max() < 1e-4
    real = mask.bool()                                       # the default numbering: same logits on real tokens
    assert (lm(x, mask) - golden)[real].abs().max() < 1e-4
    assert not real.all()                                    # the fixture has a left-padded row
    assert not all(cfg["moe_layer_freq"]) and cfg["shared_expert_intermediate_size"]   # the layout that mattered
