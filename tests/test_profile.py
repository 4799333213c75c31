"""labkit.profile: the step timer agrees with the trace, memory is measured, the profiler trace has
the loop's spans, and observe() always removes its hooks."""
import json

import pytest
import torch
from notebook_cells import script

import labkit as lk
from labkit.profile import StepTimer, observe, peak_memory, profile_generate

KNOBS = dict(gen_length=16, block_length=8, steps=16)


def test_timer_nfe_equals_trace_length_and_counts_tokens(toy):
    timer = StepTimer()
    out = lk.generate(toy, ["ROMEO:\n", "KING:\n"], lk.Threshold(threshold=0.5), on_step=timer, **KNOBS)
    s = timer.summary()
    assert s["nfe"] == len(out.trace) == timer.nfe
    assert s["tokens"] == out.stats["gen_tokens"] == 32
    assert s["seconds"] > 0 and s["step_ms_median"] > 0 and s["step_ms_p90"] >= s["step_ms_median"]
    assert s["ttft_s"] is not None and s["ttft_s"] <= s["seconds"]
    assert len(timer.step_seconds()) == s["nfe"]


def test_timer_without_steps_says_how_to_use_it():
    with pytest.raises(ValueError, match="on_step=timer"):
        StepTimer().summary()


def test_peak_memory_sees_a_large_allocation():
    with peak_memory("cpu") as mem:
        big = torch.ones(64 * 1024 * 1024 // 4)            # 64 MiB, touched
        del big
    assert mem["kind"] == "rss" and mem["peak_bytes"] > 64 * 1024 * 1024


def test_profiler_trace_has_the_loop_spans(toy, tmp_path):
    path = profile_generate(toy, "ROMEO:\n", tmp_path / "t.json", controls=[lk.Pin(2, " the")], **KNOBS)
    names = {e.get("name") for e in json.loads(path.read_text())["traceEvents"]}
    assert {"labkit.forward", "labkit.rule", "labkit.controls", "labkit.record"} <= names


def test_observe_collects_and_removes_hooks(toy):
    name = next(n for n, m in toy.net.named_modules() if n and not list(m.children()))
    module = dict(toy.net.named_modules())[name]
    with observe(toy, [name], "shapes") as obs:
        lk.generate(toy, "ROMEO:\n", **KNOBS)
    assert len(obs.shapes[name]) == 16 and all(len(s) >= 2 for s in obs.shapes[name])
    assert not module._forward_hooks and not module._forward_pre_hooks
    with observe(toy, name, "timings") as obs:
        lk.generate(toy, "ROMEO:\n", **KNOBS)
    assert len(obs.timings[name]) == 16 and min(obs.timings[name]) >= 0


def test_observe_removes_hooks_when_the_block_raises(toy):
    name = next(n for n, _ in toy.net.named_modules() if n)
    module = dict(toy.net.named_modules())[name]
    with pytest.raises(ValueError, match="gen_length"):
        with observe(toy, [name], "activations"):
            lk.generate(toy, "ROMEO:\n", gen_length=15, block_length=8, steps=16)
    assert not module._forward_hooks and not module._forward_pre_hooks


def test_observe_rejects_unknown_names_and_kinds(toy):
    with pytest.raises(ValueError, match="no submodule named"):
        with observe(toy, ["net.nope"]):
            pass
    with pytest.raises(ValueError, match="what must be one of"):
        with observe(toy, [], "gradients"):
            pass


def test_bench_overhead_reports_the_ratios(toy, tmp_path, capsys):
    from labkit.bench.speed import bench_overhead
    r = bench_overhead(toy, repeats=1, gen_length=16, block_length=8)
    assert r["nfe"] == 16 and r["repeats"] == 1
    assert r["labkit_overhead_ratio"] == pytest.approx(r["full_s"] / r["bare_forward_s"], rel=1e-2)
    assert r["trace_overhead_ratio"] == pytest.approx(r["full_s"] / r["no_trace_s"], rel=1e-2)
    with pytest.raises(ValueError, match="repeats must be a positive integer"):
        bench_overhead(toy, repeats=0)
    from labkit.cli.main import main
    assert main(["bench", "overhead", "--repeats", "1", "--gen-length", "32", "--json", "--out", str(tmp_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"labkit_overhead_ratio", "trace_overhead_ratio"} <= set(out) and (tmp_path / "overhead.json").is_file()


def test_batch_sweep_reports_out_of_memory_instead_of_raising(toy, monkeypatch):
    from labkit.bench import speed as bench_profile
    real = bench_profile.generate

    def fake(lm, prompt, *a, **k):
        if isinstance(prompt, list) and len(prompt) >= 8:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(lm, prompt, *a, **k)

    monkeypatch.setattr(bench_profile, "generate", fake)
    r = bench_profile.bench_batch(toy, sizes=(1, 4, 8, 16), gen_length=16, block_length=8)
    assert [row["batch"] for row in r["rows"]] == [1, 4]
    assert "batch 8: out of memory" in r["stopped"]
    assert all(row["nfe"] == 16 and row["peak_bytes"] > 0 for row in r["rows"])
    r = bench_profile.bench_batch(toy, sizes=(1,), beyond=True, max_batch=4, gen_length=16, block_length=8)
    assert [row["batch"] for row in r["rows"]] == [1, 2, 4] and r["stopped"] is None


def test_batch_sweep_raises_other_errors_and_checks_sizes(toy, monkeypatch):
    from labkit.bench import speed as bench_profile
    with pytest.raises(ValueError, match="sizes must be positive integers"):
        bench_profile.bench_batch(toy, sizes=(0,))

    def broken(*a, **k):
        raise RuntimeError("shape mismatch")

    monkeypatch.setattr(bench_profile, "generate", broken)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        bench_profile.bench_batch(toy, sizes=(1,), gen_length=16, block_length=8)


def test_length_study_counts_forwards_and_runs_past_the_context_only_when_asked(toy):
    import dataclasses

    from labkit.bench.speed import PROMPT, bench_length
    short = dataclasses.replace(toy, max_length=48)                     # a context the prompt + 16 fits
    ar = dataclasses.replace(lk.toy(causal=True), max_length=48)
    assert len(toy.encode(PROMPT)) + 16 <= 48 < len(toy.encode(PROMPT)) + 32
    r = bench_length(short, ar, lengths=(16, 32, 64), fixed_steps=8, extend_context=False)
    assert [row["length"] for row in r["rows"]] == [16] and r["skipped"] == [32, 64]
    wide = bench_length(short, ar, lengths=(16, 32, 64), fixed_steps=8)
    assert wide["skipped"] == [] and [row["beyond_context"] for row in wide["rows"]] == [False, True, True]
    for row in wide["rows"]:
        assert row["ar"]["nfe"] == row["ar_cached"]["nfe"] == row["length"] and row["diffusion_fixed"]["nfe"] == 8
        assert 4 <= row["diffusion_threshold"]["nfe"] <= row["length"]     # >= 1 per block
        assert 4 <= row["diffusion_threshold_cached"]["nfe"] <= row["length"]
    assert short.max_length == 48                                       # the caller's model is untouched


def test_a_stretched_copy_matches_the_model_inside_its_context(tiny):
    from labkit.bench.speed import with_context
    long = with_context(tiny, 512)
    assert long.max_length == 512 and long is not tiny and with_context(tiny, 100) is tiny
    x = torch.randint(3, 2000, (1, 200))
    assert torch.allclose(long(x), tiny(x), atol=1e-5)
    assert long(torch.randint(3, 2000, (1, 400))).shape == (1, 400, tiny.net.config.vocab_size)
    with pytest.raises(ValueError, match="exceeds the model's context"):
        tiny(torch.randint(3, 2000, (1, 400)))


def _gpu_check():
    return script("gpu_check")


def test_gpu_check_runs_its_steps_on_a_small_cpu_model(tmp_path, capsys):
    out = tmp_path / "g.json"
    assert _gpu_check().main(["--shape", "small", "--device", "cpu", "--max-batch", "4", "--out", str(out),
                              "--tmp-dir", str(tmp_path), "--compile", "none", "--repeats", "0",
                              "--peak-tflops", "1.5"]) == 0
    r = json.loads(out.read_text())
    assert r["params"] > 0 and r["forward"]["median_ms"] > 0 and r["generate"]["nfe"] == 128
    assert r["overhead"]["labkit_overhead_ratio"] > 0 and r["overhead_gpu_path"]["accel"].startswith("Accel(")
    floor = r["forward_floor"][0]                     # 2 · params · 512 tokens at 1.5 TFLOP/s
    assert floor["length"] == 512 and floor["floor_ms"] == round(2 * r["params"] * 512 / 1.5e12 * 1e3, 3)
    assert floor["ratio"] == pytest.approx(floor["median_ms"] / floor["floor_ms"], rel=1e-3)
    assert r["peak_source"] == "--peak-tflops"
    assert [row["batch"] for row in r["batch"]["rows"]] == [1, 2, 4]
    timed = r["comparisons"]["timed"]                 # no official copies given: labkit's own runs only
    assert timed["gen_length"] == 256 and timed["block_length"] == 32 and 400 <= timed["prompt_tokens"] <= 512
    assert set(timed["seconds"]) == {"labkit", "labkit_gpu", "labkit_prefix", "labkit_dual", "labkit_threshold",
                                     "labkit_dual_threshold"} and timed["pairs"] == {}
    assert set(r["families"]) == {"llada", "llada_moe", "dream", "llada2"}
    for part in ("forward_512", "decode_64"):         # the profiler's tables (no device kernels on a CPU)
        prof = r["profile"][part]
        assert prof["host_us"] > 0 and prof["top_host"] and prof["kernels"] == 0 and prof["top_device"] == []
    for name, f in r["families"].items():           # each family's tiny random checkpoint, written and loaded
        assert f["params"] > 0 and f["bytes"] >= 2 * f["params"], name       # bf16 (LLaDA2's router bias: float32)
        assert f["load_s"] >= 0 and f["forward"]["median_ms"] > 0 and f["forward"]["length"] > 256, name
        assert f["generate"]["gen_tokens"] == 64 and f["generate"]["nfe"] >= 2 and f["peak_bytes"] > 0, name
    assert not list(tmp_path.glob("labkit-*")), "the checkpoints are deleted"


def test_gpu_check_family_flags_shards_and_checkpoint(tmp_path):
    import argparse

    from safetensors import safe_open

    from labkit.models.families import detect
    gpu_check = _gpu_check()
    assert gpu_check.family_names("all") == ["llada", "llada_moe", "dream", "llada2"]
    assert gpu_check.family_names("none") == [] and gpu_check.family_names("dream, llada") == ["dream", "llada"]
    with pytest.raises(argparse.ArgumentTypeError, match="unknown families"):
        gpu_check.family_names("llada,gpt2")
    sizes = {"a": torch.Size([4, 4]), "b": torch.Size([8]), "c": torch.Size([64, 64])}
    assert gpu_check.shards(sizes, limit=48) == [["a", "b"], ["c"]]
    written = gpu_check.write_checkpoint(tmp_path, "llada2", True, "cpu")
    config = json.loads((tmp_path / "config.json").read_text())
    assert detect(config).name == "LLaDA2" and (tmp_path / "tokenizer.json").is_file()
    weight_map = json.loads((tmp_path / "model.safetensors.index.json").read_text())["weight_map"]   # 3 + 9 + 2 x 23
    assert len(weight_map) == 58 and "model.layers.1.mlp.experts.3.down_proj.weight" in weight_map
    with safe_open(str(tmp_path / weight_map["model.layers.1.mlp.gate.expert_bias"]), "pt") as f:
        assert f.get_tensor("model.layers.1.mlp.gate.expert_bias").dtype == torch.float32
        assert f.get_tensor("model.word_embeddings.weight").dtype == torch.bfloat16
    assert written["params"] == 37400 and written["bytes"] == 2 * 37400 + 2 * 4 * 2    # two float32 router biases


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only skip")
def test_gpu_check_skips_cleanly_without_cuda(tmp_path, capsys):
    assert _gpu_check().main(["--out", str(tmp_path / "g.json")]) == 0
    assert "skipped" in json.loads(capsys.readouterr().out) and not (tmp_path / "g.json").exists()


def test_bench_common_times_interleaved_saves_and_tabulates(toy, tmp_path):
    from labkit.bench.common import Column, format_table, interleaved, metadata, save
    calls = []
    medians, last = interleaved({"a": lambda: calls.append("a") or 1, "b": lambda: calls.append("b") or 2}, 3)
    assert calls == ["a", "b"] * 3 and last == {"a": 1, "b": 2} and set(medians) == {"a", "b"}
    with pytest.raises(ValueError, match="repeats must be a positive integer"):
        interleaved({"a": lambda: None}, 0)
    meta = metadata(toy)
    assert {"model", "device", "torch", "threads", "cores", "date"} == set(meta) and meta["device"] == "cpu"
    path = save({"x": 1, "meta": meta}, tmp_path / "sub" / "r.json")
    assert json.loads(path.read_text()) == {"x": 1, "meta": meta}
    text = format_table([Column("name", 6, align="<"), Column("v", 6, ".2f")], [("a", 1.0), ("bb", 2.5)], "T")
    assert text == "T\nname       v\na       1.00\nbb      2.50"


def test_gpu_check_knows_the_peak_of_common_gpus():
    gpu_check = _gpu_check()
    assert gpu_check.peak_tflops("NVIDIA H200", None) == (989.4, "table (H200)")
    assert gpu_check.peak_tflops("NVIDIA H100 PCIe", None)[0] == 756.0
    assert gpu_check.peak_tflops("NVIDIA L40S", None)[0] == 362.05 and gpu_check.peak_tflops("NVIDIA L4", None)[0] == 121.0
    assert gpu_check.peak_tflops("NVIDIA H200", 500.0) == (500.0, "--peak-tflops")
    assert gpu_check.peak_tflops("Some GPU", None)[0] is None and gpu_check.peak_tflops(None, None)[0] is None


def _gpu_reference():
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import gpu_reference
    return gpu_reference


def test_official_loops_get_a_labkit_model_with_the_calls_they_make(tiny):
    """OfficialModel answers the official loops' calls (plain, full pass keeping K/V, Fast-dLLM's
    prefix cache: K/V of [0, s) and the window [s, L), its dual cache: the window replaced in place)
    with the logits the plain model gives when nothing changed; the mask token's logit is -inf."""
    with pytest.raises(ValueError, match="shifted"):
        _gpu_reference().OfficialModel(tiny)                # Dream-style logits: not LLaDA's loops
    tiny = _gpu_check().build("small", "cpu", torch.float32)
    model = _gpu_reference().OfficialModel(tiny)
    x = torch.randint(3, 2000, (1, 48), generator=torch.Generator().manual_seed(0))
    full = tiny(x)
    plain = model(x).logits
    assert torch.isinf(plain[..., tiny.mask_id]).all()
    plain[..., tiny.mask_id] = full[..., tiny.mask_id]
    assert torch.allclose(plain, full, atol=1e-5)
    out = model(x, use_cache=True)
    prefix = [(k[:, :, :20], v[:, :, :20]) for k, v in out.past_key_values]
    window = model(x[:, 20:], past_key_values=prefix, use_cache=True).logits
    assert torch.allclose(window[..., :tiny.mask_id], full[:, 20:, :tiny.mask_id], atol=1e-4)
    replace = torch.zeros_like(x, dtype=torch.bool)
    replace[:, 20:28] = True
    dual = model(x[:, 20:28], past_key_values=out.past_key_values, use_cache=True, replace_position=replace).logits
    assert torch.allclose(dual[..., :tiny.mask_id], full[:, 20:28, :tiny.mask_id], atol=1e-4)


def test_official_files_load_with_a_stand_in_for_their_network(tmp_path):
    import sys
    file = tmp_path / "generate.py"
    file.write_text("from model.modeling_llada import LLaDAModelLM\n\ndef generate():\n    return LLaDAModelLM\n")
    module = _gpu_reference().load_official(file, "probe_generate")
    assert module.generate() is None and "model.modeling_llada" not in sys.modules
    with pytest.raises(FileNotFoundError, match="no such file"):
        _gpu_reference().load_official(tmp_path / "absent.py", "absent")


def test_gpu_check_records_a_failing_section_and_goes_on(monkeypatch):
    """A section that raises (a kernel, compile or OOM error on a GPU) is kept as its error; the
    others still run, and the result is saved after every section."""
    gpu_check = _gpu_check()

    def boom(*args, **kwargs):
        raise RuntimeError("kernel exploded")
    monkeypatch.setattr(gpu_check, "forward_latency", boom)
    monkeypatch.setattr(gpu_check, "one_answer", lambda lm: {"ok": "generate"})
    monkeypatch.setattr(gpu_check, "comparisons", lambda *a, **k: {"ok": "comparisons"})
    monkeypatch.setattr(gpu_check, "profile_steps", lambda *a, **k: {"ok": "profile"})
    monkeypatch.setattr("labkit.bench.speed.bench_overhead", lambda *a, **k: {"ok": "overhead"})
    monkeypatch.setattr("labkit.bench.speed.bench_batch", lambda *a, **k: {"ok": "batch"})
    saved = []
    r = gpu_check.run("small", "cpu", 4, log=lambda m: None, save=lambda res: saved.append(json.dumps(res)))
    assert r["forward"] == r["forward_floor"] == {"error": "RuntimeError: kernel exploded"}
    assert r["comparisons"] == {"ok": "comparisons"} and r["batch"] == {"ok": "batch"}
    assert len(saved) == 8 and "forward_floor" not in json.loads(saved[0]) and json.loads(saved[-1]) == r
    only = gpu_check.run("small", "cpu", 4, log=lambda m: None, only=("generate", "batch"))
    assert {"generate", "batch"} <= set(only) and not {"forward", "profile", "comparisons"} & set(only)
