"""README.md's promises: its tour runs, its command lines parse, its defaults table is true."""
import re
import shlex
from pathlib import Path

import labkit as lk
from labkit.cli.main import build_parser
from labkit.samplers import registry

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def block(title: str, lang: str) -> str:
    section = README.split(f"## {title}", 1)[1]
    return section.split(f"```{lang}\n", 1)[1].split("```", 1)[0]


def test_the_tour_runs_as_written():
    code = block("A five-line tour", "python")
    assert len([ln for ln in code.splitlines() if ln.strip()]) == 5
    scope = {}
    exec(compile(code, "README tour", "exec"), scope)
    out = scope["out"]
    assert out.stats["nfe"] == 64 and out.stats["tpf"] == 1.0 and out.text


def test_every_command_line_parses():
    lines = [re.split(r"\s+# ", ln)[0].strip() for ln in block("The command line", "bash").splitlines()]
    lines = [ln for ln in lines if ln.startswith("labkit ")]
    assert len(lines) >= 8
    parser = build_parser()
    for line in lines:
        args = shlex.split(line)[1:]
        if "|" in args:                                  # "bench a | b | c": each alternative
            first = args.index("|") - 1
            names = [a for a in args[first:] if a != "|"]
            for name in names:
                parser.parse_args([*args[:first], name])
        else:
            parser.parse_args(args)


def test_the_sampler_names_listed_are_the_registry():
    listed = re.search(r"`--sampler` takes (.+?)\. A flag", README, re.S).group(1)
    assert re.findall(r"`(\w+)`", listed) == list(registry.NAMES)


def test_the_defaults_table_is_true(toy):
    from labkit import defaults, widgets
    assert defaults.MODEL == "tiny" and defaults.PARALLEL_MODEL == "tiny-cap"
    assert (defaults.TEMPERATURE, defaults.TOP_P) == (1.0, 0.9)
    assert (defaults.GEN_LENGTH, defaults.BLOCK_LENGTH, defaults.STEPS) == (64, 32, 64)
    assert defaults.sampler() == lk.LowConfidence(temperature=1.0, top_p=0.9)
    g = build_parser().parse_args(["generate", "x"])
    assert g.model is None and g.temperature is None        # filled in from labkit.defaults
    out = lk.generate(toy, "ROMEO:\n", gen_length=16, block_length=16, steps=16)
    assert out.trace.meta["sampler"] == repr(lk.LowConfidence())      # greedy
    assert widgets.Lab(toy, run=False).temperature.value == 0.0
    assert "Defaults, in one place" in README and "MIN_PARALLEL_TPF" not in README
    assert defaults.MIN_PARALLEL_TPF == 1.2 and "fewer than 1.2 tokens per forward pass" in README


def test_the_serving_example_runs_against_labkit_serve():
    """README's client snippet, pointed at a server started here (on a free port instead of 8000)."""
    from labkit.serve.app import create_app, run_in_thread

    running = run_in_thread(create_app(lk.load("tiny"), "tiny"))
    try:
        section = README.split("## Serving and batch jobs", 1)[1]
        code = section.split("```python\n", 1)[1].split("```", 1)[0]
        code = code.replace("http://127.0.0.1:8000/v1", f"{running.url}/v1").replace("print(", "answer = (")
        scope = {}
        exec(compile(code, "README serving", "exec"), scope)
        text, diffusion = scope["answer"]
        assert isinstance(text, str) and scope["r"].choices[0].finish_reason in ("stop", "length")
        assert {"nfe", "tpf", "steps"} <= set(diffusion) and diffusion["sampler"] == "threshold"
    finally:
        running.stop()


def test_the_serving_section_names_the_real_defaults():
    from labkit.serve import schemas

    section = README.split("## Serving and batch jobs", 1)[1].split("\n## ", 1)[0]
    parser = build_parser()
    serve = parser.parse_args(["serve"])
    assert f"default {serve.max_batch})" in section and "(120 s;" in section and serve.timeout == 120
    assert schemas.MAX_BODY == 1 << 20 and "1 MiB" in section
    check = parser.parse_args(["check-endpoint"])
    assert check.timeout == 120 and check.retries == 2 and "120 s" in section and "2 retries" in section


def test_the_likelihood_table_is_the_committed_measurement():
    import json

    results = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
    section = README.split("## A diffusion LM from scratch", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in section.splitlines() if ln.startswith("| ") and "±" in ln]
    runs = {256: json.loads((results / "likelihood.json").read_text()),
            64: json.loads((results / "likelihood_scratch.json").read_text())}
    seen = 0
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        r = runs[int(re.search(r"(\d+)-token windows", cells[0]).group(1))]
        if "exact" in cells[0]:
            assert cells[1] == f"{r['ar']['bits_per_token']:.2f} ± {r['ar']['se']:.2f}"
            seen += 1
            continue
        name = "runs/scratch-masked" if "from scratch" in cells[0] else re.search(r"`([\w-]+)`", cells[0]).group(1)
        measured = r["models"][name]
        assert [f"{x['bits_per_token']:.2f} ± {x['se']:.2f}" for x in measured] == cells[1:5], row
        assert cells[5] == f"+{measured[-1]['gap_to_ar']:.2f} ± {measured[-1]['gap_se']:.2f}", row
        seen += 1
    assert seen == len(rows) == 6


def test_the_serving_table_is_the_committed_measurement():
    import json

    r = json.loads((Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "serve.json").read_text())
    section = README.split("## Serving and batch jobs", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in section.splitlines() if re.match(r"\| \d+ \|", ln)]
    assert len(rows) == len(r["levels"]) == 4
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        clients = int(cells[0])
        for mode, (rps, tps, lat) in (("batched", cells[1:4]), ("one_at_a_time", cells[4:7])):
            m = next(x for x in r["modes"][mode]["rows"] if x["clients"] == clients)
            assert (rps, tps, lat) == (f"{m['requests_per_s']:.2f}", f"{m['tokens_per_s']:.0f}",
                                       f"{m['p50_s']:.2f} / {m['p95_s']:.2f} s"), row
    assert f"{r['served_over_loop_at_max_batch']:.2f}× what the decoding loop" in section
    assert f"({r['loop']['tokens_per_s']:.0f} tokens/s)" in section and r["served_over_loop_at_max_batch"] >= 0.85


def test_the_official_loops_table_is_the_committed_measurement():
    import json

    r = json.loads((Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "gpu_check_cpu.json").read_text())
    c = r["comparisons"]["timed"]
    section = README.split("**At the GPU's pace.**", 1)[1].split("On one H200", 1)[0]
    assert f"{r['params']:,} parameters" in section and f"a {c['prompt_tokens']}-token prompt" in section
    assert f"{c['gen_length']} tokens in blocks of {c['block_length']}" in section
    zh = (Path(__file__).resolve().parents[1] / "docs" / "README.zh-CN.md").read_text()
    zh = zh.split("**让 GPU 跑满。**", 1)[1].split("在一块 H200 上", 1)[0]
    assert f"{r['params']:,} 个参数" in zh
    for text, yes, no in ((section, "yes", "no"), (zh, "是", "否")):
        rows = [ln for ln in text.splitlines() if ln.startswith("| `")]
        assert len(rows) == len(c["pairs"]) == 6
        for row in rows:
            official, mine, same, ratio = [x.strip().strip("`") for x in row.strip("|").split("|")]
            p = c["pairs"][official]
            assert (mine, same, ratio) == (p["labkit"], yes if p["identical"] else no, f"{p['speedup']:.2f}"), row


def test_the_h200_figures_are_the_committed_gpu_run():
    """README's H200 tables (both languages) and sentences against gpu_check.json, and the JSON's
    comparison times against the run's printed output (the only record of that section)."""
    import json
    import re

    root = Path(__file__).resolve().parents[1]
    g = json.loads((root / "benchmarks" / "results" / "gpu_check.json").read_text())
    log = (root / "benchmarks" / "results" / "gpu_check_comparisons.log").read_text()
    timed_log, fp32_log = log.split("identity at float32, gen 64")
    t = g["comparisons"]["timed"]
    s = t["seconds"]
    assert {n: float(v) for n, v in re.findall(r"^  (\w+): ([\d.]+) s$", timed_log, re.M)} == s
    assert {n: float(v) for n, v in re.findall(r"^  (\w+): ([\d.]+) s$", fp32_log, re.M)} == \
        g["comparisons"]["identity_fp32"]["seconds"]
    assert all(p["identical"] is None and p["speedup"] == round(s[o] / s[p["labkit"]], 3) for o, p in t["pairs"].items())
    assert g["gpu"] == "NVIDIA H200" and g["dtype"] == "torch.bfloat16"
    zh = (root / "docs" / "README.zh-CN.md").read_text()
    en_part = README.split("On one H200", 1)[1].split("**conda.**", 1)[0]
    zh_part = zh.split("在一块 H200 上", 1)[1].split("**conda。**", 1)[0]
    ff = {r["length"]: r for r in g["forward_floor"]}
    for text in (en_part, zh_part):
        rows = [[x.strip().strip("`") for x in ln.strip("|").split("|")] for ln in text.splitlines() if ln.startswith("| `")]
        decoding = {r[0]: r for r in rows if r[0] in s}
        assert len(decoding) == len(s) == 14
        for name, r in decoding.items():
            assert r[1:] == [f"{s[name]:.2f}", f"{s['labkit_gpu'] / s[name]:.2f}×"], r
        families = {r[0]: r for r in rows if r[0] in g["families"]}
        assert set(families) == {"llada", "llada_moe", "dream", "llada2"}
        for name, r in families.items():
            f = g["families"][name]
            assert r[1:] == [f"{f['params'] / 1e9:.2f}B", f"{f['load_s']:.1f} s", f"{f['forward']['median_ms']:.1f} ms",
                             f"{f['generate']['seconds']:.1f} s", f"{f['peak_bytes'] / 2**30:.1f} GiB"], r
        flat = " ".join(text.split())
        assert f"{ff[512]['median_ms']:.1f} ms" in flat and f"{ff[512]['ratio']:.2f}×" in flat
        assert f"{s['llada_generate'] / s['labkit_compiled']:.2f}×" in flat      # the ≥ 2× target, missed
        assert f"{s['labkit_gpu'] / s['labkit_dual_compiled']:.2f}×" in flat    # dual cache, compiled
        assert f"{100 * (g['overhead_gpu_path']['labkit_overhead_ratio'] - 1):.0f}%" in flat
    fam, own = g["families"]["llada"]["forward"], g["forward"]                        # the family against labkit's net
    ratio = f"{fam['median_ms'] / own['median_ms']:.1f}×"
    says_en = " ".join(en_part.split())
    assert f"({fam['median_ms']:.1f} ms over {fam['length']} tokens" in says_en and f"is {ratio} labkit's own" in says_en
    assert f"({own['median_ms']:.1f} ms over {own['length']} tokens" in says_en and f"的 {ratio}" in zh_part
    assert ff[512]["ratio"] > 1.5 and s["llada_generate"] / s["labkit_compiled"] < 2      # as the text says: missed
    assert s["labkit_gpu"] / s["labkit_dual_compiled"] >= 2.5 > s["labkit_gpu"] / s["labkit_dual"]
