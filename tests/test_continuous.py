"""Continuous diffusion: the noise schedules, Diffusion-LM's loss, the denoiser network and the DDIM
sampler with its trace."""
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import labkit as lk
from labkit.continuous import Vocabulary, distances, generate_continuous, nearest, settle_step
from labkit.models.continuous_net import ContinuousConfig, ContinuousDenoiser
from labkit.models.load import weights_dir
from labkit.models.tokenizer import load_tokenizer
from labkit.samplers.base import StepRecord
from labkit.training.losses import continuous_diffusion_loss
from labkit.training.schedules import SCHEDULES, schedule


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer(weights_dir() / "tiny")


@pytest.fixture(scope="module")
def net(tok):
    torch.manual_seed(0)
    return ContinuousDenoiser(ContinuousConfig(vocab_size=len(tok), embed_dim=16, hidden_size=32, num_layers=1,
                                               num_heads=2, intermediate_size=64, max_len=48)).eval()


# --- schedules ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(SCHEDULES))
def test_every_schedule_falls_from_clean_to_noise(name):
    s = schedule(name)
    t = torch.linspace(0, 1, 201)
    ab = s(t)                                                             # (201,)
    assert ab[0].item() == pytest.approx(1.0, abs=1e-6) and ab[-1].item() <= 1.001e-3
    assert (ab[1:] < ab[:-1]).all(), "ᾱ must strictly decrease in t"
    assert torch.allclose(s.mask_rate(t), 1 - ab)


def test_schedules_known_values():
    half = torch.tensor(0.5)
    assert schedule("linear")(half).item() == pytest.approx(math.exp(-(0.1 * 0.5 + 0.5 * 19.9 * 0.25)), rel=1e-5)
    c = math.cos(0.508 / 1.008 * math.pi / 2) ** 2 / math.cos(0.008 / 1.008 * math.pi / 2) ** 2
    assert schedule("cosine")(half).item() == pytest.approx(c, rel=1e-5)
    assert schedule("log-linear")(half).item() == pytest.approx(1 - 0.999 * 0.5, rel=1e-6)
    assert schedule("cosine")(0.25).item() == pytest.approx(schedule("cosine")(torch.tensor([0.25]))[0].item())


@pytest.mark.parametrize("bad", ["quadratic", "", None, 3])
def test_an_unknown_schedule_is_refused_by_name(bad):
    with pytest.raises(ValueError, match=r"schedule must be one of \('linear', 'cosine', 'log-linear'\)"):
        schedule(bad)


# --- the loss -----------------------------------------------------------------------------------
class Perfect(nn.Module):
    """Returns exactly the clean embeddings e0 of the last embed_tokens call, whatever x_t is."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def embedding_matrix(self):
        return self.inner.embedding_matrix()

    def embed_tokens(self, ids):
        self.e0 = self.inner.embed_tokens(ids)
        return self.e0

    def logits(self, x):
        return self.inner.logits(x)

    def forward(self, x_t, t):
        return self.e0


class Identity(Perfect):
    def forward(self, x_t, t):
        return x_t


def test_the_loss_of_a_perfect_x0_predictor_is_the_rounding_term(net):
    x0 = torch.randint(0, net.config.vocab_size, (3, 10))
    model = Perfect(net)
    loss = continuous_diffusion_loss(model, x0, schedule("cosine"), torch.Generator().manual_seed(1))
    E = net.embedding_matrix()                                            # (V, D)
    by_hand = -torch.log_softmax(E[x0] @ E.T, -1).gather(-1, x0[..., None]).mean()
    assert loss.item() == pytest.approx(by_hand.item(), rel=1e-5)
    assert by_hand.item() > 0.01                                          # the term is not vacuous
    zero = continuous_diffusion_loss(model, x0, schedule("cosine"), torch.Generator().manual_seed(1),
                                     rounding_weight=0.0)
    assert zero.item() == pytest.approx(0.0, abs=1e-7)


def test_the_loss_noises_the_embeddings_with_the_schedule(net):
    """An identity 'denoiser' returns x_t: its MSE is that of √ᾱ e0 + √(1-ᾱ) ε against e0."""
    x0 = torch.randint(0, net.config.vocab_size, (2, 8))
    t = torch.tensor([0.3, 0.8])
    s = schedule("linear")
    loss = continuous_diffusion_loss(Identity(net), x0, s, torch.Generator().manual_seed(5), t=t, rounding_weight=0)
    e0 = net.embed_tokens(x0)
    eps = torch.randn(e0.shape, generator=torch.Generator().manual_seed(5))
    ab = s(t)[:, None, None]
    expected = F.mse_loss(ab.sqrt() * e0 + (1 - ab).sqrt() * eps, e0)
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)


def test_the_loss_trains_the_embeddings_and_the_network(net):
    x0 = torch.randint(0, net.config.vocab_size, (2, 8))
    net.zero_grad()
    continuous_diffusion_loss(net, x0, schedule("cosine"), torch.Generator().manual_seed(0)).backward()
    assert net.embed.weight.grad.abs().sum() > 0 and net.layers[0].attn.qkv.weight.grad.abs().sum() > 0
    net.zero_grad()


# --- the network --------------------------------------------------------------------------------
def test_the_denoiser_shapes_rows_save_and_load(net, tmp_path):
    x = torch.randn(2, 12, 16)
    out = net(x, torch.tensor([0.1, 0.9]))
    assert out.shape == (2, 12, 16) and net.logits(out).shape == (2, 12, net.config.vocab_size)
    assert torch.allclose(net(x, 0.5), net(x, torch.tensor([0.5, 0.5])))
    assert not torch.allclose(net(x, 0.1), net(x, 0.9)), "the time must change the prediction"
    assert torch.allclose(net.embedding_matrix().norm(dim=-1), torch.full((net.config.vocab_size,), 4.0))
    net.save(tmp_path / "m")
    again = ContinuousDenoiser.load(tmp_path / "m")
    assert again.config == net.config and torch.equal(again(x, 0.3), net(x, 0.3))
    with pytest.raises(ValueError, match="max_len=48"):
        net(torch.randn(1, 49, 16), 0.5)


def test_nearest_finds_the_closest_row():
    E = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    ids, dist = nearest(torch.tensor([[[0.9, 0.1], [0.1, 1.5], [-0.2, 0.0]]]), E)
    assert ids.tolist() == [[1, 2, 0]]
    assert dist[0].tolist() == pytest.approx([math.hypot(0.1, 0.1), math.hypot(0.1, 0.5), 0.2], rel=1e-5)


# --- the sampler --------------------------------------------------------------------------------
class Oracle(nn.Module):
    """A 'perfect' denoiser for one target sequence: it predicts the target's embeddings."""

    def __init__(self, inner, target):
        super().__init__()
        self.inner, self.config, self.target = inner, inner.config, target

    def embedding_matrix(self):
        return self.inner.embedding_matrix()

    def logits(self, x):
        return self.inner.logits(x)

    def forward(self, x_t, t):
        return self.inner.embed_tokens(self.target).expand(x_t.shape[0], -1, -1)


@pytest.mark.parametrize("clamp", [False, True])
def test_a_perfect_denoiser_ends_on_its_target(net, tok, clamp):
    target = torch.randint(5, net.config.vocab_size, (1, 20))
    out = generate_continuous(Oracle(net, target), tok, schedule=schedule("cosine"), length=20, steps=6,
                              clamp=clamp, batch=2)
    assert out.ids.shape == (2, 20) and out.ids.tolist() == target.expand(2, -1).tolist()
    assert distances(out.trace)[-1].max().item() < 1e-3


def test_the_trace_records_every_step_and_its_last_step_is_the_answer(net, tok):
    out = generate_continuous(net, tok, schedule=schedule("cosine"), prompt="ROMEO:\n", length=12, steps=7, batch=2)
    tr, P = out.trace, out.trace.prompt_len
    assert P == len(tok("ROMEO:\n", add_special_tokens=False)["input_ids"]) and out.ids.shape == (2, P + 12)
    assert len(tr) == 7 and tr.tokens().shape == (7, 2, P + 12) and distances(tr).shape == (7, 2, 12)
    assert torch.equal(tr.records[-1].tokens.long(), out.ids)
    assert out.texts[0] == tok.decode(out.ids[0, P:].tolist(), skip_special_tokens=True)
    assert (tr.tokens()[:, :, :P] == out.ids[:, :P]).all() and tr.confidence()[:, :, :P].isnan().all()
    assert tr.committed()[0, :, P:].all() and not tr.committed()[1:].any()
    changed = tr.tokens()[1:] != tr.tokens()[:-1]
    assert torch.equal(tr.edits()[1:], changed) and not tr.edits()[0].any()
    conf = tr.confidence()[:, :, P:].float()
    assert ((conf > 0) & (conf <= 1)).all()
    assert tr.meta["sampler"] == "continuous-ddim" and tr.meta["schedule"] == "cosine" and len(tr.meta["t"]) == 7


def test_a_seed_gives_the_same_trace(net, tok):
    def run(seed):
        return generate_continuous(net, tok, schedule=schedule("linear"), length=10, steps=5, seed=seed).trace

    a, b, c = run(3), run(3), run(4)
    assert torch.equal(a.tokens(), b.tokens()) and torch.equal(a.confidence(), b.confidence())
    assert a.meta["distance"] == b.meta["distance"]
    assert a.meta["distance"] != c.meta["distance"]


def test_anchors_are_kept_and_shown_as_pinned(net, tok):
    out = generate_continuous(net, tok, schedule=schedule("cosine"), length=16, steps=4, anchors={2: " love", 10: " night"})
    tr = out.trace
    assert " love" in out.texts[0] and " night" in out.texts[0]
    pinned = tr.pinned()
    assert pinned is not None and pinned[:, 0].sum().item() >= 2 and not tr.committed()[pinned].any()
    assert (distances(tr)[:, 0][pinned[:, 0]] == 0).all()
    with pytest.raises(ValueError, match="anchors"):
        generate_continuous(net, tok, schedule=schedule("cosine"), length=4, steps=2, anchors={3: " love night"})
    with pytest.raises(ValueError, match="max_len=48"):
        generate_continuous(net, tok, schedule=schedule("cosine"), length=60, steps=2)
    with pytest.raises(ValueError, match="steps"):
        generate_continuous(net, tok, schedule=schedule("cosine"), length=4, steps=0)


def test_settle_step_is_where_a_position_stops_changing():
    toks = torch.tensor([[[7, 1, 2]], [[7, 3, 2]], [[7, 3, 4]]])         # (S=3, B=1, L=3); prompt_len 1
    tr = lk.Trace(prompt_len=1, mask_id=0, init=torch.zeros(1, 3, dtype=torch.long))
    for s in range(3):
        z = torch.zeros(1, 3, dtype=torch.bool)
        tr.append(StepRecord(step=s, block=0, tokens=toks[s], candidates=toks[s], confidence=torch.ones(1, 3),
                             committed=z, edited=z))
    assert settle_step(tr).tolist() == [[1, 2]]


def test_the_lab_views_render_a_continuous_trace(net, tok, tmp_path):
    out = generate_continuous(net, tok, schedule=schedule("cosine"), prompt="ROMEO:\n", length=8, steps=4,
                              anchors={3: " love"})
    vocab = Vocabulary(tok)
    for kind in ("state", "confidence", "commit_step", "edits"):
        lk.viz.heatmap(out.trace, vocab, kind)
    assert "love" in lk.viz.token_grid(out.trace, vocab)
    lk.viz.step_slider(out.trace, vocab)
    for value in ("distance", "probability"):
        fig = lk.viz.continuous_heatmap(out.trace, vocab, value)
        assert fig.data[0].z.shape == (4, 8)
    again = lk.Trace.load(out.trace.save(tmp_path / "c.npz"))
    assert torch.equal(distances(again), distances(out.trace))
    with pytest.raises(ValueError, match="value must be one of"):
        lk.viz.continuous_heatmap(out.trace, vocab, "colour")


def test_fixed_positions_follow_their_forward_noised_path(net, tok):
    """The DDIM update itself: with the model's x0 replaced by the true embedding at the prompt,
    the prompt's x_t must stay on √ᾱ_t·e + √(1−ᾱ_t)·ε with one ε for the whole run (a wrong
    update, e.g. ᾱ for the wrong time, leaves that path). The free positions get the model's x0."""
    seen = []

    class Spy(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner, self.config = net, net.config

        def embedding_matrix(self):
            return net.embedding_matrix()

        def logits(self, x):
            return net.logits(x)

        def forward(self, x, t):
            seen.append((x.clone(), float(t[0])))
            return net(x, t)

    sch = schedule("cosine")
    out = generate_continuous(Spy(), tok, schedule=sch, prompt="ROMEO:\n", length=8, steps=6)
    P = out.trace.prompt_len
    e = net.embedding_matrix()[out.ids[0, :P]]                            # (P, D)
    (x1, t1) = seen[0]
    a1 = float(sch(torch.tensor(t1)))
    eps = (x1[0, :P] - a1 ** 0.5 * e) / (1 - a1) ** 0.5                   # the run's one ε
    for x, t in seen[1:]:
        a = float(sch(torch.tensor(t)))
        assert torch.allclose(x[0, :P], a ** 0.5 * e + (1 - a) ** 0.5 * eps, atol=1e-4), t
    assert len(seen) == 6 and [round(t, 4) for _, t in seen] == [round(1 - i / 6, 4) for i in range(6)]
