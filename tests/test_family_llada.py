"""LLaDA-8B's published format (config.json keys, `model.transformer.*` weights) through
labkit.models.families.llada, on a tiny random checkpoint: load, decode, batch invariance, the
loader's errors, sharded weights, and logits against a naive float64 re-computation and (when the
fixture is there) against logits of the published modeling code."""
import json
import math
import shutil
from pathlib import Path

import pytest
import torch
from families_common import check_family, save_tokenizer, save_weights

import labkit.models.families.llada  # noqa: F401  (registers the family until families/__init__ imports it)
from labkit.models.families import FamilyError, detect
from labkit.models.families.llada import LLaDA
from labkit.models.load import load

FIXTURE = Path(__file__).parent / "fixtures" / "llada"
SPECIALS = {"<|startoftext|>": 86, "<|endoftext|>": 87, "<|mdm_mask|>": 90, "<|start_header_id|>": 91,
            "<|end_header_id|>": 92, "<|eot_id|>": 93}
CHAT_TEMPLATE = ("{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
                 "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + "
                 "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
                 "{{ content }}{% endfor %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}")


def tiny_config(**over) -> dict:
    """The published config.json's keys, with tiny sizes."""
    cfg = {"activation_type": "silu", "alibi": False, "alibi_bias_max": 8.0, "architectures": ["LLaDAModelLM"],
           "attention_dropout": 0.0, "attention_layer_norm": False, "attention_layer_norm_with_affine": True,
           "auto_map": {"AutoConfig": "configuration_llada.LLaDAConfig",
                        "AutoModelForCausalLM": "modeling_llada.LLaDAModelLM",
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
    cfg.update(over)
    return cfg


def tiny_weights(cfg: dict, seed: int = 0) -> dict:
    """Random weights under the published parameter names (written out here, not taken from labkit)."""
    g = torch.Generator().manual_seed(seed)
    d, f, v = cfg["d_model"], cfg["mlp_hidden_size"], cfg["embedding_size"]
    kv = cfg["n_kv_heads"] * d // cfg["n_heads"]
    rnd = lambda *s, std=0.3: torch.randn(*s, generator=g) * std
    w = {"model.transformer.wte.weight": rnd(v, d, std=1.0), "model.transformer.ln_f.weight": 1 + rnd(d, std=0.1)}
    for i in range(cfg["n_layers"]):
        p = f"model.transformer.blocks.{i}."
        w.update({p + "attn_norm.weight": 1 + rnd(d, std=0.1), p + "ff_norm.weight": 1 + rnd(d, std=0.1),
                  p + "q_proj.weight": rnd(d, d), p + "k_proj.weight": rnd(kv, d), p + "v_proj.weight": rnd(kv, d),
                  p + "attn_out.weight": rnd(d, d, std=0.15), p + "ff_proj.weight": rnd(f, d),
                  p + "up_proj.weight": rnd(f, d), p + "ff_out.weight": rnd(d, f, std=0.1)})
    if not cfg["weight_tying"]:
        w["model.transformer.ff_out.weight"] = rnd(v, d, std=0.3)
    return w


def write_checkpoint(folder: Path, cfg: dict, weights: dict, shards: int = 1) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(cfg, indent=2))
    save_tokenizer(folder, SPECIALS, cfg["vocab_size"], mask="<|mdm_mask|>", eos="<|endoftext|>",
                   pad="<|endoftext|>", chat_template=CHAT_TEMPLATE)
    tok_cfg = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**tok_cfg, "bos_token": "<|startoftext|>"}))
    save_weights(folder, weights, shards)
    return folder


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    cfg = tiny_config()
    w = tiny_weights(cfg, seed=2)   # seeds 0, 1: Keywords places " Question" (<unk> here) in check_family
    return write_checkpoint(tmp_path_factory.mktemp("llada"), cfg, w), cfg, w


def naive_logits(w: dict, cfg: dict, ids: list[int], positions: list[int], keep: list[bool]) -> torch.Tensor:
    """One row, float64, one query at a time: RMSNorm, pairwise RoPE on (j, j + hd/2), softmax over
    the kept keys, SwiGLU with ff_proj as the gate → (L, V)."""
    w = {k: t.double() for k, t in w.items()}
    d, H, eps, theta = cfg["d_model"], cfg["n_heads"], cfg["rms_norm_eps"], cfg["rope_theta"]
    hd, half, per_kv = d // H, d // H // 2, cfg["n_heads"] // cfg["n_kv_heads"]
    norm = lambda v, g: v / torch.sqrt((v * v).mean(-1, keepdim=True) + eps) * g

    def rope(v, p):                                         # v (hd,)
        out = v.clone()
        for j in range(half):
            a = p * theta ** (-2 * j / hd)
            out[j] = v[j] * math.cos(a) - v[j + half] * math.sin(a)
            out[j + half] = v[j + half] * math.cos(a) + v[j] * math.sin(a)
        return out

    x = w["model.transformer.wte.weight"][ids]               # (L, d)
    L = len(ids)
    for i in range(cfg["n_layers"]):
        b = lambda n, i=i: w[f"model.transformer.blocks.{i}.{n}.weight"]
        n = norm(x, b("attn_norm"))
        q, k, v = n @ b("q_proj").T, n @ b("k_proj").T, n @ b("v_proj").T
        att = torch.zeros(L, d, dtype=torch.float64)
        for h in range(H):
            g = h // per_kv
            ks = [rope(k[t, g * hd:(g + 1) * hd], positions[t]) for t in range(L)]
            for s in range(L):
                qs = rope(q[s, h * hd:(h + 1) * hd], positions[s])
                scores = torch.tensor([float(qs @ ks[t]) / math.sqrt(hd) if keep[t] else -math.inf for t in range(L)],
                                      dtype=torch.float64)
                att[s, h * hd:(h + 1) * hd] = torch.softmax(scores, 0) @ v[:, g * hd:(g + 1) * hd]
        x = x + att @ b("attn_out").T
        n = norm(x, b("ff_norm"))
        gate, up = n @ b("ff_proj").T, n @ b("up_proj").T
        x = x + (gate * torch.sigmoid(gate) * up) @ b("ff_out").T
    head = w["model.transformer.wte.weight"] if cfg["weight_tying"] else w["model.transformer.ff_out.weight"]
    return norm(x, w["model.transformer.ln_f.weight"]) @ head.T


def test_detect_tells_llada_from_llada_moe():
    assert isinstance(detect(tiny_config()), LLaDA)
    moe = {"model_type": "llada", "architectures": ["LLaDAMoEModelLM"], "hidden_size": 32, "num_experts": 4}
    assert not LLaDA().claims(moe)
    assert not LLaDA().claims(tiny_config(num_experts=4))


def test_loads_and_decodes(checkpoint):
    folder, cfg, _ = checkpoint
    lm = load(str(folder))
    assert isinstance(lm.family, LLaDA)
    assert (lm.mask_id, lm.eos_id, lm.pad_id, lm.eot_id, lm.max_length) == (90, 87, 87, 93, 64)
    assert lm.tokenizer.apply_chat_template([{"role": "user", "content": " hi "}], tokenize=False) == \
        "<|startoftext|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
    check_family(lm)


def test_logits_match_naive_reference(checkpoint):
    folder, cfg, w = checkpoint
    lm = load(str(folder))
    ids = [5, 17, 90, 90, 33, 2, 64, 90]
    out = lm(torch.tensor([ids]))[0].double()
    assert out.shape == (len(ids), 96)
    ref = naive_logits(w, cfg, ids, list(range(len(ids))), [True] * len(ids))
    assert (out - ref).abs().max() < 1e-4


@pytest.mark.parametrize("official", [False, True])
def test_left_padding(checkpoint, official):
    """Pads are never attended to; positions start at 0 on the first real token (default) or run
    0..T-1 over the padded row (official_positions=True, as the published code does). With pads
    masked, RoPE only sees position differences: both equal the unpadded row up to rounding."""
    folder, cfg, w = checkpoint
    lm = load(str(folder))
    ids, p = [5, 17, 90, 90, 33], 3
    x = torch.tensor([[87] * p + ids, [9, 12, 14, 90, 90, 90, 6, 8]])
    mask = torch.tensor([[0] * p + [1] * len(ids), [1] * 8])
    out = LLaDA(official_positions=official).forward(lm.net, x, mask).double()
    positions = list(range(p, p + len(ids))) if official else list(range(len(ids)))
    ref = naive_logits(w, cfg, [87] * p + ids, [0] * p + positions, [False] * p + [True] * len(ids))
    assert (out[0, p:] - ref[p:]).abs().max() < 1e-4
    assert (out[1] - naive_logits(w, cfg, x[1].tolist(), list(range(8)), [True] * 8)).abs().max() < 1e-4
    assert (out[0, p:] - lm(torch.tensor([ids]))[0]).abs().max() < 1e-4


def test_position_numbering_option(checkpoint):
    seen = []
    net = lambda x, attention_mask, position_ids: seen.append(position_ids)
    x, mask = torch.zeros(2, 5, dtype=torch.long), torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    LLaDA().forward(net, x, mask)
    LLaDA(official_positions=True).forward(net, x, mask)
    assert seen[0].tolist() == [[0, 0, 0, 1, 2], [0, 1, 2, 3, 4]] and seen[1] is None   # None: 0..T-1 in the net


def test_sharded_index_and_dtype(checkpoint, tmp_path):
    folder, cfg, w = checkpoint
    sharded = write_checkpoint(tmp_path / "sharded", cfg, w, shards=3)
    x = torch.tensor([[5, 17, 90, 33, 90, 2]])
    assert torch.equal(load(str(sharded))(x), load(str(folder))(x))
    lm16 = load(str(sharded), dtype=torch.bfloat16)
    assert {p.dtype for p in lm16.net.parameters()} == {torch.bfloat16}
    assert lm16(x).dtype == torch.bfloat16
    (sharded / "model-00002-of-00003.safetensors").unlink()
    with pytest.raises(ValueError, match="missing"):
        load(str(sharded))


def test_tied_head(tmp_path):
    cfg = tiny_config(weight_tying=True)
    w = tiny_weights(cfg, seed=1)
    lm = load(str(write_checkpoint(tmp_path, cfg, w)))
    ids = [5, 17, 90, 33]
    ref = naive_logits(w, cfg, ids, list(range(4)), [True] * 4)
    assert (lm(torch.tensor([ids]))[0].double() - ref).abs().max() < 1e-4


@pytest.mark.parametrize("edit", ["rename", "drop", "extra"])
def test_wrong_parameter_names_are_named(checkpoint, tmp_path, edit):
    folder, cfg, w = checkpoint
    w = dict(w)
    bad = "model.transformer.blocks.1.o_proj.weight"
    if edit == "rename":
        w[bad] = w.pop("model.transformer.blocks.1.attn_out.weight")
    elif edit == "drop":
        del w["model.transformer.ff_out.weight"]
    else:
        w[bad] = torch.zeros(1)
    with pytest.raises(FamilyError, match="does not match the LLaDA-8B layout") as e:
        load(str(write_checkpoint(tmp_path, cfg, w)))
    named = {"rename": ("attn_out", "o_proj"), "drop": ("model.transformer.ff_out.weight",), "extra": ("o_proj",)}
    assert all(n in str(e.value) for n in named[edit])


@pytest.mark.parametrize("over, key", [({"block_type": "sequential"}, "block_type"), ({"weight_tying": None}, "weight_tying")])
def test_unsupported_or_incomplete_config(checkpoint, tmp_path, over, key):
    folder, cfg, w = checkpoint
    cfg = tiny_config(**over)
    if over[key] is None:
        del cfg[key]
    with pytest.raises(FamilyError, match=key):
        load(str(write_checkpoint(tmp_path, cfg, w)))


@pytest.mark.skipif(not (FIXTURE / "logits.pt").is_file(), reason="no golden fixture (benchmarks/make_family_fixtures_llada.py)")
def test_golden_logits_of_the_published_code(tmp_path):
    """tests/fixtures/llada: tiny random weights and the logits the published modeling_llada.py
    gave for them (made by hand with benchmarks/make_family_fixtures_llada.py, not in CI)."""
    folder = tmp_path / "golden"
    shutil.copytree(FIXTURE, folder)
    cfg = json.loads((folder / "config.json").read_text())
    save_tokenizer(folder, SPECIALS, cfg["vocab_size"], mask="<|mdm_mask|>", eos="<|endoftext|>", pad="<|endoftext|>")
    lm = load(str(folder))
    inputs = json.loads((FIXTURE / "inputs.json").read_text())
    x, mask = torch.tensor(inputs["input_ids"]), torch.tensor(inputs["attention_mask"])
    golden = torch.load(FIXTURE / "logits.pt", weights_only=True)
    official = LLaDA(official_positions=True).forward(lm.net, x, mask)
    assert (official - golden).abs().max() < 1e-4
    real = mask.bool()                                       # the default numbering: same logits on real tokens
    assert (lm(x, mask) - golden)[real].abs().max() < 1e-4
    assert not real.all()                                    # the fixture has a left-padded row
