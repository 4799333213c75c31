"""GPU check: labkit's hooks on a randomly initialised model of LLaDA-8B's shape, in bf16.

    python benchmarks/gpu_check.py --out benchmarks/results/gpu_check.json     # or: make gpu-check

No weights are needed: the config alone (32 layers, d_model 4096, 32 heads, SwiGLU 12288, vocabulary
126464, LLaDA-8B's shape in labkit's own architecture: RoPE, RMSNorm, bidirectional attention; 7.5B
parameters, since the embeddings are tied)
is instantiated on the GPU. Random weights write nonsense, so only speed and memory mean anything:
- forward latency at batch 1 (CUDA events, median of 10) for a canvas of prompt + 256 tokens;
- peak memory of one greedy generation (torch.cuda.max_memory_allocated);
- labkit's overhead around the forward passes (labkit bench overhead);
- the batch sweep, doubling until memory runs out (reported, not raised);
- the prefix and dual KV cache (labkit.models.kv_cache) on a long prompt: speedup and identical answers.
Without CUDA it prints {"skipped": ...} and exits 0. `--shape small --device cpu` runs the same
steps on a small model, which is how the tests check the script.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

SHAPES = {
    "llada-8b": dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, intermediate_size=12288,
                     vocab_size=126464, max_position_embeddings=4096),
    "small": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                  vocab_size=4096, max_position_embeddings=1024),
}


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


def kv_cache_speedup(lm) -> dict:
    """One greedy 128-token answer to a long held-out prompt, without a cache and with each wrapper
    (after a warm-up run each): seconds, speedup, and whether the answer matched the uncached one."""
    import labkit as lk
    from labkit.bench.speed import long_prompts
    from labkit.models.kv_cache import DualCache, PrefixCache

    prompt = long_prompts(lm, 1, max_tokens=480)[0]
    knobs = dict(gen_length=128, block_length=32, steps=128)
    runs = {}
    for name, model in (("none", lm), ("prefix", PrefixCache(lm)), ("dual", DualCache(lm))):
        lk.generate(model, prompt, **knobs)
        out = lk.generate(model, prompt, **knobs)
        runs[name] = (out.stats["seconds"], out.texts[0])
    return {"prompt_tokens": len(lm.encode(prompt)),
            **{k: {"seconds": s, "speedup": round(runs["none"][0] / s, 3), "identical": t == runs["none"][1]}
               for k, (s, t) in runs.items()}}


def run(shape: str, device: str, max_batch: int, log) -> dict:
    import labkit as lk
    from labkit.bench.speed import PROMPT, bench_batch, bench_overhead
    from labkit.profile import peak_memory

    t_start = time.perf_counter()
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    lm = build(shape, device, dtype)
    params = sum(p.numel() for p in lm.net.parameters())
    result = {"shape": shape, "device": device, "gpu": torch.cuda.get_device_name() if device.startswith("cuda") else None,
              "dtype": str(dtype), "params": params, "build_s": round(time.perf_counter() - t_start, 1)}
    log(f"built {lm.name}: {params / 1e9:.2f}B parameters in {result['build_s']} s")
    result["forward"] = forward_latency(lm, len(lm.encode(PROMPT)) + 256)
    log(f"forward: {result['forward']}")
    with peak_memory(lm.device) as mem:
        out = lk.generate(lm, PROMPT, gen_length=128, block_length=32, steps=128)
    result["generate"] = {"nfe": out.stats["nfe"], "seconds": out.stats["seconds"], "tps": out.stats["tps"],
                          "peak_bytes": mem["peak_bytes"], "memory_kind": mem["kind"]}
    log(f"generate: {result['generate']}")
    result["overhead"] = bench_overhead(lm, repeats=3)
    log(f"overhead: labkit {result['overhead']['labkit_overhead_ratio']}, trace {result['overhead']['trace_overhead_ratio']}")
    result["batch"] = bench_batch(lm, sizes=(1, 4, 8, 16), beyond=True, max_batch=max_batch, log=log)
    result["kv_cache"] = kv_cache_speedup(lm)
    log(f"kv cache: {result['kv_cache']}")
    result["total_s"] = round(time.perf_counter() - t_start, 1)
    return result


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shape", choices=sorted(SHAPES), default="llada-8b")
    p.add_argument("--device", default="cuda")
    p.add_argument("--max-batch", type=int, default=256, help="the batch sweep stops doubling here")
    p.add_argument("--out", default="benchmarks/results/gpu_check.json")
    a = p.parse_args(argv)
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        print(json.dumps({"skipped": "no CUDA device: this check needs a GPU (use --device cpu --shape small "
                                     "to run its steps on a small model)"}))
        return 0
    result = run(a.shape, a.device, a.max_batch, log=lambda m: print(m, file=sys.stderr, flush=True))
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
