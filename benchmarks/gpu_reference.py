"""labkit against the official decoders, on the same network and prompt: LLaDA's `generate()`
(ML-GSAI/LLaDA, generate.py) and Fast-dLLM's `generate`, `generate_with_prefix_cache` and
`generate_with_dual_cache` (NVlabs/Fast-dLLM, llada/generate.py). Neither file is part of labkit:
the user fetches them and gives their paths (gpu_check.py --llada-generate / --fast-dllm-generate);
they are loaded as published, except that Fast-dLLM's import of its own modeling file is answered
with a stand-in (the network comes from here).

`OfficialModel` gives a labkit model the call the official loops make, `model(x, attention_mask=,
past_key_values=, use_cache=, replace_position=)` → `.logits` (and `.past_key_values`), over the
model's KV-cache pass. Both sides get the mask token's logit at -inf (labkit's loop does this for
every model: a trained denoiser never proposes the mask, random weights can).
"""
from __future__ import annotations

import importlib.util
import sys
import time
import types
from pathlib import Path

import torch


def load_official(path: str | Path, name: str):
    """The module at `path`, imported as `name`; an import of `model.modeling_llada` (Fast-dLLM's
    own network, not used here) finds a stand-in."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (give the path of a fetched generate.py)")
    stand_in = types.ModuleType("model.modeling_llada")
    stand_in.LLaDAModelLM = None
    package = types.ModuleType("model")
    package.modeling_llada = stand_in
    saved = {k: sys.modules.get(k) for k in ("model", "model.modeling_llada")}
    sys.modules.update({"model": package, "model.modeling_llada": stand_in})
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return module


class OfficialModel:
    """A labkit model behind the call signature of the official loops (see the module docstring)."""

    def __init__(self, lm):
        from labkit.models.kv_cache import cache_pass

        if getattr(getattr(lm.net, "config", None), "shift_logits", False):
            raise ValueError(f"{lm.name!r} has shifted (Dream-style) logits; the official LLaDA loops expect "
                             f"position i's logits at i")
        self.lm, self.run, self.device = lm, cache_pass(lm), lm.device

    @torch.no_grad()
    def __call__(self, x, attention_mask=None, past_key_values=None, use_cache=False, replace_position=None):
        kv = None
        if past_key_values is None and not use_cache:
            logits = self.lm(x, attention_mask)                                   # (B, L, V)
        elif past_key_values is None:                                             # full pass, keep K/V
            logits, kv = self.run(x, attention_mask)
        elif replace_position is None:                 # prefix cache: K/V of [0, s), window [s, L)
            s = past_key_values[0][0].shape[2]
            logits, kv = self.run(x, attention_mask, past=past_key_values, start=s)
        else:                                          # dual cache: the window replaces its K/V in place
            s = int(replace_position[0].int().argmax())
            logits, kv = self.run(x, attention_mask, past=past_key_values, start=s, write=True)
        logits[..., self.lm.mask_id] = float("-inf")
        return types.SimpleNamespace(logits=logits, past_key_values=kv)


def timed(fn, device: torch.device, repeats: int = 1):
    """fn()'s last result and the median seconds of `repeats` runs after one warm-up run
    (repeats 0: one run, timed, no warm-up)."""
    out, times = (fn() if repeats else None), []
    for _ in range(max(1, repeats)):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        out = fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - t0)
    return out, sorted(times)[len(times) // 2]


def answer(ids: torch.Tensor, P: int) -> torch.Tensor:
    return ids[0, P:].cpu()


def labkit_runs(lm, compiled_lm, prompt_ids: list[int], knobs: dict, compile_mode: str | None = None) -> dict:
    """Each labkit way of decoding the comparisons use: name → a function returning the answer ids."""
    import labkit as lk
    from labkit.models.kv_cache import DualCache, PrefixCache

    text = lm.decode(prompt_ids, skip_special=False)
    assert lm.encode(text) == prompt_ids, "the prompt must survive decode/encode"
    P = len(prompt_ids)

    def run(model, rule, accel=None):
        return lambda: answer(lk.generate(model, text, rule, accel=accel, **knobs).ids, P)
    one, thr = lk.LowConfidence(), lk.Threshold(threshold=0.9)
    runs = {"labkit": run(lm, one), "labkit_gpu": run(lm, one, lk.Accel.GPU),
            "labkit_prefix": run(PrefixCache(lm), one, lk.Accel.GPU),
            "labkit_dual": run(DualCache(lm), one, lk.Accel.GPU),
            "labkit_threshold": run(lm, thr, lk.Accel.GPU),
            "labkit_dual_threshold": run(DualCache(lm), thr, lk.Accel.GPU)}
    if compiled_lm is not None:
        runs["labkit_compiled"] = run(compiled_lm, one, lk.Accel.GPU)
    if compile_mode is not None:
        runs["labkit_dual_compiled"] = run(DualCache(lm, compile=compile_mode), one, lk.Accel.GPU)
    return runs


def official_runs(lm, llada, fast, prompt_ids: list[int], knobs: dict) -> dict:
    """The official loops on the same model: name → a function returning the answer ids."""
    model, P = OfficialModel(lm), len(prompt_ids)
    prompt = torch.tensor([prompt_ids], device=lm.device)
    kw = dict(steps=knobs["steps"], gen_length=knobs["gen_length"], block_length=knobs["block_length"],
              temperature=0.0, remasking="low_confidence", mask_id=lm.mask_id)
    runs = {}
    if llada is not None:
        runs["llada_generate"] = lambda: answer(llada.generate(model, prompt, **kw), P)
    if fast is not None:
        for name, fn in (("fast_dllm", fast.generate), ("fast_dllm_prefix", fast.generate_with_prefix_cache),
                         ("fast_dllm_dual", fast.generate_with_dual_cache)):
            runs[name] = lambda fn=fn: answer(fn(model, prompt, **kw)[0], P)
        runs["fast_dllm_threshold"] = lambda: answer(fast.generate(model, prompt, threshold=0.9, **kw)[0], P)
        runs["fast_dllm_dual_threshold"] = lambda: answer(
            fast.generate_with_dual_cache(model, prompt, threshold=0.9, **kw)[0], P)
    return runs


# which labkit run each official one is checked against
PAIRS = {"llada_generate": "labkit", "fast_dllm": "labkit", "fast_dllm_prefix": "labkit_prefix",
         "fast_dllm_dual": "labkit_dual", "fast_dllm_threshold": "labkit_threshold",
         "fast_dllm_dual_threshold": "labkit_dual_threshold"}


def compare(lm, compiled_lm, llada, fast, prompt_ids: list[int], knobs: dict, repeats: int, log,
            compile_mode: str | None = None) -> dict:
    """Every run timed (median of `repeats` after a warm-up) and each official one's answer checked
    against its labkit twin: identical tokens, the share of answer positions that agree, the time
    ratio official / labkit."""
    runs = {**labkit_runs(lm, compiled_lm, prompt_ids, knobs, compile_mode),
            **official_runs(lm, llada, fast, prompt_ids, knobs)}
    answers, seconds = {}, {}
    for name, fn in runs.items():
        answers[name], seconds[name] = timed(fn, lm.device, repeats)
        log(f"  {name}: {seconds[name]:.3f} s")
    out = {"prompt_tokens": len(prompt_ids), **knobs, "seconds": {k: round(v, 4) for k, v in seconds.items()},
           "pairs": {}}
    for official, mine in PAIRS.items():
        if official in answers:
            a, b = answers[official], answers[mine]
            out["pairs"][official] = {"labkit": mine, "identical": bool(torch.equal(a, b)),
                                      "agree": round(float((a == b).float().mean()), 4),
                                      "speedup": round(seconds[official] / seconds[mine], 3)}
    base = seconds["labkit_gpu"]
    out["speedup_vs_labkit_no_cache"] = {k: round(base / seconds[k], 3) for k in seconds if k.startswith("labkit")}
    out["compiled_identical"] = {k: bool(torch.equal(answers[k], answers[ref]))
                                 for k, ref in (("labkit_compiled", "labkit"), ("labkit_dual_compiled", "labkit_dual"))
                                 if k in answers}
    return out


__all__ = ["OfficialModel", "PAIRS", "compare", "load_official", "timed"]
