# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% tags=["zh-setup"]
# 中文版：代码与英文版逐格相同，输出也相同。这一格把内核移到上一级目录 notebooks/，
# 英文版代码里的相对路径（../benchmarks/results）从那里才成立。
import os
if os.path.basename(os.getcwd()) == "zh-CN":
    os.chdir("..")

# %% [markdown]
# # 08 · Real models: LLaDA, Dream and LLaDA2.1（真实模型）
#
# *阅读并运行约 20 分钟，不含练习 · 前置：notebook 01（快速上手） · 下一步：notebook 09（服务部署）。*
#
# **问题：** 其他 notebook 运行的都是实验室自己的 5M 参数模型。怎样在同一个实验室里运行已发布的扩散语言模型
# （LLaDA-8B、Dream-7B、LLaDA2.1-mini）？实验室又能从每个检查点中读出什么？
#
# `lk.load(name)` 读取检查点的 `config.json`，根据 `model_type` 选出它的**模型族**（family），并在不使用检查点
# 远程代码的情况下加载已发布的权重。模型族知道它的格式把掩码 id、填充（pad）id、轮次结束（end-of-turn）id 和
# 上下文长度存在哪里，左填充的批如何确定位置，以及实验室默认用哪条规则打开它。加载之后，一切（`lk.generate`、
# 热力图、面板）都和 `tiny` 一样工作。
#
# 本 notebook 分为两半：
#
# 1. **在 GPU 上**，模型权重已在本地 Hugging Face 缓存中：用各模型作者推荐的设置，向每个真实模型提一个聊天
#    问题。在 CPU 上或没有权重时，这些单元格各打印一行说明已跳过，别的什么也不做。
# 2. **在任何 CPU 上：** 为每个模型族按已发布的格式写一个微型随机检查点到临时文件夹，然后用同样的调用加载并解码。
#    CI 检查的是这一半。

# %% [markdown]
# ## The families and their recommended settings（各模型族及其推荐设置）
#
# | 模型族（`model_type`） | 这里使用的检查点 | bf16 权重大小 | 掩码 token | 上下文长度（config.json） | 实验室默认使用的规则 |
# |---|---|---|---|---|---|
# | `llada` | `GSAI-ML/LLaDA-8B-Instruct` | 16.0 GB | `<\|mdm_mask\|>`（126336） | 4096（`max_sequence_length`） | LLaDA 的低置信度重掩码 |
# | `Dream` | `Dream-org/Dream-v0-Instruct-7B` | 15.2 GB | `<\|mask\|>`（config 中的 `mask_token_id`） | 131072（`max_position_embeddings`；Dream 的 README：实际有效为 2048） | LLaDA 的低置信度重掩码 |
# | `llada2_moe` | `inclusionAI/LLaDA2.1-mini` | 32.5 GB | `<\|mask\|>`（156895；config.json 中没有给出） | 32768（`max_position_embeddings`） | LLaDA2.1 的 Q 模式（质量模式，`"quality"`） |
#
# 各模型作者推荐的设置，以及在 labkit 中的对应写法：
#
# | 模型 | 推荐设置（出处） | 在 labkit 中 |
# |---|---|---|
# | LLaDA-8B-Instruct | 聊天（`chat.py`）：`gen_length=128, steps=128, block_length=32`，温度 0，低置信度重掩码。基准测试（EVAL.md）：始终 `steps = gen_length`，例如 GSM8K 用 512 个 token、只分一个块并设 `confidence_eos_eot_inf=True`，或 256 个 token、块长度为 8 | `lk.LowConfidence()` 配同样的参数；`confidence_eos_eot_inf` 和 `logits_eos_inf` 是 `LowConfidence` 的字段 |
# | Dream-v0-Instruct-7B | README 示例：`max_new_tokens=512, steps=512, temperature=0.2, top_p=0.95, alg="entropy", alg_temp=0.`；不分块 | `lk.LowConfidence(score="neg_entropy", temperature=0.2, top_p=0.95)`，并取 `block_length = gen_length`。各步按 labkit 的均匀调度分配，而不是 Dream 的时间步调度 |
# | LLaDA2.1-mini | 模型卡：**S 模式**（极速模式）`threshold=0.5, editing_threshold=0.0`；**Q 模式** `threshold=0.7, editing_threshold=0.5`；两者的 `max_post_steps` 都应大于 5，推荐 16，`block_length=32`，温度 0。模型卡的快速上手用 `gen_length=512, eos_early_stop=True` 运行 S 模式；技术报告建议代码和数学用 S 模式，一般聊天用 Q 模式 | `"speed"` / `"quality"`（= `lk.DraftEdit.speed()` / `.quality()`）；不使用 `steps`：一个块一直运行到收敛为止 |
#
# 仅权重就要占用上表中的内存；GPU 上还要为画布的激活值留出空间。

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
# ## On a GPU: the real checkpoints（在 GPU 上：真实检查点）
#
# `chat_on_gpu` 以 bfloat16 把 hub 模型加载到 GPU 上（`lk.load(repo, device="cuda",
# dtype=torch.bfloat16)`），把 `QUESTION` 作为一条聊天消息向它提问（`lk.generate(lm, [{"role": "user",
# "content": QUESTION}], ...)` 会用分词器的聊天模板渲染它），并画出每次运行的状态热力图。它只加载本地
# Hugging Face 缓存中已有的内容，检查时不访问网络（`huggingface_hub.try_to_load_from_cache`）：先在能联网的
# 机器上下载权重，例如 `hf download GSAI-ML/LLaDA-8B-Instruct`，并安装 CUDA 版的 torch（见 README 的
# “Real models”一节）。

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
# ### LLaDA-8B-Instruct（LLaDA 指令模型）
#
# `chat.py` 的设置：128 个 token，块长度 32，每步一个 token，贪心解码。

# %%
# NBVAL_IGNORE_OUTPUT
real["llada"] = chat_on_gpu(REAL["llada"], {"low_confidence": lk.LowConfidence()},
                            gen_length=128, block_length=32, steps=128)

# %% [markdown]
# ### Dream-v0-Instruct-7B（Dream 指令模型）
#
# Dream 的 README 中的设置：熵打分，温度 0.2，在 0.95 的核（nucleus，即 top-p）内采样（有种子），512 个 token
# 用 512 步，整个回答作为一个块。

# %%
# NBVAL_IGNORE_OUTPUT
dream_rule = lk.LowConfidence(score="neg_entropy", temperature=0.2, top_p=0.95)
real["Dream"] = chat_on_gpu(REAL["Dream"], {"entropy": dream_rule}, gen_length=512, block_length=512, steps=512)

# %% [markdown]
# ### LLaDA2.1-mini in S and Q mode（以 S 模式和 Q 模式运行）
#
# 模型卡的快速上手设置：512 个 token，块长度 32，一旦某个写完的块中含有文本结束符就停止。问题是一道算术题，
# 技术报告认为在这类领域 S 模式已经够好（它建议一般聊天用 Q 模式）。

# %%
# NBVAL_IGNORE_OUTPUT
real["llada2_moe"] = chat_on_gpu(REAL["llada2_moe"], {"S mode": "speed", "Q mode": "quality"},
                                 gen_length=512, block_length=32, eos_early_stop=True)

# %% [markdown]
# ## On this CPU: each family in miniature（在这台 CPU 上：每个模型族的微缩版）
#
# CI 访问不到任何模型 hub，8B 的模型也不该放进 CPU 上的 notebook。下一个单元格定义了
# `stand_in(model_type, folder, seed=0)`，它把一个模型族的**示例用随机小检查点**（stand-in）写进文件夹：一个采用已发布磁盘格式的
# 随机检查点。它的 `config.json` 具有真实检查点的各个键，只是尺寸都很小（LLaDA2.1 的示例用随机小检查点和真实模型一样，不给出
# 掩码 id）；`model.safetensors` 以已发布的参数名保存带种子的随机权重；分词器含有该模型族的特殊 token，96 个 id 中
# 其余的是取自 Hamlet 的词，还有一个该模型族风格的聊天模板（LLaDA2.1 的模板是基于它的 `<role>` 和 `<|role_end|>`
# token 构造的近似版本；真实检查点自带模板）。参数名和形状来自 labkit 的模型族网络，`tests/test_family_*.py` 会
# 把它们与已发布的建模代码对照检查。这个单元格的源代码是折叠起来的：点击 `…` 即可阅读。
#
# 随机权重写出的是胡乱拼凑的词，所以读这些运行时，要看实验室在每个文件夹里找到了什么、解码循环是怎样运行的，
# 而不是看文本。

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
# `facts` 打印 `lk.load` 在一个文件夹中找到的内容，并与该文件夹的 `config.json` 中写的内容并列对照。

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
# ### LLaDA（LLaDA 模型族）
#
# 聊天模板按 Llama-3 的风格渲染消息，用 `<|eot_id|>` 结束一轮对话；实验室在 config 中找到了掩码 id，在词表中
# 找到了 `<|eot_id|>`。

# %%
# NBVAL_CHECK_OUTPUT
llada = lk.load(str(folders["llada"]))
facts(llada, folders["llada"])
print("prompt      ", repr(chat_text(llada, CHAT)))

# %% [markdown]
# `chat.py` 规则的缩小版：32 个 token，块长度 8，每步一个 token，贪心解码。关键词控制固定了一个位置，所以由
# 31 步决定其余 31 个位置。

# %%
# NBVAL_CHECK_OUTPUT
out_llada = run(llada, lk.LowConfidence(), gen_length=32, block_length=8, steps=32)

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(out_llada.trace, llada, kind="state")

# %% [markdown]
# ### Dream（Dream 模型族）
#
# ChatML 格式，用 `<|im_end|>` 结束一轮对话。Dream 的 logits 在模型族内部做了移位（位置 i 的 logits 来自隐藏状态
# i − 1），所以规则看到的接口和 LLaDA 相同。这里在一个块上使用 Dream 的熵打分，并用贪心解码（Dream 的 README
# 以温度 0.2 采样），这样每次运行的结果都相同。回答在模型写出的第一个文本结束符处停止。

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
# ### LLaDA2.1（LLaDA 的 MoE 模型族）
#
# 它的 `config.json` 没有给出掩码 id，这里的分词器也没有声明掩码 token：实验室是在词表中按名字找到 `<|mask|>`
# 的。该模型族的默认规则是 Q 模式。它的注意力是块因果的，块长度为 32（已发布的 `generate()` 所用的块；config 中
# 没有给出）。

# %%
# NBVAL_CHECK_OUTPUT
llada2 = lk.load(str(folders["llada2_moe"]))
facts(llada2, folders["llada2_moe"])
print("prompt      ", repr(chat_text(llada2, CHAT)))

# %% [markdown]
# 按名字调用 S 模式和 Q 模式，一个长度为 32 的块，像模型卡的快速上手那样在文本结束符处停止。

# %%
# NBVAL_CHECK_OUTPUT
out_s = run(llada2, "speed", gen_length=32, block_length=32, eos_early_stop=True)
out_q = run(llada2, "quality", gen_length=32, block_length=32, eos_early_stop=True)

# %% [markdown]
# 随机模型的置信度很少会高：两种模式每次前向传播都只落定（commit，即 unmask，去掩码）大约一个掩码，这是没有
# 任何掩码超过阈值时的兜底做法。S 模式的 `editing_threshold=0.0` 让每个与当前位置 token 不同的候选都能覆盖它，
# 所以块的草稿一旦写完，几乎每个 token 在每一步都会被改写，直到 16 个收尾步用完（46 次前向传播、数百次编辑，
# 而 Q 模式只有 32 次前向和 6 次编辑：Q 模式只在置信度高于 0.5 时编辑）。这就是 LLaDA2.1 的模型卡所警告的重复
# （stuttering）现象的极端形式；训练过的模型（或 notebook 04 中的 `tiny-cap`）每次前向会落定好几个 token，
# 编辑也少得多。编辑热力图标出了 S 模式那次运行中的每一次改写。

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(out_s.trace, llada2, kind="edits")

# %%
# NBVAL_IGNORE_OUTPUT
lk.viz.heatmap(out_q.trace, llada2, kind="state")

# %%
tmp.cleanup()          # the stand-ins' folders

# %% [markdown]
# ## Exercises（练习）
#
# 每道题的参考答案就在它下面。前两道题是为装有真实权重的 GPU 准备的；它们的参考答案在示例用随机小检查点上运行同样的代码
# （随机权重，所以看机制，别看文字）：在权重已缓存的机器上，把文件夹换成 hub id（`REAL[...]`）即可。
#
# **1.** LLaDA-8B-Instruct 在 GSM8K 上的半自回归设置（EVAL.md：`gen_length=256,
# block_length=8, steps=256`）与把整个回答作为一个块相比：模型把文本结束符写在哪里，又是在哪些步写下的？

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
# **2.** 在 LLaDA2.1-mini 上：设置 `eos_early_stop=False`，并与模型卡的设置（`True`）比较 NFE（前向次数）和
# 文本。

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution (on the LLaDA2.1 stand-in)
for stop in (True, False):
    o = lk.generate(llada2, CHAT, "speed", gen_length=32, block_length=8, eos_early_stop=stop)
    eos = int((o.trace.final[0, o.trace.prompt_len:] == llada2.eos_id).sum())
    print(f"eos_early_stop={stop!s:<5}: NFE {o.stats['nfe']:>3}, answer tokens {o.stats['gen_tokens']}, "
          f"end-of-text tokens written {eos}")

# %% [markdown]
# **3.** 用 `stand_in("llada", folder, seed=1)` 再写一个示例用随机小检查点，并用三条不同的规则解码它：任何规则都能在任何模型族上
# 运行。（`lk.widgets.Lab(lk.load(str(folder)))` 会在面板中打开它。）

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
other = lk.load(str(stand_in("llada", Path(tmp.name) / "llada-seed1", seed=1)))
for rule in (lk.LowConfidence(), lk.Threshold(threshold=0.5), "speed"):
    o = lk.generate(other, CHAT, rule, gen_length=16, block_length=8, steps=16)
    print(f"{str(rule)[:40]:<40} NFE {o.stats['nfe']:>2}")
