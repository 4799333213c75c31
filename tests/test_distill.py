"""labkit.distill: teacher answers, packing, and the block-shaped distillation loss, by hand."""
import math

import pytest
import torch
import torch.nn.functional as F

from labkit.distill import block_distill_loss, make_trajectories, pack, train_prompts
from labkit.train import TrainConfig

MASK, V = 0, 7


def test_loss_shows_block_decoding_canvases_and_scores_the_current_block():
    P, BL, G = 2, 4, 12
    x0 = torch.randint(1, V, (64, P + G), generator=torch.Generator().manual_seed(0))
    attn = torch.ones_like(x0)
    seen = {}

    def logits_fn(xt, a):
        seen["xt"] = xt.clone()
        return torch.zeros(*xt.shape, V)           # uniform: CE = log V wherever it is taken
    loss = block_distill_loss(logits_fn, x0, attn, P, BL, MASK, generator=torch.Generator().manual_seed(1))
    xt = seen["xt"]
    assert (xt[:, :P] == x0[:, :P]).all()          # the prompt is never masked
    for row in range(64):
        blocks = (xt[row, P:] == MASK).view(G // BL, BL)
        partly = [b for b in range(G // BL) if 0 < blocks[b].sum() < BL]
        assert len(partly) <= 1
        first = int(blocks.any(-1).float().argmax()) if blocks.any() else G // BL
        assert not blocks[:first].any()            # earlier blocks written
        assert blocks[first + 1:].all()            # later blocks all masks
    assert math.isclose(loss.item(), math.log(V), rel_tol=1e-5)


def test_cap_adds_entropy_of_right_predictions_only():
    P, BL = 1, 4
    x0 = torch.tensor([[5, 1, 2, 3, 4]])
    logits = torch.zeros(1, 5, V)
    logits[0, 1:, :] = torch.log(torch.tensor([.01, .5, .1, .1, .1, .1, .09]))   # argmax = token 1
    fn = lambda xt, a: logits                                                    # noqa: E731
    kw = dict(t=torch.ones(1))                     # the whole (only) block masked
    plain = block_distill_loss(fn, x0, torch.ones_like(x0), P, BL, MASK, **kw)
    capped = block_distill_loss(fn, x0, torch.ones_like(x0), P, BL, MASK, cap_weight=2.0, **kw)
    assert math.isclose(plain.item(), -F.log_softmax(logits[0, 1], -1)[1:5].mean().item(), rel_tol=1e-5)
    logp = F.log_softmax(logits[0, 1], -1)
    entropy = -(logp.exp() * logp).sum()
    assert math.isclose(capped.item() - plain.item(), 2.0 * entropy.item(), rel_tol=1e-5)


def test_pack_left_pads_like_the_decode_loop(toy):
    tok = toy.tokenizer
    traj = {"prompt": ["A:\n", "ROMEO:\nBut soft\n"], "answer": torch.tensor([[5, 6, 7], [8, 9, 10]])}
    ids, attn, P = pack(tok, traj)
    long = tok("ROMEO:\nBut soft\n")["input_ids"]
    short = tok("A:\n")["input_ids"]
    assert P == len(long) and ids.shape == (2, P + 3)
    assert ids[1, :P].tolist() == long and ids[0, P - len(short):P].tolist() == short
    assert (ids[0, :P - len(short)] == tok.pad_token_id).all()
    assert attn[0].tolist() == [0] * (P - len(short)) + [1] * (len(short) + 3)
    assert ids[:, P:].tolist() == [[5, 6, 7], [8, 9, 10]]


def test_trajectories_are_greedy_answers_and_resume(toy, tmp_path):
    import labkit as lk
    prompts = train_prompts(3)
    assert prompts == train_prompts(5)[:3]          # a longer run extends a shorter one
    assert all(p.count("\n") == 2 and p.split("\n")[0].endswith(":") for p in prompts)
    logs = []
    make_trajectories(toy, prompts[:2], tmp_path / "t.pt", gen_length=8, block_length=4, batch=2,
                      bf16=False, log=logs.append)
    traj = make_trajectories(toy, prompts, tmp_path / "t.pt", gen_length=8, block_length=4, batch=2,
                             bf16=False, log=logs.append)
    assert len(logs) == 2 and logs[-1].startswith("trajectories 3/3")
    assert traj["prompt"] == prompts and traj["answer"].shape == (3, 8)
    ref = lk.generate(toy, prompts[2], lk.LowConfidence(), gen_length=8, block_length=4, steps=8)
    assert traj["answer"][2].tolist() == ref.ids[0, ref.trace.prompt_len:].tolist()


def test_distill_needs_a_teacher():
    with pytest.raises(ValueError, match="init_from"):
        TrainConfig(distill=16)
    with pytest.raises(ValueError, match="objective='diffusion' only"):
        TrainConfig(objective="ar", distill=16, init_from="tiny")


def test_trajectories_refuse_a_cache_of_other_prompts(toy, tmp_path):
    make_trajectories(toy, ["A:\n"], tmp_path / "t.pt", gen_length=4, block_length=4, bf16=False, log=None)
    with pytest.raises(ValueError, match="other prompts"):
        make_trajectories(toy, ["B:\n"], tmp_path / "t.pt", gen_length=4, block_length=4, bf16=False, log=None)
