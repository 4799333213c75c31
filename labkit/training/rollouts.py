"""Rollouts for policy optimisation (`labkit.training.rl`): each question decoded `group` times by a
rule, scored by its exact reward (`labkit.training.rewards`), with the decoding's trace kept (the
replayed surrogates read it), and the group-relative advantages."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..decode import generate
from ..tasks import Item
from .rewards import rewards

ADV_EPS = 1e-4


@dataclass
class Rollouts:
    """G decodings of each question: rows question-major (question q's rollouts are q·G .. q·G+G−1)."""
    items: list[Item]            # (N,) the question of each row
    x: torch.Tensor              # (N, L) final rows: prompt and answer canvas
    written: torch.Tensor        # (N, L) bool: the positions the rule wrote (masks at the start)
    texts: list[str]             # (N,) the answers
    reward: torch.Tensor         # (N,) exact rewards
    nfe: torch.Tensor            # (N,) forward passes each row took
    trace: object = None         # the decoding's Trace


def decode_knobs(lm, item: Item, block_length: int = 0, gen_length: int = 0) -> dict:
    """gen_length, block_length and steps for one question: a canvas of exactly its answer's
    length (or `gen_length` for free text), one block unless block_length divides it, one step
    per answer token."""
    n = gen_length or len(lm.encode(item.answer))
    block = block_length or n
    if n % block:
        raise ValueError(f"block_length must divide the answer length {n}, got {block_length}")
    return dict(gen_length=n, block_length=block, steps=n)


def rollout(lm, items: list[Item], rule, group: int, seed: int, block_length: int = 0,
            gen_length: int = 0) -> Rollouts:
    """Decode each item `group` times with `rule` (a rule object or name) and score the answers.
    A task's questions share one layout; free-text questions (`gen_length` tokens each) may have
    prompts of any length (left-padded). The rows come back on the CPU, as the trace keeps them."""
    rows = [it for it in items for _ in range(group)]
    shapes = {(len(lm.encode(it.prompt)), len(lm.encode(it.answer))) for it in items}
    if len(shapes) != 1 and not gen_length:
        raise ValueError(f"the questions of one batch must share prompt and answer lengths, got {sorted(shapes)}")
    knobs = decode_knobs(lm, items[0], block_length, gen_length)
    with torch.inference_mode():
        out = generate(lm, [it.prompt for it in rows], rule, seed=seed, **knobs)
    trace = out.trace
    x = trace.final.clone().long()
    written = trace.init == lm.mask_id
    r = torch.tensor(rewards(out.texts, rows), dtype=torch.float32)
    return Rollouts(rows, x, written.clone(), list(out.texts), r, trace.row_nfe().clone(), trace)


def group_advantages(reward: torch.Tensor, group: int, scale: bool = True, eps: float = ADV_EPS) -> torch.Tensor:
    """(N,) rewards, question-major in groups of `group` → (N,) advantages: each reward minus its
    group's mean, divided by the group's standard deviation (+ eps) when `scale`. A group whose
    rollouts all earned the same reward gets advantage 0: it carries no signal."""
    if reward.dim() != 1 or reward.numel() % group:
        raise ValueError(f"reward must be (N,) with N a multiple of group={group}, got {tuple(reward.shape)}")
    r = reward.view(-1, group).float()
    a = r - r.mean(1, keepdim=True)
    if scale:
        a = a / (r.std(1, keepdim=True) + eps)
    return a.reshape(-1)


def truth(lm, rolls: Rollouts) -> torch.Tensor:
    """(N, L) the rows as the right answers would fill them: the canvas after the prompt holds each
    question's answer (a task's answers fill their canvas exactly; free text has no truth)."""
    P = rolls.trace.prompt_len
    answers = [lm.encode(it.answer) for it in rolls.items]
    if any(len(a) != rolls.x.shape[1] - P for a in answers) or any(it.task == "keywords" for it in rolls.items):
        raise ValueError("truth needs questions whose answers fill the canvas (a task's), not free text")
    out = rolls.x.clone()
    out[:, P:] = torch.tensor(answers, dtype=torch.long)
    return out


__all__ = ["ADV_EPS", "Rollouts", "decode_knobs", "group_advantages", "rollout", "truth"]
