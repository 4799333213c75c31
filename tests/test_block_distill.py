"""Distillation into a block-diffusion model (issue 53): the two-stream pass hides left padding, the
block loss keeps the prompt clean and scores only answer blocks, an AR teacher answers through its
cache, and `speech_eos` ends every speech of an answer with EOS."""
import math

import pytest
import torch

import labkit as lk
from labkit.training.distill import make_trajectories, pack, speech_eos
from labkit.training.losses import block_diffusion_loss
from labkit.training.prompts import FORMS, cut, fits_form, form_prompts, speeches, train_prompts
from labkit.training.recipes import TrainConfig
from tests.block_common import shared_char_model

B_, V = 4, 7


def test_left_padding_of_whole_blocks_changes_no_answer_logit():
    net = shared_char_model(4, shift=True).net
    g = torch.Generator().manual_seed(0)
    clean = torch.randint(5, 60, (2, 12), generator=g)                  # (2, 12): 3 blocks of 4
    noisy = clean.clone()
    noisy[:, 8:] = net.config.mask_token_id                              # the last block masked
    pad = torch.full((2, 4), net.config.pad_token_id)                    # one whole block of padding
    attn = torch.cat([torch.zeros(2, 4), torch.ones(2, 12)], 1).long()
    with torch.no_grad():
        plain = net.run_two_streams(noisy, clean)                        # (2, 12, V)
        padded = net.run_two_streams(torch.cat([pad, noisy], 1), torch.cat([pad, clean], 1), attention_mask=attn)
        unmasked = net.run_two_streams(torch.cat([pad, noisy], 1), torch.cat([pad, clean], 1))
    # position 0 (shifted: it reads itself, never scored: a prompt token) aside
    assert torch.allclose(padded[:, 5:], plain[:, 1:], atol=1e-2)            # logits of size ~100
    assert not torch.allclose(unmasked[:, 5:], plain[:, 1:], atol=1e-2)        # the padding would be read without it
    assert torch.isfinite(padded).all()                                  # padding queries see themselves


def test_block_loss_keeps_the_prompt_clean_and_averages_over_the_answer():
    seen = {}

    class Toy:
        class config:
            block_size = B_

        def run_two_streams(self, xt, x0, block, attention_mask=None):
            seen["xt"], seen["attn"] = xt.clone(), attention_mask
            return torch.zeros(*xt.shape, V)                             # uniform: each masked NLL is log V
    P, G = 8, 12
    x0 = torch.randint(1, V, (64, P + G), generator=torch.Generator().manual_seed(0))
    attn = torch.ones_like(x0)
    loss = block_diffusion_loss(Toy(), x0, 0, generator=torch.Generator().manual_seed(1), attention_mask=attn,
                                clean_prefix=P, edit_prob=0.3)
    xt = seen["xt"]
    assert (xt[:, :P] == x0[:, :P]).all() and seen["attn"] is attn    # prompt never noised, the mask passed on
    assert (xt[:, P:] == 0).any()
    # weighted by 1/t, the masked NLL averages to about log V per answer token (plus the T2T term's log V)
    assert math.isclose(loss.item(), 2 * math.log(V), rel_tol=0.25)
    with pytest.raises(ValueError, match="whole blocks"):
        block_diffusion_loss(Toy(), x0, 0, clean_prefix=6)


def test_an_ar_teacher_answers_left_to_right_through_its_cache(tmp_path):
    ar = lk.load("tiny-ar")
    prompts = train_prompts(2)
    traj = make_trajectories(ar, prompts, tmp_path / "t.pt", gen_length=8, block_length=8, bf16=False, log=None)
    for i, p in enumerate(prompts):
        ref = lk.generate(ar, p, lk.Autoregressive(), gen_length=8, block_length=8, steps=8)
        assert traj["answer"][i].tolist() == ref.ids[0, ref.trace.prompt_len:].tolist()


def test_speech_eos_ends_every_speech_and_keeps_the_text():
    tok = lk.load("tiny-ar").tokenizer
    text = "I will not, my lord.\n\nHAMLET:\nThen go.\n\nHORATIO:\nMy"
    ids = torch.tensor([tok(text)["input_ids"][:20]])
    G = ids.shape[1]
    out = speech_eos(tok, ids)
    assert out.shape == (1, G)
    assert (out[0] == tok.eos_token_id).sum() == 2                      # after each of the two breaks
    first = out[0].tolist().index(tok.eos_token_id)
    assert tok.decode(out[0, :first]) == "I will not, my lord.\n\n"
    kept = tok.decode(out[0].tolist(), skip_special_tokens=True)
    assert kept and tok.decode(ids[0].tolist()).startswith(kept)        # the same text, two tokens shorter at most


def test_pack_starts_the_answer_on_a_block_boundary():
    tok = lk.load("tiny-ar").tokenizer
    traj = {"prompt": ["A:\n", "ROMEO:\nBut soft\n"], "answer": torch.tensor([[5, 6, 7, 8], [8, 9, 10, 11]])}
    ids, attn, P = pack(tok, traj, multiple=16)
    assert P == 16 and ids.shape == (2, 20) and attn[:, P:].all()


def test_block_distillation_settings_are_checked():
    base = dict(init_from="tiny-ar", shift_logits=True, block_size=32, distill=8)
    TrainConfig(**base, distill_teacher="tiny-ar", eos_every_speech=True)
    with pytest.raises(ValueError, match="block_warmup must be 0"):
        TrainConfig(**base, block_warmup=10)
    TrainConfig(**base, distill_mix=0.25, distill_forms=FORMS)                  # corpus rows in block distillation
    with pytest.raises(ValueError, match="distill_forms must be a non-empty tuple of"):
        TrainConfig(**base, distill_forms=("chorus",))
    with pytest.raises(ValueError, match="distill_teacher"):
        TrainConfig(init_from="tiny", distill_teacher="tiny-ar")


def test_a_run_started_from_a_kept_copy_records_it(tmp_path):
    import dataclasses
    import json

    from labkit.training.loop import start_record
    from labkit.training.recipes import RECIPES
    src = tmp_path / "step-600"
    src.mkdir()
    (src / "model.safetensors").write_bytes(b"")
    (src / "config.json").write_text(json.dumps({"block_size": 32}))
    stage1 = RECIPES["tiny-block32-from-ar"]
    (src / "snapshot.json").write_text(json.dumps({"step": 600, "train_seconds": 3000.0,
                                                   "config": dataclasses.asdict(stage1)}))
    rec = start_record(TrainConfig(init_from=str(src), shift_logits=True, block_size=32, distill=8))["init_snapshot"]
    assert rec["recipe"] == "tiny-block32-from-ar" and rec["step"] == 600 and rec["model_config"] == {"block_size": 32}
    assert start_record(TrainConfig(init_from="tiny")) == {}               # a committed model: nothing to record


def test_prompts_of_every_form_are_cut_where_their_form_says():
    """A speaker alone; a speaker and the first words of the first line (no line break); a speaker, the first
    line and the first words of the second; a speaker and the whole first line."""
    speech = "ROMEO:\nBut soft, what light through yonder window breaks?\nIt is the east, and Juliet is the sun.\nArise."
    assert cut(speech, "speaker") == "ROMEO:\n"
    assert cut(speech, "first words", 0.0) == "ROMEO:\nBut"
    assert cut(speech, "first words", 0.99) == "ROMEO:\nBut soft, what light through yonder window"
    assert cut(speech, "mid-speech", 0.5) == "ROMEO:\nBut soft, what light through yonder window breaks?\nIt is the east, and"
    assert cut(speech, "first line") == "ROMEO:\nBut soft, what light through yonder window breaks?\n"
    assert not fits_form("ROMEO:\nAy.\n", "first words") and not fits_form("ROMEO:\nAy me!\n", "mid-speech")
    with pytest.raises(ValueError, match="form must be one of"):
        cut(speech, "aside")
    held = [s for s in speeches("heldout")]
    for form in FORMS:
        prompts = form_prompts(8, form)
        assert len(prompts) == 8 and all(any(s.startswith(p) for s in held) for p in prompts)


def test_training_prompts_take_the_forms_in_turn_and_the_old_list_is_unchanged():
    mixed = train_prompts(12, seed=0, forms=FORMS)
    assert [p.endswith(":\n") for p in mixed[0::4]] == [True] * 3                       # a speaker alone
    assert all(p.count("\n") == 1 and not p.endswith("\n") for p in mixed[1::4])        # first words
    assert all(p.count("\n") == 2 and not p.endswith("\n") for p in mixed[2::4])        # inside the second line
    assert all(p.count("\n") == 2 and p.endswith("\n") for p in mixed[3::4])            # a whole first line
    assert train_prompts(12, seed=0, forms=FORMS)[:8] == train_prompts(8, seed=0, forms=FORMS)
    old = train_prompts(4, seed=0)                 # the committed models' prompts: first lines, as drawn before
    assert old == train_prompts(4, seed=0, forms=("first line",)) and all(p.count("\n") == 2 for p in old)
