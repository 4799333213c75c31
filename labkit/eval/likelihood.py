"""Likelihoods, each with its standard error.

- `answer_log_likelihood`: LLaDA's Monte-Carlo estimate of log p(answer | prompt) for a masked
  diffusion model (`get_log_likelihood`): each of `mc_num` draws masks l of the L answer tokens
  (l stratified over 1..L across the draws, the positions uniformly at random, the prompt never)
  and scores (L / l) · Σ_masked CE; the mean is an upper bound on -log p (the ELBO);
- `elbo_bits`: the same estimator over held-out windows (no prompt), in bits per token;
- `ar_log_likelihood` / `ar_bits`: the exact log-likelihood of a causal model (the AR twin).

Why L / l: with l uniform on 1..L and the subset uniform given l, E[(L/l) Σ_masked CE] =
Σ_l (1/l) E_{|S|=l}[Σ_S CE], which is also what the pre-training loss's E_t[(1/t) Σ_masked CE]
integrates to (∫ C(L,l) t^(l-1) (1-t)^(L-l) dt = 1/l).

    est = answer_log_likelihood(lm, lm.encode("ROMEO:\\n"), lm.encode("But soft!"), mc_num=64)
    est.value, est.se          # nats; value ± 2·se
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..models.handle import model_block
from ..training.masking import mask_tokens, stratified_counts

LN2 = math.log(2)


@dataclass(frozen=True)
class Estimate:
    """A log-likelihood (nats; for the masked models a lower bound) and its standard error over
    the `mc_num` draws (nan with a single draw)."""
    value: float
    se: float
    mc_num: int


def check_mc_num(mc_num) -> int:
    if isinstance(mc_num, bool) or not isinstance(mc_num, int) or mc_num < 1:
        raise ValueError(f"mc_num must be a positive integer, got {mc_num!r}")
    return mc_num


def require_kind(lm, kind: str, what: str) -> None:
    """A clear error when `what` is asked of the wrong kind of model."""
    if getattr(lm, "kind", None) != kind:
        other = ("answer_log_likelihood or elbo_bits (the Monte-Carlo ELBO)" if kind == "causal"
                 else "ar_log_likelihood or ar_bits (the exact likelihood)")
        raise ValueError(f"{what} needs a {kind} model, got {getattr(lm, 'name', lm)!r} of kind "
                         f"{getattr(lm, 'kind', None)!r}; use {other}")
    if kind == "masked" and getattr(lm, "mask_id", None) is None:
        raise ValueError(f"{what} needs a model with a mask token; {getattr(lm, 'name', lm)!r} has none")


def _ids(name: str, ids, allow_empty: bool = False) -> torch.Tensor:
    ids = torch.as_tensor(ids, dtype=torch.long).flatten()              # (n,)
    if not allow_empty and ids.numel() == 0:
        raise ValueError(f"{name} must hold at least one token, got an empty sequence")
    return ids


def masked_draws(lm, x0: torch.Tensor, answer: torch.Tensor, counts: torch.Tensor,
                 generator: torch.Generator | None = None) -> torch.Tensor:
    """One Monte-Carlo draw per row: row b masks counts[b] of its answer positions (answer (B, L)
    bool), chosen uniformly at random, and scores (A_b / counts[b]) · Σ_masked CE, A_b its answer
    length. Returns (B,) nats, each an unbiased estimate of the row's -ELBO."""
    B, L = x0.shape
    noised = mask_tokens(x0, lm.mask_id, count=counts, where=answer, generator=generator)   # weight A_b / counts[b]
    logits = lm(noised.canvas.to(lm.device)).float().cpu()               # (B, L, V)
    ce = F.cross_entropy(logits.flatten(0, 1), x0.flatten(), reduction="none").view(B, L)
    return torch.where(noised.masked, ce * noised.weight, 0.0).sum(-1)


def mean_variance(draws: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """The variance of the mean of stratified draws (..., n) with their mask counts (..., n), by
    successive differences in count order (the systematic-sampling estimator: the draws' trend in
    the count, which stratifying cancels, stays out of it): Σ (v_(k+1) - v_(k))² / (2 n (n - 1)).
    Returns (...,); nan for n = 1."""
    n = draws.shape[-1]
    if n == 1:
        return torch.full(draws.shape[:-1], math.nan)
    ordered = draws.gather(-1, counts.argsort(dim=-1, stable=True))         # (..., n)
    return ordered.diff(dim=-1).pow(2).sum(-1) / (2 * n * (n - 1))


@torch.no_grad()
def answer_log_likelihood(lm, prompt, answer, mc_num: int = 128, batch_size: int = 16,
                          seed: int = 0) -> Estimate:
    """LLaDA's Monte-Carlo estimate of log p(answer | prompt) (token ids) for a masked model, in
    nats: minus the mean over `mc_num` draws of `masked_draws`, the counts stratified over
    1..len(answer) across the draws (`stratified_counts`). A lower bound on the log-likelihood in
    expectation; se from `mean_variance` (nan for mc_num 1)."""
    require_kind(lm, "masked", "answer_log_likelihood")
    check_mc_num(mc_num)
    if batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    prompt, answer = _ids("prompt", prompt, allow_empty=True), _ids("answer", answer)
    seq = torch.cat([prompt, answer])                                    # (L,)
    is_answer = torch.arange(len(seq)) >= len(prompt)                    # (L,)
    g = torch.Generator().manual_seed(seed)
    counts = stratified_counts(mc_num, len(answer), g)                   # (mc_num,)
    draws = torch.cat([masked_draws(lm, seq.expand(len(c), -1), is_answer.expand(len(c), -1), c, g)
                       for c in counts.split(batch_size)])               # (mc_num,)
    se = float(mean_variance(draws, counts).sqrt())
    return Estimate(value=-float(draws.mean()), se=se, mc_num=mc_num)


@torch.no_grad()
def elbo_bits(lm, windows: torch.Tensor, mc_num: int = 16, batch: int = 32, seed: int = 0) -> dict:
    """The -ELBO of a masked model on windows (N, L) (no prompt), in bits per token, by
    `answer_log_likelihood`'s estimator with `mc_num` draws per window (counts stratified per
    window). Returns bits_per_token; se, over windows (the text's spread plus the Monte-Carlo
    noise: what two models are compared with); mc_se, the Monte-Carlo part alone (`mean_variance`
    of each window's draws; nan with mc_num 1); per_window bits (N,)."""
    require_kind(lm, "masked", "elbo_bits")
    check_mc_num(mc_num)
    if windows.ndim != 2 or windows.numel() == 0:
        raise ValueError(f"windows must be a non-empty (N, L) tensor, got shape {tuple(windows.shape)}")
    g = torch.Generator().manual_seed(seed)
    N, L = windows.shape
    draws, counts = [], []
    for x0 in windows.split(batch):
        c = torch.stack([stratified_counts(mc_num, L, g) for _ in range(len(x0))])   # (B, mc_num)
        answer = torch.ones_like(x0, dtype=torch.bool)
        draws.append(torch.stack([masked_draws(lm, x0, answer, c[:, j], g) for j in range(mc_num)], 1))
        counts.append(c)
    bits = torch.cat(draws) / L / LN2                                    # (N, mc_num)
    per_window = bits.mean(1)                                            # (N,)
    mc_se = float(mean_variance(bits, torch.cat(counts)).sum().sqrt() / N)
    return {"bits_per_token": float(per_window.mean()), "se": _se(per_window), "mc_se": mc_se,
            "mc_num": mc_num, "per_window": per_window}


def _se(values: torch.Tensor) -> float:
    """Standard error of the mean of values (n,); nan for one value."""
    return float(values.std() / math.sqrt(len(values))) if len(values) > 1 else math.nan


@torch.no_grad()
def ar_log_likelihood(lm, prompt, answer) -> float:
    """Exact log p(answer | prompt) (token ids) of a causal model, in nats. The prompt must hold at
    least one token: the first answer token is predicted from it."""
    require_kind(lm, "causal", "ar_log_likelihood")
    prompt, answer = _ids("prompt", prompt), _ids("answer", answer)
    seq = torch.cat([prompt, answer])[None]                              # (1, L)
    logp = F.log_softmax(lm(seq[:, :-1].to(lm.device)).float().cpu(), -1)[0]   # (L-1, V)
    targets = seq[0, 1:]                                                 # (L-1,)
    return float(logp.gather(-1, targets[:, None]).squeeze(-1)[len(prompt) - 1:].sum())


@torch.no_grad()
def ar_bits(lm, windows: torch.Tensor, batch: int = 32) -> dict:
    """Exact next-token negative log-likelihood of a causal model on windows (N, L), in bits per
    predicted token (positions 1..L-1 of each window). Returns bits_per_token, se over windows and
    per_window bits (N,)."""
    require_kind(lm, "causal", "ar_bits")
    if windows.ndim != 2 or windows.shape[0] == 0 or windows.shape[1] < 2:
        raise ValueError(f"windows must be (N, L) with N >= 1 and L >= 2, got shape {tuple(windows.shape)}")
    per_window = []
    for x in windows.split(batch):
        logits = lm(x.to(lm.device)).float().cpu()[:, :-1]              # (B, L-1, V)
        ce = F.cross_entropy(logits.transpose(1, 2), x[:, 1:], reduction="none")   # (B, L-1)
        per_window.append(ce.mean(1) / LN2)
    per_window = torch.cat(per_window)                                   # (N,)
    return {"bits_per_token": float(per_window.mean()), "se": _se(per_window), "per_window": per_window}


def block_draws(net, x0: torch.Tensor, counts: torch.Tensor, block: int,
                generator: torch.Generator | None = None) -> torch.Tensor:
    """One Monte-Carlo draw per row of a block model's -ELBO of positions 1..L-1 given token 0:
    block k of row b masks counts[b, k] of its scored positions (n_k: the block's positions, less
    position 0), uniformly at random, every block at once from the clean blocks before it
    (`TinyDLM.run_two_streams`), and scores Σ_k (n_k / counts[b, k]) · Σ_masked CE. x0 (B, L),
    counts (B, blocks). Returns (B,) nats, each an unbiased estimate of the row's -ELBO."""
    B, L = x0.shape
    scored = (torch.arange(L) >= 1).expand(B, L)                          # (B, L) position 0 is given
    noised = mask_tokens(x0, net.config.mask_token_id, count=counts, where=scored, block=block,
                         generator=generator)                             # weight n_k / counts[b, k]
    logits = net.run_two_streams(noised.canvas.to(net.device), x0.to(net.device), block=block).float().cpu()
    ce = F.cross_entropy(logits.flatten(0, 1), x0.flatten(), reduction="none").view(B, L)   # (B, L)
    return torch.where(noised.masked, ce * noised.weight, 0.0).sum(-1)


@torch.no_grad()
def predicted_bits(lm, windows: torch.Tensor, mc_num: int = 16, batch: int = 32, seed: int = 0) -> dict:
    """Bits per predicted token of positions 1..L-1 of each window (N, L) given its token 0, for any
    model, so that AR, block and full-attention models are read on the same tokens:
    - a causal model: exact (`ar_bits`);
    - a block-diffusion model (config block_size > 0): the sum over blocks of each block's masked
      diffusion bound given the clean blocks before it (`block_draws`), the mask counts stratified
      over 1..n_k across the `mc_num` draws of each window and block; at block size 1 it is exact;
    - a full-attention masked model: LLaDA's estimator on positions 1..L-1 (`masked_draws`).
    Returns bits_per_token, se over windows, mc_se (the Monte-Carlo part; 0 when exact), mc_num,
    per_window (N,)."""
    check_mc_num(mc_num)
    if windows.ndim != 2 or windows.shape[0] == 0 or windows.shape[1] < 2:
        raise ValueError(f"windows must be (N, L) with N >= 1 and L >= 2, got shape {tuple(windows.shape)}")
    if getattr(lm, "kind", None) == "causal":
        r = ar_bits(lm, windows, batch)
        return {**r, "mc_se": 0.0, "mc_num": 0}
    require_kind(lm, "masked", "predicted_bits")
    g = torch.Generator().manual_seed(seed)
    N, L = windows.shape
    b = model_block(lm)
    draws, counts = [], []
    for x0 in windows.split(batch):
        B = len(x0)
        if b:
            nk = [min(L, (k + 1) * b) - max(1, k * b) for k in range(-(-L // b))]      # scored per block
            c = torch.stack([torch.stack([stratified_counts(mc_num, n, g) for n in nk], -1)
                             for _ in range(B)])                                       # (B, mc_num, blocks)
            draws.append(torch.stack([block_draws(lm.net, x0, c[:, j], b, g) for j in range(mc_num)], 1))
            counts.append(c.float().mean(-1))         # a draw's count order for mean_variance: its mean count
        else:
            c = torch.stack([stratified_counts(mc_num, L - 1, g) for _ in range(B)])  # (B, mc_num)
            answer = (torch.arange(L) >= 1).expand(B, L)
            draws.append(torch.stack([masked_draws(lm, x0, answer, c[:, j], g) for j in range(mc_num)], 1))
            counts.append(c.float())
    bits = torch.cat(draws) / (L - 1) / LN2                              # (N, mc_num)
    per_window = bits.mean(1)
    mc_se = float(mean_variance(bits, torch.cat(counts)).sum().sqrt() / N) if mc_num > 1 else math.nan
    if b == 1:
        mc_se = 0.0                                                      # one scored token per block: exact
    return {"bits_per_token": float(per_window.mean()), "se": _se(per_window), "mc_se": mc_se,
            "mc_num": mc_num, "per_window": per_window}


__all__ = ["LN2", "answer_log_likelihood", "ar_bits", "ar_log_likelihood", "block_draws", "check_mc_num",
           "elbo_bits", "Estimate", "masked_draws", "mean_variance", "predicted_bits", "require_kind",
           "stratified_counts"]
