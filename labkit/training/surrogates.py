"""The likelihood surrogates of policy optimisation for diffusion LMs, and the clipped objective
(`labkit.training.rl` runs them). A diffusion LM's log p(answer) is intractable, so the ratio
π_θ / π_old is taken on an estimate ℓ_θ, drawn once per batch (`draw`) and evaluated under each
network (`estimate`):

- "one_pass"   d1's diffu-GRPO: the answer all masked, the prompt masked at `prompt_mask`, one
               forward pass; log p of each answer token (mean-field), token-level ratios;
- "elbo"       ESPO's sequence-level ELBO: answer tokens masked at t ~ U(t_min, 1), Σ log p / t over
               the masked ones (+ `kept_weight` · log p of the kept ones), per answer token;
- "block_elbo" LLaDA2.1's EBPO: the same bound per block of `block_length` answer tokens, the blocks
               before clean and those after masked, summed over blocks;
- "trajectory" TraceRL's: the rollout's own decoding replayed from its trace, log p of each token at
               the state where the rule committed or edited it (exact, no Monte Carlo), token-level
               ratios: what the reward scored is what the rule did;
- "decisions"  a learned decoding policy's: the Bernoulli commit / edit decisions of a stochastic
               draft-and-edit rule (decision_temperature κ), log σ(±(p − τ) / κ) of each, replayed
               from the trace: what RL shapes is when the rule holds and when it commits or edits;
- "exact"      an AR twin's Σ log p(y_i | y_<i), token-level ratios: the control.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .masking import mask_tokens, stratified_t

SURROGATES = ("one_pass", "elbo", "block_elbo", "trajectory", "decisions", "exact")
TOKEN_LEVEL = ("one_pass", "trajectory", "decisions", "exact")   # per-token ratios; the ELBOs one per sequence
REPLAYED = ("trajectory", "decisions")        # replayed from the rollouts' trace, nothing drawn


def policy_logits(lm, net, x: torch.Tensor) -> torch.Tensor:
    """x (M, L) → logits (M, L, V) of `net` called as `lm` calls its own network, with gradients."""
    pads = x == lm.pad_id                                               # left padding of free-text rows
    mask = (~pads).long() if bool(pads.any()) else None
    if lm.family is not None:
        return lm.family.forward(net, x, mask)
    out = net(input_ids=x, attention_mask=mask)
    return out.logits if hasattr(out, "logits") else out[0]


@dataclass
class Draw:
    """The noise of one surrogate estimate, fixed for a batch's inner updates: canvases the model
    reads and where log p of the rollout's tokens counts. M canvases, each of one rollout row."""
    surrogate: str
    canvas: torch.Tensor         # (M, L) what the model reads
    row: torch.Tensor            # (M,) the rollout row of each canvas
    weight: torch.Tensor         # (M, L) float: weight of log p(x_i | canvas) in the row's estimate
    scored: torch.Tensor         # (M, L) bool: positions read (the KL's and token ratios' positions)
    causal: bool = False         # logits at i predict token i + 1 (an AR twin)
    n: torch.Tensor = None       # (N,) answer tokens of each rollout row (the per-token normaliser)
    target: torch.Tensor | None = None   # (M, L) the tokens scored on each canvas (None: the rollout's final x)
    decision: torch.Tensor | None = None  # (M, L) "decisions": +1 committed / edited, −1 held, 0 no decision
    tau: torch.Tensor | None = None       # (M, L) "decisions": the threshold each decision was drawn against
    kappa: float = 0.0                    # "decisions": the rule's decision temperature
    credit: torch.Tensor | None = None    # (M, L) "decisions" with the truth: +1 a right call (a right proposal
                                          # committed or kept, a wrong one held), −1 a wrong call, 0 no decision

    def to(self, device: str | torch.device) -> "Draw":
        """The same draw on `device` (the network's)."""
        moved = {f: getattr(self, f).to(device) for f in ("canvas", "row", "weight", "scored", "n", "target", "decision",
                                                          "tau", "credit") if getattr(self, f) is not None}
        return dataclasses.replace(self, **moved)


def _answer_index(written: torch.Tensor) -> torch.Tensor:
    """(N, L) → (N, L) long: the i-th written position of a row holds i (−1 elsewhere)."""
    return torch.where(written, written.long().cumsum(-1) - 1, torch.full_like(written, -1, dtype=torch.long))


def trajectory_draw(trace, rows: torch.Tensor, written: torch.Tensor) -> Draw:
    """The "trajectory" surrogate's canvases: rollout rows `rows` (N,) of a decoding's `trace`,
    written (N, L) their answer positions. Each recorded pass s in which a row committed or edited
    gives that row one canvas, the state the model read (the canvas before s), scored at the
    positions the rule acted on at s, against the tokens it wrote there (a row that finished early,
    or passed without acting, costs nothing). M = the (pass, row) pairs with an action, pass-major.
    Deterministic: a trace is replayed, nothing is drawn."""
    rows = rows.cpu()
    tokens = trace.tokens()[:, rows].long()                               # (S, N, L) after each pass
    before = trace.read()[:, rows].long()                                 # (S, N, L) what each pass read
    acted = (trace.committed() | trace.edited())[:, rows] & trace.active()[:, rows, None]   # (S, N, L)
    s, r = acted.any(-1).nonzero(as_tuple=True)                           # (M,) each: pairs that acted
    dev = written.device
    before, acted, tokens = (t[s, r].to(dev) for t in (before, acted, tokens))   # (M, L) each
    return Draw("trajectory", before, r.to(dev), acted.float(), acted, n=written.sum(-1), target=tokens)


CREDIT_ON = ("all", "edits")    # which decisions get their own credit: every one, or the rewrites of written tokens only


def decisions_draw(trace, rows: torch.Tensor, written: torch.Tensor, rule, truth: torch.Tensor | None = None,
                   credit_on: str = "all") -> Draw:
    """The "decisions" surrogate's canvases: the Bernoulli commit / edit decisions of a stochastic
    draft-and-edit `rule` (decision_temperature κ > 0) replayed from `trace`'s rows `rows` (N,). At
    each pass, every position the rule scored decided: a mask committed (+1) or held (−1) against
    τ = rule.threshold, a written token whose proposal differed rewritten (+1) or kept (−1) against
    τ = rule.editing_threshold; its log-probability is log σ(±(p(proposal) − τ) / κ) under the
    network. One canvas per (pass, row) with a decision, pass-major. Given the rows' `truth` (N, L),
    each decision also gets its credit (Draw.credit): +1 when it committed or kept a right proposal
    or held a wrong one, −1 otherwise; `credit_on` "edits" gives it to the rewrite-or-keep decisions
    of written tokens only (what the threshold rules, which read masks only, never see)."""
    if credit_on not in CREDIT_ON:
        raise ValueError(f"credit_on must be one of {', '.join(CREDIT_ON)}, got {credit_on!r}")
    if not getattr(rule, "decision_temperature", 0):
        raise ValueError("surrogate 'decisions' replays a draft-and-edit rule with decision_temperature > 0, "
                         f"got {rule!r}")
    rows = rows.cpu()
    before = trace.read()[:, rows].long()                                 # (S, N, L) what each pass read
    cand = trace.candidates()[:, rows].long()                             # (S, N, L) the proposals
    scored = ~torch.isnan(trace.confidence()[:, rows].float()) & trace.active()[:, rows, None]
    commit = scored & (before == trace.mask_id)
    edit = scored & (before != trace.mask_id) & (cand != before)
    decided = commit | edit
    acted = (trace.committed() | trace.edited())[:, rows]
    s, r = decided.any(-1).nonzero(as_tuple=True)                         # (M,) pairs with a decision
    dev = written.device
    sign = torch.where(acted, 1.0, -1.0) * decided.float()               # (S, N, L)
    tau = torch.where(commit, float(rule.threshold), float(rule.editing_threshold))
    credit = None
    if truth is not None:
        right = cand == truth.cpu()[None]                                 # (S, N, L) the proposal is right
        credit = torch.where(right, 1.0, -1.0) * sign                     # a right call: +1, a wrong one: −1
        if credit_on == "edits":
            credit = credit * edit.float()
        credit = credit[s, r].to(dev)
    before, cand, decided, sign, tau = (t[s, r].to(dev) for t in (before, cand, decided, sign, tau))   # (M, L)
    return Draw("decisions", before, r.to(dev), decided.float(), decided, n=written.sum(-1), target=cand,
                decision=sign, tau=tau, kappa=float(rule.decision_temperature), credit=credit)


def draw(surrogate: str, x: torch.Tensor, written: torch.Tensor, mask_id: int, generator: torch.Generator, *,
         t_min: float = 0.1, samples: int = 1, kept_weight: float = 0.0, prompt_mask: float = 0.15,
         block_length: int = 0, trace=None, rows: torch.Tensor | None = None, rule=None,
         truth: torch.Tensor | None = None, credit_on: str = "all") -> Draw:
    """The canvases and weights of one estimate of `surrogate` for rollouts x (N, L), written (N, L);
    "trajectory" and "decisions" replay `trace`'s rows `rows` (N,) (the rollouts' decoding, by
    `rule` for decisions) and draw nothing."""
    N, L = x.shape
    dev = x.device
    n = written.sum(-1)                                                  # (N,)
    every = torch.arange(N, device=dev)
    if surrogate in REPLAYED:
        if trace is None or rows is None or len(rows) != N:
            raise ValueError(f"surrogate {surrogate!r} replays the rollouts' decoding: give their trace and the "
                             f"{N} trace rows of x (rows=)")
        return trajectory_draw(trace, rows, written) if surrogate == "trajectory" else \
            decisions_draw(trace, rows, written, rule, truth, credit_on)
    if surrogate == "exact":
        scored = torch.zeros_like(written)
        scored[:, :-1] = written[:, 1:]                                  # logits at i - 1 predict i
        return Draw(surrogate, x.clone(), every, written.float(), scored, causal=True, n=n)
    if surrogate == "one_pass":
        rate = torch.full((N,), prompt_mask, device=dev)
        prompt = mask_tokens(x, mask_id, rate=rate, where=~written, generator=generator).masked
        canvas = torch.where(written | prompt, torch.full_like(x, mask_id), x)
        return Draw(surrogate, canvas, every, written.float(), written.clone(), n=n)
    if surrogate not in ("elbo", "block_elbo"):
        raise ValueError(f"surrogate must be one of {', '.join(SURROGATES)}, got {surrogate!r}")
    idx = _answer_index(written)                                         # (N, L)
    K = 1
    if surrogate == "block_elbo" and block_length:
        K = int((n.max().item() + block_length - 1) // block_length)
    rows = every.repeat_interleave(K * samples)                         # (M,)
    block = torch.arange(K, device=dev).repeat_interleave(samples).repeat(N)   # (M,) the block each canvas scores
    t = stratified_t(len(rows), t_min, generator)                       # (M,)
    xi, wi, ii = x[rows], written[rows], idx[rows]                      # (M, L)
    pos_block = torch.where(wi, ii // (block_length if K > 1 else max(1, L)), -1)   # (M, L)
    current = wi & (pos_block == block[:, None])
    later = wi & (pos_block > block[:, None])
    noised = mask_tokens(xi, mask_id, rate=t, where=current, generator=generator)   # weight 1/t
    masked = noised.masked | later
    canvas = torch.where(masked, torch.full_like(xi, mask_id), xi)
    kept = current & ~masked
    weight = (noised.weight + kept_weight * kept.float()) / samples
    return Draw(surrogate, canvas, rows, weight, current & (masked | (kept_weight > 0)), n=n)


@dataclass
class PolicyLogp:
    """log p of the rollout's tokens under one network, read through one Draw."""
    token: torch.Tensor          # (M, L) log p of the rollout's token at each scored position (0 elsewhere)
    sequence: torch.Tensor       # (N,) the row's surrogate log-likelihood per answer token
    logp: torch.Tensor           # (M, L, V) the full log-softmax (for the KL)


def on_device(net: torch.nn.Module, d: Draw, x: torch.Tensor, adv: torch.Tensor) -> tuple[Draw, torch.Tensor, torch.Tensor]:
    """A draw, its rollouts x (N, L) and advantages (N,) on `net`'s device (the draw is made where the
    rollouts are, the CPU: one seed, the same noise whatever the network's device)."""
    dev = next(net.parameters()).device
    return d.to(dev), x.to(dev), adv.to(dev)


def estimate(logits_fn, d: Draw, x: torch.Tensor) -> PolicyLogp:
    """Evaluate a Draw under `logits_fn` (M, L) → (M, L, V): log p of the rollout rows' tokens."""
    logp = F.log_softmax(logits_fn(d.canvas).float(), -1)              # (M, L, V)
    target = x[d.row] if d.target is None else d.target                 # (M, L)
    if d.causal:
        tok = torch.zeros(target.shape, dtype=logp.dtype, device=logp.device)
        tok[:, 1:] = logp[:, :-1].gather(-1, target[:, 1:, None]).squeeze(-1)   # read at i - 1
        per = (tok * d.weight).sum(-1)
        token = torch.zeros_like(tok)
        token[:, :-1] = torch.where(d.scored[:, :-1], tok[:, 1:], 0.0)  # aligned with `scored`
    else:
        tok = logp.gather(-1, target[..., None]).squeeze(-1)            # (M, L)
        if d.decision is not None:                                      # log σ(±(p − τ) / κ) of each decision
            tok = F.logsigmoid(d.decision * (tok.exp() - d.tau) / d.kappa)
        per = (tok * d.weight).sum(-1)
        token = torch.where(d.scored, tok, 0.0)
    N = len(d.n)
    sequence = per.new_zeros(N).index_add(0, d.row, per) / d.n.clamp_min(1)
    return PolicyLogp(token, sequence, logp)


def kl_to_ref(new: torch.Tensor, ref: torch.Tensor, d: Draw) -> torch.Tensor:
    """(N,) exact KL(π_θ ‖ π_ref) over the vocabulary, averaged over each row's scored positions
    (new, ref: (M, L, V) log-probabilities on the same canvases)."""
    kl = (new.exp() * (new - ref)).sum(-1)                              # (M, L)
    per = torch.where(d.scored, kl, 0.0).sum(-1)
    count = d.scored.sum(-1).float()
    N = len(d.n)
    total = per.new_zeros(N).index_add(0, d.row, per)
    return total / per.new_zeros(N).index_add(0, d.row, count).clamp_min(1)


def clipped_objective(ratio: torch.Tensor, adv: torch.Tensor, clip: float, clip_high: float | None = None) -> torch.Tensor:
    """PPO's pessimistic surrogate: min(ρ·A, clip(ρ, 1 − ε, 1 + ε_high)·A), elementwise; ε_high =
    `clip_high` (DAPO's clip-higher, which lets a rare good action's probability grow further), ε
    when None."""
    hi = clip if clip_high is None else clip_high
    return torch.minimum(ratio * adv, ratio.clamp(1 - clip, 1 + hi) * adv)


def grpo_loss(new: PolicyLogp, old: PolicyLogp, adv: torch.Tensor, d: Draw, clip: float,
              kl: torch.Tensor | None = None, beta: float = 0.0,
              clip_high: float | None = None, credit_weight: float = 0.0) -> tuple[torch.Tensor, dict]:
    """The negated objective to minimise, and its parts: token-level ratios (one_pass, trajectory,
    exact: each token clipped on its own, as TraceRL and d1 do) averaged over each row's scored
    tokens on all its canvases, or one ratio per sequence (elbo, block_elbo); minus β · KL. `adv` (N,).
    The parts are detached 0-d tensors: the share of ratios outside [1 − ε, 1 + ε_high]
    (clip_fraction), the mean KL to the reference (kl) and the approximate KL from the batch's old
    policy, mean of (ρ − 1) − log ρ (approx_kl, Schulman's k3). With `credit_weight` w, a token-level
    draw's credit (the decisions' +1 / −1 against the truth) adds w · credit to each token's advantage."""
    hi = clip if clip_high is None else clip_high
    if d.surrogate in TOKEN_LEVEL:
        log_ratio = new.token - old.token                               # (M, L)
        tok_adv = adv[d.row][:, None]                                   # (M, 1)
        if credit_weight and d.credit is not None:
            tok_adv = tok_adv + credit_weight * d.credit                # (M, L)
        obj = clipped_objective(log_ratio.exp(), tok_adv, clip, hi)
        N = len(adv)                                                    # each row: the mean over its scored
        total = obj.new_zeros(N).index_add(0, d.row, torch.where(d.scored, obj, 0.0).sum(-1))   # tokens, on
        count = obj.new_zeros(N).index_add(0, d.row, d.scored.sum(-1).to(obj.dtype))          # all its canvases
        per_row = total / count.clamp_min(1)
        active = d.scored
    else:
        log_ratio = new.sequence - old.sequence                         # (N,)
        per_row = clipped_objective(log_ratio.exp(), adv, clip, hi)
        active = torch.ones_like(log_ratio, dtype=torch.bool)
    ratio = log_ratio.exp()
    loss = -per_row.mean()
    if kl is not None and beta:
        loss = loss + beta * kl.mean()
    clipped = ((ratio < 1 - clip) | (ratio > 1 + hi)) & active
    k3 = torch.where(active, (ratio - 1) - log_ratio, 0.0)
    parts = {"clip_fraction": (clipped.sum() / active.sum().clamp_min(1)).detach(),     # 0-d tensors on the
             "kl": kl.detach().mean() if kl is not None else loss.new_zeros(()),       # device: no sync here
             "approx_kl": (k3.sum() / active.sum().clamp_min(1)).detach()}
    return loss, parts


def concat_draws(draws: list[Draw]) -> Draw:
    """Draws of consecutive groups of rollout rows as one: the rows of the k-th draw follow those of
    the draws before it (their `row` indices shifted by the rows before)."""
    if len(draws) == 1:
        return draws[0]
    if len({(d.surrogate, d.causal, d.target is None, d.canvas.shape[1]) for d in draws}) != 1:
        raise ValueError("draws must share their surrogate, layout and canvas length to be joined")
    offsets = torch.tensor([0] + [len(d.n) for d in draws[:-1]]).cumsum(0).tolist()
    def cat(name):
        return None if getattr(draws[0], name) is None else torch.cat([getattr(d, name) for d in draws])
    return Draw(draws[0].surrogate, cat("canvas"), torch.cat([d.row + o for d, o in zip(draws, offsets)]), cat("weight"),
                cat("scored"), draws[0].causal, cat("n"), cat("target"), cat("decision"), cat("tau"), draws[0].kappa,
                cat("credit"))


# --- how noisy is each surrogate's gradient? ------------------------------------------------------

def policy_gradient(lm, x: torch.Tensor, written: torch.Tensor, adv: torch.Tensor, surrogate: str,
                    generator: torch.Generator, **draw_knobs) -> torch.Tensor:
    """The flattened gradient of the clipped objective at ratio 1 (the policy gradient
    mean(A · ∇ℓ)) from one draw of `surrogate`'s noise, on rollouts x (N, L) with advantages (N,): the
    draw made on the rollouts' device, it and they then moved to the network's (`on_device`)."""
    d, x, adv = on_device(lm.net, draw(surrogate, x, written, lm.mask_id, generator, **draw_knobs), x, adv)
    lm.net.zero_grad(set_to_none=True)
    new = estimate(lambda c: policy_logits(lm, lm.net, c), d, x)
    old = PolicyLogp(new.token.detach(), new.sequence.detach(), new.logp.detach())
    loss, _ = grpo_loss(new, old, adv, d, clip=0.2)
    loss.backward()
    grad = torch.cat([p.grad.flatten() for p in lm.net.parameters() if p.grad is not None])
    lm.net.zero_grad(set_to_none=True)
    return grad


def gradient_noise(lm, x: torch.Tensor, written: torch.Tensor, adv: torch.Tensor, surrogate: str, *,
                   reference_draws: int = 32, single_draws: int = 8, seed: int = 0, **draw_knobs) -> dict:
    """How far one draw's gradient is from the surrogate's own many-draw mean: the cosine of each of
    `single_draws` one-draw gradients to the mean of `reference_draws` other draws (1 for a noiseless
    estimator such as the exact AR log-likelihood), and the reference gradient itself."""
    g = torch.Generator().manual_seed(seed)
    ref = torch.stack([policy_gradient(lm, x, written, adv, surrogate, g, **draw_knobs)
                       for _ in range(reference_draws)]).mean(0)
    cos = [float(F.cosine_similarity(policy_gradient(lm, x, written, adv, surrogate, g, **draw_knobs), ref, dim=0))
           for _ in range(single_draws)]
    mean = sum(cos) / len(cos)
    sd = (sum((c - mean) ** 2 for c in cos) / max(1, len(cos) - 1)) ** 0.5
    return {"surrogate": surrogate, "cosine_mean": round(mean, 4), "cosine_sd": round(sd, 4),
            "reference_draws": reference_draws, "single_draws": single_draws, "reference": ref}


__all__ = ["CREDIT_ON", "REPLAYED", "SURROGATES", "TOKEN_LEVEL", "Draw", "PolicyLogp", "clipped_objective", "concat_draws",
           "decisions_draw", "draw", "estimate", "gradient_noise", "grpo_loss", "kl_to_ref", "on_device",
           "policy_gradient", "policy_logits", "trajectory_draw"]
