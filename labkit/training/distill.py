"""Self-distillation for parallel decoding (after dParallel's certainty-forcing distillation).

A small masked-diffusion model is under-confident: at a masked position it spreads its mass over
the many tokens that could go there, so threshold rules find little above 0.5 and fall back to
about one token per forward pass. Raising confidence on any text (CAP on the corpus) makes the
model sure of guesses that disagree with each other, and parallel decoding loses quality.

Distillation makes it confident about the one text it would write anyway:
1. `make_trajectories`: the teacher (the model itself) decodes training-play prompts
   (`labkit.training.prompts.train_prompts`) with the quality reference, one token per step
   (greedy low-confidence, block 32, or sampled with `temperature`/`top_p`), and keeps the answers;
2. `pack` lays them out as the decode loop does (left-padded prompt, then the answer);
3. `labkit.training.losses.block_distill_loss`: the student learns to reproduce those answers from
   the canvases block decoding shows it, meaning earlier blocks written, the current block partly
   masked, later blocks all masked, with cross-entropy plus CAP's entropy term on the tokens it
   already gets right. The targets are a function of the prompt, so confidence can grow without
   the model guessing more boldly than its own sequential decoding. A block-diffusion student
   (labkit.training.loop.distill_loss) learns every answer block at once instead
   (`losses.block_diffusion_loss` on the teacher rows: the prompt clean, whole blocks of it);
4. `labkit.training.losses.t2t_noise`: with edit_prob, written answer tokens are swapped for noise
   the model must undo, so draft-and-edit's T2T proposals mean something. Part of it
   (edit_stutter) copies a neighbour, the collision a parallel draft makes ("WhyWhy"); the rest is
   unigram noise.

The teacher is the model itself by default; a converted block model can take its AR parent
(`TrainConfig.distill_teacher`, e.g. tiny-ar: the same network at block size 1), which answers left
to right through its exact KV cache. With `eos_every_speech`, `speech_eos` puts EOS after every
speech of the answers, as the corpus does, so the student learns where an answer ends.
"""
from __future__ import annotations

from pathlib import Path

import torch

from ..decode import generate
from ..models.kv_cache import CausalCache
from ..samplers import Autoregressive, LowConfidence
from .corpus import SPEECH_BREAK
from .seeds import data_seed


def make_trajectories(lm, prompts: list[str], path: str | Path, *, gen_length: int = 128,
                      block_length: int = 32, batch: int = 32, bf16: bool = True,
                      temperature: float = 0.0, top_p: float | None = None, seed: int = 0,
                      log=print) -> dict:
    """1-token-per-step answers of `lm` to `prompts` (greedy, or sampled at `temperature` within the
    `top_p` nucleus, seeded per batch), cached in `path` batch by batch (a stopped run resumes).
    A causal `lm` writes left to right through its KV cache (`CausalCache`, exact).
    Returns {"prompt": [...], "answer": LongTensor (N, gen_length)}."""
    causal = lm.kind == "causal"
    rule = Autoregressive(temperature=temperature, top_p=top_p) if causal else LowConfidence(temperature=temperature,
                                                                                              top_p=top_p)
    path = Path(path)
    settings = dict(gen_length=gen_length, block_length=block_length, temperature=temperature,
                    top_p=top_p, seed=seed)
    done = (torch.load(path, weights_only=False) if path.is_file()
            else {"prompt": [], "answer": [], "settings": settings})
    n = min(len(done["prompt"]), len(prompts))
    if done["prompt"][:n] != prompts[:n]:
        raise ValueError(f"{path} holds answers to other prompts; delete it or use another folder")
    # files written before the settings were recorded hold greedy answers (seed unused)
    saved = done.setdefault("settings", {**settings, "temperature": 0.0, "top_p": None, "seed": seed})
    if saved != settings:
        raise ValueError(f"{path} holds answers decoded with {saved}, not {settings}; "
                         f"delete it or use another folder")
    while len(done["prompt"]) < len(prompts):
        chunk = prompts[len(done["prompt"]):len(done["prompt"]) + batch]
        start = len(done["prompt"])
        with torch.inference_mode(), torch.autocast(lm.device.type, dtype=torch.bfloat16, enabled=bf16):
            out = generate(CausalCache(lm) if causal else lm, chunk, rule,
                           gen_length=gen_length, block_length=block_length, steps=gen_length,
                           seed=data_seed(seed, start))
        P = out.trace.prompt_len
        done["prompt"] += chunk
        done["answer"] += list(out.ids[:, P:].cpu().clone())
        torch.save(done, path.with_suffix(".tmp"))
        path.with_suffix(".tmp").replace(path)
        if log:
            log(f"trajectories {len(done['prompt'])}/{len(prompts)} ({out.stats['seconds']:.0f} s)")
    return {"prompt": done["prompt"][:len(prompts)], "answer": torch.stack(done["answer"][:len(prompts)])}


def speech_eos(tokenizer, answer: torch.Tensor) -> torch.Tensor:
    """answer (N, G) token ids → (N, G): each answer's text with EOS after every speech break, each
    speech encoded on its own as `corpus.Corpus(eos_every_speech=True)` lays out the plays; cut to
    G tokens (an answer that comes out shorter is filled with EOS)."""
    eos = tokenizer.eos_token_id
    N, G = answer.shape
    out = torch.full((N, G), eos, dtype=torch.long)
    for i, row in enumerate(answer.tolist()):
        speeches = tokenizer.decode(row, skip_special_tokens=True).split(SPEECH_BREAK)
        ids: list[int] = []
        for k, speech in enumerate(speeches):
            last = k == len(speeches) - 1
            ids += tokenizer(speech if last else speech + SPEECH_BREAK)["input_ids"] + ([] if last else [eos])
        out[i, :min(G, len(ids))] = torch.tensor(ids[:G], dtype=torch.long)
    return out


def pack(tokenizer, trajectories: dict, multiple: int = 1) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Left-pad prompt + answer rows as the decode loop does: ids (N, P + G), attention (N, P + G)
    and P, the padded prompt length, rounded up to a `multiple` (a block model's block size: the
    answer then starts on a block boundary, as `decode.padded_length` lays out its canvas)."""
    prompts = [tokenizer(p)["input_ids"] for p in trajectories["prompt"]]
    P = -(-max(map(len, prompts)) // multiple) * multiple
    answer = trajectories["answer"]                                      # (N, G)
    N, G = answer.shape
    ids = torch.full((N, P + G), tokenizer.pad_token_id, dtype=torch.long)
    attn = torch.zeros(N, P + G, dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, P - len(p):P] = torch.tensor(p)
        attn[i, P - len(p):] = 1
    ids[:, P:] = answer
    return ids, attn, P
