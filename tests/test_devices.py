"""Training and RL follow the network's device. With no GPU here, a stand-in does what a GPU would:
- `torch.device("meta")` as the default device turns every tensor allocated without a device into a
  meta tensor: a step of the supervised trainer and of the RL update run under it on the CPU fail
  the moment any of their own tensors is allocated without following the network's.

The surrogates' noise is drawn on the CPU (one seed, the same draws on every device) and the draw
moves to the network's device with the rollouts (`policy_update`); RL restores train mode after its
rollouts.
"""
import copy
import dataclasses

import pytest
import torch
from rl_common import SMALL, rollouts_with_signal

from labkit.models.load import model_folder
from labkit.models.tokenizer import load_tokenizer
from labkit.training.loop import RECIPES, Run, TrainConfig, build_model, distill_loss, setup, train_step
from labkit.training.rl import (
    draw,
    estimate,
    grpo_loss,
    kl_to_ref,
    policy_logits,
    policy_update,
    rl_step,
    setup_rl,
)

CASES = {"elbo": SMALL,
         "one_pass": dataclasses.replace(SMALL, surrogate="one_pass"),
         "block_elbo": dataclasses.replace(SMALL, surrogate="block_elbo", block_length=16, kept_weight=0.5),
         "exact": dataclasses.replace(SMALL, init_from="tiny-sudoku-ar", rule="autoregressive", surrogate="exact")}


@pytest.fixture(scope="module", params=sorted(CASES))
def rl_case(request, tmp_path_factory):
    run = setup_rl(CASES[request.param], tmp_path_factory.mktemp(request.param), log=lambda m: None)
    rolls, adv, keep = rollouts_with_signal(run)
    return run, (rolls.x[keep], rolls.written[keep], adv[keep])


def test_the_surrogates_allocate_nothing_off_their_inputs_device(rl_case):
    """draw, estimate, kl_to_ref and grpo_loss, the pieces `labkit train-rl` runs on the device."""
    run, (x, written, adv) = rl_case
    cfg, lm = run.cfg, run.lm
    with torch.device("meta"):
        d = draw(cfg.surrogate, x, written, lm.mask_id, torch.Generator().manual_seed(0), t_min=cfg.t_min,
                 samples=cfg.elbo_samples, kept_weight=cfg.kept_weight, prompt_mask=cfg.prompt_mask,
                 block_length=cfg.block_length)
        with torch.no_grad():
            old = estimate(lambda c: policy_logits(lm, lm.net, c), d, x)
            new = estimate(lambda c: policy_logits(lm, run.ref, c), d, x)
            loss, parts = grpo_loss(new, old, adv, d, cfg.clip, kl_to_ref(new.logp, old.logp, d), cfg.kl)
    assert d.canvas.device.type == loss.device.type == parts["kl"].device.type == "cpu"


def test_the_rl_update_allocates_nothing_off_the_networks_device(rl_case):
    run, (x, written, adv) = rl_case
    run = copy.copy(run)
    run.lm = copy.copy(run.lm)
    run.lm.net = copy.deepcopy(run.lm.net)
    run.opt = torch.optim.AdamW(run.lm.net.parameters(), lr=run.cfg.lr)
    policy_update(run, x, written, adv, torch.Generator().manual_seed(0))     # the optimiser's state, made
    before = [p.detach().clone() for p in run.lm.net.parameters()]
    with torch.device("meta"):
        loss, parts = policy_update(run, x, written, adv, torch.Generator().manual_seed(1))
    assert loss.device.type == "cpu" and torch.isfinite(loss)
    assert any(not torch.equal(a, p) for a, p in zip(before, run.lm.net.parameters()))


def test_the_same_seed_draws_the_same_surrogate_noise_on_any_default_device(rl_case):
    """The draws are CPU draws moved to the rollouts' device: the default device changes nothing."""
    from labkit.training.surrogates import draw
    run, (x, written, adv) = rl_case
    cfg = run.cfg
    kw = dict(t_min=cfg.t_min, samples=cfg.elbo_samples, kept_weight=cfg.kept_weight, prompt_mask=cfg.prompt_mask,
              block_length=cfg.block_length)
    a = draw(cfg.surrogate, x, written, run.lm.mask_id, torch.Generator().manual_seed(3), **kw)
    with torch.device("meta"):
        b = draw(cfg.surrogate, x, written, run.lm.mask_id, torch.Generator().manual_seed(3), **kw)
    assert b.canvas.device.type == "cpu"
    assert torch.equal(a.canvas, b.canvas) and torch.equal(a.weight, b.weight) and torch.equal(a.row, b.row)


def test_rl_step_leaves_the_network_in_train_mode(tmp_path):
    run = setup_rl(SMALL, tmp_path, log=lambda m: None)
    run.lm.net.train()
    rl_step(run)
    assert run.lm.net.training, "the rollouts' eval mode must not outlive them (dropout would stay off)"


def test_a_training_step_allocates_nothing_off_the_networks_device(tmp_path):
    """Each objective's step (masked diffusion with CAP and T2T, block diffusion, annealed attention, AR) under a meta default
    device: batches and noise are drawn on the CPU on purpose and moved to the network's device."""
    small = TrainConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64, seq_len=32, batch_size=4,
                        steps=3, warmup=1, ckpt_every=100, vocab_size=300)
    annealed = dataclasses.replace(RECIPES["tiny-anneal"], seq_len=32, batch_size=2, steps=3, warmup=1, ckpt_every=100,
                                   attn_anneal=3)
    for name, cfg in {"masked": dataclasses.replace(small, cap_weight=0.1, edit_prob=0.1, edit_stutter=0.5),
                      "block": dataclasses.replace(small, block_size=4), "annealed": annealed,
                      "ar": dataclasses.replace(small, objective="ar")}.items():
        out = tmp_path / name
        run = setup(cfg, out, lambda *a: None, "cpu")
        train_step(run)                                                    # the optimiser's state, made
        with torch.device("meta"):
            loss = train_step(run)
        assert run.step == 2 and loss == loss, name


def test_a_task_step_and_a_distillation_batch_allocate_nothing_off_the_networks_device(tmp_path):
    """The task models' count loss (with T2T repair) and the distillation loss on teacher rows."""
    cfg = dataclasses.replace(RECIPES["tiny-add"], batch_size=4, steps=3, warmup=1, ckpt_every=100)
    run = setup(cfg, tmp_path / "task", lambda *a: None, "cpu")
    train_step(run)
    with torch.device("meta"):
        loss = train_step(run)
    assert run.step == 2 and loss == loss
    cap = dataclasses.replace(RECIPES["tiny-cap"], batch_size=4, distill_length=8, distill_block=4)   # CAP + T2T terms
    run = Run(cfg=cap, out=tmp_path, device=torch.device("cpu"), model=build_model(cap, load_tokenizer(model_folder("tiny"))),
              opt=None, corpus=None, mask_id=0)
    ids = torch.randint(1, 100, (6, 12))                                # (N, P + G): prompts of 4, answers of 8
    run.teacher = (ids, torch.ones_like(ids), 4)
    with torch.device("meta"):
        loss = distill_loss(run, None, torch.Generator().manual_seed(0))
    assert loss.device.type == "cpu" and torch.isfinite(loss)
