"""`labkit eval`: how good the embedded model is, on plays it never saw.

- masked-token accuracy at mask ratio 0.15 and 0.5 (each token masked independently, seeded);
- the ELBO in bits per token: LLaDA's Monte-Carlo bound E_t[(1/t) Σ_masked CE] / L, an upper
  bound on the model's negative log-likelihood, and its standard error over the windows;
- for the causal twin: its exact negative log-likelihood in bits per predicted token (± s.e.);
  LLaDA's likelihood estimator for prompt/answer pairs is `labkit.eval.likelihood`.
- word validity and distinct-2 of 32 samples of 64 tokens made with the lab's default sampler.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .. import defaults
from ..decode import generate
from ..models.handle import model_block
from ..training.corpus import load_plays
from ..training.masking import EPS, mask_tokens, stratified_t
from ..training.prompts import sample_prompts
from .likelihood import ar_bits, check_mc_num, predicted_bits, require_kind
from .metrics import distinct_n, word_validity

WINDOW = 256            # tokens per held-out window (at most the model's context)
MASK_RATIOS = (0.15, 0.5)
SAMPLES = 32            # prompts sampled for word validity and distinct-2


def heldout_windows(lm, length: int = WINDOW) -> torch.Tensor:
    """Non-overlapping windows (N, length) of the held-out plays' token stream."""
    ids = []
    for text in load_plays("heldout").values():
        ids.extend(lm.encode(text))
        if lm.eos_id is not None:
            ids.append(lm.eos_id)
    length = min(length, lm.max_length or length)
    n = len(ids) // length
    return torch.tensor(ids[:n * length], dtype=torch.long).view(n, length)


@torch.no_grad()
def masked_accuracy(lm, windows: torch.Tensor, ratio: float, seed: int = 0, batch: int = 32) -> float:
    g = torch.Generator().manual_seed(seed)
    right = total = 0
    for x0 in windows.split(batch):
        noised = mask_tokens(x0, lm.mask_id, rate=torch.full((len(x0),), float(ratio)), generator=g)
        m = noised.masked                                                # (B, L)
        logits = lm(noised.canvas.to(lm.device)).float().cpu()
        logits[..., lm.mask_id] = float("-inf")
        right += int((logits.argmax(-1)[m] == x0[m]).sum())
        total += int(m.sum())
    return right / max(total, 1)


@torch.no_grad()
def elbo_bits_and_se(lm, windows: torch.Tensor, samples: int = 4, seed: int = 0, batch: int = 32,
                     eps: float = EPS) -> tuple[float, float]:
    """Monte-Carlo ELBO (negative, in bits/token) in the pre-training loss's form: t stratified
    over each batch, each token masked with probability t, CE weighted by 1/t; `samples` draws.
    Returns (bits per token, its standard error over windows)."""
    require_kind(lm, "masked", "elbo_bits_per_token")
    check_mc_num(samples)
    g = torch.Generator().manual_seed(seed)
    nats = torch.zeros(len(windows), dtype=torch.float64)                # (N,)
    for _ in range(samples):
        for i, x0 in enumerate(windows.split(batch)):
            B, L = x0.shape
            noised = mask_tokens(x0, lm.mask_id, rate=stratified_t(B, eps, g), generator=g)   # weight 1/t
            logits = lm(noised.canvas.to(lm.device)).float().cpu()
            ce = F.cross_entropy(logits.transpose(1, 2), x0, reduction="none")   # (B, L)
            nats[i * batch:i * batch + B] += torch.where(noised.masked, ce * noised.weight, 0.0).sum(-1).double()
    bits = nats / samples / windows.shape[1] / math.log(2)              # (N,) per window
    se = float(bits.std() / math.sqrt(len(bits))) if len(bits) > 1 else math.nan
    return float(bits.mean()), se


def elbo_bits_per_token(lm, windows: torch.Tensor, samples: int = 4, seed: int = 0, batch: int = 32,
                        eps: float = EPS) -> float:
    """Monte-Carlo ELBO (negative, in bits/token): t stratified over each batch, `samples` draws."""
    return elbo_bits_and_se(lm, windows, samples, seed, batch, eps)[0]


def ar_bits_per_token(lm, windows: torch.Tensor, batch: int = 32) -> float:
    """Next-token negative log-likelihood of a causal model, in bits per predicted token (exact)."""
    return ar_bits(lm, windows, batch)["bits_per_token"]


def sample_quality(lm, sampler=None, n: int = SAMPLES, seed: int = 0, **settings) -> dict:
    """Word validity and mean distinct-2 of n samples (batched, seeded) on `sample_prompts(n)`."""
    sampler = sampler or defaults.sampler()
    settings = {**defaults.settings(), **({"block_length": model_block(lm)} if model_block(lm) else {}), **settings}
    out = generate(lm, sample_prompts(n), sampler, seed=seed, **settings)
    P = out.trace.prompt_len
    d2 = [distinct_n(row[P:].tolist(), 2) for row in out.ids]
    return {"word_validity": word_validity(out.texts), "distinct_2": sum(d2) / len(d2),
            "samples": out.texts, "sampler": repr(sampler), **settings}


def evaluate(lm, seed: int = 0) -> dict:
    windows = heldout_windows(lm)
    if lm.kind == "causal":        # the autoregressive twin: likelihood only (it has no mask token)
        ar = ar_bits(lm, windows)                                        # exact
        return {"nll_bits_per_token": round(ar["bits_per_token"], 4), "bits_per_token": round(ar["bits_per_token"], 4),
                "bits_per_token_se": round(ar["se"], 4), "heldout_tokens": int(windows.numel())}
    q = sample_quality(lm, seed=seed)
    block = {}
    if model_block(lm):            # a block model's bound: each block given the clean blocks before it
        r = predicted_bits(lm, windows, mc_num=4, seed=seed)
        elbo, elbo_se = r["bits_per_token"], r["se"]
        block = {"block_size": model_block(lm), "elbo_estimator": "block ELBO of positions 1..L-1 given token 0 "
                                                                  "(labkit.eval.likelihood.predicted_bits, 4 draws)"}
    else:
        elbo, elbo_se = elbo_bits_and_se(lm, windows, seed=seed)
    return {
        **{f"mask_acc_{r}": round(masked_accuracy(lm, windows, r, seed), 4) for r in MASK_RATIOS},
        "elbo_bits_per_token": round(elbo, 4),
        "elbo_bits_per_token_se": round(elbo_se, 4),
        **block,
        "word_validity": round(q["word_validity"], 4),
        "distinct_2": round(q["distinct_2"], 4),
        "heldout_tokens": int(windows.numel()),
        "sampler": q["sampler"],
        "settings": {k: q[k] for k in ("gen_length", "block_length", "steps")},
        "example": q["samples"][0],
    }
