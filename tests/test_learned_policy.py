"""The learned unmasking policy (labkit.samplers.learned, labkit.training.learned_policy): a rule
whose weights make it a threshold rule, its decisions' log-probability replayed by hand, and a
short run that moves the weights and leaves the model alone."""
import dataclasses
import math

import pytest
import torch

import labkit as lk
from labkit.samplers import Threshold
from labkit.samplers.learned import LearnedCommit
from labkit.tasks import heldout
from labkit.training.learned_policy import PolicyConfig, decision_logp, train_policy
from labkit.training.rollouts import rollout


@pytest.fixture(scope="module")
def sd():
    return lk.load("tiny-sudoku")


def test_weights_on_the_logit_alone_make_a_threshold_rule(sd):
    items = [i for i in heldout("sudoku") if i.group == "hard"][:12]
    for tau in (0.7, 0.9):
        rule = LearnedCommit(weights=(1.0, 0.0, 0.0, -math.log(tau / (1 - tau))))
        a, b = rollout(sd, items, rule, 1, 0), rollout(sd, items, Threshold(threshold=tau), 1, 0)
        assert torch.equal(a.x, b.x) and torch.equal(a.nfe, b.nfe)
    with pytest.raises(ValueError, match="weights must be 4 numbers"):
        LearnedCommit(weights=(1.0, 2.0))


def test_the_decisions_log_prob_replays_what_the_rule_drew(sd):
    items = [i for i in heldout("sudoku") if i.group == "hard"][:4]
    rule = LearnedCommit(weights=(1.5, 1.0, -0.5, -2.0), stochastic=True)
    rolls = rollout(sd, items, rule, 2, 3)
    tr = rolls.trace
    w = torch.tensor(rule.weights)
    total = torch.zeros(len(rolls.x))
    state = tr.init.long()
    for rec in tr.records:
        masked = (state == sd.mask_id) & ~torch.isnan(rec.confidence.float()) & rec.active[:, None]
        q, forced = rule.commit_probability(rec.confidence, masked, int(tr.meta["block_length"]))
        p = torch.where(rec.committed, q, 1 - q)
        total += torch.where(masked & ~forced, torch.log(p), 0.0).sum(-1)
        state = rec.tokens.long()
    got = decision_logp(tr, torch.arange(len(rolls.x)), w)
    assert torch.allclose(got, total, atol=1e-4) and (got < 0).all()
    assert not torch.equal(rollout(sd, items, rule, 2, 4).x, rolls.x)                 # decisions are drawn


def test_a_short_run_moves_the_weights_and_not_the_model(sd):
    before = {k: v.clone() for k, v in sd.net.state_dict().items()}
    out = train_policy(dataclasses.replace(PolicyConfig(), steps=2, questions=4, group=4, eval_every=0, eval_items=6))
    assert len(out["history"]) == 2 and out["weights"] != list(PolicyConfig().weights)
    assert out["evals"][-1]["step"] == 2 and 0 <= out["evals"][-1]["accuracy"] <= 1
    assert all(torch.equal(before[k], v) for k, v in lk.load("tiny-sudoku").net.state_dict().items())
    with pytest.raises(ValueError, match="group"):
        PolicyConfig(group=1)


def test_the_control_run_shuffles_the_rewards_and_nothing_else():
    small = dict(steps=1, questions=4, group=4, eval_every=0, eval_items=6)
    a = train_policy(dataclasses.replace(PolicyConfig(), **small))
    b = train_policy(dataclasses.replace(PolicyConfig(), control=True, **small))
    ha, hb = a["history"][0], b["history"][0]
    assert {k: ha[k] for k in ("reward", "solved", "tpf")} == {k: hb[k] for k in ("reward", "solved", "tpf")}
    assert ha["weights"] != hb["weights"]                                # the same rollouts, another update
