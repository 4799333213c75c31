"""The training objectives, as small functions of (logits function, clean tokens, noise generator).

- `masked_diffusion_loss`: LLaDA's pre-training loss (the diffusion models);
- `masked_sft_loss`: its SFT form (prompt never masked, each row normalised by its answer length);
- `masked_count_loss`: the task models' form (the number of masks uniform, T2T repair optional);
- `draft_repair_loss`: the editor's loss on the model's own drafts (`labkit.training.self_errors`);
- `ar_loss`: next-token cross-entropy (the autoregressive twin); `ar_sft_loss` on chosen targets;
- `block_distill_loss`: the block-shaped distillation loss (`labkit.training.distill`);
- the terms both diffusion losses can add: `cap_term` (CAP's entropy penalty) and `edit_term` (T2T
  training on `t2t_noise`).

Every masked loss masks through `labkit.training.masking.mask_tokens`: at a rate t per row drawn by
`stratified_t` (masked diffusion, SFT, block distillation), at an independent t per block (block
diffusion) or at a count per row (the task models), each with the weights of its bound. Noise is
drawn on the CPU (`seeds.CPU`) and moved to the tokens' device. The order in which each function
draws from `generator` is part of its contract: the committed models were trained with it, so the
same seed must keep giving the same noise.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .masking import EPS, mask_tokens, stratified_t, uniform
from .seeds import CPU

STUTTER_OFFSETS = (-2, -1, 1, 2)    # where a neighbour copy in `t2t_noise` comes from


def t2t_noise(x0: torch.Tensor, where: torch.Tensor, prob: float, stutter: float,
              generator: torch.Generator | None, lo: int = 0) -> torch.Tensor:
    """The written tokens draft-and-edit must learn to fix: each position in `where` (B, L) is, with
    probability `prob`, replaced by noise, which is a copy of a neighbour (x0 at i-2, i-1, i+1 or
    i+2, inside [lo, L)) with probability `stutter`, else a token drawn from the batch's positions
    lo.. (unigram noise). Neighbour copies are the collisions of a parallel draft ("WhyWhy",
    "not not"), which unigram noise almost never shows. Returns the noised x0 (B, L)."""
    B, L = x0.shape
    dev = x0.device
    swap = where & (uniform((B, L), generator, dev) < prob)
    noise = x0[:, lo:].flatten()[torch.randint(B * (L - lo), (B, L), generator=generator, device=CPU).to(dev)]
    if stutter:
        offsets = torch.tensor(STUTTER_OFFSETS, device=CPU)
        offset = offsets[torch.randint(len(offsets), (B, L), generator=generator, device=CPU)].to(dev)
        src = torch.arange(L, device=dev) + offset                        # (B, L)
        src = torch.where((src < lo) | (src >= L), torch.arange(L, device=dev) - offset, src)
        copy = uniform((B, L), generator, dev) < stutter
        noise = torch.where(copy, x0.gather(1, src.clamp(0, L - 1)), noise)
    return torch.where(swap, noise, x0)


def cap_term(logp: torch.Tensor, target: torch.Tensor, weight: float) -> torch.Tensor:
    """CAP (LLaDA2.0, after dParallel): weight · mean entropy of the predictions `logp` (M, V) whose
    argmax is already `target` (M,); sharpening them lets threshold rules commit more per forward."""
    right = logp.argmax(-1) == target                                    # (M,)
    entropy = -(logp.exp() * logp).sum(-1)
    return weight * (entropy * right).sum() / right.sum().clamp_min(1)


def edit_term(logits: torch.Tensor, x0: torch.Tensor, written: torch.Tensor, weight: float) -> torch.Tensor:
    """T2T training: weight · cross-entropy of the clean token at every `written` position (B, L),
    noised or not, so the model learns to copy a right token and to correct a wrong one."""
    return weight * F.cross_entropy(logits[written].float(), x0[written])


def masked_diffusion_loss(logits_fn, x0: torch.Tensor, mask_id: int, *, eps: float = EPS,
                          prompt_len: int = 0, generator: torch.Generator | None = None,
                          t: torch.Tensor | None = None, cap_weight: float = 0.0,
                          edit_prob: float = 0.0, edit_stutter: float = 0.0,
                          edit_weight: float = 1.0) -> torch.Tensor:
    """LLaDA pre-training loss: t ~ U(eps, 1) per row, mask each token with probability t,
    cross-entropy on masked positions weighted by 1/t, averaged over all B·L answer tokens.
    `prompt_len` positions are never masked (SFT). t is stratified across the batch
    (`stratified_t`) unless given.

    Two optional terms for the confident, self-correcting models parallel decoding needs:
    - `cap_weight`: + `cap_term` on the masked positions;
    - `edit_prob` (T2T training, as LLaDA2.1 needs for draft-and-edit): each unmasked answer token
      is swapped with probability edit_prob for noise (`t2t_noise`, a neighbour's copy with
      probability `edit_stutter`), and every unmasked answer position learns its clean token
      (`edit_term`, weighted by `edit_weight`). A pure masked-diffusion model is never trained on
      filled positions, so without this its T2T proposals there are noise."""
    B, L = x0.shape
    if t is None:
        t = stratified_t(B, eps, generator)                              # (B,)
    answer = torch.ones_like(x0, dtype=torch.bool)
    answer[:, :prompt_len] = False
    noised = mask_tokens(x0, mask_id, rate=t, where=answer, generator=generator)
    masked, xt = noised.masked, noised.canvas                            # (B, L) each
    if edit_prob:
        filled = ~masked & answer
        xt = torch.where(filled, t2t_noise(x0, filled, edit_prob, edit_stutter, generator), xt)
    logits = logits_fn(xt)                                               # (B, L, V)
    logp = F.log_softmax(logits[masked].float(), -1)                     # (M, V)
    ce = -logp.gather(-1, x0[masked][:, None]).squeeze(-1)               # (M,)
    loss = (ce * noised.weight[masked]).sum() / (B * (L - prompt_len))
    if cap_weight:
        loss = loss + cap_term(logp, x0[masked], cap_weight)
    if edit_prob:
        loss = loss + edit_term(logits, x0, filled, edit_weight)
    return loss


def block_diffusion_loss(model, x0: torch.Tensor, mask_id: int, *, block: int | None = None, eps: float = EPS,
                         generator: torch.Generator | None = None, cap_weight: float = 0.0,
                         edit_prob: float = 0.0, edit_stutter: float = 0.0, edit_weight: float = 1.0,
                         attention_mask: torch.Tensor | None = None, clean_prefix: int = 0) -> torch.Tensor:
    """Block diffusion (BD3-LM; LLaDA2.x's training): x0 (B, L) cut into blocks of `block` tokens (the
    model's block size by default), each block of each row masked at its own rate t ~ U(eps, 1), every
    block denoised from the clean blocks before it in one pass (`TinyDLM.run_two_streams`);
    cross-entropy on masked positions weighted by 1/t of their block, averaged over all B·L tokens: a
    bound on the NLL (in nats per token), the sum over blocks of each block's masked-diffusion bound
    given the clean blocks before it. `cap_weight` and `edit_prob` / `edit_stutter` add the CAP and
    T2T terms of `masked_diffusion_loss`, inside the noisy blocks (the clean context stays clean).
    Distillation rows (a prompt, then the teacher's answer): `clean_prefix` positions (the padded
    prompt, whole blocks) are never noised nor scored, the mean is over the answer's B·(L − prefix)
    tokens, and `attention_mask` (B, L) hides the left padding (`TinyDLM.run_two_streams`)."""
    B, L = x0.shape
    b = block or model.config.block_size
    if clean_prefix % b:
        raise ValueError(f"clean_prefix ({clean_prefix}) must be whole blocks of {b}")
    nblocks = -(-L // b)
    t = eps + (1 - eps) * torch.rand(B, nblocks, generator=generator, device=CPU)   # (B, blocks)
    answer = torch.arange(L, device=x0.device) >= clean_prefix                        # (L,)
    noised = mask_tokens(x0, mask_id, rate=t.repeat_interleave(b, dim=1)[:, :L], where=answer.expand(B, L),
                         generator=generator)
    masked, xt = noised.masked, noised.canvas                                          # (B, L) each
    if edit_prob:
        filled = ~masked & answer
        xt = torch.where(filled, t2t_noise(x0, filled, edit_prob, edit_stutter, generator, clean_prefix), xt)
    logits = model.run_two_streams(xt, x0, block=b, attention_mask=attention_mask)      # (B, L, V)
    logp = F.log_softmax(logits[masked].float(), -1)                                    # (M, V)
    nll = -logp.gather(-1, x0[masked][:, None]).squeeze(-1)                             # (M,)
    loss = (nll * noised.weight[masked]).sum() / (B * (L - clean_prefix))
    if cap_weight:
        loss = loss + cap_term(logp, x0[masked], cap_weight)
    if edit_prob:
        loss = loss + edit_term(logits, x0, filled, edit_weight)
    return loss


def answer_mask(x0: torch.Tensor, prompt_lengths: torch.Tensor | None = None,
                answer: torch.Tensor | None = None) -> torch.Tensor:
    """The (B, L) bool mask of answer positions, from per-row `prompt_lengths` (B,) or given as
    `answer` (B, L); exactly one of the two. Every row must hold at least one answer token."""
    B, L = x0.shape
    if (prompt_lengths is None) == (answer is None):
        raise ValueError("give exactly one of prompt_lengths (B,) and answer (B, L)")
    if answer is None:
        prompt_lengths = torch.as_tensor(prompt_lengths, device=x0.device)
        if prompt_lengths.shape != (B,):
            raise ValueError(f"prompt_lengths must have shape ({B},), got {tuple(prompt_lengths.shape)}")
        answer = torch.arange(L, device=x0.device)[None, :] >= prompt_lengths[:, None]
    elif answer.shape != x0.shape or answer.dtype != torch.bool:
        raise ValueError(f"answer must be a bool tensor of shape {tuple(x0.shape)}, got {answer.dtype} "
                         f"{tuple(answer.shape)}")
    if not bool(answer.any(-1).all()):
        raise ValueError("every row needs at least one answer token (an empty answer has no loss)")
    return answer.to(x0.device)


def masked_sft_loss(logits_fn, x0: torch.Tensor, mask_id: int, *, prompt_lengths: torch.Tensor | None = None,
                    answer: torch.Tensor | None = None, eps: float = EPS,
                    generator: torch.Generator | None = None, t: torch.Tensor | None = None) -> torch.Tensor:
    """LLaDA's SFT loss: t ~ U(eps, 1) per row (stratified over the batch unless given), each answer
    token masked with probability t, the prompt never; each row's Σ_masked CE / t is divided by
    that row's answer length, and the rows are averaged. Rows may have prompts of different
    lengths: give `prompt_lengths` (B,) or the `answer` (B, L) bool mask. Draws from `generator`
    in the order of `masked_diffusion_loss` (t, then the (B, L) uniforms)."""
    B, L = x0.shape
    ans = answer_mask(x0, prompt_lengths, answer)                        # (B, L)
    if t is None:
        t = stratified_t(B, eps, generator)                              # (B,)
    noised = mask_tokens(x0, mask_id, rate=t, where=ans, generator=generator)
    logp = F.log_softmax(logits_fn(noised.canvas).float(), -1)           # (B, L, V)
    ce = -logp.gather(-1, x0[..., None]).squeeze(-1)                     # (B, L)
    per_row = torch.where(noised.masked, ce * noised.weight, 0.0).sum(-1) / ans.sum(-1)   # (B,) Σ CE / t per answer token
    return per_row.mean()


def masked_count_loss(logits_fn, x0: torch.Tensor, mask_id: int, *, answer: torch.Tensor,
                      generator: torch.Generator | None = None, edit_prob: float = 0.0) -> torch.Tensor:
    """The masked objective with the number of masks drawn uniformly (the task models' form).

    Each row of x0 (B, L) with n answer positions (`answer` (B, L) bool) masks k of them, k
    uniform on 1..n, the k chosen uniformly; the row's loss is Σ_masked CE / k, and rows are
    averaged. (This is the 1/t-weighted bound of `masked_sft_loss` with t = k / n drawn from the
    counts a canvas can hold: every count from one mask to all of them equally often, which
    trains a puzzle's late steps, one or two blanks left, as often as its first.)
    `edit_prob` (T2T training): each unmasked answer token is, with this probability, replaced by
    an answer token drawn from the batch (a wrong digit, most of the time), and every unmasked
    answer position also learns its clean token (`edit_term`): the model learns to repair a
    written cell. Draws from `generator`: k, the order of positions, then the edit noise."""
    B, L = x0.shape
    ans = answer_mask(x0, answer=answer)                                 # (B, L)
    n = ans.sum(-1)                                                      # (B,)
    k = (torch.rand(B, generator=generator, device=CPU) * n.cpu()).long() + 1   # (B,) uniform on 1..n
    noised = mask_tokens(x0, mask_id, count=k, where=ans, generator=generator)     # k masks per row
    masked, xt = noised.masked, noised.canvas
    filled = ans & ~masked
    if edit_prob:
        lo = int(torch.where(ans.any(0))[0][0])                          # first answer column
        xt = torch.where(filled, t2t_noise(x0, filled, edit_prob, 0.0, generator, lo), xt)
    logits = logits_fn(xt)                                               # (B, L, V)
    ce = F.cross_entropy(logits.transpose(1, 2).float(), x0, reduction="none")   # (B, L)
    loss = (torch.where(masked, ce, 0.0).sum(-1) / k.to(x0.device)).mean()   # Σ_masked CE / k per row
    if edit_prob and filled.any():
        loss = loss + edit_term(logits, x0, filled, 1.0)
    return loss


def draft_repair_loss(logits_fn, canvas: torch.Tensor, truth: torch.Tensor, written: torch.Tensor,
                      mask_id: int) -> torch.Tensor:
    """The editor's loss on the model's own drafts (`labkit.training.self_errors`): canvas (B, L) a
    recorded state of a draft, truth (B, L) the right tokens, written (B, L) the positions the rule
    writes. Each row's masks left by the draft (k of them) give Σ CE / k, as `masked_count_loss`
    weighs them (0 for a row the draft filled); every written token, right or wrong, learns its
    clean token (`edit_term`)."""
    masked = written & (canvas == mask_id)                              # (B, L)
    filled = written & ~masked
    logits = logits_fn(canvas)                                          # (B, L, V)
    ce = F.cross_entropy(logits.transpose(1, 2).float(), truth, reduction="none")   # (B, L)
    k = masked.sum(-1)                                                  # (B,)
    loss = (torch.where(masked, ce, 0.0).sum(-1) / k.clamp_min(1)).mean()
    if filled.any():
        loss = loss + edit_term(logits, truth, filled, 1.0)
    return loss


def ar_loss(logits_fn, x0: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy: positions 0..L-2 predict tokens 1..L-1."""
    logits = logits_fn(x0[:, :-1])                                       # (B, L-1, V)
    return F.cross_entropy(logits.flatten(0, 1).float(), x0[:, 1:].flatten())


def ar_sft_loss(logits_fn, x0: torch.Tensor, answer: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy on the `answer` (B, L) positions only (each predicted from the
    tokens before it), averaged per row over its answer tokens, then over rows: the causal
    twin's form of `masked_sft_loss`. Position 0 is never a target."""
    ans = answer_mask(x0, answer=answer)[:, 1:]                          # (B, L-1): targets 1..L-1
    logits = logits_fn(x0[:, :-1])                                       # (B, L-1, V)
    ce = F.cross_entropy(logits.transpose(1, 2).float(), x0[:, 1:], reduction="none")   # (B, L-1)
    return (torch.where(ans, ce, 0.0).sum(-1) / ans.sum(-1).clamp_min(1)).mean()


def block_distill_loss(logits_fn, x0: torch.Tensor, attn: torch.Tensor, prompt_len: int,
                       block_length: int, mask_id: int, *, eps: float = EPS,
                       generator: torch.Generator | None = None, t: torch.Tensor | None = None,
                       cap_weight: float = 0.0, edit_prob: float = 0.0, edit_stutter: float = 0.0,
                       edit_weight: float = 1.0) -> torch.Tensor:
    """x0 (B, P + G) teacher rows. Each row picks a block b and a ratio t ~ U(eps, 1) (stratified
    over the batch unless given): blocks before b stay written, block b is masked with probability
    t, later blocks are all masked, which is what semi-autoregressive decoding shows the model.
    Cross-entropy on the masked positions of block b, plus `cap_term` on them and, with edit_prob,
    written answer tokens swapped for `t2t_noise` (a neighbour's copy with probability
    edit_stutter) that every written answer position must undo (`edit_term`), so draft-and-edit's
    T2T proposals stay meaningful."""
    B, L = x0.shape
    G = L - prompt_len
    num_blocks = G // block_length
    dev = x0.device
    if t is None:
        t = stratified_t(B, eps, generator)                              # (B,)
    block = torch.randint(num_blocks, (B,), generator=generator, device=CPU).to(dev)  # (B,)
    pos_block = (torch.arange(L, device=dev) - prompt_len).div(block_length, rounding_mode="floor")  # (L,)
    current = pos_block[None, :] == block[:, None]                       # (B, L)
    later = pos_block[None, :] > block[:, None]
    masked = mask_tokens(x0, mask_id, rate=t, where=current, generator=generator).masked | later
    xt = torch.where(masked, torch.full_like(x0, mask_id), x0)
    written = ~masked & (pos_block[None, :] >= 0)                        # answer tokens on view
    if edit_prob:
        xt = torch.where(written, t2t_noise(x0, written, edit_prob, edit_stutter, generator, prompt_len), xt)
    logits = logits_fn(xt, attn)                                         # (B, L, V)
    target = masked & current
    logp = F.log_softmax(logits[target].float(), -1)                     # (M, V)
    loss = -logp.gather(-1, x0[target][:, None]).sum() / target.sum().clamp_min(1)
    if cap_weight:
        loss = loss + cap_term(logp, x0[target], cap_weight)
    if edit_prob:
        loss = loss + edit_term(logits, x0, written, edit_weight)
    return loss


def continuous_diffusion_loss(model, x0: torch.Tensor, schedule, generator: torch.Generator | None = None, *,
                              t: torch.Tensor | None = None, rounding_weight: float = 1.0,
                              t_min: float = EPS) -> torch.Tensor:
    """Diffusion-LM's loss for a continuous-diffusion LM (`labkit.models.continuous_net`).

    x0 (B, L) tokens → e0 = model.embed_tokens(x0) (B, L, D); t ~ U(t_min, 1) per row, stratified
    over the batch (`stratified_t`) unless given (B,); ᾱ = schedule(t) (a callable t → ᾱ(t),
    `labkit.training.schedules`); x_t = √ᾱ · e0 + √(1 − ᾱ) · ε with ε ~ N(0, I) drawn from
    `generator` after t; x0_hat = model(x_t, t) (B, L, D). Then

        loss = mean over B·L·D of (x0_hat − e0)²                          (the x0 regression)
             + rounding_weight · mean over B·L of −log softmax(x0_hat · Eᵀ)[x0]   (the rounding term)

    where E = model.embedding_matrix() (V, D): the rounding term is −log p(x0 | x0_hat), the
    cross-entropy of the logits through the embedding matrix against the clean tokens, which
    keeps the embeddings apart and teaches x0_hat to land near its own token. Gradients reach the
    embeddings through e0 and through E."""
    B, L = x0.shape
    if t is None:
        t = stratified_t(B, t_min, generator)                              # (B,)
    t = t.to(x0.device).float()
    e0 = model.embed_tokens(x0)                                            # (B, L, D)
    ab = torch.as_tensor(schedule(t.cpu())).to(x0.device).float()[:, None, None]   # (B, 1, 1)
    noise = torch.randn(e0.shape, generator=generator, device=CPU).to(e0.device)   # (B, L, D)
    x_t = ab.sqrt() * e0 + (1 - ab).sqrt() * noise
    x0_hat = model(x_t, t)                                                 # (B, L, D)
    mse = F.mse_loss(x0_hat.float(), e0.float())
    logits = model.logits(x0_hat)                                          # (B, L, V)
    rounding = F.cross_entropy(logits.flatten(0, 1).float(), x0.flatten())
    return mse + rounding_weight * rounding
