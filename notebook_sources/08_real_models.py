# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 08 · Real models: LLaDA, Dream and LLaDA2.1
#
# *About 20 minutes to read and run, exercises apart · needs: notebook 01 · Quickstart · next: notebook 09 · Serving.*
#
# **The question:** the other notebooks run the lab's 5M-parameter models. How do you run the published
# diffusion LMs (LLaDA-8B, Dream-7B, LLaDA2.1-mini) in the same lab, and what does the lab read off each
# checkpoint?
#
# `lk.load(name)` reads a checkpoint's `config.json`, picks its **family** from `model_type` and loads the
# published weights without the checkpoint's remote code. The family knows where its format keeps the mask,
# pad and end-of-turn ids and the context length, how a left-padded batch is positioned, and which rule the lab
# opens it with. After loading, everything (`lk.generate`, the heatmaps, the panel) works as it does for `tiny`.
#
# The notebook has two halves:
#
# 1. **On a GPU**, with a model's weights in the local Hugging Face cache: one chat question to each real
#    model with the settings its authors recommend. On a CPU, or without the weights, each of these cells
#    prints one line saying it was skipped, and does nothing else.
# 2. **On any CPU:** a tiny random checkpoint of each family, written in the published format into a
#    temporary folder, then loaded and decoded with the same calls. This half is what CI checks.

# %% [markdown]
# ## The families and their recommended settings
#
# | family (`model_type`) | checkpoint used here | weights in bf16 | mask token | context length (config.json) | the lab opens it with |
# |---|---|---|---|---|---|
# | `llada` | `GSAI-ML/LLaDA-8B-Instruct` | 16.0 GB | `<\|mdm_mask\|>` (126336) | 4096 (`max_sequence_length`) | LLaDA's low-confidence remasking |
# | `Dream` | `Dream-org/Dream-v0-Instruct-7B` | 15.2 GB | `<\|mask\|>` (config `mask_token_id`) | 131072 (`max_position_embeddings`; Dream's README: 2048 effective) | LLaDA's low-confidence remasking |
# | `llada2_moe` | `inclusionAI/LLaDA2.1-mini` | 32.5 GB | `<\|mask\|>` (156895; config.json names none) | 32768 (`max_position_embeddings`) | LLaDA2.1's Q mode (`"quality"`) |
#
# What each model's authors recommend, and the same in labkit:
#
# | model | recommended (source) | in labkit |
# |---|---|---|
# | LLaDA-8B-Instruct | chat (`chat.py`): `gen_length=128, steps=128, block_length=32`, temperature 0, low-confidence remasking. Benchmarks (EVAL.md): always `steps = gen_length`, e.g. GSM8K with 512 tokens in one block and `confidence_eos_eot_inf=True`, or 256 tokens in blocks of 8 | `lk.LowConfidence()` with the same knobs; `confidence_eos_eot_inf` and `logits_eos_inf` are fields of `LowConfidence` |
# | Dream-v0-Instruct-7B | README example: `max_new_tokens=512, steps=512, temperature=0.2, top_p=0.95, alg="entropy", alg_temp=0.`; no blocks | `lk.LowConfidence(score="neg_entropy", temperature=0.2, top_p=0.95)` with `block_length = gen_length`. The steps follow labkit's even schedule, not Dream's timestep schedule |
# | LLaDA2.1-mini | model card: **S mode** `threshold=0.5, editing_threshold=0.0`; **Q mode** `threshold=0.7, editing_threshold=0.5`; both `max_post_steps` above 5, 16 recommended, `block_length=32`, temperature 0. The card's quickstart runs S mode with `gen_length=512, eos_early_stop=True`; the report advises S mode for code and math, Q mode for general chat | `"speed"` / `"quality"` (= `lk.DraftEdit.speed()` / `.quality()`); `steps` is not used: a block runs until it converges |
#
# The weights alone take the memory above; a GPU also needs room for the activations of the canvas.

# %%
# Parameters: CI runs this notebook on a CPU, where only the stand-ins of the second half run.
QUESTION = ("Lily can run 12 kilometers per hour for 4 hours. After that, she runs 6 kilometers per hour. "
            "How many kilometers can she run in 8 hours?")      # the example question of LLaDA's README
REAL = {"llada": "GSAI-ML/LLaDA-8B-Instruct", "Dream": "Dream-org/Dream-v0-Instruct-7B",
        "llada2_moe": "inclusionAI/LLaDA2.1-mini"}

import json
import tempfile
from pathlib import Path

import torch
import labkit as lk
from labkit.decode import chat_text, default_sampler
lk.viz.notebook_mode()
GPU = torch.cuda.is_available()


# %% [markdown]
# ## On a GPU: the real checkpoints
#
# `chat_on_gpu` loads a hub model onto the GPU in bfloat16 (`lk.load(repo, device="cuda",
# dtype=torch.bfloat16)`), asks it `QUESTION` as a chat message (`lk.generate(lm, [{"role": "user",
# "content": QUESTION}], ...)` renders it with the tokenizer's chat template), and draws the state heatmap of
# each run. It only loads what is already in the local Hugging Face cache, checked without touching the network
# (`huggingface_hub.try_to_load_from_cache`): fetch the weights first on a machine that has network access, e.g.
# `hf download GSAI-ML/LLaDA-8B-Instruct`, and install a CUDA build of torch (README, "Real models").

# %%
def weights_cached(repo: str) -> bool:
    # Whether the config, the tokenizer and every weight file of `repo` are in the local Hugging Face
    # cache. Reads the cache only, never the network.
    from huggingface_hub import try_to_load_from_cache

    def path(name):
        found = try_to_load_from_cache(repo, name)
        return Path(found) if isinstance(found, str) else None

    if not (path("config.json") and path("tokenizer_config.json")):
        return False
    index = path("model.safetensors.index.json")
    if index is None:
        return path("model.safetensors") is not None
    return all(path(shard) for shard in set(json.loads(index.read_text())["weight_map"].values()))


def chat_on_gpu(repo: str, samplers: dict, **knobs) -> dict:
    # Load `repo` on the GPU in bf16, answer QUESTION with each sampler and draw its state heatmap.
    # On a CPU, or without the weights, print one line and do nothing else. Returns {name: Output}.
    if not GPU:
        print(f"{repo}: skipped, no CUDA GPU here (its stand-in runs on the CPU below)")
        return {}
    if not weights_cached(repo):
        print(f"{repo}: skipped, its weights are not in the local Hugging Face cache (`hf download {repo}`)")
        return {}
    lm = lk.load(repo, device="cuda", dtype=torch.bfloat16)
    print(f"{repo}: family {lm.family.name}, mask id {lm.mask_id}, context {lm.max_length}")
    outs = {}
    for name, sampler in samplers.items():
        out = outs[name] = lk.generate(lm, [{"role": "user", "content": QUESTION}], sampler, seed=0, **knobs)
        print(f"--- {name}: NFE {out.stats['nfe']}, TPF {out.stats['tpf']:.2f}, {out.stats['seconds']:.1f} s")
        print(out.text)
        display(lk.viz.heatmap(out.trace, lm, kind="state"))
    del lm                                   # free the GPU for the next model
    torch.cuda.empty_cache()
    return outs


real = {}

# %% [markdown]
# ### LLaDA-8B-Instruct
#
# `chat.py`'s settings: 128 tokens in blocks of 32, one token per step, greedy.

# %%
# NBVAL_IGNORE_OUTPUT
real["llada"] = chat_on_gpu(REAL["llada"], {"low_confidence": lk.LowConfidence()},
                            gen_length=128, block_length=32, steps=128)

# %% [markdown]
# ### Dream-v0-Instruct-7B
#
# Dream's README settings: the entropy score, temperature 0.2 within the 0.95 nucleus (seeded), 512 tokens in
# 512 steps, the whole answer as one block.

# %%
# NBVAL_IGNORE_OUTPUT
dream_rule = lk.LowConfidence(score="neg_entropy", temperature=0.2, top_p=0.95)
real["Dream"] = chat_on_gpu(REAL["Dream"], {"entropy": dream_rule}, gen_length=512, block_length=512, steps=512)

# %% [markdown]
# ### LLaDA2.1-mini in S and Q mode
#
# The model card's quickstart: 512 tokens in blocks of 32, stopping once a finished block holds the end of
# text. The question is arithmetic, a domain where the report finds S mode good enough (it advises Q mode for
# general chat).

# %%
# NBVAL_IGNORE_OUTPUT
real["llada2_moe"] = chat_on_gpu(REAL["llada2_moe"], {"S mode": "speed", "Q mode": "quality"},
                                 gen_length=512, block_length=32, eos_early_stop=True)

# %% [markdown]
# ## On this CPU: each family in miniature
#
# No model hub is reachable from CI, and an 8B model does not belong in a CPU notebook. The next cell defines
# `stand_in(model_type, folder, seed=0)`, which writes a **stand-in** of a family into a folder: a random
# checkpoint in the published on-disk format. Its `config.json` has the real checkpoint's keys with tiny sizes
# (the LLaDA2.1 one, like the real one, names no mask id); `model.safetensors` holds seeded random weights
# under the published parameter names; the tokenizer has the family's special tokens, words from Hamlet for
# the rest of its 96 ids, and a chat template in the family's style (for LLaDA2.1 an approximation built on
# its `<role>` and `<|role_end|>` tokens; a real checkpoint brings its own). The parameter names and shapes come from
# labkit's family networks, which `tests/test_family_*.py` check against the published modeling code. Its
# source is folded away: click the `…` to read it.
#
# Random weights write word salad, so read these runs for what the lab found in each folder and for how the
# loop ran, not for the text.

# %% jupyter={"source_hidden": true}
# Stand-ins: tiny random checkpoints in each family's published on-disk format (config.json keys,
# parameter names, special tokens, chat template), scaled down to a 96-token vocabulary and two layers.
import json
from pathlib import Path

import torch
from safetensors.torch import save_file
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from labkit.models.families.dream import DreamNet
from labkit.models.families.llada import LLaDANet, Shape
from labkit.models.families.llada2 import LLaDA2Config, LLaDA2Net

WORDS = list(dict.fromkeys(   # the vocabulary: chat roles, then Hamlet's soliloquy
    "user assistant HUMAN ASSISTANT to be or not to be that is the question whether tis nobler in the mind to "
    "suffer the slings and arrows of outrageous fortune or to take arms against a sea of troubles and by opposing "
    "end them to die to sleep no more and by a sleep to say we end the heartache and the thousand natural shocks "
    "that flesh is heir to tis a consummation devoutly to be wished to die to sleep to sleep perchance to dream ay "
    "theres the rub for in that sleep of death what dreams may come when we have shuffled off this mortal coil "
    "must give us pause theres the respect that makes calamity of so long life for who would bear the whips and "
    "scorns of time the oppressors wrong the proud mans contumely the pangs of despised love the laws delay".split()))
STAND_INS = {
    "llada": {   # GSAI-ML/LLaDA-8B-Instruct: OLMo-style keys, model.transformer.* weights
        "config": {"architectures": ["LLaDAModelLM"], "model_type": "llada", "activation_type": "silu",
                   "alibi": False, "alibi_bias_max": 8.0, "attention_dropout": 0.0, "attention_layer_norm": False,
                   "attention_layer_norm_with_affine": True, "bias_for_layer_norm": False, "block_group_size": 1,
                   "block_type": "llama", "d_model": 32, "embedding_dropout": 0.0, "embedding_size": 96,
                   "eos_token_id": 87, "flash_attention": False, "include_bias": False, "include_qkv_bias": False,
                   "input_emb_norm": False, "layer_norm_type": "rms", "layer_norm_with_affine": True,
                   "mask_token_id": 90, "max_sequence_length": 64, "mlp_hidden_size": 64, "mlp_ratio": 4,
                   "multi_query_attention": None, "n_heads": 4, "n_kv_heads": 4, "n_layers": 2, "pad_token_id": 87,
                   "precision": "amp_bf16", "residual_dropout": 0.0, "rms_norm_eps": 1e-05, "rope": True,
                   "rope_full_precision": True, "rope_theta": 500000.0, "scale_logits": False, "use_cache": False,
                   "vocab_size": 96, "weight_tying": False},
        "net": lambda c: LLaDANet(Shape.of(c), c),
        "specials": {"<|startoftext|>": 86, "<|endoftext|>": 87, "<|mdm_mask|>": 90, "<|start_header_id|>": 91,
                     "<|end_header_id|>": 92, "<|eot_id|>": 93},
        "tokens": {"bos_token": "<|startoftext|>", "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>",
                   "mask_token": "<|mdm_mask|>"},
        "chat": ("{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
                 "{{ m['content'] | trim }}<|eot_id|>{% endfor %}"
                 "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"),
    },
    "Dream": {   # Dream-org/Dream-v0-Instruct-7B: Qwen2 keys and names, ChatML
        "config": {"architectures": ["DreamModel"], "model_type": "Dream", "attention_dropout": 0.0,
                   "bos_token_id": 1, "eos_token_id": 1, "pad_token_id": 1, "mask_token_id": 5, "hidden_act": "silu",
                   "hidden_size": 32, "intermediate_size": 64, "max_position_embeddings": 64, "max_window_layers": 2,
                   "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
                   "rope_scaling": None, "rope_theta": 1000000.0, "sliding_window": None,
                   "tie_word_embeddings": False, "torch_dtype": "float32", "use_cache": True, "use_mrope": False,
                   "use_sliding_window": False, "vocab_size": 96},
        "net": lambda c: DreamNet(c),
        "specials": {"<|endoftext|>": 1, "<|im_start|>": 2, "<|im_end|>": 3, "<|beginoftext|>": 4, "<|mask|>": 5},
        "tokens": {"eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>", "mask_token": "<|mask|>"},
        "chat": ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"),
    },
    "llada2_moe": {   # inclusionAI/LLaDA2.1-mini: MoE keys, fused query_key_value, experts; no mask_token_id
        "config": {"architectures": ["LLaDA2MoeModelLM"], "model_type": "llada2_moe", "dtype": "float32",
                   "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                   "head_dim": 8, "intermediate_size": 64, "first_k_dense_replace": 1, "moe_intermediate_size": 16,
                   "num_experts": 4, "num_experts_per_tok": 2, "num_shared_experts": 1, "n_group": 2,
                   "topk_group": 1, "routed_scaling_factor": 2.5, "score_function": "sigmoid",
                   "moe_router_enable_expert_bias": True, "norm_topk_prob": True, "router_dtype": "fp32",
                   "rope_theta": 600000, "rope_scaling": None, "partial_rotary_factor": 0.5, "rotary_dim": 4,
                   "max_position_embeddings": 256, "rms_norm_eps": 1e-6, "use_qk_norm": True, "use_qkv_bias": False,
                   "use_bias": False, "vocab_size": 96, "tie_word_embeddings": False, "pad_token_id": 89},
        "net": lambda c: LLaDA2Net(LLaDA2Config.from_dict(c)),
        "specials": {"<|startoftext|>": 88, "<|endoftext|>": 89, "<|mask|>": 92, "<role>": 93, "</role>": 94,
                     "<|role_end|>": 95},
        "tokens": {"eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>"},   # "<|mask|>" is found by name
        "chat": ("{% for m in messages %}<role>{{ 'HUMAN' if m['role'] == 'user' else m['role'] | upper }}</role>"
                 "{{ m['content'] }}<|role_end|>{% endfor %}{% if add_generation_prompt %}<role>ASSISTANT</role>"
                 "{% endif %}"),
    },
}


def stand_in(model_type: str, folder, seed: int = 0) -> Path:
    """Write a random checkpoint of family `model_type` into `folder`: config.json, model.safetensors
    (the family network's own parameter names, seeded normal weights) and a word-level tokenizer."""
    spec, folder = STAND_INS[model_type], Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(spec["config"], indent=2))
    with torch.device("meta"):                                   # names and shapes only, no memory
        shapes = {k: v.shape for k, v in spec["net"](spec["config"]).state_dict().items()}
    g = torch.Generator().manual_seed(seed)
    weights = {}
    for name, shape in shapes.items():
        r = torch.randn(shape, generator=g)
        if r.dim() == 1:                                         # RMSNorm gains near 1; biases near 0
            weights[name] = 1 + 0.1 * r if name.endswith(".weight") else 0.1 * r
        else:                                                    # embeddings N(0, 1), matrices N(0, 0.3²)
            weights[name] = r if "emb" in name or "wte" in name else 0.3 * r
    save_file(weights, str(folder / "model.safetensors"))
    vocab, words = dict(spec["specials"]), iter(["<unk>", *WORDS])
    for i in range(spec["config"]["vocab_size"]):                # specials at their ids, words around them
        if i not in vocab.values():
            vocab[next(words)] = i
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    named = set(spec["tokens"].values())
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", **spec["tokens"],
                                  additional_special_tokens=[t for t in spec["specials"] if t not in named])
    tok.chat_template = spec["chat"]
    tok.save_pretrained(folder)
    return folder


# %%
# NBVAL_CHECK_OUTPUT
tmp = tempfile.TemporaryDirectory()
folders = {t: stand_in(t, Path(tmp.name) / t, seed=0) for t in REAL}
for t, folder in folders.items():
    print(f"{t:<11}", " ".join(sorted(p.name for p in folder.iterdir())))


# %% [markdown]
# `facts` prints what `lk.load` found in a folder, next to what its `config.json` says.

# %%
def facts(lm, folder):
    cfg = json.loads((folder / "config.json").read_text())
    fam, tok = lm.family, lm.tokenizer
    names = list(lm.net.state_dict())
    key = next(k for k in fam.context_keys if k in cfg)
    print(f"family       {fam.name} (config.json model_type {cfg['model_type']!r}), kind {lm.kind}")
    print(f"mask id      {lm.mask_id} = {tok.convert_ids_to_tokens(lm.mask_id)!r} "
          f"(config.json mask_token_id: {cfg.get('mask_token_id', 'none')})")
    print(f"end of turn  {lm.eot_id} = {tok.convert_ids_to_tokens(lm.eot_id)!r}, end of text {lm.eos_id}, pad {lm.pad_id}")
    print(f"context      {lm.max_length} (config.json {key}: {cfg[key]})")
    print(f"default rule {default_sampler(lm)!r}")
    print(f"weights      {len(names)} tensors, e.g. {names[3]}")


CHAT = [{"role": "user", "content": "to be or not to be"}]
KEYWORD = lk.Keywords(["question"])          # a content control: the answer must contain "question"


def run(lm, sampler, **knobs):
    # Answer CHAT with `sampler` and the keyword control, twice: greedy runs must agree token for token.
    out = lk.generate(lm, CHAT, sampler, controls=[KEYWORD], **knobs)
    again = lk.generate(lm, CHAT, sampler, controls=[KEYWORD], **knobs)
    assert torch.equal(out.ids, again.ids), "two greedy runs differ"
    print(f"NFE {out.stats['nfe']}, TPF {out.stats['tpf']:.2f}, edits {int(out.trace.edits().sum())}")
    print("answer:", out.text)
    return out


# %% [markdown]
# ### LLaDA
#
# The chat template renders the message Llama-3 style, with `<|eot_id|>` ending the turn; the lab found the mask
# id in the config and `<|eot_id|>` in the vocabulary.

# %%
# NBVAL_CHECK_OUTPUT
llada = lk.load(str(folders["llada"]))
facts(llada, folders["llada"])
print("prompt      ", repr(chat_text(llada, CHAT)))

# %% [markdown]
# `chat.py`'s rule scaled down: 32 tokens in blocks of 8, one token per step, greedy. The keyword control fixes
# one position, so 31 steps decide the other 31.

# %%
# NBVAL_CHECK_OUTPUT
out_llada = run(llada, lk.LowConfidence(), gen_length=32, block_length=8, steps=32)

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(out_llada.trace, llada, kind="state")

# %% [markdown]
# ### Dream
#
# ChatML with `<|im_end|>` ending the turn. Dream's logits are shifted inside the family (the logits for
# position i come from hidden state i − 1), so the rule sees the same interface as for LLaDA. Dream's entropy
# score over one block, greedy here (Dream's README samples at temperature 0.2) so that the run is the same
# every time. The answer stops at the first end-of-text token the model writes.

# %%
# NBVAL_CHECK_OUTPUT
dream = lk.load(str(folders["Dream"]))
facts(dream, folders["Dream"])
print("prompt      ", repr(chat_text(dream, CHAT)))
out_dream = run(dream, lk.LowConfidence(score="neg_entropy"), gen_length=32, block_length=32, steps=32)

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(out_dream.trace, dream, kind="state")

# %% [markdown]
# ### LLaDA2.1
#
# Its `config.json` names no mask id, and here the tokenizer declares no mask token either: the lab found
# `<|mask|>` in the vocabulary by name. The family's default rule is Q mode. Its attention is block-causal, in
# blocks of 32 (the published `generate()`'s block; the config names none).

# %%
# NBVAL_CHECK_OUTPUT
llada2 = lk.load(str(folders["llada2_moe"]))
facts(llada2, folders["llada2_moe"])
print("prompt      ", repr(chat_text(llada2, CHAT)))

# %% [markdown]
# S and Q mode by name, one block of 32, stopping at the end of text as the model card's quickstart does.

# %%
# NBVAL_CHECK_OUTPUT
out_s = run(llada2, "speed", gen_length=32, block_length=32, eos_early_stop=True)
out_q = run(llada2, "quality", gen_length=32, block_length=32, eos_early_stop=True)

# %% [markdown]
# A random model is rarely confident: both modes commit about one mask per forward pass, the fallback when
# no mask clears the threshold. S mode's `editing_threshold=0.0` lets every proposal that differs from the
# token in place overwrite it, so once the block is drafted nearly every token is rewritten at every step until
# the 16 post steps run out (46 forward passes and hundreds of edits, against Q mode's 32 passes and 6 edits:
# Q mode edits only above 0.5). This is the stuttering LLaDA2.1's card warns about, in its extreme form; a
# trained model (or `tiny-cap`, notebook 04) commits several tokens per pass and edits far less. The edits
# heatmap marks every rewrite of the S-mode run.

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(out_s.trace, llada2, kind="edits")

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(out_q.trace, llada2, kind="state")

# %%
tmp.cleanup()          # the stand-ins' folders

# %% [markdown]
# ## Exercises
#
# Each has its solution just below it. The first two are meant for a GPU with the real weights; their
# solutions run the same code on the stand-ins (random weights, so read the mechanics, not the words):
# swap the folder for the hub id (`REAL[...]`) where the weights are cached.
#
# **1.** LLaDA-8B-Instruct's semi-autoregressive GSM8K setting (EVAL.md: `gen_length=256,
# block_length=8, steps=256`) against one block of the whole answer: where does the model write its
# end-of-text tokens, and at which steps?

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution (on the LLaDA stand-in; on a GPU: lk.load(REAL["llada"], device="cuda"), gen_length=256)
for block in (8, 32):
    o = lk.generate(llada, CHAT, lk.LowConfidence(), gen_length=32, block_length=block, steps=32)
    p = o.trace.prompt_len
    order = o.trace.commit_step()[0, p:]
    eos = (o.trace.final[0, p:] == llada.eos_id).nonzero().flatten().tolist()
    print(f"block_length {block:>2}: first 6 positions written {order.argsort()[:6].tolist()}; "
          f"end-of-text tokens at positions {eos} (steps {order[eos].tolist()})")

# %% [markdown]
# **2.** On LLaDA2.1-mini: set `eos_early_stop=False` and compare NFE and the text with the card's
# setting (`True`).

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution (on the LLaDA2.1 stand-in)
for stop in (True, False):
    o = lk.generate(llada2, CHAT, "speed", gen_length=32, block_length=8, eos_early_stop=stop)
    eos = int((o.trace.final[0, o.trace.prompt_len:] == llada2.eos_id).sum())
    print(f"eos_early_stop={stop!s:<5}: NFE {o.stats['nfe']:>3}, answer tokens {o.stats['gen_tokens']}, "
          f"end-of-text tokens written {eos}")

# %% [markdown]
# **3.** Write another stand-in with `stand_in("llada", folder, seed=1)` and decode it with three
# different rules: any rule runs on any family. (`lk.widgets.Lab(lk.load(str(folder)))` opens it in
# the panel.)

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
other = lk.load(str(stand_in("llada", Path(tmp.name) / "llada-seed1", seed=1)))
for rule in (lk.LowConfidence(), lk.Threshold(threshold=0.5), "speed"):
    o = lk.generate(other, CHAT, rule, gen_length=16, block_length=8, steps=16)
    print(f"{str(rule)[:40]:<40} NFE {o.stats['nfe']:>2}")
