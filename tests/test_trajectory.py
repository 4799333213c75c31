"""The "trajectory" surrogate (TraceRL's): a rollout's own decoding replayed from its trace.

On a greedy S-mode decoding of tiny-sudoku (commits and edits both): replaying each recorded pass
from the state it read gives back the tokens the rule wrote there (the rule at temperature 0 takes
the argmax, so the replay is the decoding), and the estimate's log p equals log p recomputed pass by
pass with one forward each; then RL updates with the surrogate."""
import dataclasses

import pytest
import torch
import torch.nn.functional as F
from rl_common import SMALL as BASE
from rl_common import rollouts_with_signal, weights

import labkit as lk
from labkit.samplers import registry
from labkit.tasks import heldout
from labkit.training.rl import (
    draw,
    estimate,
    policy_logits,
    policy_update,
    rl_step,
    rollout,
    setup_rl,
)

SMALL = dataclasses.replace(BASE, surrogate="trajectory")


@pytest.fixture(scope="module")
def greedy():
    """tiny-sudoku's S mode, greedy, on 6 held-out puzzles (read only: the surrogate's tests)."""
    lm = lk.load("tiny-sudoku")
    items = [i for i in heldout("sudoku") if i.group == "hard"][:6]
    rolls = rollout(lm, items, registry.rule("speed"), 1, 0)
    assert bool(rolls.trace.edited().any()), "the fixture needs a decoding with edits"
    return lm, rolls


def replay(lm, rolls):
    """Per recorded pass: the state it read, its actions and the tokens written, and the model's
    argmax and log-softmax at that state (one forward per pass)."""
    tr = rolls.trace
    state = tr.init.long()
    for rec in tr.records:
        with torch.no_grad():
            logp = F.log_softmax(policy_logits(lm, lm.net, state).float(), -1)    # (N, L, V)
        acted = (rec.committed | rec.edited) & (rec.active[:, None] if rec.active is not None else True)
        yield state, acted, rec.tokens.long(), logp
        state = rec.tokens.long()


def test_replaying_the_trace_gives_the_same_commits_and_edits(greedy):
    lm, rolls = greedy
    commits = edits = 0
    for state, acted, written, logp in replay(lm, rolls):
        best = logp.argmax(-1)
        assert torch.equal(best[acted], written[acted]), "the rule wrote its argmax at every action"
        commits += int((acted & (state == lm.mask_id)).sum())
        edits += int((acted & (state != lm.mask_id)).sum())
    assert commits == int(rolls.trace.committed().sum()) and edits == int(rolls.trace.edited().sum()) > 0


def test_the_trajectory_log_p_equals_a_pass_by_pass_recomputation(greedy):
    lm, rolls = greedy
    N = len(rolls.x)
    d = draw("trajectory", rolls.x, rolls.written, lm.mask_id, torch.Generator(), trace=rolls.trace,
             rows=torch.arange(N))
    with torch.no_grad():
        est = estimate(lambda c: policy_logits(lm, lm.net, c), d, rolls.x)
    total = torch.zeros(N, dtype=torch.float64)
    actions = 0
    for _, acted, written, logp in replay(lm, rolls):
        tok = logp.gather(-1, written[..., None]).squeeze(-1)                        # (N, L)
        total += torch.where(acted, tok, 0.0).sum(-1).double()
        actions += int(acted.sum())
    assert int(d.scored.sum()) == actions
    assert est.sequence.double() * rolls.written.sum(-1) == pytest.approx(total, abs=1e-4)


def test_a_subset_of_rows_replays_only_those_rows(greedy):
    lm, rolls = greedy
    rows = torch.tensor([4, 1])
    sub = draw("trajectory", rolls.x[rows], rolls.written[rows], lm.mask_id, torch.Generator(), trace=rolls.trace,
               rows=rows)
    whole = draw("trajectory", rolls.x, rolls.written, lm.mask_id, torch.Generator(), trace=rolls.trace,
                 rows=torch.arange(len(rolls.x)))
    for j, r in enumerate(rows.tolist()):
        assert int(sub.scored[sub.row == j].sum()) == int(whole.scored[whole.row == r].sum())
    with pytest.raises(ValueError, match="trace"):
        draw("trajectory", rolls.x, rolls.written, lm.mask_id, torch.Generator())


def test_the_rl_update_with_the_trajectory_surrogate_moves_the_policy(tmp_path):
    run = setup_rl(SMALL, tmp_path / "a", log=lambda m: None)
    rolls, adv, keep = rollouts_with_signal(run)
    before = weights(run.lm.net)
    loss, parts = policy_update(run, rolls.x[keep], rolls.written[keep], adv[keep], torch.Generator(),
                                trace=rolls.trace, rows=keep.nonzero().squeeze(1))
    assert torch.isfinite(loss) and 0 <= float(parts["clip_fraction"]) <= 1
    assert not torch.equal(before, weights(run.lm.net))
    rec = rl_step(run)                                      # the step wires trace and rows through
    assert rec["step"] == 1
    with pytest.raises(ValueError, match="AR model"):
        setup_rl(dataclasses.replace(SMALL, init_from="tiny-sudoku-ar", rule="autoregressive"), tmp_path / "b")
