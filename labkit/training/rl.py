"""Policy optimisation with verifiable rewards for masked diffusion LMs (and their AR twins).

GRPO as the diffusion papers adapt it. Each step:

1. rollouts: Q training questions (`rewards.training_question`), each decoded G times by a rule of
   the registry at a sampling temperature (S mode included: its drafts and its edits are the
   actions), the exact reward of each answer (`labkit.training.rewards`);
2. advantages, normalised within each question's group: A = (r − mean_g r) / (std_g r + ε);
3. a likelihood surrogate ℓ_θ(y) of each rollout y (a diffusion LM's exact log p(y) is
   intractable), drawn once per batch and reused by the inner updates: one of
   `labkit.training.surrogates.SURROGATES` (d1's one pass, ESPO's ELBO, EBPO's block ELBO, TraceRL's
   trajectory replayed from the rollouts' trace, a stochastic rule's decisions replayed, or the AR twin's
   exact log p, described there);
4. `inner_steps` updates of the clipped objective
       J = mean over rows of min(ρ·A, clip(ρ, 1 − ε, 1 + ε)·A) − β · KL(π_θ ‖ π_ref),
   ρ = exp(ℓ_θ − ℓ_old) per token (one_pass, trajectory, decisions, exact) or per sequence (elbo, block_elbo); the KL
   is exact over the vocabulary at every position the surrogate reads, to the starting model.

    labkit train-rl --recipe tiny-sudoku-rl --out runs/tiny-sudoku-rl    # resumes from rl_ckpt.pt
    train_rl(RLConfig(init_from="tiny-sudoku", surrogate="elbo"), "runs/x")   # Python

Every draw (questions, rollouts, masks) is a function of (seed, step): a resumed run equals one
that never stopped.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..models.load import load, model_folder
from ..samplers import registry
from ..tasks import Item, exact_match, heldout
from . import trainer
from .prompts import sample_prompts
from .rewards import keyword_items, training_question
from .rl_config import DECIDING_RULES, EVAL_RULES, RL_RECIPES, RLConfig  # noqa: F401  (re-exported)
from .rollouts import ADV_EPS, Rollouts, decode_knobs, group_advantages, rollout, truth  # noqa: F401  (re-exported)
from .seeds import data_seed, noise_seed
from .surrogates import (  # noqa: F401  (re-exported: the RL API in one place)
    CREDIT_ON,
    REPLAYED,
    SURROGATES,
    Draw,
    PolicyLogp,
    clipped_objective,
    concat_draws,
    draw,
    estimate,
    gradient_noise,
    grpo_loss,
    kl_to_ref,
    on_device,
    policy_gradient,
    policy_logits,
)
from .trainer import RunState, same_config

CHECKPOINT = "rl_ckpt.pt"
MIX_SEED_OFFSET = 500         # the mixed rule's half of a draw: the run seed + this
DRAW_SEED_STRIDE = 1_000      # dynamic sampling: draw k of a step uses the run seed + k · this


# --- the run ----------------------------------------------------------------------------------

@dataclass(kw_only=True)
class RLRun(RunState):
    """One RL run: config, policy, reference, optimiser and rollout rule, and the state it carries
    (RunState: step, seconds, history of one dict per step) with its evaluations."""
    cfg: RLConfig
    out: Path
    lm: object                   # the policy (a labkit handle; its net is trained)
    ref: torch.nn.Module         # the starting network, frozen
    opt: torch.optim.Optimizer
    rule: object
    mix: object = None           # cfg.mix_rule's rule object (None: one rule)
    evals: list = field(default_factory=list)     # one dict per evaluation


def rollout_rule(cfg: RLConfig, name: str | None = None):
    """The registry rule cfg names (or `name`), sampling at cfg.temperature (and drawing its
    decisions at cfg.decision_temperature)."""
    rule = registry.rule(name or cfg.rule, temperature=cfg.temperature)
    return dataclasses.replace(rule, decision_temperature=cfg.decision_temperature) if cfg.decision_temperature else rule


def step_questions(cfg: RLConfig, step: int, draw: int = 0) -> list[Item]:
    """The `questions` training questions of a step (draw k > 0: dynamic sampling's further batches)."""
    rng = random.Random(f"rl-{cfg.seed}-{step}" + (f"-{draw}" if draw else ""))
    return [training_question(cfg.task, rng, tuple(cfg.clues), tuple(cfg.keywords)) for _ in range(cfg.questions)]


@dataclass
class Batch:
    """A step's rollouts kept for the update, in chunks (one per question batch drawn and rule)."""
    chunks: list                 # (Rollouts, adv (N,), keep (N,) bool, rule, draw) per part
    drawn: int                   # rollouts decoded

    @property
    def kept(self) -> int:
        return sum(int(c[2].sum()) for c in self.chunks)

    @property
    def first(self) -> list:
        """The rollouts of the step's own questions (draw 0): what the reward curve reads."""
        return [c[0] for c in self.chunks if c[4] == 0]


def gather(run: RLRun) -> Batch:
    """Rollouts of the step's questions and their advantages. Without dynamic sampling, every row
    whose advantage is not 0; with it (DAPO), only whole groups whose rewards differ, further question
    batches drawn (up to max_draws) until `questions` such groups are kept. A control run
    (cfg.control) takes its advantages from the draw's rewards shuffled across its rollouts."""
    cfg = run.cfg
    chunks, groups, drawn = [], 0, 0
    for k in range(cfg.max_draws if cfg.dynamic_sampling else 1):
        groups = _draw(run, k, chunks, groups)
        drawn = sum(len(c[0].reward) for c in chunks)
        if not cfg.dynamic_sampling or groups >= cfg.questions:
            break
    return Batch(chunks, drawn)


def _draw(run: RLRun, k: int, chunks: list, groups: int) -> int:
    """Draw k of a step: its questions decoded (the second half by cfg.mix_rule, if set), each part
    appended to `chunks` as (rollouts, advantages, kept rows, rule, k). Returns the groups kept so far."""
    cfg, lm = run.cfg, run.lm
    items = step_questions(cfg, run.step, k)
    half = len(items) // 2 if run.mix is not None else len(items)
    for part, rule in ((items[:half], run.rule), (items[half:], run.mix)):
        if not part:
            continue
        second = rule is run.mix and run.mix is not None
        seed = data_seed(cfg.seed + DRAW_SEED_STRIDE * k + MIX_SEED_OFFSET * second, run.step)
        rolls = rollout(lm, part, rule, cfg.group, seed, cfg.block_length, free_length(cfg))
        scored = rolls.reward
        if cfg.pass_penalty:                                            # speed counts: passes per written token
            scored = scored - cfg.pass_penalty * rolls.nfe.float() / rolls.written.sum(-1).clamp_min(1)
        if cfg.control:                                                 # rewards no longer belong to rows
            scored = scored[torch.randperm(len(scored), generator=torch.Generator().manual_seed(seed + 7))]
        adv = group_advantages(scored, cfg.group, cfg.scale_rewards)
        keep = adv.abs() > 0
        if cfg.dynamic_sampling:
            r = scored.view(-1, cfg.group)
            signal = (r.max(1).values > r.min(1).values)                # (Q,) groups whose rewards differ
            signal &= signal.cumsum(0) <= cfg.questions - groups        # no more than the batch needs
            keep = signal.repeat_interleave(cfg.group)
            groups += int(signal.sum())
        chunks.append((rolls, adv, keep, rule, k))
    return groups


def free_length(cfg: RLConfig) -> int:
    """The canvas length of a free-text task's answers (0: the task's answers set it)."""
    return cfg.gen_length if cfg.task == "keywords" else 0


def rl_step(run: RLRun) -> dict:
    """One batch: rollouts (the network in eval mode; `gather`), advantages, then the clipped updates
    on the network's device in train mode (`policy_update`). Returns the step's record: the mean
    reward and solve rate of the step's own questions, the share of rollouts with signal, the
    commits per pass of the rollouts, and the update's clip fraction, KL to the reference and
    approximate KL from the old policy."""
    cfg, lm = run.cfg, run.lm
    t0 = time.perf_counter()
    lm.net.eval()
    try:
        batch = gather(run)
    finally:
        lm.net.train()
    reward = torch.cat([r.reward for r in batch.first])
    written, nfe = sum(float(r.written.sum()) for r in batch.first), sum(float(r.nfe.sum()) for r in batch.first)
    rec = {"step": run.step + 1, "reward": round(float(reward.mean()), 4),
           "solved": round(float((reward >= 1).float().mean()), 4),
           "signal_rows": batch.kept, "signal_share": round(batch.kept / batch.drawn, 4),
           "draws": 1 + max(c[4] for c in batch.chunks), "tpf": round(written / max(1.0, nfe), 3),
           "rollout_seconds": round(time.perf_counter() - t0, 2)}
    if batch.kept:
        g = torch.Generator().manual_seed(noise_seed(cfg.seed, run.step))
        parts = [(r.x[k], r.written[k], a[k], r.trace, k.nonzero().squeeze(1),
                  truth(lm, r)[k] if cfg.decision_credit else None, rule) for r, a, k, rule, _ in batch.chunks if k.any()]
        x, written, adv = (torch.cat([p[i] for p in parts]) for i in range(3))
        loss, out = policy_update(run, x, written, adv, g, trace=[p[3] for p in parts], rows=[p[4] for p in parts],
                                  truths=[p[5] for p in parts] if cfg.decision_credit else None,
                                  rules=[p[6] for p in parts])
        rec.update(loss=round(float(loss), 5), clip_fraction=round(float(out["clip_fraction"]), 4),
                   kl=round(float(out["kl"]), 6), approx_kl=round(float(out["approx_kl"]), 6))
    run.step += 1
    rec["seconds"] = round(time.perf_counter() - t0, 2)
    return rec


def policy_update(run: RLRun, x: torch.Tensor, written: torch.Tensor, adv: torch.Tensor,
                  g: torch.Generator, trace=None, rows=None, truths=None, rules=None) -> tuple[torch.Tensor, dict]:
    """`inner_steps` clipped updates on rollouts x (N, L) with written (N, L) and advantages (N,).
    The surrogate's noise is drawn once from g on the rollouts' device (the CPU, where the trace keeps
    them: a seed gives the same draws whatever the network's device), then the draw, the rollouts and
    the advantages move to the network's device; the "trajectory" and "decisions" surrogates replay
    `trace`'s rows `rows` (N,) instead, or, given lists, each trace's rows in turn (x's rows in the
    same order); `truths` (a list like `rows`, of (n, L) right rows) gives the decisions their credit,
    `rules` the rule each trace was decoded by (default: the run's).
    Returns the last update's loss (detached) and parts."""
    cfg, lm = run.cfg, run.lm
    knobs = dict(t_min=cfg.t_min, samples=cfg.elbo_samples, kept_weight=cfg.kept_weight, prompt_mask=cfg.prompt_mask,
                 block_length=cfg.block_length, rule=run.rule, credit_on=cfg.credit_on)
    if isinstance(trace, (list, tuple)):
        if cfg.surrogate in REPLAYED:
            starts = torch.tensor([0] + [len(r) for r in rows]).cumsum(0).tolist()
            truths, rules = truths or [None] * len(rows), rules or [run.rule] * len(rows)
            knobs.pop("rule")
            d = concat_draws([draw(cfg.surrogate, x[a:b], written[a:b], lm.mask_id, g, trace=t, rows=r, truth=y, rule=u,
                                   **knobs) for t, r, y, u, a, b in zip(trace, rows, truths, rules, starts, starts[1:])])
        else:
            d = draw(cfg.surrogate, x, written, lm.mask_id, g, **knobs)
    else:
        d = draw(cfg.surrogate, x, written, lm.mask_id, g, trace=trace, rows=rows, **knobs)
    d, x, adv = on_device(lm.net, d, x, adv)
    with torch.no_grad():
        old = estimate(lambda c: policy_logits(lm, lm.net, c), d, x)
        ref = estimate(lambda c: policy_logits(lm, run.ref, c), d, x).logp if cfg.kl else None
    for _ in range(cfg.inner_steps):
        new = estimate(lambda c: policy_logits(lm, lm.net, c), d, x)
        kl = kl_to_ref(new.logp, ref, d) if ref is not None else None
        loss, parts = grpo_loss(new, old, adv, d, cfg.clip, kl, cfg.kl, cfg.clip_high or None, cfg.decision_credit)
        run.opt.zero_grad(set_to_none=True)
        trainer.optimizer_step(loss, lm.net, run.opt, cfg.grad_clip)
    return loss.detach(), parts


def evaluate_policy(lm, cfg: RLConfig, rules=None) -> dict:
    """Greedy exact-match accuracy and TPF (answer tokens per forward pass) on cfg.eval_items
    held-out items of cfg.task, under the rollout rule and, for a masked model, low-confidence one
    per step (the full matrix with intervals and edits: `labkit bench rl`)."""
    if cfg.task == "keywords":                # free text: sampled at the rollout temperature, judged by reward
        items = keyword_items(sample_prompts(cfg.eval_items), cfg.keywords)
        r = _decoded(lm, items, rollout_rule(cfg), cfg.block_length, cfg.gen_length)
        return {cfg.rule: {"accuracy": round(float((r.reward >= 2).float().mean()), 4),     # every keyword present
                           "reward": round(float(r.reward.mean()), 4), "example": r.texts[0]}}
    items = eval_items(cfg.task, cfg.eval_items)
    rules = rules or cfg.eval_rules or ([cfg.rule] + (["low_confidence"] if lm.kind != "causal" else []))
    out = {}
    for name in rules:
        rule, knobs = EVAL_RULES.get(name, (name, {}))
        r = _decoded(lm, items, registry.rule(rule, **knobs), cfg.block_length)
        right = sum(exact_match(t, it.answer) for t, it in zip(r.texts, items))
        out[name] = {"accuracy": round(right / len(items), 4),
                     "tpf": round(float(r.written.sum()) / max(1.0, float(r.nfe.sum())), 3)}
    return out


def _decoded(lm, items: list[Item], rule, block_length: int, gen_length: int = 0) -> Rollouts:
    """One decoding of each item with the network in eval mode (its mode before is restored)."""
    training = lm.net.training
    lm.net.eval()
    try:
        return rollout(lm, items, rule, 1, 0, block_length, gen_length)
    finally:
        lm.net.train(training)


def eval_items(task: str, n: int) -> list[Item]:
    """n held-out items spread over the task's groups (the Sudoku levels: the hard ones first)."""
    items = heldout(task)
    if task != "sudoku":
        return items[:n]
    by = {g: [i for i in items if i.group == g] for g in ("hard", "medium", "easy")}
    per = max(1, n // 3)
    return (by["hard"][:n - 2 * per] + by["medium"][:per] + by["easy"][:per])[:n]


def save_checkpoint(run: RLRun) -> None:
    """Policy, optimiser, run state and evaluations into out/rl_ckpt.pt (`trainer.save_checkpoint`)."""
    trainer.save_checkpoint(run.out / CHECKPOINT, run.lm.net, run.opt, run, run.cfg, evals=run.evals)


def setup_rl(cfg: RLConfig, out: str | Path, device: str = "cpu", log=print) -> RLRun:
    """The policy (loaded on `device`), its frozen reference, the optimiser, and a resumed checkpoint."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    lm = load(cfg.init_from, device=device)
    if cfg.surrogate == "exact" and lm.kind != "causal":
        raise ValueError(f"surrogate='exact' needs an AR model (its log p is exact); {cfg.init_from} is masked: "
                         f"use one_pass, elbo or block_elbo")
    if cfg.surrogate != "exact" and lm.kind == "causal":
        raise ValueError(f"{cfg.init_from} is an AR model: its exact likelihood is known, use surrogate='exact'")
    ref = copy.deepcopy(lm.net).eval()
    for p in ref.parameters():
        p.requires_grad_(False)
    opt = torch.optim.AdamW(lm.net.parameters(), lr=cfg.lr, betas=(0.9, 0.99), weight_decay=0.0)
    run = RLRun(cfg=cfg, out=out, lm=lm, ref=ref, opt=opt, rule=rollout_rule(cfg),
                mix=rollout_rule(cfg, cfg.mix_rule) if cfg.mix_rule else None)
    ckpt = trainer.resume(out / CHECKPOINT, lm.net, opt, run, cfg, device, log)
    if ckpt is not None:
        run.evals = ckpt["evals"]
    return run


def finish_rl(run: RLRun) -> Path:
    """The trained policy as a model folder: weights, config, the tokenizer of the starting model,
    and training.json (the starting model's record, with an "rl" section for this run)."""
    src = model_folder(run.cfg.init_from)
    base = json.loads((src / "training.json").read_text()) if (src / "training.json").is_file() else {}
    base["rl"] = {"config": dataclasses.asdict(run.cfg), "train_seconds": round(run.seconds, 1),
                  "history": run.history, "evals": run.evals}
    return trainer.save_model(run.lm.net.cpu(), run.out, base, tokenizer_from=src)


def train_rl(cfg: RLConfig, out: str | Path, *, progress: bool = True, log=print, device: str = "cpu") -> Path:
    """Run cfg into `out` (resuming from out/rl_ckpt.pt); returns the model folder (labkit.load(out))."""
    run = setup_rl(cfg, out, device, log)
    if cfg.eval_every and not run.evals:
        run.evals.append({"step": 0, **evaluate_policy(run.lm, cfg)})
        log(f"step 0: {run.evals[-1]}")

    def after(rec: dict) -> None:
        run.history.append(rec)
        if cfg.eval_every and run.step % cfg.eval_every == 0:
            run.evals.append({"step": run.step, **evaluate_policy(run.lm, cfg)})
            log(f"step {run.step}: {run.evals[-1]}")

    trainer.fit(run, cfg.steps, lambda: rl_step(run), after=after, checkpoint=lambda: save_checkpoint(run),
                ckpt_every=cfg.ckpt_every, progress=progress, desc=f"rl {cfg.surrogate}",
                postfix=lambda rec: {"reward": f"{rec['reward']:.3f}", "solved": f"{rec['solved']:.2f}"})
    return finish_rl(run)


__all__ = ["ADV_EPS", "Batch", "CHECKPOINT", "clipped_objective", "concat_draws", "DECIDING_RULES", "decode_knobs", "Draw",
           "draw", "DRAW_SEED_STRIDE", "estimate", "eval_items", "EVAL_RULES", "evaluate_policy", "finish_rl",
           "free_length", "gather", "gradient_noise", "group_advantages", "grpo_loss", "kl_to_ref", "MIX_SEED_OFFSET",
           "on_device", "policy_gradient", "policy_logits", "policy_update", "PolicyLogp", "RL_RECIPES", "rl_step",
           "RLConfig", "RLRun", "rollout", "rollout_rule", "Rollouts", "same_config", "save_checkpoint", "setup_rl",
           "step_questions", "SURROGATES", "train_rl"]
