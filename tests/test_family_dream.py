"""Dream-v0 through labkit's clean-room family (labkit.models.families.dream): a tiny random checkpoint in the
published on-disk layout loads with the pinned transformers and no remote code, decodes, applies Dream's logit
shift, and matches golden logits made once with Dream's published modeling code
(benchmarks/make_family_fixtures_dream.py)."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
import torch
from families_common import check_family, save_tokenizer
from safetensors.torch import load_file, save_file

import labkit.models.families.dream  # noqa: F401  (registers the family)
from labkit.models.families import FamilyError, detect
from labkit.models.families.dream import DREAM
from labkit.models.load import load

FIXTURES = Path(__file__).parent / "fixtures" / "dream"
SEED = 1   # families_common's Keywords check can place "<unk>" (its cased form " Question") on an unlucky seed
SPECIALS = {"<|endoftext|>": 1, "<|im_start|>": 2, "<|im_end|>": 3, "<|beginoftext|>": 4, "<|mask|>": 5}
CHAT = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
CONFIG = {   # the published config.json's keys (Dream-v0-Instruct-7B), tiny sizes
    "architectures": ["DreamModel"], "attention_dropout": 0.0,
    "auto_map": {"AutoConfig": "configuration_dream.DreamConfig", "AutoModel": "modeling_dream.DreamModel"},
    "bos_token_id": 1, "eos_token_id": 1, "pad_token_id": 1, "mask_token_id": 5, "hidden_act": "silu",
    "hidden_size": 32, "initializer_range": 0.02, "intermediate_size": 64, "max_position_embeddings": 64,
    "max_window_layers": 2, "model_type": "Dream", "num_attention_heads": 4, "num_hidden_layers": 2,
    "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000.0,
    "sliding_window": None, "tie_word_embeddings": False, "torch_dtype": "float32", "transformers_version": "4.46.2",
    "use_cache": True, "use_mrope": False, "use_sliding_window": False, "vocab_size": 96,
}


def random_weights(c: dict, seed: int = SEED) -> dict[str, torch.Tensor]:
    """float32 weights under the published names (Qwen2 layout: q/k/v biases, no o_proj bias)."""
    g = torch.Generator().manual_seed(seed)
    d, i, v, hd = c["hidden_size"], c["intermediate_size"], c["vocab_size"], c["hidden_size"] // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    shapes = {"model.embed_tokens.weight": (v, d), "model.norm.weight": (d,), "lm_head.weight": (v, d)}
    for n in range(c["num_hidden_layers"]):
        p = f"model.layers.{n}."
        shapes |= {p + "input_layernorm.weight": (d,), p + "post_attention_layernorm.weight": (d,),
                   p + "self_attn.q_proj.weight": (q, d), p + "self_attn.q_proj.bias": (q,),
                   p + "self_attn.k_proj.weight": (kv, d), p + "self_attn.k_proj.bias": (kv,),
                   p + "self_attn.v_proj.weight": (kv, d), p + "self_attn.v_proj.bias": (kv,),
                   p + "self_attn.o_proj.weight": (d, q), p + "mlp.gate_proj.weight": (i, d),
                   p + "mlp.up_proj.weight": (i, d), p + "mlp.down_proj.weight": (d, i)}
    std = lambda k: 1.0 if "embed" in k else 0.3
    return {k: (1 + 0.1 * torch.randn(s, generator=g)) if k.endswith("norm.weight") else std(k) * torch.randn(s, generator=g)
            for k, s in shapes.items()}


def write_checkpoint(folder: Path, config: dict, state: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    save_tokenizer(folder, SPECIALS, config["vocab_size"], mask="<|mask|>", eos="<|endoftext|>", pad="<|endoftext|>",
                   chat_template=CHAT)
    return folder


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return write_checkpoint(tmp_path_factory.mktemp("dream") / "ckpt", CONFIG, random_weights(CONFIG))


def naive_raw_logits(w: dict, c: dict, ids: torch.Tensor) -> torch.Tensor:
    """One unpadded row (L,) → unshifted logits (L, V) in float64, written out step by step."""
    w = {k: t.double() for k, t in w.items()}
    n, heads, kv, hd = len(ids), c["num_attention_heads"], c["num_key_value_heads"], c["hidden_size"] // c["num_attention_heads"]
    norm = lambda x, g: g * x / torch.sqrt((x * x).mean(-1, keepdim=True) + c["rms_norm_eps"])
    angle = torch.arange(n, dtype=torch.float64)[:, None] * c["rope_theta"] ** (-torch.arange(0, hd, 2).double() / hd)
    cos, sin = angle.cos()[:, None], angle.sin()[:, None]                       # (L, 1, hd / 2)

    def rope(x):   # (L, heads, hd): dims j and j + hd/2 rotate together by angle[:, j]
        a, b = x[..., : hd // 2], x[..., hd // 2:]
        return torch.cat([a * cos - b * sin, b * cos + a * sin], -1)

    h = w["model.embed_tokens.weight"][ids]
    for layer in range(c["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        proj = lambda x, name, k, p=p: (x @ w[p + f"self_attn.{name}.weight"].T + w[p + f"self_attn.{name}.bias"]).view(n, k, hd)
        x = norm(h, w[p + "input_layernorm.weight"])
        q, k, v = rope(proj(x, "q_proj", heads)), rope(proj(x, "k_proj", kv)), proj(x, "v_proj", kv)
        out = torch.empty(n, heads, hd, dtype=torch.float64)
        for head in range(heads):
            g = head // (heads // kv)                                            # its key/value group
            out[:, head] = torch.softmax(q[:, head] @ k[:, g].T / math.sqrt(hd), -1) @ v[:, g]
        h = h + out.reshape(n, -1) @ w[p + "self_attn.o_proj.weight"].T
        x = norm(h, w[p + "post_attention_layernorm.weight"])
        gate, up = x @ w[p + "mlp.gate_proj.weight"].T, x @ w[p + "mlp.up_proj.weight"].T
        h = h + (torch.nn.functional.silu(gate) * up) @ w[p + "mlp.down_proj.weight"].T
    return norm(h, w["model.norm.weight"]) @ w["lm_head.weight"].T


def test_detect_claims_dream():
    assert detect(CONFIG) is DREAM
    assert not DREAM.claims({"model_type": "qwen2"})


def test_loads_and_decodes(folder):
    lm = load(str(folder))
    assert lm.family is DREAM and lm.kind == "masked"
    assert (lm.mask_id, lm.pad_id, lm.eos_id, lm.max_length) == (5, 1, 1, 64)
    assert next(lm.net.parameters()).dtype == torch.float32          # dtype None: the checkpoint's
    check_family(lm)


def test_shift_and_left_padding_match_naive_reference(folder):
    lm = load(str(folder), dtype=torch.float64)
    w = random_weights(CONFIG)
    x = torch.tensor([[7, 8, 9, 10, 11, 5, 5, 5], [1, 1, 1, 20, 21, 5, 5, 5]])
    mask = torch.tensor([[1] * 8, [0, 0, 0, 1, 1, 1, 1, 1]])
    got = lm(x, mask)                                                # (2, 8, V), logits[:, i] predict token i
    assert got.dtype == torch.float64
    raw0, raw1 = naive_raw_logits(w, CONFIG, x[0]), naive_raw_logits(w, CONFIG, x[1, 3:])
    torch.testing.assert_close(got[0, 0], raw0[0], atol=1e-4, rtol=0)   # position 0 keeps its own logits
    torch.testing.assert_close(got[0, 1:], raw0[:-1], atol=1e-4, rtol=0)  # i reads the hidden state at i - 1
    torch.testing.assert_close(got[1, 4:], raw1[:-1], atol=1e-4, rtol=0)  # same row alone, padding ignored
    torch.testing.assert_close(lm(x[:1]), got[:1], atol=1e-10, rtol=0)   # no mask: positions 0..L-1


def test_wrong_parameter_name_is_a_clear_error(folder, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(folder, bad)
    state = load_file(str(bad / "model.safetensors"))
    state["model.layers.0.self_attn.qkv_proj.weight"] = state.pop("model.layers.0.self_attn.q_proj.weight")
    save_file(state, str(bad / "model.safetensors"))
    with pytest.raises(ValueError, match=r"lacks weights \(1: model\.layers\.0\.self_attn\.q_proj\.weight\)"):
        load(str(bad))
    del state["model.layers.0.self_attn.qkv_proj.weight"]
    state["model.layers.0.self_attn.q_proj.weight"] = torch.zeros(8, 32)
    save_file(state, str(bad / "model.safetensors"))
    with pytest.raises(ValueError, match="wrongly shaped"):
        load(str(bad))


def test_sharded_checkpoint_and_dtype(folder, tmp_path):
    sharded = tmp_path / "sharded"
    shutil.copytree(folder, sharded)
    state = load_file(str(sharded / "model.safetensors"))
    (sharded / "model.safetensors").unlink()
    names = sorted(state)
    shards = {"model-00001-of-00002.safetensors": names[::2], "model-00002-of-00002.safetensors": names[1::2]}
    for file, keys in shards.items():
        save_file({k: state[k] for k in keys}, str(sharded / file), metadata={"format": "pt"})
    index = {"metadata": {"total_size": 4 * sum(t.numel() for t in state.values())},
             "weight_map": {k: file for file, keys in shards.items() for k in keys}}
    (sharded / "model.safetensors.index.json").write_text(json.dumps(index))
    x = torch.tensor([[7, 8, 9, 5, 5]])
    torch.testing.assert_close(load(str(sharded))(x), load(str(folder))(x), atol=0, rtol=0)
    half = load(str(sharded), dtype=torch.bfloat16)
    assert {p.dtype for p in half.net.parameters()} == {torch.bfloat16}
    assert torch.isfinite(half(x).float()).all()


def test_tied_head(tmp_path):
    config = {**CONFIG, "tie_word_embeddings": True}
    state = random_weights(config)
    del state["lm_head.weight"]
    lm = load(str(write_checkpoint(tmp_path / "tied", config, state)))
    assert lm.net.lm_head.weight is lm.net.model.embed_tokens.weight


def test_unsupported_config_is_refused(folder):
    config = {**CONFIG, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}}
    with pytest.raises(FamilyError, match="rope_scaling"):
        DREAM.build(folder, config, dtype=None, device=torch.device("cpu"), trust_remote_code=False)


@pytest.mark.skipif(not (FIXTURES / "reference.safetensors").is_file(), reason="no golden Dream fixtures")
def test_golden_logits_of_the_published_modeling_code():
    """Raw (unshifted) logits of the net and shifted logits of the family against Dream's published
    modeling_dream.py run on the same weights (padded batch as diffusion_generate calls it, and unpadded)."""
    config = json.loads((FIXTURES / "config.json").read_text())
    net = DREAM.build(FIXTURES, config, dtype=None, device=torch.device("cpu"), trust_remote_code=False)
    ref = load_file(str(FIXTURES / "reference.safetensors"))
    x, mask = ref["input_ids"], ref["attention_mask"]
    with torch.no_grad():
        torch.testing.assert_close(net(x, mask), ref["logits_padded"], atol=1e-4, rtol=0)
        torch.testing.assert_close(net(x), ref["logits_full"], atol=1e-4, rtol=0)
        shifted = torch.cat([ref["logits_padded"][:, :1], ref["logits_padded"][:, :-1]], dim=1)
        torch.testing.assert_close(DREAM.forward(net, x, mask), shifted, atol=1e-4, rtol=0)


def test_published_tokenizer_loads_without_remote_code(folder, tmp_path):
    """tokenizer_class "DreamTokenizer" (remote code) is read as transformers' Qwen2Tokenizer: byte-level BPE files."""
    from tokenizers import pre_tokenizers
    from transformers import Qwen2Tokenizer

    vocab = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    vocab["hi"] = len(vocab)                                                    # 256
    specials = {"<|endoftext|>": 257, "<|im_start|>": 258, "<|im_end|>": 259, "<|beginoftext|>": 260, "<|mask|>": 261}
    added = {str(i): {"content": t, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False,
                      "special": True} for t, i in specials.items()}
    pub = tmp_path / "published"
    pub.mkdir()
    (pub / "vocab.json").write_text(json.dumps(vocab))
    (pub / "merges.txt").write_text("#version: 0.2\nh i\n")
    (pub / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "DreamTokenizer", "auto_map": {"AutoTokenizer": ["tokenization_dream.DreamTokenizer", None]},
        "added_tokens_decoder": added, "additional_special_tokens": ["<|beginoftext|>", "<|mask|>"],
        "bos_token": "<|beginoftext|>", "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>",
        "mask_token": "<|mask|>", "unk_token": None, "errors": "replace", "chat_template": CHAT}))
    tok = DREAM.tokenizer(pub)
    assert isinstance(tok, Qwen2Tokenizer)
    assert (tok.mask_token_id, tok.eos_token_id, tok.pad_token_id) == (261, 257, 257)
    ids = tok("hi <|mask|>", add_special_tokens=False)["input_ids"]
    assert ids[0] == 256 and ids[-1] == 261 and tok.decode(ids) == "hi <|mask|>"
    assert tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False).startswith("<|im_start|>user\nhi")
    assert DREAM.tokenizer(folder) is None and DREAM.tokenizer(pub, trust_remote_code=True) is None
