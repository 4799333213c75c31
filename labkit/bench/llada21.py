"""The tiny LLaDA2.1 measured side by side (issue 53; `labkit bench llada21`).

- speed_quality: held-out speech openings (`sample_prompts`, those whose canvas fits tiny's 256-token
  context at the longest length), batch 1, each prompt decoded by every setting in turn (so load on
  the machine hits them alike) at each answer length: wall seconds, forward passes (NFE) and the
  answer's tokens, hence tokens per second and tokens per forward (TPF); then, per setting, gen-PPL
  under tiny-ar of each canvas's text (every token written, EOS dropped: the text the passes paid
  for), its bootstrap interval, its paired ratio to the lab's default written one token per step
  (`tiny` greedy, no cache: the same prompts, resampled together) and word validity.
- eos_stop: the block model's answers to held-out openings on the longest canvas, S mode with the
  cache, with `eos_early_stop` and without: passes saved, rows that stopped, and that the stop
  never changes an answer's text (labkit.bench.block_speed's measurement).

The issue's targets are judged from the rows by `targets` (read back by tests/test_llada21_results.py).
"""
from __future__ import annotations

import torch

from ..decode import DEFAULT_BLOCK, block_for, generate
from ..eval.intervals import paired_ratio, ppl_interval
from ..eval.metrics import gen_nats, ppl_of, word_validity
from ..models.kv_cache import BlockCache
from ..models.load import load
from ..samplers import DraftEdit, Threshold
from ..training.prompts import sample_prompts
from .block_speed import stop_runs
from .common import stopwatch

MODEL, CAP, DEFAULT, JUDGE = "tiny-llada21", "tiny-cap", "tiny", "tiny-ar"
LENGTHS = (128, 224)                  # 224: the longest answer tiny's 256-token context holds after a prompt
BASE = "tiny greedy"                  # the lab's default model, one token per step, no cache
CONTEXT = 256


def settings(block: int) -> dict[str, tuple[str, object, int, bool, bool]]:
    """{label: (model, rule, block length, one token per step, BlockCache)}."""
    s, q = DraftEdit.speed(), DraftEdit.quality()
    return {BASE: (DEFAULT, "low_confidence", DEFAULT_BLOCK, True, False),
            f"{MODEL} greedy": (MODEL, "low_confidence", block, True, False),
            f"{MODEL} greedy + cache": (MODEL, "low_confidence", block, True, True),
            f"{MODEL} S mode": (MODEL, s, block, False, False),
            f"{MODEL} S mode + cache": (MODEL, s, block, False, True),
            f"{MODEL} Q mode": (MODEL, q, block, False, False),
            f"{MODEL} Q mode + cache": (MODEL, q, block, False, True),
            f"{CAP} S mode": (CAP, s, DEFAULT_BLOCK, False, False),
            f"{CAP} Q mode": (CAP, q, DEFAULT_BLOCK, False, False)}


def fitting_prompts(lm, n: int, longest: int) -> list[str]:
    """The first n held-out openings whose canvas (the prompt padded to whole blocks of DEFAULT_BLOCK,
    the longest block any setting decodes in, then `longest` answer tokens) fits the context."""
    pool = sample_prompts(4 * n)
    fit = [p for p in pool if -(-len(lm.encode(p)) // DEFAULT_BLOCK) * DEFAULT_BLOCK + longest <= CONTEXT]
    if len(fit) < n:
        raise ValueError(f"only {len(fit)} held-out openings fit {longest} answer tokens; ask for fewer prompts")
    return sorted(fit, key=pool.index)[:n]


def canvas_text(lm, out) -> str:
    """Every answer token of a batch-1 result, EOS and other special tokens dropped."""
    return lm.tokenizer.decode(out.ids[0, out.trace.prompt_len:].tolist(), skip_special_tokens=True)


def _decode(lm, prompt: str, rule, block: int, cached: bool, gen: int):
    """(seconds, result); steps = gen: one token per step for the greedy rule (threshold and editing rules set their own)."""
    model = BlockCache(lm) if cached else lm
    return stopwatch(lambda: generate(model, prompt, rule, gen_length=gen, block_length=block, steps=gen, seed=0))


def candidates(folders: dict[str, str]) -> dict[str, tuple[str, object, int, bool, bool]]:
    """The block-size choice: {label: setting} of tiny greedy and each candidate's greedy, S and Q
    mode with the cache, in its own blocks; `folders` {"block 16": run folder, ...}."""
    table = {BASE: settings(DEFAULT_BLOCK)[BASE]}
    for name, folder in folders.items():
        b = block_for(load(folder))
        for mode, rule in (("greedy", "low_confidence"), ("S mode", DraftEdit.speed()), ("Q mode", DraftEdit.quality())):
            table[f"{name} {mode} + cache"] = (folder, rule, b, mode == "greedy", True)
    return table


def speed_quality(lengths=LENGTHS, prompts=(24, 12), log=None, table: dict | None = None) -> dict:
    """Every setting (`settings`, or `table`) on the same held-out prompts at each answer length
    (see the module's notes)."""
    fit = load(MODEL)                         # the block model: its tokenizer fits the prompts to the context
    table = table or settings(block_for(fit))
    models = {name: fit if name == MODEL else load(name) for name in {s[0] for s in table.values()}}
    judge = load(JUDGE)
    result = {"model": MODEL, "block": block_for(fit), "judge": JUDGE, "batch": 1,
              "threads": torch.get_num_threads(), "settings": {k: _describe(v) for k, v in table.items()},
              "lengths": {}}
    for gen, n in zip(lengths, prompts):
        texts = fitting_prompts(fit, n, max(LENGTHS))
        raw = {k: {"seconds": [], "nfe": [], "text": [], "ids": [], "edits": []} for k in table}
        for i, prompt in enumerate(texts):
            for label, (name, rule, block, _, cached) in table.items():
                seconds, out = _decode(models[name], prompt, rule, block, cached, gen)
                raw[label]["seconds"].append(round(seconds, 4))
                raw[label]["nfe"].append(int(out.stats["nfe"]))
                raw[label]["text"].append(canvas_text(models[name], out))
                raw[label]["ids"].append(out.ids[0].tolist())
                raw[label]["edits"].append(int(out.trace.edited().sum()))
            if log:
                log(f"{gen} tokens: prompt {i + 1}/{len(texts)}")
        rows = {label: _row(judge, texts, r, gen) for label, r in raw.items()}
        for label in table:                   # the cache's rows against the same rule without it, where measured
            uncached = label.removesuffix(" + cache")
            if uncached != label and uncached in raw:
                rows[label]["same_tokens_as_uncached"] = raw[label]["ids"] == raw[uncached]["ids"]
        for row in rows.values():
            ratio, lo, hi = paired_ratio(row["per_prompt_nats"], rows[BASE]["per_prompt_nats"])
            row["gen_ppl_ratio_to_base"] = [round(ratio, 3), round(lo, 3), round(hi, 3)]
            row["speedup_over_base"] = round(row["tokens_per_second"] / rows[BASE]["tokens_per_second"], 2)
        result["lengths"][str(gen)] = {"prompts": texts, "rows": rows}
    return result


def _describe(setting) -> dict:
    name, rule, block, one, cached = setting
    keys = ("threshold", "editing_threshold", "max_post_steps")
    label = rule if isinstance(rule, str) else {"rule": type(rule).__name__,
                                                **{k: getattr(rule, k) for k in keys if hasattr(rule, k)}}
    return {"model": name, "rule": label, "block_length": block, "one_token_per_step": one, "cache": cached}


def _row(judge, prompts: list[str], raw: dict, gen: int) -> dict:
    nats = gen_nats(judge, prompts, raw["text"])
    n = len(prompts)
    seconds, nfe = sum(raw["seconds"]), sum(raw["nfe"])
    lo, hi = ppl_interval(nats)
    return {"tokens": gen * n, "seconds": round(seconds, 3), "nfe": nfe,
            "tokens_per_second": round(gen * n / seconds, 2), "tpf": round(gen * n / nfe, 3),
            "gen_ppl": round(ppl_of(nats), 3), "gen_ppl_ci95": [round(lo, 3), round(hi, 3)],
            "word_validity": round(word_validity(raw["text"]), 4),
            "per_prompt_nats": [[round(a, 4), b] for a, b in nats],
            "per_prompt_seconds": raw["seconds"], "per_prompt_nfe": raw["nfe"], "edits": sum(raw["edits"]),
            "example": raw["text"][0]}


def eos_stop(n: int = 32, log=None) -> dict:
    """S mode with the cache on the longest canvas, with eos_early_stop and without."""
    lm = load(MODEL)
    prompts = fitting_prompts(lm, n, max(LENGTHS))
    result = {"model": MODEL, "rule": "S mode + cache", "canvas": max(LENGTHS),
              **stop_runs(lm, prompts, block_for(lm), rule=DraftEdit.speed(), gen=max(LENGTHS), eos_early_stop=True)}
    if log:
        log(f"eos stop: saved {result['saved']}")
    return result


def targets(result: dict) -> dict:
    """The issue's targets, judged from the rows: {name: {"value": ..., "met": bool}}."""
    short, long = (result["speed"]["lengths"][str(n)]["rows"] for n in LENGTHS)
    s, q = short[f"{MODEL} S mode + cache"], short[f"{MODEL} Q mode + cache"]
    ratio, lo, hi = s["gen_ppl_ratio_to_base"]
    stop = result["eos_stop"]
    cache_rows = [r for rows in (short, long) for k, r in rows.items() if k.endswith(" + cache")]
    return {
        "S mode at least 3 tokens per pass (128 tokens)": {"value": s["tpf"], "met": s["tpf"] >= 3},
        "S mode gen-PPL at most 1.3x tiny greedy's (paired, 128 tokens)": {
            "value": [ratio, lo, hi], "met": ratio <= 1.3, "whole_interval_below": hi <= 1.3},
        "S mode with the cache at least 12x tiny's tokens per second (224 tokens)": {
            "value": long[f"{MODEL} S mode + cache"]["speedup_over_base"],
            "met": long[f"{MODEL} S mode + cache"]["speedup_over_base"] >= 12},
        "Q mode between: TPF above 1 and below S mode's, gen-PPL at or below S mode's (128 tokens)": {
            "value": {"tpf": q["tpf"], "gen_ppl": q["gen_ppl"], "S tpf": s["tpf"], "S gen_ppl": s["gen_ppl"]},
            "met": 1 < q["tpf"] < s["tpf"] and q["gen_ppl"] <= s["gen_ppl"]},
        "EOS stop saves at least 30% of passes, answers unchanged": {
            "value": stop["saved"], "met": stop["saved"] >= 0.3 and stop["answers_unchanged"]},
        "the cache leaves every answer's tokens identical": {
            "value": sum(r["same_tokens_as_uncached"] for r in cache_rows),
            "met": all(r["same_tokens_as_uncached"] for r in cache_rows)},
    }


def _rows(speed: dict, edits: bool = False) -> list[str]:
    lines = []
    for gen, part in speed["lengths"].items():
        lines.append(f"{gen} answer tokens, {len(part['prompts'])} held-out prompts, batch 1, "
                     f"{speed['threads']} thread(s); gen-PPL under {JUDGE}, ratio paired to {BASE}")
        lines.append(f"{'setting':44s} {'tok/s':>7s} {'x base':>7s} {'TPF':>6s} {'gen-PPL':>8s} "
                     f"{'95% interval':>16s} {'ratio [95%]':>22s} {'words':>6s}" + (f" {'edits':>6s}" if edits else ""))
        for label, r in part["rows"].items():
            ci, (x, lo, hi) = r["gen_ppl_ci95"], r["gen_ppl_ratio_to_base"]
            lines.append(f"{label:44s} {r['tokens_per_second']:7.1f} {r['speedup_over_base']:7.2f} {r['tpf']:6.2f} "
                         f"{r['gen_ppl']:8.2f} [{ci[0]:6.2f}, {ci[1]:6.2f}] {x:6.2f} [{lo:5.2f}, {hi:5.2f}]  "
                         f"{r['word_validity']:6.3f}" + (f" {r['edits']:6d}" if edits else ""))
        lines.append("")
    return lines


def own_greedy_ratio(rows: dict) -> tuple[float, float, float]:
    """S mode's gen-PPL over the model's own greedy decoding (one token per step), paired over prompts:
    what committing several tokens per pass costs, apart from what the model is."""
    nats = {k: [tuple(x) for x in rows[f"{MODEL} {k}"]["per_prompt_nats"]] for k in ("S mode", "greedy")}
    return paired_ratio(nats["S mode"], nats["greedy"])


def table(result: dict) -> str:
    """The side-by-side table, one block per answer length, then the targets."""
    lines = _rows(result["speed"])
    if "edits" in result:
        lines += ["Do the edits pay? The same commit thresholds without edits:", *_rows(result["edits"], edits=True)]
    if "block_choice" in result:
        lines += ["The block size, chosen between these runs (each distilled the same way):", *_rows(result["block_choice"])]
    stop = result["eos_stop"]
    lines.append(f"EOS stop ({stop['rule']}, {stop['canvas']}-token canvas, {stop['prompts']} prompts): passes per row "
                 f"{stop['fixed_nfe_per_row']} -> {stop['stop_nfe_per_row']} (saved {stop['saved']:.1%}), "
                 f"{stop['rows_stopped']} rows stopped, answers unchanged: {stop['answers_unchanged']}")
    for name, t in result.get("targets", {}).items():
        lines.append(f"{'met ' if t['met'] else 'MISS'} {name}: {t['value']}")
    x, lo, hi = own_greedy_ratio(result["speed"]["lengths"][str(LENGTHS[0])]["rows"])
    lines.append(f"{MODEL} S mode's gen-PPL over its own greedy decoding ({LENGTHS[0]} tokens, paired): "
                 f"{x:.2f} [{lo:.2f}, {hi:.2f}]")
    return "\n".join(lines)


def edit_control() -> dict[str, tuple[str, object, int, bool, bool]]:
    """Do the edits pay? S and Q mode against their commit thresholds alone (`Threshold`: no edits,
    no post steps), tiny-llada21 in its own blocks with the cache, beside tiny greedy."""
    b = block_for(load(MODEL))
    s, q = DraftEdit.speed(), DraftEdit.quality()
    return {BASE: settings(DEFAULT_BLOCK)[BASE],
            f"{MODEL} S mode + cache": (MODEL, s, b, False, True),
            f"{MODEL} threshold {s.threshold}, no edits + cache": (MODEL, Threshold(threshold=s.threshold), b, False, True),
            f"{MODEL} Q mode + cache": (MODEL, q, b, False, True),
            f"{MODEL} threshold {q.threshold}, no edits + cache": (MODEL, Threshold(threshold=q.threshold), b, False, True)}


def edits(n: int = 24, log=None) -> dict:
    """`edit_control` side by side at 128 tokens on n held-out prompts, with each row's edits counted."""
    return speed_quality(lengths=(LENGTHS[0],), prompts=(n,), log=log, table=edit_control())


def block_choice(folders: dict[str, str], n: int = 24, log=None) -> dict:
    """The candidates (`candidates`) side by side at 128 tokens on n held-out prompts."""
    return {"folders": folders, **speed_quality(lengths=(LENGTHS[0],), prompts=(n,), log=log, table=candidates(folders))}


def bench_llada21(prompts=(24, 12), choice: dict[str, str] | None = None, log=None) -> dict:
    """speed_quality, eos_stop and the targets judged from them; with `choice` ({"block B": run
    folder}), the block-size candidates too."""
    result = {"speed": speed_quality(prompts=prompts, log=log), "eos_stop": eos_stop(log=log),
              "edits": edits(prompts[0], log=log)}
    if choice:
        result["block_choice"] = block_choice(choice, prompts[0], log=log)
    return {**result, "targets": targets(result)}


__all__ = ["BASE", "CAP", "CONTEXT", "DEFAULT", "JUDGE", "LENGTHS", "MODEL", "bench_llada21", "block_choice",
           "candidates", "canvas_text", "edit_control", "edits", "eos_stop", "fitting_prompts", "own_greedy_ratio",
           "settings", "speed_quality", "table", "targets"]
