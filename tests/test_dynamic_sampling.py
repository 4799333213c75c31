"""DAPO's pieces in labkit.training.rl: dynamic sampling (only groups whose rewards differ, the batch
refilled from further draws), clip-higher, the approximate KL, and the per-step record."""
import dataclasses

import pytest
import torch
from rl_common import SMALL, rollouts_with_signal

from labkit.training.rl import (
    PolicyLogp,
    RLConfig,
    clipped_objective,
    concat_draws,
    draw,
    gather,
    grpo_loss,
    rl_step,
    setup_rl,
    step_questions,
)
from labkit.training.surrogates import trajectory_draw

DYNAMIC = dataclasses.replace(SMALL, surrogate="trajectory", dynamic_sampling=True, questions=3, group=4, max_draws=4,
                              clues=(10, 11))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return setup_rl(DYNAMIC, tmp_path_factory.mktemp("dyn"), log=lambda m: None)


def test_only_groups_whose_rewards_differ_are_kept_and_the_batch_is_refilled(run):
    cfg = run.cfg
    for step in range(3):
        run.step = step
        batch = gather(run)
        kept_groups = 0
        for k, (rolls, _, keep, rule, draw_k) in enumerate(batch.chunks):
            assert draw_k == k and rule is run.rule
            assert [it.prompt for it in rolls.items[::cfg.group]] == [q.prompt for q in step_questions(cfg, step, k)]
            r, kg = rolls.reward.view(-1, cfg.group), keep.view(-1, cfg.group)
            assert (kg.all(1) | ~kg.any(1)).all()                                 # whole groups
            assert (r[kg[:, 0]].max(1).values > r[kg[:, 0]].min(1).values).all()  # ... whose rewards differ
            kept_groups += int(kg[:, 0].sum())
            if k < len(batch.chunks) - 1:                                         # a draw short of the batch ...
                assert kept_groups < cfg.questions
        assert kept_groups == cfg.questions or len(batch.chunks) == cfg.max_draws  # ... is followed by another
        assert batch.kept == kept_groups * cfg.group <= cfg.questions * cfg.group
        assert batch.first == [batch.chunks[0][0]] and batch.drawn == len(batch.chunks) * cfg.questions * cfg.group
    run.step = 0


def test_without_dynamic_sampling_every_row_with_an_advantage_is_kept(tmp_path):
    plain = setup_rl(dataclasses.replace(SMALL, surrogate="trajectory"), tmp_path, log=lambda m: None)
    batch = gather(plain)
    (rolls, adv, keep, _, _), = batch.chunks
    assert torch.equal(keep, adv.abs() > 0)


def test_the_trajectory_draws_of_several_chunks_join_as_one(run):
    rolls, adv, keep = rollouts_with_signal(run)
    rows = keep.nonzero().squeeze(1)
    a = trajectory_draw(rolls.trace, rows[:2], rolls.written[rows[:2]])
    b = trajectory_draw(rolls.trace, rows[2:], rolls.written[rows[2:]])
    d = concat_draws([a, b])
    assert torch.equal(d.row, torch.cat([a.row, b.row + 2])) and torch.equal(d.n, torch.cat([a.n, b.n]))
    assert torch.equal(d.canvas, torch.cat([a.canvas, b.canvas])) and torch.equal(d.target, torch.cat([a.target, b.target]))
    whole = draw("trajectory", rolls.x[rows], rolls.written[rows], run.lm.mask_id, None, trace=rolls.trace, rows=rows)
    # the same rows' canvases, each pass's rows together in one draw and chunk by chunk in the other
    assert sorted(map(tuple, d.canvas[d.weight.sum(-1) > 0].tolist())) == \
        sorted(map(tuple, whole.canvas[whole.weight.sum(-1) > 0].tolist()))


def test_clip_higher_widens_only_the_upper_side():
    ratio = torch.tensor([0.5, 0.9, 1.1, 1.25, 1.5])
    adv = torch.ones(5)
    assert torch.allclose(clipped_objective(ratio, adv, 0.2, 0.28), torch.tensor([0.5, 0.9, 1.1, 1.25, 1.28]))
    assert torch.allclose(clipped_objective(ratio, -adv, 0.2, 0.28), torch.tensor([-0.8, -0.9, -1.1, -1.25, -1.5]))
    assert torch.equal(clipped_objective(ratio, adv, 0.2, None), clipped_objective(ratio, adv, 0.2))


def test_the_approximate_kl_and_clip_fraction_by_hand():
    old = PolicyLogp(None, torch.zeros(4), None)
    new = PolicyLogp(None, torch.log(torch.tensor([1.0, 1.1, 1.25, 0.7])), None)
    d = type("D", (), {"surrogate": "elbo"})()
    _, parts = grpo_loss(new, old, torch.ones(4), d, 0.2, clip_high=0.28)
    r = torch.tensor([1.0, 1.1, 1.25, 0.7])
    assert torch.isclose(parts["approx_kl"], ((r - 1) - r.log()).mean())
    assert float(parts["clip_fraction"]) == 0.25                                 # 0.7 only: 1.25 is inside 1.28
    _, parts = grpo_loss(new, old, torch.ones(4), d, 0.2)
    assert float(parts["clip_fraction"]) == 0.5


def test_a_step_records_the_signals_that_explain_it(run):
    rec = rl_step(run)
    assert {"reward", "solved", "signal_rows", "signal_share", "draws", "tpf", "clip_fraction", "kl", "approx_kl"} <= set(rec)
    assert 0 < rec["signal_share"] <= 1 and 1 <= rec["draws"] <= run.cfg.max_draws and rec["tpf"] > 1
    assert rec["approx_kl"] >= 0


def test_bad_settings_name_the_parameter():
    for bad, match in ((dict(clip_high=0.1), "clip_high"), (dict(max_draws=0), "max_draws"),
                       (dict(eval_rules=("threshold 0.95",)), "eval_rules")):
        with pytest.raises(ValueError, match=match):
            RLConfig(**bad)


def test_the_control_run_updates_on_shuffled_rewards(tmp_path):
    cfg = dataclasses.replace(SMALL, surrogate="trajectory", questions=4)
    real, control = (gather(setup_rl(dataclasses.replace(cfg, control=c), tmp_path / str(c), log=lambda m: None))
                     for c in (False, True))
    (r1, a1, *_), = real.chunks
    (r2, a2, *_), = control.chunks
    assert torch.equal(r1.reward, r2.reward)                           # the same rollouts and rewards ...
    assert not torch.equal(a1, a2)                                     # ... but advantages from shuffled ones
    assert torch.isclose(a2.view(-1, cfg.group).sum(1), torch.zeros(4), atol=1e-5).all()


def test_a_mixed_rule_decodes_the_second_half_of_each_draw(tmp_path):
    cfg = dataclasses.replace(SMALL, surrogate="decisions", temperature=0.0, decision_temperature=0.1, questions=4,
                              mix_rule="quality")
    run = setup_rl(cfg, tmp_path, log=lambda m: None)
    assert run.rule.threshold == 0.5 and run.mix.threshold == 0.7 and run.mix.decision_temperature == 0.1
    batch = gather(run)
    (a, *_, ra, _), (b, *_, rb, _) = batch.chunks
    qs = step_questions(cfg, 0)
    assert [it.prompt for it in a.items[::cfg.group]] == [q.prompt for q in qs[:2]] and ra is run.rule
    assert [it.prompt for it in b.items[::cfg.group]] == [q.prompt for q in qs[2:]] and rb is run.mix
    rec = rl_step(run)
    assert rec["step"] == 1
    with pytest.raises(ValueError, match="mix_rule"):
        dataclasses.replace(cfg, mix_rule="threshold")
