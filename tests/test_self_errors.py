"""The editor's own-error data (labkit.training.self_errors) and its loss: drafts of training-split
questions only, each state one the rule really reached, the loss by hand, and a run that trains on it."""
import dataclasses

import pytest
import torch
import torch.nn.functional as F

from labkit.models.load import load
from labkit.samplers import registry
from labkit.tasks import heldout, is_heldout
from labkit.training.loop import DRAFTS, setup, train_step
from labkit.training.losses import draft_repair_loss
from labkit.training.recipes import RECIPES, TrainConfig
from labkit.training.rl import rollout
from labkit.training.self_errors import DRAFT_RULES, Drafts, build_drafts, check_training, draft_summary, training_items


@pytest.fixture(scope="module")
def sudoku():
    return load("tiny-sudoku")


@pytest.fixture(scope="module")
def drafts(sudoku):
    return build_drafts(sudoku, training_items("sudoku", 24, seed=3), ("threshold 0.5", "S mode"), seed=3)


def test_training_items_are_never_held_out():
    items = training_items("sudoku", 300, seed=1)
    held = {it.prompt for it in heldout("sudoku")}
    assert not any(it.prompt in held or is_heldout(it.answer) for it in items)
    assert training_items("sudoku", 5, seed=1) == items[:5]                    # a seed gives the same questions


def test_a_held_out_question_is_refused(sudoku):
    items = training_items("sudoku", 3) + [heldout("sudoku")[7]]
    with pytest.raises(ValueError, match="held out"):
        check_training(items)
    with pytest.raises(ValueError, match="held out"):
        build_drafts(sudoku, items)
    with pytest.raises(ValueError, match="rules must name draft rules"):
        build_drafts(sudoku, training_items("sudoku", 2), ("S-mode",))


def test_every_state_is_one_the_rule_reached(sudoku, drafts):
    items = training_items("sudoku", 24, seed=3)
    assert drafts.rules == ("threshold 0.5", "S mode") and len(drafts) > 24
    for r_i, label in enumerate(drafts.rules):
        name, knobs = DRAFT_RULES[label]
        trace = rollout(sudoku, items, registry.rule(name, **knobs), 1, 3).trace
        reached = {tuple(row.tolist()) for row in trace.tokens().long().flatten(0, 1)}
        mine = drafts.canvas[drafts.rule == r_i]
        assert len(mine) and all(tuple(row.tolist()) in reached for row in mine)
    truth_rows = {tuple([drafts.truth[0, 0].item()] + sudoku.encode(it.answer)) for it in items}
    assert {tuple(row.tolist()) for row in drafts.truth} <= truth_rows
    clue = ~drafts.written
    assert torch.equal(drafts.canvas[clue], drafts.truth[clue])                  # clues and the marker as given
    filled = drafts.written & (drafts.canvas != sudoku.mask_id)
    assert filled.any(-1).all()                                                  # no all-mask state
    assert drafts.wrong(sudoku.mask_id).any()                                    # the drafts hold errors to repair
    s = draft_summary(drafts, sudoku.mask_id)
    assert set(s) == set(drafts.rules) and all(0 < v["wrong_of_filled"] < 1 for v in s.values())


def test_drafts_round_trip(tmp_path, drafts):
    back = Drafts.load(drafts.save(tmp_path / "d.pt"))
    assert back.rules == drafts.rules and all(torch.equal(getattr(back, k), getattr(drafts, k))
                                              for k in ("canvas", "truth", "written", "rule"))


def test_draft_repair_loss_by_hand():
    torch.manual_seed(0)
    V, mask_id = 9, 0
    truth = torch.randint(1, V, (3, 6))
    written = torch.tensor([[0, 1, 1, 1, 1, 1]] * 3, dtype=torch.bool)
    canvas = truth.clone()
    canvas[0, 1:3] = mask_id            # row 0: two masks, the rest right
    canvas[1, 2] = (truth[1, 2] % (V - 1)) + 1   # row 1: one wrong token, no mask
    canvas[2, 1:] = mask_id             # row 2: all masks
    table = torch.randn(V, V)
    logits_fn = lambda x: table[x]      # noqa: E731
    got = draft_repair_loss(logits_fn, canvas, truth, written, mask_id)
    ce = F.cross_entropy(table[canvas].transpose(1, 2), truth, reduction="none")   # (B, L)
    masked = written & (canvas == mask_id)
    per_row = [(ce[b][masked[b]].sum() / max(1, int(masked[b].sum()))) for b in range(3)]
    filled = written & ~masked
    want = torch.stack(per_row).mean() + ce[filled].mean()
    assert torch.allclose(got, want)


def test_config_checks():
    base = RECIPES["tiny-sudoku-editor"]
    assert base.self_error_share > 0 and base.init_from == "tiny-sudoku"
    for bad, match in ((dict(self_error_share=1.0), "self_error_share must be in"),
                       (dict(init_from=""), "init_from set"),
                       (dict(self_error_rules=("nope",)), "self_error_rules must name"),
                       (dict(self_error_items=0), "self_error_items must be"),
                       (dict(batch_size=1, self_error_share=0.2), "no draft row")):
        with pytest.raises(ValueError, match=match):
            dataclasses.replace(base, **bad)
    with pytest.raises(ValueError, match="data='tasks'"):
        TrainConfig(self_error_share=0.5, init_from="tiny")


def test_a_run_trains_on_its_drafts(tmp_path):
    cfg = dataclasses.replace(RECIPES["tiny-sudoku-editor"], batch_size=8, steps=2, self_error_items=6, warmup=1)
    run = setup(cfg, tmp_path, lambda m: None, "cpu")
    assert (tmp_path / DRAFTS).is_file() and len(run.drafts) >= 6
    drafted = round(cfg.batch_size * cfg.self_error_share)                     # that share of the rows are drafts
    assert drafted >= 1 and sum(len(x) for x, _ in run.tasks.batch(0).values()) == cfg.batch_size - drafted
    before = {k: v.clone() for k, v in run.model.state_dict().items()}
    loss = train_step(run)
    assert loss > 0 and any(not torch.equal(before[k], v) for k, v in run.model.state_dict().items())
    again = setup(cfg, tmp_path, lambda m: None, "cpu")                           # the drafts are read back
    assert torch.equal(again.drafts.canvas, run.drafts.canvas)
    other = dataclasses.replace(cfg, self_error_rules=("threshold 0.7",))
    with pytest.raises(ValueError, match="holds drafts of"):
        setup(other, tmp_path, lambda m: None, "cpu")
