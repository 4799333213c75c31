"""The training recipe: the masked-diffusion loss by hand, and exact resume after an interruption."""
import dataclasses
import json

import pytest
import torch
import torch.nn.functional as F

import labkit.training.corpus
from labkit.training.corpus import Corpus
from labkit.training.loop import train
from labkit.training.losses import masked_diffusion_loss, stratified_t
from labkit.training.recipes import TrainConfig


def test_loss_is_ce_over_t_on_masked_positions():
    torch.manual_seed(0)
    V, B, L, mask_id = 11, 3, 7, 0
    x0 = torch.randint(1, V, (B, L))
    table = torch.randn(V, V)
    logits_fn = lambda x: table[x]                               # noqa: E731
    t = torch.tensor([0.2, 0.5, 0.9])
    g = torch.Generator().manual_seed(1)
    got = masked_diffusion_loss(logits_fn, x0, mask_id, t=t, generator=g)
    masked = torch.rand(B, L, generator=torch.Generator().manual_seed(1)) < t[:, None]
    xt = torch.where(masked, 0, x0)
    ce = F.cross_entropy(table[xt].flatten(0, 1), x0.flatten(), reduction="none").view(B, L)
    want = (ce * masked / t[:, None]).sum() / (B * L)
    assert torch.allclose(got, want)


def test_prompt_positions_are_never_masked():
    x0 = torch.randint(3, 50, (4, 10))
    seen = []
    masked_diffusion_loss(lambda x: seen.append(x) or torch.zeros(*x.shape, 50), x0, 0, prompt_len=4,
                          t=torch.ones(4))
    assert torch.equal(seen[0][:, :4], x0[:, :4]) and (seen[0][:, 4:] == 0).all()


@pytest.fixture
def small_corpus(monkeypatch):
    plays = labkit.training.corpus.load_plays("train")
    small = {k: v[:20000] for k, v in list(plays.items())[:3]}
    monkeypatch.setattr(labkit.training.corpus, "load_plays", lambda split="train": small)


@pytest.mark.parametrize("objective", ["diffusion", "ar"])
def test_resume_reproduces_an_uninterrupted_run(tmp_path, small_corpus, monkeypatch, objective):
    cfg = TrainConfig(objective=objective, vocab_size=300, hidden_size=32, num_layers=1, num_heads=2,
                      intermediate_size=64, seq_len=32, batch_size=4, steps=6, warmup=2, ckpt_every=2)
    straight = train(cfg, tmp_path / "a", progress=False, log=lambda *_: None)

    real_batch = Corpus.batch

    def interrupted(self, cfg, step):
        if step == 5:
            raise KeyboardInterrupt                           # killed during step 5
        return real_batch(self, cfg, step)
    monkeypatch.setattr(Corpus, "batch", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train(cfg, tmp_path / "b", progress=False)
    monkeypatch.setattr(Corpus, "batch", real_batch)
    logs = []
    resumed = train(cfg, tmp_path / "b", progress=False, log=logs.append)
    assert logs and "resuming from step 4" in logs[0]
    from safetensors.torch import load_file
    a, b = load_file(straight / "model.safetensors"), load_file(resumed / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_resume_refuses_another_config(tmp_path, small_corpus):
    cfg = TrainConfig(vocab_size=300, hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64,
                      seq_len=32, batch_size=2, steps=2, warmup=1, ckpt_every=1)
    train(cfg, tmp_path / "c", progress=False)
    with pytest.raises(ValueError, match="another TrainConfig"):
        train(dataclasses.replace(cfg, lr=1e-4), tmp_path / "c", progress=False)


def test_bad_train_config():
    with pytest.raises(ValueError, match="objective"):
        TrainConfig(objective="bert")
    with pytest.raises(ValueError, match="steps"):
        TrainConfig(steps=0)
    with pytest.raises(ValueError, match="edit_prob"):
        TrainConfig(edit_prob=1.0)
    with pytest.raises(ValueError, match="diffusion"):
        TrainConfig(objective="ar", cap_weight=1.0)


def test_cap_term_is_mean_entropy_of_the_correct_masked_predictions():
    torch.manual_seed(0)
    V, B, L = 11, 3, 7
    x0 = torch.randint(1, V, (B, L))
    table = torch.randn(V, V) * 3
    table[0] = torch.randn(V) * 3                                 # what a mask predicts
    logits_fn = lambda x: table[x]                               # noqa: E731
    t = torch.tensor([0.4, 0.6, 0.9])
    plain = masked_diffusion_loss(logits_fn, x0, 0, t=t, generator=torch.Generator().manual_seed(2))
    cap = masked_diffusion_loss(logits_fn, x0, 0, t=t, generator=torch.Generator().manual_seed(2),
                                cap_weight=0.5)
    masked = torch.rand(B, L, generator=torch.Generator().manual_seed(2)) < t[:, None]
    logp = table[0].log_softmax(-1)
    right = masked & (logp.argmax() == x0)
    assert right.any()
    entropy = -(logp.exp() * logp).sum()
    assert torch.allclose(cap - plain, 0.5 * entropy)            # same entropy at every right position


def test_edit_training_corrupts_only_filled_answer_tokens_and_learns_them():
    x0 = torch.randint(3, 50, (8, 40))
    seen = []

    def fn(x):
        seen.append(x)
        return torch.zeros(*x.shape, 50)
    t = torch.full((8,), 0.3)
    loss = masked_diffusion_loss(fn, x0, 0, prompt_len=5, t=t, edit_prob=0.5,
                                 generator=torch.Generator().manual_seed(0))
    xt = seen[0]
    swapped = (xt != x0) & (xt != 0)
    assert swapped.any() and not swapped[:, :5].any()
    masked = xt == 0
    # uniform logits: every masked token costs log 50 / t, every filled one log 50
    n_masked, n_filled = int(masked.sum()), int((~masked[:, 5:]).sum())
    want = n_masked * torch.log(torch.tensor(50.0)) / 0.3 / (8 * 35) + torch.log(torch.tensor(50.0))
    assert n_filled > 0 and torch.allclose(loss, want)


def test_init_from_copies_weights_and_shift_moves_logits_one_right(tmp_path):
    from labkit.models.load import weights_dir
    from labkit.models.tokenizer import load_tokenizer
    from labkit.training.loop import build_model
    tok = load_tokenizer(weights_dir() / "tiny")
    small = dict(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64, seq_len=32)
    src = build_model(TrainConfig(objective="ar", seed=3, **small), tok)
    src.save_pretrained(tmp_path / "src")
    plain = build_model(TrainConfig(init_from=str(tmp_path / "src"), **small), tok).eval()
    shifted = build_model(TrainConfig(init_from=str(tmp_path / "src"), shift_logits=True, **small), tok).eval()
    assert torch.equal(plain.embed.weight, src.embed.weight) and not plain.config.is_causal
    x = torch.randint(3, 100, (2, 12))
    with torch.no_grad():
        a, b = plain(x).logits, shifted(x).logits
    assert torch.equal(b[:, 1:], a[:, :-1]) and torch.equal(b[:, 0], a[:, 0])
    with pytest.raises(ValueError, match="init_from"):
        build_model(TrainConfig(init_from=str(tmp_path / "src"), hidden_size=64, num_layers=1, num_heads=2,
                                intermediate_size=64, seq_len=32), tok)
    with pytest.raises(FileNotFoundError, match="init_from"):
        build_model(TrainConfig(init_from=str(tmp_path / "nowhere"), **small), tok)


def test_distill_trains_on_the_teachers_own_answers(tmp_path, small_corpus):
    from labkit.models.load import weights_dir
    from labkit.models.tokenizer import load_tokenizer
    from labkit.training.loop import build_model
    tok = load_tokenizer(weights_dir() / "tiny")
    small = dict(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64, seq_len=64)
    teacher = build_model(TrainConfig(seed=3, **small), tok)
    teacher.save_pretrained(tmp_path / "teacher")
    tok.save_pretrained(tmp_path / "teacher")
    cfg = TrainConfig(init_from=str(tmp_path / "teacher"), distill=3, distill_length=8, distill_block=4,
                      batch_size=2, steps=3, warmup=1, ckpt_every=3, bf16=False, **small)
    out = train(cfg, tmp_path / "student", progress=False, log=lambda *_: None)
    traj = torch.load(out / "trajectories.pt", weights_only=False)
    assert len(traj["prompt"]) == 3 and all(a.shape == (8,) for a in traj["answer"])
    student = labkit.load(str(out))
    assert student.net.config.vocab_size == len(tok)
    # corpus rows mixed in (one of the two rows here): the same seed gives another student
    mixed = train(dataclasses.replace(cfg, distill_mix=0.5), tmp_path / "mixed", progress=False,
                  log=lambda *_: None)
    a, b = (labkit.load(str(p)).net.state_dict() for p in (out, mixed))
    assert any(not torch.equal(a[k], b[k]) for k in a)
    assert json.loads((mixed / "training.json").read_text())["config"]["distill_mix"] == 0.5
    with pytest.raises(ValueError, match="distill_mix=0.9 leaves no teacher row"):
        dataclasses.replace(cfg, distill_mix=0.9)                 # a batch of 2: both rows corpus


def test_block_distillation_mixes_corpus_rows_in(tmp_path, small_corpus):
    """A block student with distill_mix: a share of each batch is block diffusion on the corpus (before, the
    corpus rows were dropped for block models); prompts of every form reach the teacher."""
    from labkit.models.load import weights_dir
    from labkit.models.tokenizer import load_tokenizer
    from labkit.training.loop import build_model
    from labkit.training.prompts import FORMS
    tok = load_tokenizer(weights_dir() / "tiny")
    small = dict(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64, seq_len=64)
    teacher = build_model(TrainConfig(seed=3, **small), tok)
    teacher.save_pretrained(tmp_path / "teacher")
    tok.save_pretrained(tmp_path / "teacher")
    cfg = TrainConfig(init_from=str(tmp_path / "teacher"), distill=4, distill_length=8, distill_block=8, block_size=8,
                      batch_size=2, steps=2, warmup=1, ckpt_every=2, bf16=False, distill_forms=FORMS, **small)
    out = train(cfg, tmp_path / "teacher-rows", progress=False, log=lambda *_: None)
    traj = torch.load(out / "trajectories.pt", weights_only=False)
    assert traj["prompt"][0].endswith(":\n") and not traj["prompt"][1].endswith("\n")   # speaker, then first words
    (tmp_path / "mixed").mkdir()
    (tmp_path / "mixed" / "trajectories.pt").write_bytes((out / "trajectories.pt").read_bytes())
    mixed = train(dataclasses.replace(cfg, distill_mix=0.5), tmp_path / "mixed", progress=False, log=lambda *_: None)
    a, b = (labkit.load(str(p)).net.state_dict() for p in (out, mixed))
    assert any(not torch.equal(a[k], b[k]) for k in a)


def test_stratified_t_spreads_one_uniform_draw_over_the_batch():
    u = torch.rand(1, generator=torch.Generator().manual_seed(0))
    t = stratified_t(4, eps=0.0, generator=torch.Generator().manual_seed(0))
    assert torch.equal(t, (u + torch.arange(4) / 4) % 1.0)
    t = stratified_t(8, eps=0.1, generator=torch.Generator().manual_seed(1))
    assert ((t >= 0.1) & (t < 1)).all()
    gaps = t.sort().values.diff()
    assert torch.allclose(gaps, torch.full_like(gaps, 0.9 / 8))    # evenly spaced, one per eighth


def test_the_diffusion_loss_draws_its_t_with_stratified_t():
    x0 = torch.randint(1, 20, (6, 9), generator=torch.Generator().manual_seed(0))
    table = torch.randn(20, 20, generator=torch.Generator().manual_seed(1))
    fn = lambda x: table[x]                                      # noqa: E731
    drawn = masked_diffusion_loss(fn, x0, 0, generator=torch.Generator().manual_seed(5))
    g = torch.Generator().manual_seed(5)
    given = masked_diffusion_loss(fn, x0, 0, generator=g, t=stratified_t(6, generator=g))
    assert torch.equal(drawn, given)


def test_cap_and_edit_terms_by_hand():
    from labkit.training.losses import ar_loss, cap_term, edit_term
    logp = torch.log_softmax(torch.tensor([[2.0, 0.0, 0.0], [0.0, 3.0, 0.0]]), -1)
    entropy = -(logp.exp() * logp).sum(-1)
    assert torch.allclose(cap_term(logp, torch.tensor([0, 2]), 0.5), 0.5 * entropy[0])   # only row 0 is right
    assert cap_term(logp, torch.tensor([1, 0]), 1.0) == 0                                 # none right
    logits = torch.randn(2, 3, 5, generator=torch.Generator().manual_seed(0))
    x0 = torch.tensor([[1, 2, 3], [4, 0, 1]])
    written = torch.tensor([[True, False, True], [False, True, True]])
    assert torch.allclose(edit_term(logits, x0, written, 2.0), 2.0 * F.cross_entropy(logits[written], x0[written]))
    seen = []
    loss = ar_loss(lambda x: seen.append(x) or logits[:, :2], x0)
    assert torch.equal(seen[0], x0[:, :2])
    assert torch.allclose(loss, F.cross_entropy(logits[:, :2].flatten(0, 1), x0[:, 1:].flatten()))


def test_the_loop_still_offers_the_recipes_and_train():
    import labkit.training.loop as loop
    import labkit.training.recipes as recipes
    assert loop.RECIPES is recipes.RECIPES and loop.TrainConfig is TrainConfig
    assert list(recipes.RECIPES) == ["tiny-ar", "tiny", "tiny-cap", "tiny-sudoku", "tiny-sudoku-ar",
                                     "tiny-sudoku-ar-solver", "tiny-facts", "tiny-facts-ar", "tiny-add", "tiny-add-ar",
                                     "tiny-block4-from-ar", "tiny-block4", "tiny-anneal", "tiny-scratch",
                                     "tiny-block16", "tiny-block4-edit", "tiny-block8-from-ar", "tiny-block16-from-ar",
                                     "tiny-block32-from-ar", "tiny-llada21-first-line", "tiny-llada21-any", "tiny-llada21",
                                     "tiny-sudoku-from-ar", "tiny-sudoku-scratch",
                                     "tiny-sudoku-editor", "tiny-sudoku-t2t"]
    assert recipes.TASK_MODELS == tuple(n for n in list(recipes.RECIPES)[3:10] if n != "tiny-sudoku-ar-solver")
    assert recipes.SOLVER_TWINS == ("tiny-sudoku-ar-solver",)
    a, b = recipes.RECIPES["tiny-sudoku-ar"], recipes.RECIPES["tiny-sudoku-ar-solver"]     # the third twin: one
    assert {k: v for k, v in vars(a).items() if k not in ("order", "seq_len")} == \
        {k: v for k, v in vars(b).items() if k not in ("order", "seq_len")}                # shape, data, budget
    for masked, ar in zip(recipes.TASK_MODELS[::2], recipes.TASK_MODELS[1::2]):   # twins: one shape, data, budget
        a, b = recipes.RECIPES[masked], recipes.RECIPES[ar]
        same = ("tasks", "batch_size", "steps", "hidden_size", "num_layers", "num_heads", "intermediate_size", "lr",
                "warmup", "weight_decay", "seed", "absolute_positions")
        assert all(getattr(a, k) == getattr(b, k) for k in same), masked
        assert (a.objective, b.objective) == ("diffusion", "ar")


def test_the_count_loss_masks_k_answer_positions_per_row_and_divides_by_k():
    from labkit.training.losses import masked_count_loss
    g = torch.Generator().manual_seed(0)
    x0 = torch.randint(3, 20, (64, 10))
    answer = torch.zeros(64, 10, dtype=torch.bool)
    answer[:, 4:] = True                                        # 6 answer positions per row
    logits = torch.randn(64, 10, 25)
    seen = []
    loss = masked_count_loss(lambda x: seen.append(x) or logits, x0, 2, answer=answer, generator=g)
    masked = seen[0] == 2
    k = masked.sum(-1)
    assert not masked[:, :4].any() and torch.equal(seen[0][~masked], x0[~masked])
    assert k.min() == 1 and k.max() == 6 and len(set(k.tolist())) == 6     # every count from one to all
    ce = F.cross_entropy(logits.transpose(1, 2), x0, reduction="none")
    assert torch.allclose(loss, (torch.where(masked, ce, 0.0).sum(-1) / k).mean())
    seen.clear()
    loss = masked_count_loss(lambda x: seen.append(x) or logits, x0, 2, answer=answer,
                             generator=torch.Generator().manual_seed(0), edit_prob=0.5)
    xt = seen[0]
    swapped = (xt != x0) & (xt != 2)
    assert torch.equal(xt == 2, masked) and not swapped[:, :4].any() and swapped.any()   # noise on written answers only
    filled = answer & ~masked
    expect = (torch.where(masked, ce, 0.0).sum(-1) / k).mean() + F.cross_entropy(logits[filled], x0[filled])
    assert torch.allclose(loss, expect)


def test_task_recipes_are_checked():
    with pytest.raises(ValueError, match="tasks must be"):
        TrainConfig(data="tasks", tasks=(("chess", 1.0),), seq_len=37)
    with pytest.raises(ValueError, match="seq_len must be >= 74"):
        TrainConfig(data="tasks", objective="ar", tasks=(("sudoku", 1.0),), seq_len=37)
    with pytest.raises(ValueError, match="trains alone"):
        TrainConfig(data="tasks", tasks=(("sudoku", 0.5), ("mirror", 0.5)), seq_len=37)
    with pytest.raises(ValueError, match="data='tasks' only"):
        TrainConfig(tasks=(("sudoku", 1.0),))


def test_eos_every_speech_ends_each_speech_and_nothing_else_changes(tmp_path, small_corpus, monkeypatch):
    """Issue 53, answers that stop: with eos_every_speech the corpus holds one EOS per speech (the
    default: one per play), between the same tokens; a training run reads the config's choice."""
    import labkit.training.loop
    from labkit.models.load import weights_dir
    from labkit.models.tokenizer import load_tokenizer
    from labkit.training.corpus import SPEECH_BREAK

    tok = load_tokenizer(weights_dir() / "tiny")
    plays = list(labkit.training.corpus.load_plays("train").values())
    plain, ended = Corpus(tok, plays), Corpus(tok, plays, eos_every_speech=True)
    speeches = sum(len(p.split(SPEECH_BREAK)) for p in plays)
    eos = tok.eos_token_id
    assert int((plain.ids == eos).sum()) == len(plays) and int((ended.ids == eos).sum()) == speeches
    assert torch.equal(ended.ids[ended.ids != eos], plain.ids[plain.ids != eos])       # the same text between
    assert len(ended.starts) == len(plain.starts) == speeches
    assert all(int(ended.ids[s - 1]) == eos for s in ended.starts[1:].tolist()[:50])  # each speech follows an EOS
    seen = []
    monkeypatch.setattr(labkit.training.loop, "Corpus", lambda t, texts, every=False: seen.append(every) or Corpus(t, texts))
    cfg = TrainConfig(vocab_size=300, hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64, seq_len=32,
                      batch_size=2, steps=1, warmup=1, eos_every_speech=True)
    train(cfg, tmp_path / "e", progress=False, log=lambda *_: None)
    assert seen == [True]
