"""RLConfig: one policy-optimisation run's settings, checked when made (labkit.training.rl runs
it), and RL_RECIPES, the recipes of the committed RL models (`labkit train-rl --recipe NAME`)."""
from __future__ import annotations

from dataclasses import dataclass

from ..samplers import registry
from .rewards import REWARD_TASKS, valid_keywords
from .surrogates import CREDIT_ON, SURROGATES

__all__ = ["DECIDING_RULES", "EVAL_RULES", "RL_RECIPES", "RLConfig"]

DECIDING_RULES = ("speed", "quality", "draft_edit")   # the rules whose decisions can be drawn (DraftEdit)
# label → (registry rule, knobs): the greedy rules an evaluation can measure on held-out items
EVAL_RULES = {"low-confidence": ("low_confidence", {}), "threshold 0.9": ("threshold", {"threshold": 0.9}),
              "threshold 0.7": ("threshold", {"threshold": 0.7}), "factor 1.0": ("factor", {"factor": 1.0}),
              "S mode": ("speed", {}), "Q mode": ("quality", {}), "autoregressive": ("autoregressive", {})}


@dataclass(frozen=True)
class RLConfig:
    init_from: str = "tiny-sudoku"   # the starting policy (and KL reference): embedded name or folder
    task: str = "sudoku"             # whose training questions and exact reward
    rule: str = "speed"              # the rollout rule (registry name): its actions are what RL shapes
    temperature: float = 1.0         # rollout sampling temperature (> 0: the group must differ)
    surrogate: str = "elbo"          # one of SURROGATES
    questions: int = 16              # questions per step
    group: int = 8                   # rollouts per question (G)
    inner_steps: int = 4             # clipped updates per batch of rollouts
    clip: float = 0.2                # ε of the clipped ratio
    kl: float = 0.05                 # β: weight of the KL to the starting model
    lr: float = 1e-5
    steps: int = 200                 # rollout batches
    grad_clip: float = 1.0
    scale_rewards: bool = True       # divide by the group's std (GRPO); False: centre only (Dr. GRPO)
    elbo_samples: int = 1            # Monte-Carlo draws of the (block) ELBO per rollout
    t_min: float = 0.1               # masking ratios t ~ U(t_min, 1) for the ELBO surrogates
    kept_weight: float = 0.0         # ELBO: weight of log p of the kept answer tokens (what T2T reads)
    prompt_mask: float = 0.15        # one_pass: share of prompt tokens masked (d1)
    block_length: int = 0            # decoding block (0: the whole answer); block_elbo's block
    clues: tuple = (10, 16)          # sudoku: clue counts of the training puzzles
    keywords: tuple = ()             # task "keywords": the words the answers should hold (Shakespeare)
    gen_length: int = 32             # task "keywords": answer tokens (a task's answer sets its own length)
    eval_every: int = 0              # steps between greedy evaluations on held-out items (0: none)
    eval_items: int = 60             # held-out items per evaluation
    eval_rules: tuple = ()           # rule labels of EVAL_RULES evaluated (): the rollout rule and low-confidence
    clip_high: float = 0.0           # DAPO's clip-higher: the ratio's upper ε (0: ε = clip)
    dynamic_sampling: bool = False   # DAPO: keep only groups whose rewards differ, draw more until `questions` are kept
    max_draws: int = 4               # dynamic sampling: question batches drawn at most per step
    decision_temperature: float = 0.0   # κ > 0: the rollout rule (a draft-and-edit rule) commits and edits by
                                        # Bernoulli draws, the learned decoding policy the "decisions" surrogate shapes
    mix_rule: str = ""               # a second rollout rule (registry name): the second half of each draw's
                                     # questions decoded by it (decisions learned for both thresholds)
    credit_on: str = "all"           # decision_credit for "all" decisions or the "edits" of written tokens only
    decision_credit: float = 0.0     # "decisions": weight of each decision's own credit against the truth (+1 a
                                     # right call, −1 a wrong one) added to the rollout's advantage (dense reward)
    pass_penalty: float = 0.0        # λ: the advantage's reward is reward − λ · passes / written tokens (speed counts)
    control: bool = False            # the control run: each draw's rewards shuffled across its rollouts before the
                                     # advantages (the same rollouts, updates and compute, no reward signal)
    seed: int = 0
    ckpt_every: int = 10

    def __post_init__(self):
        if self.surrogate not in SURROGATES:
            raise ValueError(f"surrogate must be one of {', '.join(SURROGATES)}, got {self.surrogate!r}")
        if self.task not in REWARD_TASKS:
            raise ValueError(f"task must be one of {', '.join(REWARD_TASKS)}, got {self.task!r}")
        if (self.task == "keywords") != bool(self.keywords) or (self.keywords and not valid_keywords(self.keywords)):
            raise ValueError(f"keywords: one or more words of letters for task 'keywords', none for a task "
                             f"with its own answers; got task {self.task!r}, keywords {self.keywords!r}")
        for name in ("questions", "inner_steps", "steps", "elbo_samples", "ckpt_every", "eval_items", "gen_length",
                     "max_draws"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        if not isinstance(self.group, int) or self.group < 2:
            raise ValueError(f"group must be an integer >= 2 (advantages compare rollouts of one question), "
                             f"got {self.group!r}")
        if not (self.temperature > 0 or (self.temperature == 0 and self.decision_temperature > 0)):
            raise ValueError(f"temperature must be > 0 (greedy rollouts of one question are all alike) unless "
                             f"decision_temperature > 0 draws the decisions, got {self.temperature}")
        if self.mix_rule and (self.mix_rule not in registry.RULES or self.questions < 2
                              or (self.decision_temperature and self.mix_rule not in DECIDING_RULES)):
            allowed = ", ".join(DECIDING_RULES) if self.decision_temperature else "a registry name"
            raise ValueError(f"mix_rule must be a rule ({allowed}) and questions >= 2, got {self.mix_rule!r} "
                             f"with {self.questions} questions")
        if self.credit_on not in CREDIT_ON:
            raise ValueError(f"credit_on must be one of {', '.join(CREDIT_ON)}, got {self.credit_on!r}")
        if self.decision_credit and (self.surrogate != "decisions" or self.task == "keywords" or self.decision_credit < 0):
            raise ValueError(f"decision_credit must be >= 0, with surrogate 'decisions' on a task with answers, got "
                             f"{self.decision_credit} ({self.surrogate!r}, task {self.task!r})")
        if not self.decision_temperature >= 0 or not self.pass_penalty >= 0:
            raise ValueError(f"decision_temperature and pass_penalty must be >= 0, got {self.decision_temperature}, "
                             f"{self.pass_penalty}")
        if (self.surrogate == "decisions") != (self.decision_temperature > 0) or \
                (self.decision_temperature and self.rule not in DECIDING_RULES):
            raise ValueError(f"surrogate 'decisions' and decision_temperature > 0 go together, with a rule from "
                             f"{', '.join(DECIDING_RULES)}; got surrogate {self.surrogate!r}, decision_temperature "
                             f"{self.decision_temperature}, rule {self.rule!r}")
        for name, lo, hi in (("clip", 0.0, 1.0), ("t_min", 0.0, 1.0), ("prompt_mask", 0.0, 1.0)):
            v = getattr(self, name)
            if not (lo < v < hi or (name == "prompt_mask" and v == 0)):
                raise ValueError(f"{name} must be in ({lo}, {hi}), got {v}")
        if not (self.clip_high == 0 or self.clip <= self.clip_high < 10):
            raise ValueError(f"clip_high must be 0 (= clip) or in [clip, 10), got {self.clip_high}")
        bad = [r for r in self.eval_rules if r not in EVAL_RULES]
        if bad:
            raise ValueError(f"eval_rules must name rules from {', '.join(EVAL_RULES)}, got {bad}")
        for name in ("kl", "kept_weight", "eval_every", "block_length"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if not self.lr > 0 or not self.grad_clip > 0:
            raise ValueError(f"lr and grad_clip must be > 0, got {self.lr}, {self.grad_clip}")


# The committed RL models. `tiny-sudoku-rl`: tiny-sudoku's S- and Q-mode decisions learned (the
# "decisions" surrogate, Bernoulli commits / edits at kappa 0.1, greedy tokens) on hard puzzles, with a
# KL to the start strong enough (beta 0.2) to keep the confident rules where they were: the recipe
# the search of `labkit bench rl-sweep` found (its run "dec-mix-kl0.2"; docs/models.md, "The recipe
# search"). `tiny-sudoku-rl-elbo`: the first recipe (ESPO's ELBO of the sampled answer), kept as the
# documented control: it sharpened every confidence and the threshold rules collapsed. The AR twin
# learns under the same rewards with its exact likelihood.
RL_RECIPES = {
    "tiny-sudoku-rl": RLConfig(init_from="tiny-sudoku", rule="speed", temperature=0.0, surrogate="decisions",
                               decision_temperature=0.1, mix_rule="quality", questions=16, group=8, inner_steps=2,
                               clip=0.2, clip_high=0.28, dynamic_sampling=True, max_draws=4, clues=(10, 12),
                               scale_rewards=False, kl=0.2, lr=1e-4, steps=100, eval_every=25, eval_items=150,
                               eval_rules=("S mode", "threshold 0.9", "Q mode", "low-confidence")),
    "tiny-sudoku-rl-elbo": RLConfig(init_from="tiny-sudoku", rule="speed", temperature=0.7, surrogate="elbo",
                                    steps=400, lr=1e-5, kl=0.2, clues=(10, 13), eval_every=50, eval_items=150),
    "tiny-sudoku-ar-rl": RLConfig(init_from="tiny-sudoku-ar", rule="autoregressive", temperature=0.7,
                                  surrogate="exact", steps=300, lr=2e-5, kl=0.1, clues=(10, 13),
                                  eval_every=50, eval_items=150),
}
