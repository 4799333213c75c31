"""LLaDA2.x (model_type "llada2_moe"): a tiny random checkpoint in the published on-disk layout
(config keys, fused [Q|K|V], per-expert names, expert_bias), loaded through labkit's own module
and checked against the family checks, a naive reference written here, block-causal masking and
the router's group-limited choice."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from families_common import check_family, save_tokenizer, save_weights

import labkit as lk
import labkit.models.families.llada2  # noqa: F401
from labkit.models.families import detect
from labkit.models.families.llada2 import LLADA2, Gate, LLaDA2Config, LLaDA2Net

V, D, H, KV, HD, LAYERS = 96, 32, 4, 2, 8, 3
E, K, IM, INTER = 4, 2, 16, 64
SPECIALS = {"<|startoftext|>": 88, "<|endoftext|>": 89, "<|mask|>": 92, "<role>": 93, "</role>": 94, "<|role_end|>": 95}
CONFIG = {   # LLaDA2.1-mini's config.json keys (families.md 3.1), scaled down; block_size added for the test
    "architectures": ["LLaDA2MoeModelLM"], "model_type": "llada2_moe",
    "auto_map": {"AutoConfig": "configuration_llada2_moe.LLaDA2MoeConfig",
                 "AutoModel": "modeling_llada2_moe.LLaDA2MoeModel",
                 "AutoModelForCausalLM": "modeling_llada2_moe.LLaDA2MoeModelLM"},
    "dtype": "float32", "hidden_size": D, "num_hidden_layers": LAYERS, "num_attention_heads": H,
    "num_key_value_heads": KV, "head_dim": HD, "intermediate_size": INTER, "first_k_dense_replace": 1,
    "moe_intermediate_size": IM, "num_experts": E, "num_experts_per_tok": K, "num_shared_experts": 1,
    "n_group": 2, "topk_group": 1, "routed_scaling_factor": 2.5, "score_function": "sigmoid",
    "moe_router_enable_expert_bias": True, "norm_topk_prob": True, "router_dtype": "fp32", "norm_softmax": False,
    "norm_head": False, "rope_theta": 600000, "rope_scaling": None, "partial_rotary_factor": 0.5, "rotary_dim": 4,
    "max_position_embeddings": 256, "sliding_window": 4096, "use_sliding_window": False, "max_window_layers": 28,
    "rms_norm_eps": 1e-6, "use_qk_norm": True, "use_qkv_bias": False, "use_bias": False, "vocab_size": V,
    "tie_word_embeddings": False, "pad_token_id": 89, "mask_token_id": 92, "attention_dropout": 0.0,
    "embedding_dropout": 0.0, "output_dropout": 0.0, "output_router_logits": False, "transformers_version": "4.57.1",
    "block_size": 4,
}
BLOCK = CONFIG["block_size"]
GOLDEN = Path(__file__).parent / "fixtures" / "llada2" / "golden.safetensors"   # benchmarks/make_family_fixtures_llada2.py


def _weights(seed: int = 0) -> dict[str, torch.Tensor]:
    """Random tensors under the published names (written out here, not taken from labkit's module)."""
    g = torch.Generator().manual_seed(seed)
    r = lambda *shape, std=D ** -0.5: torch.randn(*shape, generator=g) * std
    norm = lambda n: 1 + r(n, std=0.1)
    sd = {"model.word_embeddings.weight": r(V, D, std=1.0), "model.norm.weight": norm(D), "lm_head.weight": r(V, D)}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        sd |= {p + "input_layernorm.weight": norm(D), p + "post_attention_layernorm.weight": norm(D),
               p + "attention.query_key_value.weight": r((H + 2 * KV) * HD, D),
               p + "attention.query_layernorm.weight": norm(HD), p + "attention.key_layernorm.weight": norm(HD),
               p + "attention.dense.weight": r(D, H * HD)}
        mlps = {"mlp.": INTER} if i < CONFIG["first_k_dense_replace"] else \
            {"mlp.shared_experts.": IM, **{f"mlp.experts.{j}.": IM for j in range(E)}}
        for m, inner in mlps.items():
            sd |= {p + m + "gate_proj.weight": r(inner, D), p + m + "up_proj.weight": r(inner, D),
                   p + m + "down_proj.weight": r(D, inner, std=inner ** -0.5)}
        if i >= CONFIG["first_k_dense_replace"]:
            sd |= {p + "mlp.gate.weight": r(E, D), p + "mlp.gate.expert_bias": r(E, std=0.1)}
    return sd


def write_checkpoint(folder, sd=None, config=None, shards: int = 1) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    sd = _weights() if sd is None else sd
    (folder / "config.json").write_text(json.dumps(config or CONFIG))
    save_tokenizer(folder, SPECIALS, V, mask="<|mask|>", eos="<|endoftext|>", pad="<|endoftext|>")
    save_weights(folder, sd, shards)
    return sd


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    folder = tmp_path_factory.mktemp("llada2")
    return folder, write_checkpoint(folder)


@pytest.fixture(scope="module")
def lm(ckpt):
    return lk.load(str(ckpt[0]))


# ------------------------------------------------------------------------------------------ naive reference


def _rms(x, w, eps=1e-6):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * w


def _swiglu(sd, p, x):
    return (torch.nn.functional.silu(x @ sd[p + "gate_proj.weight"].T) * (x @ sd[p + "up_proj.weight"].T)) \
        @ sd[p + "down_proj.weight"].T


def _route(scores, bias, n_group, topk_group, k, scale):
    """One token, by hand: best groups by the sum of their 2 best biased scores, then the k best
    biased experts among them; weights = unbiased scores (normalised when k > 1) × scale → {expert: weight}."""
    biased = [s + b for s, b in zip(scores, bias)]
    size = len(scores) // n_group
    group_score = [sum(sorted(biased[g * size:(g + 1) * size], reverse=True)[:2]) for g in range(n_group)]
    groups = sorted(range(n_group), key=lambda g: -group_score[g])[:topk_group]
    allowed = [e for g in groups for e in range(g * size, (g + 1) * size)]
    chosen = sorted(allowed, key=lambda e: -biased[e])[:k]
    total = sum(scores[e] for e in chosen) if k > 1 else 1.0
    return {e: scores[e] / total * scale for e in chosen}


def _rotate(x, pos, rot, theta):
    """x (heads, hd) at position pos: pairs (c, c + rot/2) for c < rot/2 turned by pos · theta^(-2c/rot)."""
    out, half = x.clone(), rot // 2
    for c in range(half):
        a = pos * theta ** (-2 * c / rot)
        out[:, c] = x[:, c] * math.cos(a) - x[:, c + half] * math.sin(a)
        out[:, c + half] = x[:, c + half] * math.cos(a) + x[:, c] * math.sin(a)
    return out


def _attention(sd, p, h, block):
    L, rot = h.shape[0], int(HD * CONFIG["partial_rotary_factor"])
    qkv = h @ sd[p + "query_key_value.weight"].T
    q = qkv[:, :H * HD].reshape(L, H, HD)
    k = qkv[:, H * HD:(H + KV) * HD].reshape(L, KV, HD)
    v = qkv[:, (H + KV) * HD:].reshape(L, KV, HD)
    q, k = _rms(q, sd[p + "query_layernorm.weight"]), _rms(k, sd[p + "key_layernorm.weight"])
    q = torch.stack([_rotate(q[i], i, rot, CONFIG["rope_theta"]) for i in range(L)])
    k = torch.stack([_rotate(k[i], i, rot, CONFIG["rope_theta"]) for i in range(L)])
    out = torch.zeros(L, H, HD, dtype=h.dtype)
    for i in range(L):
        seen = [j for j in range(L) if j // block <= i // block]
        for head in range(H):
            g = head // (H // KV)
            a = torch.softmax(torch.stack([q[i, head] @ k[j, g] for j in seen]) / math.sqrt(HD), 0)
            out[i, head] = sum(a[n] * v[j, g] for n, j in enumerate(seen))
    return out.reshape(L, H * HD) @ sd[p + "dense.weight"].T


def _moe(sd, p, h):
    out = _swiglu(sd, p + "shared_experts.", h)
    for t in range(h.shape[0]):
        scores = torch.sigmoid(h[t] @ sd[p + "gate.weight"].T).tolist()
        for e, w in _route(scores, sd[p + "gate.expert_bias"].tolist(), CONFIG["n_group"], CONFIG["topk_group"], K,
                           CONFIG["routed_scaling_factor"]).items():
            out[t] += w * _swiglu(sd, p + f"experts.{e}.", h[t])
    return out


def naive_logits(sd, ids, block=BLOCK):
    """One unpadded row, float64, position by position and head by head."""
    sd = {k: v.double() for k, v in sd.items()}
    x = sd["model.word_embeddings.weight"][ids]
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        x = x + _attention(sd, p + "attention.", _rms(x, sd[p + "input_layernorm.weight"]), block)
        h = _rms(x, sd[p + "post_attention_layernorm.weight"])
        x = x + (_swiglu(sd, p + "mlp.", h) if i < CONFIG["first_k_dense_replace"] else _moe(sd, p + "mlp.", h))
    return _rms(x, sd["model.norm.weight"]) @ sd["lm_head.weight"].T


# ------------------------------------------------------------------------------------------ tests


def test_the_family_claims_llada2_moe_and_reads_its_ids(lm):
    assert detect(CONFIG) is LLADA2 and detect({"model_type": "llama"}) is not LLADA2
    rule = lk.samplers.registry.resolve(LLADA2.default_sampler)                    # LLaDA2.1's Q mode
    assert isinstance(rule, lk.DraftEdit) and (rule.threshold, rule.editing_threshold) == (0.7, 0.5)
    assert lm.family is LLADA2 and lm.kind == "masked"
    assert (lm.mask_id, lm.pad_id, lm.eos_id, lm.max_length) == (92, 89, 89, 256)
    assert lm.net.block_size == BLOCK


def test_the_published_config_builds_the_published_layout():
    """LLaDA2.1-mini's config.json (families.md 3.1): 14 813 tensors, 16.26 B numbers, rotary on 64 of 128
    channels, the generate() default block of 32 (the config names none)."""
    published = {"model_type": "llada2_moe", "hidden_size": 2048, "num_hidden_layers": 20, "num_attention_heads": 16,
                 "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 5120, "first_k_dense_replace": 1,
                 "moe_intermediate_size": 512, "num_experts": 256, "num_experts_per_tok": 8, "num_shared_experts": 1,
                 "n_group": 8, "topk_group": 4, "routed_scaling_factor": 2.5, "rope_theta": 600000,
                 "rope_scaling": None, "partial_rotary_factor": 0.5, "rotary_dim": 64, "rms_norm_eps": 1e-06,
                 "use_qkv_bias": False, "use_bias": False, "vocab_size": 157184, "tie_word_embeddings": False,
                 "max_position_embeddings": 32768, "pad_token_id": 156892}
    with torch.device("meta"):
        net = LLaDA2Net(LLaDA2Config.from_dict(published))
    sd = net.state_dict()
    assert len(sd) == 14813 and sum(t.numel() for t in sd.values()) == 16_255_643_392
    assert sd["model.layers.0.attention.query_key_value.weight"].shape == (3072, 2048)
    assert sd["model.layers.19.mlp.shared_experts.down_proj.weight"].shape == (2048, 512)
    assert "model.layers.0.mlp.gate.weight" not in sd and "model.layers.1.mlp.gate.expert_bias" in sd
    assert (net.config.rotary_dim, net.block_size, LLADA2.context_length(published)) == (64, 32, 32768)


def test_mask_id_without_config_key_comes_from_the_mask_token(tmp_path):
    """The published config.json has no mask_token_id: the tokenizer's "<|mask|>" gives it."""
    save_tokenizer(tmp_path, SPECIALS, V, eos="<|endoftext|>")          # "<|mask|>" is not the tokenizer's mask_token
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tmp_path)
    assert tok.mask_token_id is None and LLADA2.mask_id({}, tok) == 92


def test_the_lab_decodes_it(lm):
    check_family(lm)


def test_logits_match_a_naive_reference(lm, ckpt):
    ids = torch.tensor([[5, 17, 3, 40, 92, 92, 8, 92, 61, 2, 92, 77, 33]])          # 13 tokens: a partial last block
    got = lm(ids)
    assert got.dtype == torch.float32 and got.shape == (1, 13, V)
    torch.testing.assert_close(got[0].double(), naive_logits(ckpt[1], ids[0]), atol=2e-4, rtol=1e-4)


@pytest.mark.skipif(not GOLDEN.is_file(), reason="no golden fixture (benchmarks/make_family_fixtures_llada2.py)")
def test_logits_match_the_published_modeling_code(lm, ckpt):
    """Logits of the published modeling_llada2_moe.py (transformers 4.57, official block-diffusion
    4-D mask, positions arange) on this test's checkpoint."""
    from safetensors.torch import load_file

    golden = load_file(str(GOLDEN))
    total = sum(ckpt[1][k].double().sum() for k in sorted(ckpt[1]))
    assert torch.allclose(total, golden["checksum"][0]), "the test checkpoint changed: regenerate the fixture"
    for n in range(2):
        ids = golden[f"ids_{n}"]
        torch.testing.assert_close(lm(ids[None])[0], golden[f"logits_{n}"], atol=1e-5, rtol=1e-5)


def test_attention_is_block_causal(lm):
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, 88, (1, 14), generator=g)
    base = lm(x)
    later = x.clone()
    later[0, 9] = (x[0, 9] + 1) % 88                                                 # block 2 (positions 8..11)
    out = lm(later)
    assert torch.equal(out[:, :8], base[:, :8]), "an earlier block saw a later one"
    assert not torch.allclose(out[:, 8:12], base[:, 8:12]), "a block did not see itself"
    earlier = x.clone()
    earlier[0, 1] = (x[0, 1] + 1) % 88                                               # block 0
    out = lm(earlier)
    assert not torch.allclose(out[:, 0], base[:, 0]) and not torch.allclose(out[:, 2:4], base[:, 2:4])
    for b in range(1, 4):
        span = slice(4 * b, min(4 * b + 4, 14))
        assert not torch.allclose(out[:, span], base[:, span]), f"block {b} did not see block 0"


def test_a_row_does_not_depend_on_its_left_padding(lm):
    x = torch.tensor([[5, 17, 3, 40, 92, 92, 8, 92, 61]])
    alone = lm(x)
    padded = torch.cat([torch.full((1, 3), lm.pad_id), x], 1)
    other = torch.tensor([[7, 7, 9, 1, 2, 3, 4, 5, 6, 92, 92, 92]])
    mask = torch.tensor([[0, 0, 0] + [1] * 9, [1] * 12])
    both = lm(torch.cat([padded, other]), mask)
    assert torch.isfinite(both).all()
    torch.testing.assert_close(both[0, 3:], alone[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(both[1], lm(other)[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("n_group,topk_group,k", [(1, 1, 3), (4, 2, 3), (4, 1, 2), (2, 2, 1)])
def test_router_matches_the_naive_group_limited_choice(n_group, topk_group, k):
    cfg = LLaDA2Config(vocab_size=8, hidden_size=D, num_hidden_layers=2, num_attention_heads=H, intermediate_size=8,
                       moe_intermediate_size=8, num_experts=8, num_experts_per_tok=k, n_group=n_group,
                       topk_group=topk_group, routed_scaling_factor=2.5)
    g = torch.Generator().manual_seed(n_group * 10 + k)
    gate = Gate(cfg)
    with torch.no_grad():
        gate.weight.copy_(torch.randn(8, D, generator=g))
        gate.expert_bias.copy_(torch.randn(8, generator=g) * 0.3)
    x = torch.randn(64, D, generator=g).to(torch.bfloat16)
    ids, w = gate(x)
    assert ids.shape == w.shape == (64, k) and w.dtype == torch.float32
    for t in range(64):
        scores = torch.sigmoid(x[t].double() @ gate.weight.double().T).tolist()
        want = _route(scores, gate.expert_bias.tolist(), n_group, topk_group, k, 2.5)
        got = dict(zip(ids[t].tolist(), w[t].tolist()))
        assert set(got) == set(want), t
        assert all(abs(got[e] - want[e]) < 1e-5 for e in want), t


def test_sharded_checkpoint_and_bf16(lm, ckpt, tmp_path):
    write_checkpoint(tmp_path, ckpt[1], shards=3)
    x = torch.tensor([[5, 17, 3, 40, 92, 92, 8, 92, 61]])
    torch.testing.assert_close(lk.load(str(tmp_path))(x), lm(x), atol=0, rtol=0)
    half = lk.load(str(tmp_path), dtype=torch.bfloat16)
    gate = half.net.model.layers[1].mlp.gate
    assert half.net.lm_head.weight.dtype == torch.bfloat16 and gate.expert_bias.dtype == torch.float32
    assert half(x).dtype == torch.float32
    assert all(p.device.type == "cpu" for p in half.net.parameters())


def test_a_wrong_parameter_name_is_a_clear_error(ckpt, tmp_path):
    sd = dict(ckpt[1])
    sd["model.layers.1.mlp.gate.bias"] = sd.pop("model.layers.1.mlp.gate.expert_bias")
    write_checkpoint(tmp_path, sd)
    with pytest.raises(ValueError, match=r"lacks weights \(1: model\.layers\.1\.mlp\.gate\.expert_bias\).*"
                                         r"unexpected weights \(1: model\.layers\.1\.mlp\.gate\.bias\)"):
        lk.load(str(tmp_path))


def test_a_wrong_shape_is_a_clear_error(ckpt, tmp_path):
    sd = dict(ckpt[1])
    sd["model.layers.0.attention.query_key_value.weight"] = torch.zeros(H * HD, D)   # Q only, no K and V
    write_checkpoint(tmp_path, sd)
    with pytest.raises(ValueError, match=r"query_key_value\.weight has shape \(32, 32\), config\.json implies \(64, 32\)"):
        lk.load(str(tmp_path))


def test_the_loop_the_panel_and_the_cli_open_on_q_mode(lm, ckpt, tmp_path):
    from labkit.cli.main import main
    from labkit.ui import widgets

    quality = lk.DraftEdit.quality()
    out = lk.generate(lm, "to be or not", gen_length=8, block_length=4, steps=8)
    assert out.trace.meta["sampler"] == repr(quality)
    lab = widgets.Lab(lm, prompt="to be or not", run=False)
    assert lab.sampler.value == "draft_edit" and lab.rule() == quality
    assert main(["generate", "--model", str(ckpt[0]), "--gen-length", "8", "--block-length", "4", "--temperature", "0",
                 "--trace", str(tmp_path / "run.npz"), "to be or not"]) == 0
    assert lk.Trace.load(tmp_path / "run.npz").meta["sampler"] == repr(quality)
