"""What the RL tests share: a small RL recipe on tiny-sudoku and rollouts that carry a signal."""
import torch

from labkit.training.rl import RLConfig, group_advantages, rollout, step_questions

SMALL = RLConfig(init_from="tiny-sudoku", rule="speed", temperature=1.0, surrogate="elbo", questions=2, group=4,
                 inner_steps=2, steps=2, clues=(10, 13), lr=1e-4, ckpt_every=100)


def rollouts_with_signal(run, tries: int = 20):
    """The first step's rollouts (on the CPU, as the trace keeps them) of a seed whose group rewards
    differ: (rollouts, advantages, keep), keep (N,) bool the rows with a signal."""
    cfg = run.cfg
    for seed in range(tries):
        rolls = rollout(run.lm, step_questions(cfg, seed), run.rule, cfg.group, seed)
        adv = group_advantages(rolls.reward, cfg.group)
        if bool((keep := adv != 0).any()):
            return rolls, adv, keep
    raise AssertionError(f"no rollout group with differing rewards in {tries} seeds")


def weights(net: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().flatten().clone() for p in net.parameters()])
