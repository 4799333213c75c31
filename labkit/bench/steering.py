"""`labkit bench steering`: notebook 06's soft-steering table, the figures it prints from
benchmarks/results/steering.json (the notebook runs two of its settings live on fewer samples).

On `tiny`, the same 8 samples of 64 tokens (the notebook's prompt, seed 0, the lab's default sampler:
low-confidence remasking at temperature 1.0, top-p 0.9, blocks of 32, 64 steps) at each setting:
unsteered, `Topic(("crown", "king", "blood"), strength)` at 2, 4 and 8, and classifier-free
guidance at `cfg_scale` 1 and 2. Per setting: samples holding a topic word (as a word of its own),
topic words per sample, gen-PPL under the AR twin (unrounded) and the mean distinct-2 of the
answers' tokens. About 2 min on 2 cores. The markdown table of these rows (docs/benchmarks.md,
notebook 06) is written by benchmarks/docgen.
"""
from __future__ import annotations

from .. import defaults
from ..controls import Topic, contains_word
from ..decode import generate
from ..eval.intervals import ppl_interval
from ..eval.metrics import distinct_n, gen_nats, ppl_of, words
from ..models.load import load
from .common import Column, format_table, metadata

MODEL, AR_MODEL = "tiny", "tiny-ar"
PROMPT = "MACBETH:\nWhat news, my lord?\n"
KNOBS = dict(gen_length=64, block_length=32, steps=64)
TOPIC = ("crown", "king", "blood")
SAMPLES, SEED = 8, 0


def settings() -> list[tuple[str, dict, list]]:
    """(name, loop knobs, controls) of each row, in the table's order."""
    return ([("unsteered", {}, [])] + [(f"Topic strength {s:g}", {}, [Topic(TOPIC, strength=s)]) for s in (2, 4, 8)]
            + [(f"cfg_scale {g:g}", {"cfg_scale": g}, []) for g in (1, 2)])


def measure(lm, ar, loop: dict, controls: list, samples: int = SAMPLES) -> dict:
    """One setting on `samples` copies of the prompt: hits, topic words per sample, gen-PPL, distinct-2."""
    prompts = [PROMPT] * samples
    o = generate(lm, prompts, defaults.sampler(), controls=controls, seed=SEED, **KNOBS, **loop)
    hits = sum(any(contains_word(t, w) for w in TOPIC) for t in o.texts)
    per_sample = sum(words(t).count(w) for t in o.texts for w in TOPIC) / samples
    d2 = sum(distinct_n(o.ids[r, o.trace.prompt_len:].tolist()) for r in range(samples)) / samples
    nats = gen_nats(ar, prompts, o.texts)
    return {"hits": hits, "samples": samples, "topic_words_per_sample": per_sample,
            "gen_ppl": ppl_of(nats), "gen_ppl_ci95": [round(v, 2) for v in ppl_interval(nats)],
            "distinct_2": d2}


def bench_steering(model: str = MODEL, ar_model: str = AR_MODEL, log=None) -> dict:
    lm, ar = load(model), load(ar_model)
    rows = {}
    for name, loop, controls in settings():
        rows[name] = measure(lm, ar, loop, controls)
        if log:
            log(f"{name:<18} {rows[name]}")
    return {"model": model, "ar_model": ar_model, "prompt": PROMPT, "topic": list(TOPIC), "samples": SAMPLES,
            "seed": SEED, **KNOBS, "rows": rows, "meta": metadata(lm)}


def table(r: dict) -> str:
    """Every setting's figures as text: what `labkit bench steering` prints (docs/benchmarks.md and
    notebook 06 show them as a markdown table, benchmarks/docgen/benchmarks_md.steering_table)."""
    cols = [Column("setting", 18, align="<"), Column("topic hits", 11), Column("words/sample", 13),
            Column("gen-PPL", 9, ".1f"), Column("95% CI", 20), Column("distinct-2", 11, ".2f")]
    rows = [(name, f"{v['hits']}/{v['samples']}", f"{v['topic_words_per_sample']:.2f}", v["gen_ppl"],
             "[{:.1f}, {:.1f}]".format(*v["gen_ppl_ci95"]) if "gen_ppl_ci95" in v else "-", v["distinct_2"])
            for name, v in r["rows"].items()]
    return format_table(cols, rows, f"== {r['model']}, {r['samples']} samples, topic {', '.join(r['topic'])}")
