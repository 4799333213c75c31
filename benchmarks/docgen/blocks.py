"""docs/models.md's section on block diffusion and conversion from `tiny-ar`, every figure read from
benchmarks/results/blocks.json (`labkit bench blocks`; benchmarks/make_blocks_section.py writes it,
tests/test_block_results.py reads it back)."""
from __future__ import annotations

import math

from labkit.bench.block_tables import PAIRS, point, sudoku_behind
from labkit.training.recipes import RECIPES

from .targets import (
    AR,
    BD3LM_PPL_RATIO,
    BELOW_FULL,
    BLOCK4,
    BLOCK16,
    BLOCK16_BETWEEN,
    FULL,
    PPL_RATIO,
    PPL_TARGET,
    QUARTER_STEPS,
    QUARTER_TARGET,
    SUDOKU,
)

SECTION_START, SECTION_END = "<!-- blocks section: benchmarks/make_blocks_section.py -->", "<!-- end of blocks section -->"


def _size(r: dict) -> str:
    return "AR" if r["block_size"] is None else str(r["block_size"] or "full")


def markdown_likelihood(result: dict) -> str:
    lines = ["| model | block | bits/token | ± s.e. | − AR (paired) | PPL / AR |", "|---|---|---|---|---|---|"]
    for name, r in result["likelihood"]["rows"].items():
        lines.append(f"| `{name}` | {_size(r)} | {r['bits_per_token']:.3f} | {r['se']:.3f} | "
                     f"{r['gap_to_ar']:+.3f} ± {r['gap_se']:.3f} | {r['ppl_ratio_to_ar']:.3f} |")
    return "\n".join(lines)


def markdown_quality(result: dict) -> str:
    modes = ("greedy", "S mode", "Q mode")
    lines = ["| model | block | " + " | ".join(f"{m}: gen-PPL [95% CI] · words · TPF" for m in modes) + " |",
             "|---|---|" + "---|" * len(modes)]
    for name, r in result["quality"]["rows"].items():
        cells = [f"{r[m]['gen_ppl']:.1f} [{r[m]['gen_ppl_ci95'][0]:.1f}, {r[m]['gen_ppl_ci95'][1]:.1f}] · "
                 f"{r[m]['word_validity']:.2f} · {r[m]['tpf']:.2f}" if m in r else "–" for m in modes]
        lines.append(f"| `{name}` | {_size(r)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown_curves(result: dict) -> str:
    curves = result["curves"]["curves"]
    steps = sorted({p["step"] for c in curves.values() for p in c["points"]})
    common = max(set.intersection(*({p["step"] for p in c["points"]} for c in curves.values())))
    lines = ["| run | recipe | " + " | ".join(f"step {s}" for s in steps) + f" | minutes to step {common} |",
             "|---|---|" + "---|" * (len(steps) + 1)]
    for label, c in curves.items():
        by = {p["step"]: p for p in c["points"]}
        lines.append(f"| {label} | `{c['recipe']}` | " + " | ".join(
            f"{by[s]['bits_per_token']:.2f}" if s in by else "–" for s in steps) + f" | {by[common]['train_minutes']} |")
    return "\n".join(lines)


def markdown_speed(result: dict) -> str:
    lines = ["| canvas | no cache (s) | BlockCache (s) | speed-up | identical | DualCache speed-up |",
             "|---|---|---|---|---|---|"]
    for r in result["speed"]["rows"]:
        lines.append(f"| {r['canvas']} | {r['none_seconds']:.2f} | {r['block_seconds']:.2f} | {r['block_speedup']:.1f}× | "
                     f"{r['block_identical']} | {r['dual_speedup']:.1f}× |")
    return "\n".join(lines)


def markdown_sudoku(result: dict) -> str:
    sd = result["sudoku"]
    lines = ["| model | steps | rule | accuracy [95% CI] | NFE per puzzle |", "|---|---|---|---|---|"]
    steps = {SUDOKU: sd["steps"], "tiny-sudoku": sd["scratch_steps"], "tiny-sudoku-ar": sd["scratch_steps"]}
    for name, by_rule in sd["rows"].items():
        for rule, r in by_rule.items():
            lines.append(f"| `{name}` | {steps.get(name, '-')} | {rule} | {r['accuracy']:.3f} "
                         f"[{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}] | {r['nfe_mean']:.1f} |")
    lines += ["", "By confidence over training, the conversion against the same recipe from scratch "
              "(`tiny-sudoku-scratch`, a run not committed):", "",
              "| run | " + " | ".join(f"step {p['step']}" for p in sd["curve"]) + " |",
              "|---|" + "---|" * len(sd["curve"])]
    for label, points in ((f"`{SUDOKU}` (converted)", sd["curve"]), ("`tiny-sudoku-scratch`", sd["control"])):
        by = {p["step"]: p["accuracy"] for p in points}
        lines.append(f"| {label} | " + " | ".join(f"{by[p['step']]:.3f}" if p["step"] in by else "–"
                                                  for p in sd["curve"]) + " |")
    return "\n".join(lines)


def markdown_targets(result: dict) -> str:
    lines = ["| target | figure | met |", "|---|---|---|"]
    for k, v in result["targets"].items():
        lines.append(f"| {k} | {v['value']} | {'yes' if v['met'] else '**no**'} |")
    return "\n".join(lines)


def misses(result: dict) -> list[str]:
    """For each missed target: by how much, and the equal-step comparison that says why, from the rows."""
    t, rows = result["targets"], result["likelihood"]["rows"]
    bits = {k: r["bits_per_token"] for k, r in rows.items()}
    curves = result["curves"]["curves"]
    block4, full = curves[PAIRS["block 4"][0]], curves[PAIRS["full attention opened at once"][0]]

    def both(step: int) -> str:
        b, f = point(block4, step), point(full, step)
        d = b["bits_per_token"] - f["bits_per_token"]
        noise = 2 * (b["se"] ** 2 + f["se"] ** 2) ** 0.5            # two standard errors of the difference
        return (f"at {step} steps the block-4 conversion reads {b['bits_per_token']:.3f} ± {b['se']:.3f} and "
                f"`{FULL}`'s own recipe {f['bits_per_token']:.3f} ± {f['se']:.3f}, block 4 {abs(d):.3f} "
                f"{'below' if d < 0 else 'above'} full attention at equal steps"
                + (f", within noise (two standard errors of the difference: {noise:.3f})" if abs(d) < noise else
                   f", beyond noise (two standard errors of the difference: {noise:.3f})"))

    b4_steps, full_steps, b16_steps = block4["steps"], full["steps"], RECIPES[BLOCK16].steps
    bd3lm = ", ".join(f"{ratio:.2f}× for {what}" for what, ratio in BD3LM_PPL_RATIO.items())
    out = []
    if not t[PPL_TARGET]["met"]:
        r = rows[BLOCK4]["ppl_ratio_to_ar"]
        out.append(f"Block 4 at {r:.3f}× `{AR}`'s perplexity misses {PPL_RATIO}× by a factor {r / PPL_RATIO:.2f} "
                   f"({rows[BLOCK4]['gap_to_ar']:+.3f} ± {rows[BLOCK4]['gap_se']:.3f} bits against the "
                   f"{math.log2(PPL_RATIO):.3f} allowed); full attention (`{FULL}`, {full_steps} steps) is itself at "
                   f"{rows[FULL]['ppl_ratio_to_ar']:.3f}×, so at this scale the whole family sits further from the "
                   f"AR model than BD3-LM's does ({bd3lm} on LM1B).")
    if not t[BELOW_FULL]["met"]:
        out.append(f"Block 4's bound {bits[BLOCK4]:.3f} is {bits[BLOCK4] - bits[FULL]:.3f} bits above `{FULL}`'s "
                   f"{bits[FULL]:.3f}, but `{BLOCK4}` trained {b4_steps} steps and `{FULL}` {full_steps}: "
                   f"{both(b4_steps)}.")
    if not t[BLOCK16_BETWEEN]["met"]:
        b16_between = (point(block4, b16_steps)["bits_per_token"] <= bits[BLOCK16]
                       <= point(full, b16_steps)["bits_per_token"])
        out.append(f"Block 16's {bits[BLOCK16]:.3f} is not between block 4's {bits[BLOCK4]:.3f} and full's "
                   f"{bits[FULL]:.3f}: `{BLOCK16}` trained {b16_steps} steps; {both(b16_steps)}, and block 16 "
                   f"{'is' if b16_between else 'is not'} between the two at those steps.")
    if not t[QUARTER_TARGET]["met"]:
        q = point(block4, QUARTER_STEPS)["bits_per_token"]
        out.append(f"The block conversion at {QUARTER_STEPS} steps reads {q:.3f}, {q - bits[FULL]:.3f} bits above "
                   f"`{FULL}`'s {bits[FULL]:.3f} after {full_steps} steps; {both(QUARTER_STEPS)}, and at "
                   f"{b4_steps} it reads {point(block4, b4_steps)['bits_per_token']:.3f}.")
    behind = sudoku_behind(result)
    if behind:
        conv = {p["step"]: p["accuracy"] for p in result["sudoku"]["curve"]}
        gaps = ", ".join(f"{p['accuracy'] - conv[p['step']]:.3f} at {p['step']}" for p in result["sudoku"]["control"])
        first = block4["points"][1]["step"]
        out.append(f"The converted Sudoku twin is behind the same recipe from scratch at steps {behind} "
                   f"(by {gaps}): the twin's weights on the grid canvas solve {conv[0]:.3f} of the puzzles at "
                   f"step 0, so it starts behind, where the Shakespeare conversions start ahead (block 4 "
                   f"reads {point(block4, 0)['bits_per_token']:.3f} bits at step 0, scratch "
                   f"{point(curves[PAIRS['block 4'][1]], first)['bits_per_token']:.3f} at {first}).")
    return out


def cache_and_stop(result: dict) -> str:
    """The section's paragraphs on the exact cache's speed and on answers of any length."""
    s, st = result["speed"], result["stop"]
    one, eos = st["one_speech"], st["eos_closing_lines"]
    return f"""The exact cache (`labkit.models.kv_cache.BlockCache`) on `{s['model']}`, {s['rule']}, blocks of
{s['block_length']}, batch 1, median of {s['repeats']} interleaved rounds ({s['threads']} thread{'s' * (s['threads'] != 1)}):

{markdown_speed(result)}

Answers of any length (`stop=`, `eos_early_stop`), {st['canvas']}-token canvas: one speech from {one['prompts']} held-out
openings, stopped at the speech break, took {one['stop_nfe_per_row']} passes per row instead of
{one['fixed_nfe_per_row']} ({one['saved']:.0%} saved, answers unchanged: {one['answers_unchanged']}); at EOS after each
play's closing lines {eos['rows_stopped']} of {eos['prompts']} rows stopped ({eos['saved']:.0%} saved): the corpus writes EOS
only at a play's end, so the models almost never write it."""


def models_section(result: dict) -> str:
    """The whole section, markers included."""
    lk, q, sd = result["likelihood"], result["quality"], result["sudoku"]
    stopped = result["curves"]["curves"][PAIRS["full attention opened at once"][0]]["points"][-2]["step"]
    return f"""{SECTION_START}
## Block diffusion, and diffusion LMs made from `tiny-ar`

LLaDA2.x is a block-diffusion model converted from an AR one: attention bidirectional inside a block
of positions and causal across blocks (`TinyDLMConfig.block_size`), trained in one pass over the
noisy canvas and the clean sequence side by side (`losses.block_diffusion_loss`). `tiny-block4-from-ar`
is `tiny-ar` converted with LLaDA2.0's block-size warm-up (blocks of 1, 2, 4), `tiny-block16` the same
to blocks of 16 at a quarter of its steps, `tiny-block4` block 4 from scratch, `tiny-block4-edit` the
converted block-4 model fine-tuned with CAP and T2T noise (a small LLaDA2.1). Recipes in
`labkit.training.recipes` (`make model-block`), measured with `make bench-blocks`
(→ `benchmarks/results/blocks.json`; notebook 13 reads it).

Bits per predicted token, every model on the same tokens: positions 1..{lk['scored_tokens']} of {lk['windows']}
held-out windows given token 0 (exact for the AR model; for the diffusion models an upper bound,
for block models each block's bound given the clean blocks before it, `eval.likelihood.predicted_bits`);
± s.e. over windows, the gap to the AR model paired window by window:

{markdown_likelihood(result)}

Text from each, 128 tokens for {q['prompts']} held-out prompts in blocks of 32 (a block model in its own
blocks of 4 or 16: in blocks of 32 its later blocks would be written from noisy ones, which it was never
trained on), greedy (one token per step),
S mode, and Q mode for the two trained with T2T noise: gen-PPL under `tiny-ar` with its 95% bootstrap
interval over prompts, word validity, tokens per forward:

{markdown_quality(result)}

{cache_and_stop(result)}

Conversion against training from scratch at the same steps (bits per token as above, {result['curves']['mc_num']} draws;
step 0 of a conversion is `tiny-ar`'s weights read as the target model; minutes of training on 2 cores
with two runs side by side, to the last step every run reached; `{FULL}`'s last point is the committed
model, from an earlier round, its run here stopped at {stopped}):

{markdown_curves(result)}

The Sudoku AR twin converted the same way as `tiny` (`{SUDOKU}`: the twin's '=' and solution positions
become the grid canvas's, attention opened at once, logits shifted one right, tiny-sudoku's repair
noise), with {sd['steps']} steps, {sd['share_of_scratch_steps']:.0%} of tiny-sudoku's {sd['scratch_steps']}, on the same
held-out puzzles:

{markdown_sudoku(result)}

Targets, as the issue set them:

{markdown_targets(result)}

Where a target is missed, by how much and why:

{chr(10).join("- " + m for m in misses(result))}
{SECTION_END}"""
