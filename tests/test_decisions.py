"""The learned decoding policy: a draft-and-edit rule whose commits and edits are Bernoulli draws
(decision_temperature κ), and the "decisions" surrogate that replays their log-probabilities."""
import dataclasses

import pytest
import torch
import torch.nn.functional as F
from rl_common import SMALL, weights

import labkit as lk
from labkit.samplers import DraftEdit
from labkit.tasks import heldout
from labkit.training.rl import RLConfig, draw, estimate, policy_logits, rl_step, rollout, rollout_rule, setup_rl

DECIDE = dataclasses.replace(SMALL, surrogate="decisions", temperature=0.0, decision_temperature=0.1, pass_penalty=0.5)


@pytest.fixture(scope="module")
def drawn():
    lm = lk.load("tiny-sudoku")
    items = [i for i in heldout("sudoku") if i.group == "hard"][:6]
    rule = rollout_rule(DECIDE)
    return lm, rule, rollout(lm, items, rule, 1, 0), items


def test_the_decisions_are_seeded_draws_and_become_the_thresholds_as_kappa_shrinks(drawn):
    lm, rule, rolls, items = drawn
    assert isinstance(rule, DraftEdit) and rule.decision_temperature == 0.1 and rule.threshold == 0.5
    again = rollout(lm, items, rule, 1, 0)
    assert torch.equal(again.x, rolls.x)                                            # a seed, one decoding
    assert not torch.equal(rollout(lm, items, rule, 1, 1).trace.committed(), rolls.trace.committed()) or \
        len(rollout(lm, items, rule, 1, 1).trace) != len(rolls.trace)
    sharp = rollout(lm, items, dataclasses.replace(rule, decision_temperature=1e-6), 1, 0)
    tr = sharp.trace
    conf = torch.nan_to_num(tr.confidence().float(), nan=-1.0)
    before = tr.read().long()
    masked = (before == lm.mask_id) & (conf >= 0)
    assert torch.equal(tr.committed() & masked, masked & (conf > 0.5))            # the threshold, exactly
    with pytest.raises(ValueError, match="decision_temperature"):
        DraftEdit.speed(decision_temperature=-0.1)


def test_the_decisions_log_prob_equals_a_pass_by_pass_recomputation(drawn):
    lm, rule, rolls, _ = drawn
    N = len(rolls.x)
    d = draw("decisions", rolls.x, rolls.written, lm.mask_id, None, trace=rolls.trace, rows=torch.arange(N), rule=rule)
    with torch.no_grad():
        est = estimate(lambda c: policy_logits(lm, lm.net, c), d, rolls.x)
    total, decisions = torch.zeros(N, dtype=torch.float64), 0
    state = rolls.trace.init.long()
    for rec in rolls.trace.records:
        with torch.no_grad():
            p = F.softmax(policy_logits(lm, lm.net, state).float(), -1)              # (N, L, V)
        cand = rec.candidates.long()
        pc = p.gather(-1, cand[..., None]).squeeze(-1)                                # p of each proposal
        scored = ~torch.isnan(rec.confidence.float()) & rec.active[:, None]
        commit = scored & (state == lm.mask_id)
        edit = scored & (state != lm.mask_id) & (cand != state)
        acted = rec.committed | rec.edited
        sign = torch.where(acted, 1.0, -1.0)
        tau = torch.where(commit, rule.threshold, rule.editing_threshold)
        logp = F.logsigmoid(sign * (pc - tau) / rule.decision_temperature)
        total += torch.where(commit | edit, logp, 0.0).sum(-1).double()
        decisions += int((commit | edit).sum())
        state = rec.tokens.long()
    assert int(d.scored.sum()) == decisions > int(rolls.written.sum())              # holds count too
    assert est.sequence.double() * rolls.written.sum(-1) == pytest.approx(total, abs=1e-3)


def test_an_rl_step_on_the_decisions_moves_the_policy(tmp_path):
    run = setup_rl(DECIDE, tmp_path, log=lambda m: None)
    before = weights(run.lm.net)
    for _ in range(3):
        rec = rl_step(run)
        if rec.get("signal_rows"):
            break
    assert rec["signal_rows"] > 0 and not torch.equal(before, weights(run.lm.net))


def test_bad_settings_name_the_parameter():
    for bad in (dict(surrogate="decisions"), dict(decision_temperature=0.1),
                dict(surrogate="decisions", decision_temperature=0.1, rule="threshold"),
                dict(pass_penalty=-1.0), dict(temperature=0.0)):
        with pytest.raises(ValueError, match="decision_temperature|temperature must be"):
            RLConfig(**bad)


def test_each_decision_gets_its_credit_against_the_truth(drawn):
    lm, rule, rolls, _ = drawn
    from labkit.training.rollouts import truth
    right = truth(lm, rolls)
    P = rolls.trace.prompt_len
    assert [lm.decode(row) for row in right[:, P:].tolist()] == [it.answer for it in rolls.items]
    N = len(rolls.x)
    d = draw("decisions", rolls.x, rolls.written, lm.mask_id, None, trace=rolls.trace, rows=torch.arange(N), rule=rule,
             truth=right)
    good = (d.target == right[d.row]) == (d.decision > 0)                           # committed right or held wrong
    assert torch.equal(d.credit, torch.where(d.scored, torch.where(good, 1.0, -1.0), 0.0))
    assert (d.credit < 0).any() and (d.credit > 0).any()


def test_the_credit_weight_adds_to_each_tokens_advantage():
    from labkit.training.surrogates import PolicyLogp, grpo_loss
    d = type("D", (), {"surrogate": "decisions", "row": torch.tensor([0, 1]), "scored": torch.ones(2, 2, dtype=torch.bool),
                       "credit": torch.tensor([[1.0, -1.0], [1.0, 1.0]])})()
    zero = torch.zeros(2, 2)
    new = PolicyLogp(torch.full((2, 2), 0.1, requires_grad=True), None, None)
    loss, _ = grpo_loss(new, PolicyLogp(zero, None, None), torch.tensor([0.5, -0.5]), d, 0.2, credit_weight=2.0)
    loss.backward()
    # per token: -d/dlogp of min(ρA, clip(ρ)A) at ρ = e^0.1 (inside the band) is -ρ·A / (tokens of the row) / rows
    rho = float(torch.exp(torch.tensor(0.1)))
    want = -rho * torch.tensor([[0.5 + 2, 0.5 - 2], [-0.5 + 2, -0.5 + 2]]) / 2 / 2
    assert torch.allclose(new.token.grad, want, atol=1e-6)


def test_the_credit_can_be_given_to_the_edits_alone(drawn):
    lm, rule, rolls, _ = drawn
    from labkit.training.rollouts import truth
    N = len(rolls.x)
    kw = dict(trace=rolls.trace, rows=torch.arange(N), rule=rule, truth=truth(lm, rolls))
    every = draw("decisions", rolls.x, rolls.written, lm.mask_id, None, **kw)
    edits = draw("decisions", rolls.x, rolls.written, lm.mask_id, None, credit_on="edits", **kw)
    on_written = every.canvas != lm.mask_id                                          # decisions on written tokens
    assert torch.equal(edits.credit, torch.where(on_written, every.credit, 0.0))
    assert edits.credit.abs().sum() > 0 and edits.credit.abs().sum() < every.credit.abs().sum()
    with pytest.raises(ValueError, match="credit_on"):
        RLConfig(credit_on="commits")
