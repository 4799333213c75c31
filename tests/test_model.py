"""Loading: the embedded model, local folders, hub-style transformers models, and bad input."""

import pytest
import torch
from transformers import AutoModelForMaskedLM

import labkit as lk
from labkit.models.tiny_net import register


def save_toy(lm, path):
    lm.net.save_pretrained(path)
    lm.tokenizer.save_pretrained(path)
    return path


def test_round_trip_through_a_folder(toy, tmp_path):
    path = save_toy(toy, tmp_path / "m")
    back = lk.load(str(path))
    x = torch.randint(3, 100, (2, 12))
    assert torch.allclose(back(x), toy(x), atol=1e-6)
    assert (back.mask_id, back.eos_id, back.pad_id) == (toy.mask_id, toy.eos_id, toy.pad_id)


def test_auto_class_loads_the_embedded_architecture(toy, tmp_path):
    path = save_toy(toy, tmp_path / "m")
    register()
    net = AutoModelForMaskedLM.from_pretrained(path)
    x = torch.randint(3, 100, (1, 8))
    assert torch.allclose(net(input_ids=x).logits, toy(x), atol=1e-6)


def test_embedded_model_ids_come_from_the_tokenizer(tiny):
    tok = tiny.tokenizer
    assert tiny.mask_id == tok.convert_tokens_to_ids("<mask>") == tok.mask_token_id
    assert tiny.eos_id == tok.convert_tokens_to_ids("<eos>")
    assert tiny.pad_id == tok.convert_tokens_to_ids("<pad>")
    assert len({tiny.mask_id, tiny.eos_id, tiny.pad_id}) == 3
    assert tiny.max_length >= 256 and tiny.kind == "masked"


def test_hub_style_masked_lm_from_a_random_config(tmp_path):
    """The transformers adapter, exercised on a tiny random BERT saved to a temp folder."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "to", "be",
                                          "or", "not", ",", "the", "king"])}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="[PAD]", mask_token="[MASK]",
                                  unk_token="[UNK]", sep_token="[SEP]", cls_token="[CLS]")
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=64)
    BertForMaskedLM(cfg).save_pretrained(tmp_path / "bert")
    tok.save_pretrained(tmp_path / "bert")
    lm = lk.load(str(tmp_path / "bert"))
    assert lm.mask_id == vocab["[MASK]"] and lm.kind == "masked" and lm.max_length == 64
    out = lk.generate(lm, ["to be", "the king"], lk.LowConfidence(), gen_length=8, block_length=8, steps=8)
    assert not (out.ids[:, out.trace.prompt_len:] == lm.mask_id).any()
    with pytest.raises(ValueError, match="context"):
        lk.generate(lm, "to be", gen_length=64, block_length=64, steps=64)


def test_unknown_model_name():
    with pytest.raises(ValueError, match="unknown model 'tinny'"):
        lk.load("tinny")


def test_folder_without_config(tmp_path):
    with pytest.raises(FileNotFoundError, match="config.json"):
        lk.load(str(tmp_path))


def test_missing_checkpoint(toy, tmp_path):
    path = save_toy(toy, tmp_path / "m")
    (path / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="model.safetensors"):
        lk.load(str(path))


def test_corrupt_checkpoint(toy, tmp_path):
    path = save_toy(toy, tmp_path / "m")
    data = (path / "model.safetensors").read_bytes()
    (path / "model.safetensors").write_bytes(data[: len(data) // 3])
    with pytest.raises(ValueError, match="corrupt"):
        lk.load(str(path))


def test_truncated_config(toy, tmp_path):
    path = save_toy(toy, tmp_path / "m")
    (path / "config.json").write_text('{"model_type": "labkit-tiny-dlm", "hidden_')
    with pytest.raises(ValueError, match="config.json"):
        lk.load(str(path))


def test_autoregressive_twin_shares_the_tokenizer(tiny):
    ar = lk.load("tiny-ar")
    assert ar.kind == "causal" and ar.net.config.is_causal
    assert ar.tokenizer.get_vocab() == tiny.tokenizer.get_vocab()
    assert sum(p.numel() for p in ar.net.parameters()) == sum(p.numel() for p in tiny.net.parameters())
    x = torch.tensor([ar.encode("ROMEO:\nBut, soft! what light")])
    logits = ar(x)                                          # causal: a later token cannot change earlier logits
    y = x.clone()
    y[0, -1] = ar.encode(" sword")[0]
    assert torch.allclose(ar(y)[0, :-1], logits[0, :-1], atol=1e-5)


def test_a_causal_models_logits_at_i_predict_token_i_plus_1():
    """The Denoiser contract for kind "causal": lm(x)[:, i] scores token i + 1, not token i. Read
    shifted, a passage of verse is far likelier than read in place (this one: 2.4 vs 10.6 nats)."""
    ar = lk.load("tiny-ar")
    assert ar.kind == "causal"
    text = ("ROMEO:\nBut, soft! what light through yonder window breaks?\nIt is the east, and Juliet is the sun.\n"
            "Arise, fair sun, and kill the envious moon,\nWho is already sick and pale with grief,\n")
    x = torch.tensor([ar.encode(text)])
    logp = torch.log_softmax(ar(x).float(), dim=-1)[0]                     # (L, V)
    shifted = -logp[:-1].gather(-1, x[0, 1:, None]).mean().item()          # logits[:, i] score token i + 1
    unshifted = -logp.gather(-1, x[0, :, None]).mean().item()              # logits[:, i] score token i
    assert shifted < 4.0 and unshifted > 8.0, (shifted, unshifted)


def test_autoregressive_twin_predicts_held_out_text():
    from labkit.eval.evaluate import ar_bits_per_token, heldout_windows
    ar = lk.load("tiny-ar")
    bits = ar_bits_per_token(ar, heldout_windows(ar)[:4])
    assert 2.0 < bits < 8.0                                 # far below uniform log2(2048) = 11 bits
