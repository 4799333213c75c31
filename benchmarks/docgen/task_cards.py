"""The task models' cards (README.md in the folder of each model of labkit.tasks's pairs), written
from their training.json, config.json, weights and eval.json (a `labkit.eval.exact` result that
`labkit eval --model NAME --card` stored): what the model is, the questions it reads, how it was
trained, its held-out exact-match accuracy with 95% intervals, and, where `labkit bench tasks` has
run, the pair's targets against what they reached (targets.task_targets). cards.card calls card."""
from __future__ import annotations

import json
from pathlib import Path

from labkit.bench.task_tables import pct, sizes_mb
from labkit.bench.tasks import PAIRS
from labkit.tasks import addition, mirror, reversal, sudoku
from labkit.tasks.layouts import prompt_formats
from labkit.training.loop import ADAM_BETAS

from .markdown import RESULTS, ROOT, markdown_table
from .targets import task_targets
from .tasks import markdown_targets
from .weights import parameters

DATA = {
    "sudoku": f"Sudoku {sudoku.N}×{sudoku.N}: complete grids drawn from a pool of backtracking fills of the run "
              "seed, each draw a random validity-preserving symmetry of one (digits relabelled; bands, rows, stacks, "
              "columns permuted); the masked model sees complete grids with k of the 36 cells masked (k uniform), "
              f"the AR twin the same grids as unique puzzles of {sudoku.TRAIN_CLUES[0]}–{sudoku.TRAIN_CLUES[1]} clues "
              "then their solution. Held-out puzzles (one solution each) by level: "
              + ", ".join(f"{k} {lo}–{hi} clues" for k, (lo, hi) in sudoku.LEVELS.items()) + ".",
    "addition": f"Addition of two {addition.WIDTH}-digit numbers, the sum written most-significant digit first.",
    "reversal": f"Facts `A>B` between made-up names of {reversal.NAME} letters: {reversal.ONE_WAY} trained forward "
                f"only (the questions), {reversal.TWO_WAY} also trained reversed (`B<A`), the loss on the whole fact.",
    "mirror": f"Mirror: {mirror.LENGTH} letters written backwards.",
}
HELDOUT = ("Held out: items whose key (solution grid, operands, letters) hashes into one bucket of ten are never "
           "trained on; the reversal questions ask trained facts in layouts never trained.")
SHOWN = RESULTS.relative_to(ROOT)      # labkit bench tasks / task-seeds, as a card names them


def _model_lines(model: str, folder: Path, training: dict, cfgm: dict) -> list[str]:
    cfg = training["config"]
    recipe = training.get("rl", {}).get("config", {}).get("init_from", model)
    tasks = [t for t, _ in cfg["tasks"]]
    kind = "masked" if not cfgm.get("is_causal") else ("solver" if cfg.get("order") == "solver" else "ar")
    size = parameters(folder)
    mb = (folder / "model.safetensors").stat().st_size / 1e6
    what = {"ar": "causal (the AR twin)", "solver": "causal (the AR twin in a solver's order)",
            "masked": "bidirectional masked-diffusion"}[kind]
    structure = {"sudoku": {"ar": "row, column and box embeddings (a puzzle cell and its answer cell share them)",
                            "solver": "row, column and box embeddings on the puzzle's cells (the steps name "
                                      "their cells instead)",
                            "masked": "row, column and box embeddings per cell"}[kind],
                 "addition": "a place-value embedding per digit (shared by both operands and the sum)"}
    extra = "; ".join(structure[t] for t in tasks if t in structure)
    hist = training["loss_history"]
    loss = ("the masked objective with the number of masks k uniform over the answer, each row's loss / k"
            + (f", and T2T repair: each written cell replaced by noise with probability {cfg['edit_prob']}, "
               "every written cell taught its clean digit" if cfg.get("edit_prob") else "")
            if kind == "masked" else "next-token cross-entropy on the answer"
            + (": the blanks as (cell, digit) steps in the order of a solver that always fills a forced cell "
               "first (labkit.tasks.solver), then '.' fill" if kind == "solver" else ""))
    return [
        f"# labkit `{model}`: a tiny {what} LM for {', '.join(tasks)}",
        "",
        (f"Converted from the AR twin `{cfg['init_from']}` by `labkit train --recipe {recipe}` (`make "
         "model-sudoku-from-ar`): each canvas position starts from the twin's position that plays its part "
         "(labkit.tasks.layouts.ar_positions), attention opened at once, logits shifted one right (Dream's recipe)"
         if cfg.get("init_from") else
         f"Trained from scratch by `labkit train --recipe {recipe}` (`make model-tasks` trains every task model, one "
         "thread each)") + (", then by reinforcement learning with exact rewards (below)" if recipe != model else "")
        + "; loaded by `labkit.load()`.",
        "",
        "## Model",
        f"- {size / 1e6:.2f}M parameters ({mb:.2f} MB): {cfgm['num_hidden_layers']} layers, d_model "
        f"{cfgm['hidden_size']}, {cfgm['num_attention_heads']} heads, SwiGLU {cfgm['intermediate_size']}, RMSNorm, "
        "RoPE and learned absolute positions" + (f", {extra}" if extra else "") + "; tied embeddings; context "
        f"{cfgm['max_position_embeddings']} tokens; {cfgm['vocab_size']} character tokens.",
        "",
        "## Questions (`labkit.generate(lm, question)`; labkit.tasks.layouts)",
        *(f"- `{f.pattern}` → reads `{f.prompt}`, " + (f"solved in place ({f.answer} cells, '{f.blanks}' blank)"
          if f.blanks else f"answers {f.answer} characters" + (", read as (cell, digit) steps into the grid"
                                                               if f.reads == "steps" else ""))
          for t in tasks for f in prompt_formats(t, kind)),
        "",
        "## Data (`labkit.tasks`, built in code from a seed; one token per character)",
        *(f"- {DATA[t]}" for t in tasks),
        f"- {HELDOUT}",
        "",
        "## Recipe",
        f"- Objective: {loss}.",
        f"- {cfg['steps']} steps × {cfg['batch_size']} rows (" + ", ".join(f"{t} {s:.0%}" for t, s in cfg["tasks"])
        + f"); AdamW {ADAM_BETAS}, wd {cfg['weight_decay']}, lr {cfg['lr']} with {cfg['warmup']} warm-up steps and "
        f"cosine decay to {cfg['min_lr_ratio']}×; float32; seed {cfg['seed']}.",
        f"- Training time: {training['train_seconds'] / 60:.1f} min on one CPU thread; loss {hist[0][1]} at step "
        f"{hist[0][0]}, {hist[-1][1]} at step {hist[-1][0]} (running mean; `loss_history` in training.json).",
        "",
    ]


def _rollout_words(c: dict) -> str:
    """How the rollouts decode: the rule (and the second rule of a mixed batch), the tokens' temperature
    and, for a learned decoding policy, its Bernoulli decisions."""
    rules = f"`{c['rule']}`" + (f" (half of each draw's questions by `{c['mix_rule']}`)" if c.get("mix_rule") else "")
    if c.get("decision_temperature"):
        return (f"{rules} with greedy tokens and each commit and edit a Bernoulli decision "
                f"(sigmoid((p − threshold) / {c['decision_temperature']}))")
    return f"{rules} at temperature {c['temperature']}"


def _rl_lines(model: str, training: dict) -> list[str]:
    """What RL did after the recipe above (labkit.training.rl), from training.json's "rl" record."""
    rl = training.get("rl")
    if not rl:
        return []
    c, hist = rl["config"], rl["history"]
    k = max(1, min(20, len(hist) // 5))
    mean = lambda rows, key: sum(r[key] for r in rows) / len(rows)        # noqa: E731
    lines = [f"## Reinforcement learning (`labkit train-rl --recipe {model}`)", "",
             f"- Starting policy `{c['init_from']}` (its recipe above), also the KL reference. Rollouts: "
             f"{c['questions']} training-split {c['task']} questions"
             + (f" of {c['clues'][0]}–{c['clues'][1]} clues" if c["task"] == "sudoku" else "")
             + f" × {c['group']} decodings per step by {_rollout_words(c)}; reward: the share of the answer right "
             f"+ 1 if exact (`labkit.training.rewards`); advantages "
             + ("normalised per group" if c.get("scale_rewards", True) else "centred per group (no std division)")
             + (f"; dynamic sampling (only groups whose rewards differ, at most {c['max_draws']} draws a step)"
                if c.get("dynamic_sampling") else "") + ".",
             f"- Likelihood surrogate `{c['surrogate']}`" + (f" (+ {c['kept_weight']} × the kept tokens' log p)"
                                                             if c.get("kept_weight") else "")
             + f"; {c['inner_steps']} clipped updates (ε {c['clip']}"
             + (f", upper {c['clip_high']}" if c.get("clip_high") else "") + f") per batch, KL weight {c['kl']}, AdamW lr "
             f"{c['lr']}, {c['steps']} steps; seed {c['seed']}.",
             f"- Time: {rl['train_seconds'] / 60:.1f} min on one CPU thread. Mean reward over the first {k} steps "
             f"{mean(hist[:k], 'reward'):.3f} (solved {mean(hist[:k], 'solved'):.0%}), over the last {k} "
             f"{mean(hist[-k:], 'reward'):.3f} (solved {mean(hist[-k:], 'solved'):.0%}); `rl.history` in training.json."]
    if rl.get("evals"):
        first, last = rl["evals"][0], rl["evals"][-1]
        rules = [r for r in first if r != "step"]
        lines.append(f"- Greedy on {c['eval_items']} held-out items during training: " + "; ".join(
            f"`{r}` {first[r]['accuracy']:.1%} → {last[r]['accuracy']:.1%} (TPF {first[r]['tpf']} → {last[r]['tpf']})"
            for r in rules) + f", step {first['step']} → {last['step']}.")
    return lines + [""]


def _eval_lines(model: str, result: dict) -> list[str]:
    """The Evaluation section: exact match per task and group under the rule `labkit eval` used."""
    rows = []
    for task, r in result["tasks"].items():
        for label, s in [(task, r)] + [(f"{task}: {g}", s) for g, s in r.get("groups", {}).items()]:
            lo, hi = s["ci95"]
            rows.append((label, s["n"], pct(s["accuracy"]), f"{pct(lo)}–{pct(hi)}", s["nfe_mean"], s["tpf"]))
    table = markdown_table(["task", "items", "exact match", "95% interval", "NFE per item", "TPF"], rows)
    return [f"## Evaluation (`labkit eval --model {model}`, held-out items)", "", f"Rule: `{result['sampler']}`.", "",
            table, "", "Every decoding rule, the AR twin side by side and the spread over training seeds: "
            "docs/models.md (\"Where diffusion wins\") and notebooks/11_where_diffusion_wins.ipynb.", ""]


def _target_lines(model: str, results: Path) -> list[str]:
    """The pair's targets against `labkit bench tasks`'s measurements (`results`, relative to the
    repository root), where that file is there and holds every pair."""
    pair = next((p for p, (m, ar, _) in PAIRS.items() if model in (m, ar)), None)
    tasks_json, seeds_json = ROOT / results / "tasks.json", ROOT / results / "task_seeds.json"
    if pair is None or not tasks_json.is_file():
        return []
    result = json.loads(tasks_json.read_text())
    if set(result.get("pairs", {})) != set(PAIRS):
        return []
    seeds = json.loads(seeds_json.read_text()) if seeds_json.is_file() else None
    prefix = {"sudoku": ("Sudoku", "Parallel, Sudoku", "Editing"), "facts": ("Facts", "Parallel, mirror"),
              "add": ("Addition",)}[pair]
    rows = [r for r in task_targets(result, seeds, sizes_mb()) if r["target"].startswith(prefix + (model + ":",))]
    return ["## Targets, and by how much they were missed", "",
            f"From `{(results / 'tasks.json').as_posix()}` (every rule and the AR twin)"
            + (f" and `{(results / 'task_seeds.json').as_posix()}`" if seeds else "") + ".", "",
            markdown_targets(rows), ""]


def card(model: str, folder: Path, training: dict, cfgm: dict, result: dict, results: Path = SHOWN) -> str:
    """A task model's card from its folder's records and the stored `labkit eval` result."""
    return "\n".join([*_model_lines(model, folder, training, cfgm), *_rl_lines(model, training),
                      *_eval_lines(model, result), *_target_lines(model, results)])
