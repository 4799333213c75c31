"""labkit.training.rl and .rewards on hand-built cases: the group advantage, the clipped objective,
each likelihood surrogate against the loss it must equal, the KL at the start, the rewards of
hand-made grids and answers, and one seed giving one run (resumed or not)."""
import dataclasses
import random

import pytest
import torch
import torch.nn.functional as F

from labkit.tasks import Item, heldout
from labkit.training.losses import ar_sft_loss, masked_sft_loss
from labkit.training.rewards import exact_reward, keyword_reward, reward, sudoku_reward, training_question
from labkit.training.rl import (
    RL_RECIPES,
    RLConfig,
    clipped_objective,
    draw,
    estimate,
    group_advantages,
    grpo_loss,
    kl_to_ref,
    rl_step,
    save_checkpoint,
    setup_rl,
)

V, MASK = 6, 5
X = torch.tensor([[0, 1, 2, 3, 4, 0, 1, 2], [4, 4, 3, 2, 1, 0, 0, 1]])        # (N, L) = (2, 8) rollout rows
WRITTEN = torch.tensor([[0, 0, 1, 1, 1, 1, 1, 1], [0, 0, 0, 1, 1, 1, 1, 0]], dtype=torch.bool)
LOGITS = torch.randn(64, 8, V, generator=torch.Generator().manual_seed(0))


def fixed(canvas):
    """A model that ignores its input: row m's logits are LOGITS[m]."""
    return LOGITS[:len(canvas)]


def contextual(canvas):
    """A model whose logits depend on the canvas (so masks matter)."""
    emb = torch.nn.functional.one_hot(canvas, V).float()               # (M, L, V)
    return LOGITS[:len(canvas), :canvas.shape[1]] + emb.cumsum(1) * 0.3


# --- advantages and clipping -----------------------------------------------------------------

def test_group_advantages_are_centred_and_scaled_per_group():
    r = torch.tensor([0.0, 2.0, 1.0, 1.0, 1.0, 1.0, 0.5, 1.5])
    a = group_advantages(r, 2)
    assert a.view(-1, 2).sum(1).abs().max() < 1e-6
    s = float(torch.tensor([0.0, 2.0]).std())                               # unbiased, as GRPO
    assert a[:2].tolist() == pytest.approx([-1 / (s + 1e-4), 1 / (s + 1e-4)])
    assert a[2:6].abs().max() == 0                                      # equal rewards: no signal
    assert group_advantages(r, 2, scale=False).tolist() == pytest.approx([-1, 1, 0, 0, 0, 0, -0.5, 0.5])
    with pytest.raises(ValueError, match="multiple of group"):
        group_advantages(r, 3)


def test_the_clipped_objective_is_pessimistic_and_stops_the_gradient_outside_the_band():
    ratio = torch.tensor([1.5, 0.5, 0.5, 1.5, 1.1], requires_grad=True)
    adv = torch.tensor([1.0, 1.0, -1.0, -1.0, 1.0])
    obj = clipped_objective(ratio, adv, 0.2)
    assert obj.tolist() == pytest.approx([1.2, 0.5, -0.8, -1.5, 1.1])
    obj.sum().backward()
    assert ratio.grad.tolist() == pytest.approx([0.0, 1.0, 0.0, -1.0, 1.0])


# --- the surrogates ----------------------------------------------------------------------------

def test_the_elbo_surrogate_is_the_masked_sft_loss_on_the_same_draws():
    d = draw("elbo", X, WRITTEN, MASK, torch.Generator().manual_seed(3), t_min=0.1)
    assert torch.equal(d.canvas == MASK, (d.canvas == MASK) & WRITTEN)  # only answer tokens are masked
    t = 1 / d.weight.max(-1).values                                     # each row's 1/t weight
    g = torch.Generator().manual_seed(3)
    torch.rand(1, generator=g)                                          # stratified_t's one draw
    loss = masked_sft_loss(contextual, X, MASK, answer=WRITTEN, generator=g, t=t)
    est = estimate(contextual, d, X)
    assert float(-est.sequence.mean()) == pytest.approx(float(loss), rel=1e-6)


def test_the_kept_token_term_adds_log_p_of_the_visible_answer_tokens():
    g = lambda: torch.Generator().manual_seed(5)                        # noqa: E731
    plain, kept = draw("elbo", X, WRITTEN, MASK, g()), draw("elbo", X, WRITTEN, MASK, g(), kept_weight=1.0)
    assert torch.equal(plain.canvas, kept.canvas)
    visible = WRITTEN & (plain.canvas != MASK)
    logp = F.log_softmax(contextual(plain.canvas), -1).gather(-1, X[..., None]).squeeze(-1)
    extra = (torch.where(visible, logp, 0.0).sum(-1) / WRITTEN.sum(-1))
    diff = estimate(contextual, kept, X).sequence - estimate(contextual, plain, X).sequence
    assert diff.tolist() == pytest.approx(extra.tolist(), rel=1e-5)


def test_the_block_elbo_of_one_block_is_the_elbo_and_later_blocks_stay_masked():
    g = lambda: torch.Generator().manual_seed(7)                        # noqa: E731
    e, b = draw("elbo", X, WRITTEN, MASK, g()), draw("block_elbo", X, WRITTEN, MASK, g(), block_length=0)
    assert torch.equal(e.canvas, b.canvas) and torch.equal(e.weight, b.weight)
    d = draw("block_elbo", X, WRITTEN, MASK, g(), block_length=2)       # row 0: 6 answer tokens, 3 blocks
    assert len(d.canvas) == 2 * 3 and d.row.tolist() == [0, 0, 0, 1, 1, 1]
    answer0 = WRITTEN[0].nonzero().squeeze(-1)                         # positions 2..7
    for k in range(3):
        c = d.canvas[k]
        earlier, block, later = answer0[:2 * k], answer0[2 * k:2 * k + 2], answer0[2 * k + 2:]
        assert torch.equal(c[earlier], X[0, earlier])                  # clean before the block
        assert (c[later] == MASK).all()                                # masked after it
        assert (d.weight[k][later] == 0).all() and (d.weight[k][earlier] == 0).all()
        assert ((d.weight[k][block] > 0) == (c[block] == MASK)).all()  # scored: the block's masks


def test_one_pass_masks_the_whole_answer_and_about_a_share_of_the_prompt():
    x = torch.randint(0, 5, (400, 20), generator=torch.Generator().manual_seed(0))
    written = torch.zeros_like(x, dtype=torch.bool)
    written[:, 10:] = True
    d = draw("one_pass", x, written, MASK, torch.Generator().manual_seed(1), prompt_mask=0.15)
    assert (d.canvas[:, 10:] == MASK).all()
    share = float((d.canvas[:, :10] == MASK).float().mean())
    assert 0.12 < share < 0.18
    assert torch.equal(d.scored, written)


def test_the_exact_surrogate_is_the_ar_loss():
    d = draw("exact", X, WRITTEN, MASK, torch.Generator())
    est = estimate(contextual, d, X)
    assert float(-est.sequence.mean()) == pytest.approx(float(ar_sft_loss(lambda x: contextual(x), X, WRITTEN)),
                                                        rel=1e-6)
    assert torch.equal(d.scored[:, :-1], WRITTEN[:, 1:])


@pytest.mark.parametrize("surrogate", ["one_pass", "elbo", "block_elbo", "exact"])
def test_at_the_start_the_ratio_is_one_and_the_kl_zero(surrogate):
    d = draw(surrogate, X, WRITTEN, MASK, torch.Generator().manual_seed(2), block_length=2)
    old, new = estimate(contextual, d, X), estimate(contextual, d, X)
    kl = kl_to_ref(new.logp, old.logp, d)
    assert kl.abs().max() == 0
    adv = torch.tensor([1.0, -0.5])
    loss, parts = grpo_loss(new, old, adv, d, 0.2, kl, 0.1)
    assert float(loss) == pytest.approx(-float(adv.mean()), abs=1e-6) and parts["clip_fraction"] == 0
    other = estimate(lambda c: contextual(c) * 1.5, d, X)
    read = torch.zeros(len(X)).index_add(0, d.row, d.scored.any(-1).float()) > 0   # rows with a scored position
    assert read.any() and torch.equal(kl_to_ref(other.logp, old.logp, d) > 0, read)


# --- rewards ---------------------------------------------------------------------------------

def test_sudoku_rewards_on_hand_built_grids():
    item = heldout("sudoku")[0]
    puzzle = item.prompt[1:-1]
    blanks = [i for i, c in enumerate(puzzle) if c == "."]
    assert sudoku_reward(item.answer, item) == 2.0
    wrong = list(item.answer)
    a = blanks[0]
    wrong[a] = str(int(wrong[a]) % 6 + 1)
    assert sudoku_reward("".join(wrong), item) == pytest.approx((len(blanks) - 1) / len(blanks))
    clue = next(i for i, c in enumerate(puzzle) if c != ".")
    moved = list(item.answer)
    moved[clue] = str(int(moved[clue]) % 6 + 1)                        # a clue overwritten: not solved
    assert sudoku_reward("".join(moved), item) == 1.0
    assert sudoku_reward("", item) == 0.0
    assert reward(item.answer, item) == 2.0


def test_exact_and_keyword_rewards():
    assert exact_reward("123457", "123456") == pytest.approx(5 / 6)
    assert exact_reward("123456", "123456") == 2.0
    assert exact_reward("12", "123456") == pytest.approx(2 / 6)
    assert reward("dcba", Item("mirror", "Cabcd=", "dcba")) == 2.0
    assert keyword_reward("The king's crown lies in the night.", ("king", "crown", "night")) == 2.0
    assert keyword_reward("A kingly crown.", ("king", "crown", "night")) == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="scored"):
        exact_reward("1", "12", [True])


@pytest.mark.parametrize("task", ["sudoku", "addition", "reversal", "mirror"])
def test_training_questions_are_never_held_out(task):
    held = {it.prompt for it in heldout(task)}
    rng = random.Random(0)
    qs = [training_question(task, rng) for _ in range(30)]
    assert not held & {q.prompt for q in qs}
    assert all(reward(q.answer, q) == 2.0 for q in qs)


def test_bad_settings_name_the_parameter():
    for bad, match in ((dict(surrogate="exactly"), "surrogate"), (dict(group=1), "group"),
                       (dict(temperature=0.0), "temperature"), (dict(clip=1.5), "clip"),
                       (dict(task="keywords"), "keywords"), (dict(keywords=("lord",)), "keywords"),
                       (dict(task="keywords", keywords=("two words",)), "keywords"),
                       (dict(task="prose"), "task"), (dict(gen_length=0), "gen_length")):
        with pytest.raises(ValueError, match=match):
            RLConfig(**bad)
    with pytest.raises(ValueError, match="AR model"):
        setup_rl(RLConfig(init_from="tiny-sudoku-ar", rule="autoregressive", surrogate="elbo"), "/tmp/never")
    assert set(RL_RECIPES) >= {"tiny-sudoku-rl", "tiny-sudoku-rl-elbo", "tiny-sudoku-ar-rl"}


# --- determinism and resume --------------------------------------------------------------------

SMALL = RLConfig(questions=2, group=4, steps=2, inner_steps=2, clues=(10, 11), kept_weight=1.0, ckpt_every=1)


def _weights(run):
    return torch.cat([p.detach().flatten() for p in run.lm.net.parameters()])


def test_a_seed_gives_one_run_and_a_resumed_run_equals_an_uninterrupted_one(tmp_path):
    torch.set_num_threads(1)
    a = setup_rl(SMALL, tmp_path / "a", log=lambda m: None)
    hist_a = [rl_step(a), rl_step(a)]
    b = setup_rl(SMALL, tmp_path / "b", log=lambda m: None)
    rl_step(b)
    b.history.append(dict(hist_a[0]))
    save_checkpoint(b)
    c = setup_rl(SMALL, tmp_path / "b", log=lambda m: None)            # resumes at step 1
    assert c.step == 1
    last = rl_step(c)
    strip = lambda r: {k: v for k, v in r.items() if "seconds" not in k}   # noqa: E731
    assert strip(last) == strip(hist_a[1])
    assert torch.equal(_weights(a), _weights(c))
    assert not torch.equal(_weights(a), torch.cat([p.flatten() for p in a.ref.parameters()]))
    with pytest.raises(ValueError, match="another RLConfig"):
        setup_rl(dataclasses.replace(SMALL, lr=1e-3), tmp_path / "b")


def test_train_rl_on_the_command_line_saves_a_task_model_and_names_a_bad_flag(tmp_path, capsys):
    import json

    import labkit as lk
    from labkit.cli.main import main

    out = tmp_path / "policy"
    assert main(["train-rl", "--out", str(out), "--steps", "1", "--questions", "2", "--group", "2",
                 "--inner-steps", "1", "--clues", "10,12", "--surrogate", "one_pass"]) == 0
    record = json.loads((out / "training.json").read_text())
    assert record["rl"]["config"]["surrogate"] == "one_pass" and record["rl"]["config"]["clues"] == [10, 12]
    assert record["config"]["data"] == "tasks" and len(record["rl"]["history"]) == 1
    lm = lk.load(str(out))
    assert lk.generate(lm, heldout("sudoku")[0].prompt, "low_confidence").texts[0].isdigit()
    assert main(["train-rl", "--out", str(tmp_path / "bad"), "--kl", "-1"]) == 2
    assert "kl must be >= 0" in capsys.readouterr().err


# --- RL on Shakespeare: the keyword reward -----------------------------------------------------------

def test_keyword_questions_are_training_play_openings_with_the_words_as_answer():
    from labkit.training.prompts import has_opening, opening, speeches

    train = {opening(x) for x in speeches("train") if has_opening(x)}
    held = {opening(x) for x in speeches("heldout") if has_opening(x)}
    qs = [training_question("keywords", random.Random(1), keywords=("lord", "night")) for _ in range(20)]
    assert all(q.prompt in train and q.prompt not in held and q.answer == "lord,night" for q in qs)
    assert reward("my lord, good night", qs[0]) == 2.0 and reward("my lord", qs[0]) == 0.5


def test_free_text_rollouts_take_ragged_prompts_and_padding_does_not_leak_into_the_surrogate():
    import labkit as lk
    from labkit.training.rl import policy_logits, rollout

    lm = lk.load("tiny")
    items = [Item("keywords", "ROMEO:\n", "lord"), Item("keywords", "FIRST CITIZEN:\nBefore we proceed any further\n", "lord")]
    r = rollout(lm, items, lk.samplers.registry.rule("low_confidence", temperature=1.0), group=2, seed=0, gen_length=8)
    assert r.x.shape[0] == 4 and r.written.sum(-1).tolist() == [8, 8, 8, 8]
    assert r.reward.tolist() == [keyword_reward(t, ["lord"]) for t in r.texts]
    short = r.x[0][r.x[0] != lm.pad_id][None]                                  # row 0 without its left padding
    with torch.no_grad():
        padded, alone = policy_logits(lm, lm.net, r.x), policy_logits(lm, lm.net, short)
    # tiny reads position i from hidden i - 1 (Dream-style shift): the first real token's logits come from
    # a pad's state either way; every later position must not see the padding
    assert torch.allclose(padded[0, -short.shape[1] + 1:], alone[0, 1:], atol=1e-4)
