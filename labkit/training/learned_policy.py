"""RL on the decoding rule itself: the weights of `labkit.samplers.learned.LearnedCommit` trained
by policy gradient, the model frozen (after Jazbec et al.: confidences in, Bernoulli unmask
decisions out, a reward of correctness and speed).

Each step: `questions` training-split questions decoded `group` times by the stochastic rule
(greedy tokens, drawn decisions), reward = the exact reward − pass_penalty · passes per written
token, advantages centred within each question's group; the log-probability of every drawn
decision replayed from the trace (the model is frozen, so the features the rule saw are the ones
its recorded confidences give back: `decision_features`); one Adam step on the weights of
−mean(advantage · Σ log π(decision)) per rollout. Greedy evaluation on held-out questions every
`eval_every` steps. The model never changes: every other rule is exactly what it was.

    train_policy(PolicyConfig(), log=print)   # → {"weights", "history", "evals"}
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..models.load import load
from ..samplers.learned import LearnedCommit, decision_features
from .rewards import training_question
from .rl import eval_items
from .rollouts import group_advantages, rollout
from .seeds import data_seed


@dataclass(frozen=True)
class PolicyConfig:
    init_from: str = "tiny-sudoku"   # the frozen model whose confidences the rule reads
    task: str = "sudoku"
    clues: tuple = (10, 12)          # training puzzles' clue counts (hard: room to learn)
    questions: int = 16
    group: int = 8
    steps: int = 150
    lr: float = 0.05
    pass_penalty: float = 1.0        # λ: reward − λ · passes / written tokens
    weights: tuple = LearnedCommit().weights   # the start (≈ a threshold of 0.9)
    eval_every: int = 25
    eval_items: int = 150
    seed: int = 0
    control: bool = False            # the control run: each batch's rewards shuffled across its rollouts

    def __post_init__(self):
        for name in ("questions", "steps", "eval_items"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {getattr(self, name)!r}")
        if not isinstance(self.group, int) or self.group < 2:
            raise ValueError(f"group must be an integer >= 2, got {self.group!r}")
        if not self.lr > 0 or self.pass_penalty < 0 or self.eval_every < 0:
            raise ValueError(f"lr must be > 0 and pass_penalty, eval_every >= 0, got {self.lr}, "
                             f"{self.pass_penalty}, {self.eval_every}")


def decision_logp(trace, rows: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """(len(rows),) Σ log π(decision) of each row's drawn decisions (the forced commit excluded),
    replayed from `trace` under weights w (4,)."""
    rows = rows.cpu()
    before = trace.read()[:, rows].long()                                # (S, N, L) what each pass read
    conf = trace.confidence()[:, rows].float()                           # (S, N, L) nan where not scored
    masked = (before == trace.mask_id) & ~torch.isnan(conf) & trace.active()[:, rows, None]
    f, forced = decision_features(conf, masked, int(trace.meta["block_length"]))
    q_logit = f @ w                                                      # (S, N, L)
    took = trace.committed()[:, rows]
    logp = F.logsigmoid(torch.where(took, q_logit, -q_logit))
    return torch.where(masked & ~forced, logp, 0.0).sum((0, 2))


def _evaluate(lm, rule: LearnedCommit, items) -> dict:
    r = rollout(lm, items, rule, 1, 0)
    return {"accuracy": round(float((r.reward >= 1).float().mean()), 4),
            "tpf": round(float(r.written.sum()) / max(1.0, float(r.nfe.sum())), 3)}


def train_policy(cfg: PolicyConfig = PolicyConfig(), log=None) -> dict:
    """The run: the weights after each step, each step's record and the greedy evaluations."""
    lm = load(cfg.init_from)
    lm.net.eval()
    w = torch.tensor(cfg.weights, dtype=torch.float32, requires_grad=True)
    opt = torch.optim.Adam([w], lr=cfg.lr)
    items = eval_items(cfg.task, cfg.eval_items)                       # a third of each level, the hard first
    history, evals = [], []
    for step in range(cfg.steps):
        if cfg.eval_every and step % cfg.eval_every == 0:
            evals.append({"step": step, **_evaluate(lm, LearnedCommit(weights=tuple(w.tolist())), items)})
            if log:
                log(f"step {step}: {evals[-1]} weights {[round(v, 3) for v in w.tolist()]}")
        rng = random.Random(f"policy-{cfg.seed}-{step}")
        questions = [training_question(cfg.task, rng, cfg.clues) for _ in range(cfg.questions)]
        rule = LearnedCommit(weights=tuple(w.tolist()), stochastic=True)
        with torch.inference_mode():
            rolls = rollout(lm, questions, rule, cfg.group, data_seed(cfg.seed, step))
        shaped = rolls.reward - cfg.pass_penalty * rolls.nfe.float() / rolls.written.sum(-1).clamp_min(1)
        if cfg.control:                                                 # the same compute, no reward signal
            shaped = shaped[torch.randperm(len(shaped), generator=torch.Generator().manual_seed(data_seed(cfg.seed, step)))]
        adv = group_advantages(shaped, cfg.group, scale=False)
        keep = adv != 0
        rec = {"step": step + 1, "reward": round(float(rolls.reward.mean()), 4),
               "solved": round(float((rolls.reward >= 1).float().mean()), 4),
               "tpf": round(float(rolls.written.sum()) / max(1.0, float(rolls.nfe.sum())), 3),
               "signal_share": round(float(keep.float().mean()), 4)}
        if keep.any():
            rows = keep.nonzero().squeeze(1)
            loss = -(adv[rows] * decision_logp(rolls.trace, rows, w)).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        rec["weights"] = [round(v, 4) for v in w.tolist()]
        history.append(rec)
    evals.append({"step": cfg.steps, **_evaluate(lm, LearnedCommit(weights=tuple(w.tolist())), items)})
    if log:
        log(f"step {cfg.steps}: {evals[-1]} weights {[round(v, 3) for v in w.tolist()]}")
    return {"weights": [round(v, 4) for v in w.tolist()], "history": history, "evals": evals}


__all__ = ["PolicyConfig", "decision_logp", "train_policy"]
