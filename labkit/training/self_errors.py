"""Self-error editing data: the model's own drafts as the inputs of its T2T (editing) stage.

Draft-and-edit (LLaDA2.1's S and Q modes) repairs the cells its own draft got wrong, but a T2T stage
trained on random corruptions (`losses.t2t_noise`) sees other errors: a digit swapped anywhere,
uniformly, where the draft's errors are the confident, plausible guesses of a parallel commit
("Self-Generated Error Training for Token Editing", arXiv 2606.17175, reports this mismatch for
LLaDA2.1's editor). Here the drafting model decodes training-split questions with draft rules
(threshold 0.5, no edits: the errors parallel commits make; and S mode: the states its edits start
from), and every recorded state of each decoding is kept with the truth:

    canvas (N, L)   a state the rule reached: its committed tokens (right or wrong) and masks
    truth (N, L)    the right tokens
    written (N, L)  the positions the rule writes (the question's blanks)

`losses.draft_repair_loss` trains on them: cross-entropy at the masks the draft left, and the clean
token at every written position (copy the right ones, correct the wrong ones). `labkit.training.loop`
mixes a share of such rows into each batch (`TrainConfig.self_error_share`).

Only training-split questions are drafted (`rewards.training_question`); `build_drafts` refuses any
held-out one.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import torch

from ..samplers import registry
from ..tasks import Item, heldout, is_heldout
from .recipes import DRAFT_RULES
from .rewards import training_question

DRAFT_BATCH = 256


@dataclass
class Drafts:
    canvas: torch.Tensor         # (N, L) long: a recorded state of a draft (committed tokens and masks)
    truth: torch.Tensor          # (N, L) long: the right tokens
    written: torch.Tensor        # (N, L) bool: the positions the rule writes
    rule: torch.Tensor           # (N,) long: index into `rules` of the rule that reached the state
    rules: tuple                 # the draft rules' labels

    def __len__(self) -> int:
        return len(self.canvas)

    def wrong(self, mask_id: int) -> torch.Tensor:
        """(N, L) bool: written positions holding a wrong token (the errors to repair)."""
        return self.written & (self.canvas != mask_id) & (self.canvas != self.truth)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        tmp = path.with_suffix(".tmp")
        torch.save({"canvas": self.canvas, "truth": self.truth, "written": self.written, "rule": self.rule,
                    "rules": list(self.rules)}, tmp)
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path: str | Path) -> "Drafts":
        d = torch.load(path, weights_only=True)
        return cls(d["canvas"], d["truth"], d["written"], d["rule"], tuple(d["rules"]))


def training_items(task: str, n: int, seed: int = 0, clues: tuple[int, int] = (10, 16)) -> list[Item]:
    """n training-split questions of `task` (a Sudoku's clue count in `clues`), drawn from `seed`."""
    rng = random.Random(f"self-errors-{task}-{seed}")
    return [training_question(task, rng, clues) for _ in range(n)]


def check_training(items: list[Item]) -> None:
    """Raise if any item is a held-out question (or, for Sudoku, has a held-out grid)."""
    by_task = {it.task for it in items}
    held = {(it.task, it.prompt) for task in by_task for it in heldout(task)}
    for it in items:
        if (it.task, it.prompt) in held or (it.task == "sudoku" and is_heldout(it.answer)):
            raise ValueError(f"items must be training-split questions; {it.prompt!r} is held out")


def _states(trace, truth: torch.Tensor, written: torch.Tensor, mask_id: int) -> torch.Tensor:
    """(S, B) bool: the recorded states (after each step) with at least one written token that are
    not the draft's last state repeated (a row that finished early keeps its canvas)."""
    tokens = trace.tokens()                                          # (S, B, L)
    filled = (tokens != mask_id) & written[None]                     # (S, B, L)
    keep = filled.any(-1)                                            # (S, B)
    same = torch.zeros_like(keep)
    same[1:] = (tokens[1:] == tokens[:-1]).all(-1)
    return keep & ~same


def build_drafts(lm, items: list[Item], rules=("threshold 0.5", "S mode"), seed: int = 0,
                 batch: int = DRAFT_BATCH) -> Drafts:
    """Decode training-split `items` greedily with each draft rule (labels of DRAFT_RULES) and keep
    every recorded state of every decoding with the truth. The questions of one call share a layout
    (one task). Raises on a held-out question."""
    from .rl import rollout  # rl imports the training stack
    unknown = [r for r in rules if r not in DRAFT_RULES]
    if unknown or not rules:
        raise ValueError(f"rules must name draft rules from {', '.join(DRAFT_RULES)}, got {list(rules)!r}")
    if not items:
        raise ValueError("items must hold at least one question")
    check_training(items)
    parts = {k: [] for k in ("canvas", "truth", "written", "rule")}
    for r_i, label in enumerate(rules):
        name, knobs = DRAFT_RULES[label]
        rule = registry.rule(name, **knobs)
        for start in range(0, len(items), batch):
            chunk = items[start:start + batch]
            rolls = rollout(lm, chunk, rule, 1, seed + start)
            P = rolls.trace.prompt_len
            answer = torch.tensor([lm.encode(it.answer) for it in chunk], dtype=torch.long)   # (B, L - P)
            if answer.shape[1] != rolls.x.shape[1] - P:
                raise ValueError(f"an answer of {answer.shape[1]} tokens does not fill the canvas of "
                                 f"{rolls.x.shape[1] - P}")
            truth = rolls.trace.init.long().clone()
            truth[:, P:] = answer
            keep = _states(rolls.trace, truth, rolls.written, lm.mask_id)   # (S, B)
            s, b = keep.nonzero(as_tuple=True)
            parts["canvas"].append(rolls.trace.tokens().long()[s, b])
            parts["truth"].append(truth[b])
            parts["written"].append(rolls.written[b])
            parts["rule"].append(torch.full((len(b),), r_i, dtype=torch.long))
    return Drafts(*(torch.cat(parts[k]) for k in ("canvas", "truth", "written", "rule")), tuple(rules))


def draft_summary(drafts: Drafts, mask_id: int) -> dict:
    """Per rule: states, share of written tokens filled, share of the filled ones that are wrong."""
    out = {}
    for r_i, label in enumerate(drafts.rules):
        sel = drafts.rule == r_i
        filled = drafts.written[sel] & (drafts.canvas[sel] != mask_id)
        wrong = drafts.wrong(mask_id)[sel]
        out[label] = {"states": int(sel.sum()), "filled": round(float(filled.sum() / drafts.written[sel].sum()), 4),
                      "wrong_of_filled": round(float(wrong.sum() / filled.sum().clamp_min(1)), 4)}
    return out


__all__ = ["DRAFT_BATCH", "DRAFT_RULES", "Drafts", "build_drafts", "check_training", "draft_summary", "training_items"]
