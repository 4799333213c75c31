"""The block model's exact cache and its answers of any length, measured (part of `labkit bench blocks`).

- cache_speed: greedy decoding (one token per step, blocks of the model's 4 tokens) of a held-out
  prompt to a canvas of 64, 128 and 256 tokens (tiny's whole context), batch 1, without a cache,
  with BlockCache (exact: the tokens are checked equal) and with DualCache (also exact on a block
  model, but it recomputes the whole canvas at each block's first step); median seconds of
  `repeats` interleaved rounds and the speed-up over no cache, side by side in one run.
- eos_stop: answers whose length is not fixed in advance, decoded to a 128-token canvas with the
  stop and without: (1) one speech, from a held-out speech's opening (speaker and first line)
  with stop="\n\n" (the corpus's speech break): the row stops once the break is written with
  everything before it decided; (2) the closing lines of each play with eos_early_stop (the
  corpus writes EOS only at a play's end). Forward passes per row with each, the share saved,
  how many rows stopped, and that the stop never changes an answer's text.
"""
from __future__ import annotations

import torch

from ..decode import generate
from ..models.kv_cache import BlockCache, DualCache
from ..models.load import load
from ..output import find_stop
from ..training.corpus import SPEECH_BREAK, load_plays
from ..training.prompts import sample_prompts
from .common import interleaved

MODEL = "tiny-block4-from-ar"
LENGTHS = (64, 128, 256)
STOP_CANVAS = 128


def cache_speed(model: str = MODEL, lengths=LENGTHS, repeats: int = 3, log=None) -> dict:
    lm = load(model)
    b = lm.net.config.block_size
    prompt = sample_prompts(1)[0]
    rows = []
    for L in lengths:
        P = -(-len(lm.encode(prompt)) // b) * b
        gen = (L - P) // b * b
        knobs = dict(gen_length=gen, block_length=b, steps=gen, seed=0)
        fns = {"none": lambda knobs=knobs: generate(lm, prompt, "low_confidence", **knobs),
               "block": lambda knobs=knobs: generate(BlockCache(lm), prompt, "low_confidence", **knobs),
               "dual": lambda knobs=knobs: generate(DualCache(lm), prompt, "low_confidence", **knobs)}
        seconds, outs = interleaved(fns, repeats)
        rows.append({"canvas": P + gen, "prompt": P, "gen_length": gen, "nfe": outs["none"].stats["nfe"],
                     **{f"{k}_seconds": round(v, 3) for k, v in seconds.items()},
                     "block_speedup": round(seconds["none"] / seconds["block"], 2),
                     "dual_speedup": round(seconds["none"] / seconds["dual"], 2),
                     "block_identical": bool(torch.equal(outs["block"].ids, outs["none"].ids)),
                     "dual_identical": bool(torch.equal(outs["dual"].ids, outs["none"].ids))})
        if log:
            log(f"cache {rows[-1]}")
    return {"model": model, "rule": "low_confidence, one token per step", "block_length": b, "batch": 1,
            "repeats": repeats, "threads": torch.get_num_threads(), "rows": rows}


def closing_prompts(lines: int = 3) -> dict[str, str]:
    """{play: its last `lines` lines and the speech break}: what the corpus follows with EOS."""
    plays = {**load_plays("train"), **load_plays("heldout")}
    return {name: "\n".join(text.strip("\n").split("\n")[-lines:]) + SPEECH_BREAK for name, text in plays.items()}


def stop_runs(lm, prompts: list[str], block: int, *, rule="low_confidence", gen: int = STOP_CANVAS, **stop) -> dict:
    """The prompts decoded to a `gen`-token canvas (greedy unless `rule`, with BlockCache), with the
    stop (`eos_early_stop=True` or `stop=...`) and without: forward passes per row, the share saved,
    the rows that stopped, and whether every stopped answer is the fixed canvas's answer."""
    knobs = dict(gen_length=gen, block_length=block, steps=gen, seed=0)
    fixed = generate(BlockCache(lm), prompts, rule, **knobs)
    early = generate(BlockCache(lm), prompts, rule, **stop, **knobs)
    n, cut = len(prompts), stop.get("stop", ())
    same = all(e == f[:find_stop(f, (cut,) if cut else ())] for e, f in zip(early.texts, fixed.texts))
    rows = early.trace.row_nfe()                                                  # (B,) passes per row
    return {"prompts": n, "fixed_nfe_per_row": round(fixed.stats["row_nfe"] / n, 2),
            "stop_nfe_per_row": round(early.stats["row_nfe"] / n, 2),
            "saved": round(1 - early.stats["row_nfe"] / fixed.stats["row_nfe"], 4),
            "rows_stopped": int((rows < fixed.trace.row_nfe()).sum()), "answers_unchanged": same,
            "row_nfe": rows.tolist()}


def eos_stop(model: str = MODEL, log=None) -> dict:
    """The stop at an end token (closing lines of each play, eos_early_stop) and at a stop string
    (one speech: a speech opening, stop at the speech break), each against the fixed canvas."""
    lm = load(model)
    b = lm.net.config.block_size
    closing = closing_prompts()
    result = {"model": model, "canvas": STOP_CANVAS, "block_length": b,
              "eos_closing_lines": stop_runs(lm, list(closing.values()), b, eos_early_stop=True),
              "one_speech": stop_runs(lm, sample_prompts(32), b, stop=SPEECH_BREAK)}
    if log:
        log(f"stop {result}")
    return result


__all__ = ["LENGTHS", "MODEL", "STOP_CANVAS", "cache_speed", "closing_prompts", "eos_stop", "stop_runs"]
