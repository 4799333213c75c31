"""Train variants of the tiny-cap recipe side by side on one GPU and score each on the sampler targets.

    python benchmarks/recipe_sweep.py --out sweep/ --deadline 420      # all variants, one GPU
    python benchmarks/recipe_sweep.py --device cpu --only mix25 mix50 --deadline 9000
                                       # on a 2-core CPU: about 40 min training + 47 min scoring each

Each variant is `RECIPES["tiny-cap"]` with some fields replaced (VARIANTS below); each trains in its
own process (the models are small, so one GPU holds all of them at once), then is scored on the 96
held-out prompts of `labkit bench samplers` by the rules the issue sets targets for, and by the
lab's default sampled decoding (distinct-2: does sampled text loop?). The committed models `tiny`
and `tiny-cap` are scored the same way, for reference. Writes <out>/results.json (one object per
model, with the device it ran on) and prints a table. Scores on a GPU differ from the CPU's in the
last bits only; the figures that ship are re-measured on the CPU with `labkit bench samplers`.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from labkit.bench.common import Column, format_table, save

BASE = "tiny-cap"
VARIANTS = {
    "baseline": {},
    "stutter": dict(edit_stutter=0.5),
    "stutter_e2": dict(edit_stutter=0.5, edit_prob=0.2),
    "samp": dict(edit_stutter=0.5, distill_temperature=1.0, distill_top_p=0.9),
    "samp_2k": dict(edit_stutter=0.5, distill_temperature=1.0, distill_top_p=0.9, distill=2048),
    "samp_2k_4k": dict(edit_stutter=0.5, distill_temperature=1.0, distill_top_p=0.9, distill=2048, steps=4000),
    "t08_2k": dict(edit_stutter=0.5, distill_temperature=0.8, distill_top_p=0.9, distill=2048),
    "samp_2k_cap1": dict(edit_stutter=0.5, distill_temperature=1.0, distill_top_p=0.9, distill=2048, cap_weight=1.0),
    "samp_2k_e2": dict(edit_stutter=0.5, edit_prob=0.2, distill_temperature=1.0, distill_top_p=0.9, distill=2048),
    # corpus rows mixed into the teacher's batches (plain masked diffusion), for sampled variety
    "mix25": dict(distill_mix=0.25),
    "mix50": dict(distill_mix=0.5),
}
REFERENCES = ("tiny", "tiny-cap")
PROMPTS = 96
NAMES = ["low_confidence_1tok", "low_confidence_2tok", "threshold_0.95", "threshold_0.93", "threshold_0.9",
         "entropy_bound", "draft_edit_speed", "draft_edit_quality", "draft_edit_speed_mbe", "draft_edit_quality_mbe"]


def score(model: str, device: str) -> dict:
    """The sampler rows on 96 prompts, the targets, and the default sampler's variety."""
    import labkit as lk
    from labkit.bench.samplers import bench_samplers
    from labkit.eval.evaluate import sample_prompts, sample_quality
    from labkit.eval.metrics import gen_ppl

    lm, ar = lk.load(model, device=device), lk.load("tiny-ar", device=device)
    rows = bench_samplers(lm, ar, n_prompts=PROMPTS, names=NAMES, with_ar=False,
                          tps_prompts=0)                      # speed is not what is compared here
    q = sample_quality(lm, n=64, seed=0)
    ref = rows["low_confidence_1tok"]["gen_ppl"]
    ratio = {k: round(r["gen_ppl"] / ref, 3) for k, r in rows.items()}
    fixed2 = rows["low_confidence_2tok"]["gen_ppl"]
    return {"rows": rows, "ratio": ratio,
            "targets": {
                "threshold_beats_fixed2": any(r["tpf"] >= 2.0 and r["gen_ppl"] < fixed2 for k, r in rows.items()
                                              if k.startswith(("threshold", "entropy"))),
                "s_mode": rows["draft_edit_speed"]["tpf"] >= 2.0 and ratio["draft_edit_speed"] <= 1.3,
                "q_mode": rows["draft_edit_quality"]["tpf"] >= 1.4 and ratio["draft_edit_quality"] <= 1.1,
                "s_more_tpf_q_lower_ppl": (rows["draft_edit_speed"]["tpf"] > rows["draft_edit_quality"]["tpf"]
                                           and ratio["draft_edit_quality"] < ratio["draft_edit_speed"])},
            "sampled": {"distinct_2": round(q["distinct_2"], 4), "word_validity": round(q["word_validity"], 4),
                        "gen_ppl": round(gen_ppl(ar, sample_prompts(64), q["samples"]), 2)}}


def worker(name: str, out: Path, device: str) -> None:
    """Train one variant (or none, for a reference model), score it, write <out>/<name>.json."""
    t0 = time.perf_counter()
    result = {"name": name, "device": device}
    if name in VARIANTS:
        from labkit.training.loop import train
        from labkit.training.recipes import RECIPES
        cfg = dataclasses.replace(RECIPES[BASE], **VARIANTS[name])
        folder = train(cfg, out / "runs" / name, progress=False, device=device,
                       log=lambda m: print(f"[{name}] {m}", flush=True))
        result.update(overrides=VARIANTS[name], folder=str(folder), train_s=round(time.perf_counter() - t0, 1),
                      loss_history=json.loads((folder / "training.json").read_text())["loss_history"][-3:])
        model = str(folder)
    else:
        model = name
    result.update(score(model, device), total_s=round(time.perf_counter() - t0, 1))
    save(result, out / f"{name}.json")
    print(f"[{name}] done in {result['total_s']} s: targets {result['targets']}", flush=True)


SUMMARY_COLUMNS = [Column("model", 14, align="<"), Column("1tok", 7, ".2f"), Column("2tok", 7, ".2f"),
                   Column("t.93 tpf", 9, ".2f"), Column("t.93", 7, ".2f"), Column("S tpf", 7, ".2f"),
                   Column("S x", 6, ".2f"), Column("Q tpf", 7, ".2f"), Column("Q x", 6, ".2f"),
                   Column("Smbe x", 7, ".2f"), Column("Qmbe x", 7, ".2f"), Column("samp d2", 8, ".3f"),
                   Column("  targets", 0, align="<")]


def summary(results: list[dict]) -> str:
    rows = []
    for r in results:
        scores, x = r["rows"], r["ratio"]
        met = "".join("+" if v else "-" for v in r["targets"].values())
        rows.append((r["name"], scores["low_confidence_1tok"]["gen_ppl"], scores["low_confidence_2tok"]["gen_ppl"],
                     scores["threshold_0.93"]["tpf"], scores["threshold_0.93"]["gen_ppl"], scores["draft_edit_speed"]["tpf"],
                     x["draft_edit_speed"], scores["draft_edit_quality"]["tpf"], x["draft_edit_quality"],
                     x["draft_edit_speed_mbe"], x["draft_edit_quality_mbe"], r["sampled"]["distinct_2"], f"  {met}"))
    return format_table(SUMMARY_COLUMNS, rows)


def rank(results: list[dict]) -> list[dict]:
    """Trained variants, best first: most targets met, then the most varied sampled text."""
    trained = [r for r in results if "folder" in r]
    return sorted(trained, key=lambda r: (-sum(r["targets"].values()), -r["sampled"]["distinct_2"]))


def pack(results: list[dict], k: int, dest: Path) -> None:
    """The k best variants' weights, each in two halves (<name>.safetensors.0/.1) to stay under a
    per-file size limit; `cat` them back together."""
    dest.mkdir(parents=True, exist_ok=True)
    for r in rank(results)[:k]:
        data = (Path(r["folder"]) / "model.safetensors").read_bytes()
        half = len(data) // 2
        (dest / f"{r['name']}.safetensors.0").write_bytes(data[:half])
        (dest / f"{r['name']}.safetensors.1").write_bytes(data[half:])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="runs/sweep")
    p.add_argument("--device", default="cuda")
    p.add_argument("--deadline", type=float, default=420, help="seconds; workers still running are stopped")
    p.add_argument("--only", nargs="*", help="variant or reference names (default: all)")
    p.add_argument("--pack", type=int, default=0, help="copy the K best variants' weights to --pack-to")
    p.add_argument("--pack-to", default="runs/sweep/pack")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if a.worker:
        worker(a.worker, out, a.device)
        return 0
    names = a.only or [*REFERENCES, *VARIANTS]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    procs = {n: subprocess.Popen([sys.executable, __file__, "--out", str(out), "--device", a.device, "--worker", n],
                                 env=env) for n in names}
    t0 = time.perf_counter()
    while any(pr.poll() is None for pr in procs.values()) and time.perf_counter() - t0 < a.deadline:
        time.sleep(2)
    for n, pr in procs.items():
        if pr.poll() is None:
            print(f"[{n}] stopped at the deadline", flush=True)
            pr.kill()
    results = [json.loads((out / f"{n}.json").read_text()) for n in names if (out / f"{n}.json").is_file()]
    save(results, out / "results.json")
    print(summary(results))
    if a.pack:
        pack(results, a.pack, Path(a.pack_to))
    return 0


if __name__ == "__main__":
    sys.exit(main())
