"""docs/models.md's section on the tiny LLaDA2.1, written from benchmarks/results/llada21.json
(`labkit bench llada21`; its targets are judged by labkit.bench.llada21.targets when it is measured)."""
from __future__ import annotations

from labkit.bench.llada21 import BASE, JUDGE, LENGTHS, MODEL, own_greedy_ratio

from .markdown import markdown_table

SECTION_START, SECTION_END = "<!-- llada21 section: python -m benchmarks.docgen -->", "<!-- end of llada21 section -->"
BEFORE = "## How `tiny-cap`'s recipe was chosen"


def _table(part: dict) -> str:
    rows = []
    for label, r in part["rows"].items():
        ci, (x, lo, hi) = r["gen_ppl_ci95"], r["gen_ppl_ratio_to_base"]
        rows.append((f"`{label}`", f"{r['tokens_per_second']:.1f}", f"{r['speedup_over_base']:.2f}×", f"{r['tpf']:.2f}",
                     f"{r['gen_ppl']:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]", f"{x:.2f} [{lo:.2f}, {hi:.2f}]",
                     f"{r['word_validity']:.3f}"))
    return markdown_table(["setting", "tokens/s", "× tiny", "TPF", "gen-PPL [95%]", "÷ tiny greedy [95%]", "words"], rows)


def models_section(result: dict) -> str:
    """The section: what the model is, the side-by-side tables, the block choice, the stop, the targets."""
    speed, stop = result["speed"], result["eos_stop"]
    parts = [SECTION_START, "## A tiny LLaDA2.1 that decodes in parallel: `tiny-llada21`", "",
             f"`{MODEL}` is block-causal at blocks of {speed['block']}: `tiny-ar` converted with LLaDA2.0's block "
             "warm-up (stage 1, `tiny-block32-from-ar`, kept at step 600 of its 1200), then distilled in its own "
             "blocks on `tiny-ar`'s answers to 512 training openings with CAP and T2T noise and EOS after every "
             "speech (stage 2; its card has the recipe). It decodes in its own blocks with the exact `BlockCache`.",
             "",
             f"Measured by `labkit bench llada21` (`make bench-llada21`): held-out speech openings, batch 1, "
             f"{speed['threads']} thread, each prompt decoded by every setting in turn; tokens per second and TPF over "
             f"the answer's tokens; gen-PPL under `{JUDGE}` of every token written (EOS dropped) with its bootstrap "
             f"interval, and its ratio to `{BASE}` (`tiny`, one token per step, no cache) paired over prompts.", ""]
    for gen, part in speed["lengths"].items():
        parts += [f"**{gen} answer tokens, {len(part['prompts'])} prompts**", "", _table(part), ""]
    if "edits" in result:
        e = result["edits"]["lengths"][str(LENGTHS[0])]["rows"]
        s_, q_ = e[f"{MODEL} S mode + cache"], e[f"{MODEL} Q mode + cache"]
        t5, t7 = (next(r for k, r in e.items() if f"threshold {x}, no edits" in k) for x in ("0.5", "0.7"))
        parts += ["**Do the edits pay?** S and Q mode against their commit thresholds alone (`Threshold`, no edits), "
                  f"{LENGTHS[0]} tokens: without edits threshold 0.5 writes {t5['tpf']:.2f} tokens per pass at gen-PPL "
                  f"{t5['gen_ppl']:.2f}; S mode's {s_['edits']} edits bring it to {s_['gen_ppl']:.2f} at {s_['tpf']:.2f}. "
                  f"Threshold 0.7 alone: {t7['gen_ppl']:.2f} at {t7['tpf']:.2f}; Q mode's {q_['edits']} edits: "
                  f"{q_['gen_ppl']:.2f} at {q_['tpf']:.2f}. On this model the edits pay.", "",
                  _table(result["edits"]["lengths"][str(LENGTHS[0])]), ""]
    if "block_choice" in result:
        c = result["block_choice"]
        parts += ["**The block size**: the same two stages at blocks of 16 and 32 (" +
                  ", ".join(f"{k}: `{v}`" for k, v in c["folders"].items()) +
                  "), 128 tokens; blocks of 8 were not trained past stage 1's step 50.", ""]
        parts += [_table(part) for part in c["lengths"].values()] + [""]
    parts += [f"**The EOS stop** ({stop['rule']}, a {stop['canvas']}-token canvas, {stop['prompts']} held-out openings): "
              f"{stop['fixed_nfe_per_row']} passes per row on the fixed canvas, {stop['stop_nfe_per_row']} with "
              f"`eos_early_stop` (saved {stop['saved']:.1%}); {stop['rows_stopped']} rows stopped; answers unchanged: "
              f"{stop['answers_unchanged']}.", "", "**Targets** (issue 53):", ""]
    parts += [f"- {'met' if t['met'] else 'missed'}: {name}: {t['value']}" for name, t in result["targets"].items()]
    parts += ["", _why(speed["lengths"][str(LENGTHS[0])]["rows"])]
    return "\n".join(parts + ["", SECTION_END])


def _why(rows: dict) -> str:
    s, lo, hi = own_greedy_ratio(rows)
    g, glo, ghi = rows[f"{MODEL} greedy"]["gen_ppl_ratio_to_base"]
    return (f"Where S mode's gen-PPL gap comes from ({LENGTHS[0]} tokens): S mode against the model's own greedy decoding, "
            f"one token per step, is {s:.2f}× [{lo:.2f}, {hi:.2f}] (paired), while that greedy decoding is already "
            f"{g:.2f}× [{glo:.2f}, {ghi:.2f}] `tiny`'s: the gap is the model's (stage 1 at half its schedule, stage 2 "
            "600 steps of 16 answers, both on a CPU), not its parallel decoding.")


__all__ = ["BEFORE", "SECTION_END", "SECTION_START", "models_section"]
