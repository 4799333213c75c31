"""Self-distillation for parallel decoding (after dParallel's certainty-forcing distillation).

A small masked-diffusion model is under-confident: at a masked position it spreads its mass over
the many tokens that could go there, so threshold rules find little above 0.5 and fall back to
about one token per forward pass. Raising confidence on any text (CAP on the corpus) makes the
model sure of guesses that disagree with each other, and parallel decoding loses quality.

Distillation makes it confident about the one text it would write anyway:
1. `make_trajectories`: the teacher (the model itself) decodes training-play prompts with the
   quality reference, one token per step (greedy low-confidence, block 32, or sampled with
   `temperature`/`top_p`), and keeps the answers;
2. `block_distill_loss`: the student learns to reproduce those answers from the canvases block
   decoding shows it, meaning earlier blocks written, the current block partly masked, later
   blocks all masked, with cross-entropy plus CAP's entropy term on the tokens it already gets
   right. The targets are a function of the prompt, so confidence can grow without the model
   guessing more boldly than its own sequential decoding;
3. `t2t_noise`: with edit_prob, written answer tokens are swapped for noise the model must undo, so
   draft-and-edit's T2T proposals mean something. Part of it (edit_stutter) copies a neighbour,
   the collision a parallel draft makes ("WhyWhy"); the rest is unigram noise.

Measured on one GPU with benchmarks/recipe_sweep.py (96 held-out prompts, greedy; results in
benchmarks/results/recipe_sweep.json): a sampled teacher (T 1.0, top-p 0.9) did not make the
student's sampled text more varied (distinct-2 0.44 to 0.48, like the greedy teacher's students)
and cost tokens per forward (threshold 0.93: 1.2 against 2.0); neighbour-copy noise lowered S and
Q mode's gen-PPL (7.89 and 7.07 to 7.38 and 6.62 with edit_prob 0.2, edit_stutter 0.5).
"""
from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F


def t2t_noise(x0: torch.Tensor, where: torch.Tensor, prob: float, stutter: float,
              generator: torch.Generator | None, lo: int = 0) -> torch.Tensor:
    """The written tokens draft-and-edit must learn to fix: each position in `where` (B, L) is, with
    probability `prob`, replaced by noise, which is a copy of a neighbour (x0 at i-2, i-1, i+1 or
    i+2, inside [lo, L)) with probability `stutter`, else a token drawn from the batch's positions
    lo.. (unigram noise). Neighbour copies are the collisions of a parallel draft ("WhyWhy",
    "not not"), which unigram noise almost never shows. Returns the noised x0 (B, L)."""
    B, L = x0.shape
    dev = x0.device
    swap = where & (torch.rand(B, L, generator=generator).to(dev) < prob)
    noise = x0[:, lo:].flatten()[torch.randint(B * (L - lo), (B, L), generator=generator).to(dev)]
    if stutter:
        offset = torch.tensor([-2, -1, 1, 2])[torch.randint(4, (B, L), generator=generator)].to(dev)
        src = torch.arange(L, device=dev) + offset                        # (B, L)
        src = torch.where((src < lo) | (src >= L), torch.arange(L, device=dev) - offset, src)
        copy = torch.rand(B, L, generator=generator).to(dev) < stutter
        noise = torch.where(copy, x0.gather(1, src.clamp(0, L - 1)), noise)
    return torch.where(swap, noise, x0)


def train_prompts(n: int, seed: int = 0) -> list[str]:
    """n prompts in the benchmark's form (speaker + the speech's first line) from training plays."""
    from .corpus import load_plays
    speeches = [s for text in load_plays("train").values() for s in text.split("\n\n")
                if s.count("\n") >= 2]
    g = torch.Generator().manual_seed(seed)
    pick = torch.randperm(len(speeches), generator=g)[:n].tolist()
    return ["\n".join(speeches[i].split("\n")[:2]) + "\n" for i in pick]


def make_trajectories(lm, prompts: list[str], path: str | Path, *, gen_length: int = 128,
                      block_length: int = 32, batch: int = 32, bf16: bool = True,
                      temperature: float = 0.0, top_p: float | None = None, seed: int = 0,
                      log=print) -> dict:
    """1-token-per-step answers of `lm` to `prompts` (greedy, or sampled at `temperature` within the
    `top_p` nucleus, seeded per batch), cached in `path` batch by batch (a stopped run resumes).
    Returns {"prompt": [...], "answer": LongTensor (N, gen_length)}."""
    from ..decode import generate
    from ..samplers import LowConfidence

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
            out = generate(lm, chunk, LowConfidence(temperature=temperature, top_p=top_p),
                           gen_length=gen_length, block_length=block_length, steps=gen_length,
                           seed=seed * 1_000_003 + start)
        P = out.trace.prompt_len
        done["prompt"] += chunk
        done["answer"] += list(out.ids[:, P:].cpu().clone())
        torch.save(done, path.with_suffix(".tmp"))
        path.with_suffix(".tmp").replace(path)
        if log:
            log(f"trajectories {len(done['prompt'])}/{len(prompts)} ({out.stats['seconds']:.0f} s)")
    return {"prompt": done["prompt"][:len(prompts)], "answer": torch.stack(done["answer"][:len(prompts)])}


def pack(tokenizer, trajectories: dict) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Left-pad prompt + answer rows as the decode loop does: ids (N, P + G), attention (N, P + G)
    and P, the padded prompt length."""
    prompts = [tokenizer(p)["input_ids"] for p in trajectories["prompt"]]
    P = max(map(len, prompts))
    answer = trajectories["answer"]                                      # (N, G)
    N, G = answer.shape
    ids = torch.full((N, P + G), tokenizer.pad_token_id, dtype=torch.long)
    attn = torch.zeros(N, P + G, dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, P - len(p):P] = torch.tensor(p)
        attn[i, P - len(p):] = 1
    ids[:, P:] = answer
    return ids, attn, P


def block_distill_loss(logits_fn, x0: torch.Tensor, attn: torch.Tensor, prompt_len: int,
                       block_length: int, mask_id: int, *, eps: float = 1e-3,
                       generator: torch.Generator | None = None, t: torch.Tensor | None = None,
                       cap_weight: float = 0.0, edit_prob: float = 0.0, edit_stutter: float = 0.0,
                       edit_weight: float = 1.0) -> torch.Tensor:
    """x0 (B, P + G) teacher rows. Each row picks a block b and a ratio t ~ U(eps, 1): blocks
    before b stay written, block b is masked with probability t, later blocks are all masked,
    which is what semi-autoregressive decoding shows the model. Cross-entropy on the masked
    positions of block b, plus CAP (cap_weight · entropy on those predicted right) and, with
    edit_prob, written answer tokens swapped for noise (`t2t_noise`, a neighbour's copy with
    probability edit_stutter) that every written answer position must undo (so draft-and-edit's
    T2T proposals stay meaningful)."""
    B, L = x0.shape
    G = L - prompt_len
    num_blocks = G // block_length
    dev = x0.device
    if t is None:   # stratified over the batch, as in masked_diffusion_loss
        u = (torch.rand(1, generator=generator) + torch.arange(B) / B) % 1.0
        t = (1 - eps) * u + eps                                          # (B,)
    t = t.to(dev)
    block = torch.randint(num_blocks, (B,), generator=generator).to(dev)  # (B,)
    pos_block = (torch.arange(L, device=dev) - prompt_len).div(block_length, rounding_mode="floor")  # (L,)
    current = pos_block[None, :] == block[:, None]                       # (B, L)
    later = pos_block[None, :] > block[:, None]
    masked = (current & (torch.rand(B, L, generator=generator).to(dev) < t[:, None])) | later
    xt = torch.where(masked, torch.full_like(x0, mask_id), x0)
    written = ~masked & (pos_block[None, :] >= 0)                        # answer tokens on view
    if edit_prob:
        xt = torch.where(written, t2t_noise(x0, written, edit_prob, edit_stutter, generator, prompt_len), xt)
    logits = logits_fn(xt, attn)                                         # (B, L, V)
    target = masked & current
    logp = F.log_softmax(logits[target].float(), -1)                     # (M, V)
    loss = -logp.gather(-1, x0[target][:, None]).sum() / target.sum().clamp_min(1)
    if cap_weight:
        right = logp.argmax(-1) == x0[target]
        entropy = -(logp.exp() * logp).sum(-1)
        loss = loss + cap_weight * (entropy * right).sum() / right.sum().clamp_min(1)
    if edit_prob:
        loss = loss + edit_weight * F.cross_entropy(logits[written].float(), x0[written])
    return loss
