"""labkit.training.distill: teacher answers and packing; labkit.training.losses: the block-shaped
distillation loss and T2T noise, by hand."""
import math

import pytest
import torch
import torch.nn.functional as F

from labkit.training.distill import make_trajectories, pack
from labkit.training.losses import block_distill_loss, t2t_noise
from labkit.training.prompts import train_prompts
from labkit.training.recipes import TrainConfig

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


def test_t2t_noise_copies_neighbours_inside_the_answer():
    B, L, lo = 64, 20, 4
    x0 = torch.arange(B * L).view(B, L)            # every token unique: a copy names its source
    where = torch.ones(B, L, dtype=torch.bool)
    where[:, :lo] = False
    where[:, 10] = False
    xt = t2t_noise(x0, where, 0.5, 1.0, torch.Generator().manual_seed(0), lo)
    changed = xt != x0
    assert not changed[~where].any()               # only allowed positions are noised
    assert 0.4 < changed[where].float().mean() < 0.6
    rows, cols = changed.nonzero(as_tuple=True)
    src = xt[rows, cols] - rows * L                # the column the copy came from
    assert ((src - cols).abs() <= 2).all() and (src >= lo).all() and (src < L).all()
    unigram = t2t_noise(x0, where, 0.5, 0.0, torch.Generator().manual_seed(0), lo)
    assert ((unigram[unigram != x0] % L) >= lo).all()   # unigram noise draws answer tokens only


def test_t2t_noise_without_stutter_is_the_earlier_unigram_draw():
    x0 = torch.randint(1, 50, (8, 12), generator=torch.Generator().manual_seed(2))
    where = torch.rand(8, 12, generator=torch.Generator().manual_seed(3)) < 0.7
    g = torch.Generator().manual_seed(4)
    swap = where & (torch.rand(8, 12, generator=g) < 0.3)
    noise = x0[:, 2:].flatten()[torch.randint(8 * 10, (8, 12), generator=g)]
    expected = torch.where(swap, noise, x0)        # the draw order the committed models were trained with
    assert torch.equal(t2t_noise(x0, where, 0.3, 0.0, torch.Generator().manual_seed(4), 2), expected)


def test_sampled_trajectories_are_seeded_and_differ_from_greedy(toy, tmp_path):
    prompts = train_prompts(4)
    kw = dict(gen_length=8, block_length=4, batch=2, bf16=False, log=None, temperature=1.0)
    a = make_trajectories(toy, prompts, tmp_path / "a.pt", **kw)
    b = make_trajectories(toy, prompts, tmp_path / "b.pt", **kw)
    c = make_trajectories(toy, prompts, tmp_path / "c.pt", **kw, seed=1)
    greedy = make_trajectories(toy, prompts, tmp_path / "g.pt", gen_length=8, block_length=4, batch=2,
                               bf16=False, log=None)
    assert torch.equal(a["answer"], b["answer"])
    assert not torch.equal(a["answer"], c["answer"]) and not torch.equal(a["answer"], greedy["answer"])


@pytest.mark.parametrize("field, value", [("edit_stutter", 1.5), ("edit_stutter", -0.1),
                                          ("distill_temperature", -1.0), ("distill_top_p", 0.0),
                                          ("distill_top_p", 1.2), ("distill_mix", 1.0),
                                          ("distill_mix", -0.1)])
def test_new_distill_knobs_are_checked(field, value):
    with pytest.raises(ValueError, match=field):
        TrainConfig(**{field: value})


def test_distill_mix_needs_distillation():
    with pytest.raises(ValueError, match="distill_mix"):
        TrainConfig(distill_mix=0.5)


def test_training_on_a_missing_gpu_is_refused(tmp_path):
    from labkit.training.loop import train
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ValueError, match="device='cuda'"):
        train(TrainConfig(steps=1), tmp_path / "x", progress=False, log=lambda *_: None, device="cuda")


def test_trajectories_refuse_a_cache_decoded_otherwise(toy, tmp_path):
    kw = dict(gen_length=4, block_length=4, bf16=False, log=None)
    make_trajectories(toy, ["A:\n"], tmp_path / "t.pt", **kw)
    make_trajectories(toy, ["A:\n", "B:\n"], tmp_path / "t.pt", **kw)        # same settings: resumes
    with pytest.raises(ValueError, match="temperature"):
        make_trajectories(toy, ["A:\n", "B:\n"], tmp_path / "t.pt", temperature=1.0, **kw)
    with pytest.raises(ValueError, match="gen_length"):
        make_trajectories(toy, ["A:\n"], tmp_path / "t.pt", gen_length=8, block_length=4, bf16=False, log=None)


def test_the_card_names_the_distillation_mix():
    import doc_common  # noqa: F401  (benchmarks/ on sys.path: the cards are written by benchmarks/docgen)
    from docgen.cards import _extras
    cfg = dict(init_from="tiny", distill=512, distill_temperature=0.0, cap_weight=0.5)
    assert not any("training-play text instead" in line for line in _extras(cfg))
    text = " ".join(_extras({**cfg, "distill_mix": 0.25}))
    assert "512 training-play prompts" in text and "25% of each batch is training-play text" in text
