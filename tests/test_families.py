"""Checkpoints in transformers' own formats: masked LMs as denoisers, causal LMs as the AR
baseline, chat prompts, and every bad checkpoint refused with one clear line."""
import json

import pytest
import torch
from families_common import check_family, save_tokenizer

import labkit as lk

SPECIALS = {"[PAD]": 0, "[MASK]": 1, "[SEP]": 2}
CHAT = ("{% for m in messages %}<{{ m['role'] }}> {{ m['content'] }} {% endfor %}"
        "{% if add_generation_prompt %}<assistant> {% endif %}")


def bert(folder, *, vocab=96, tokenizer_vocab=96, head=True, chat=None, specials=None, **cfg):
    from transformers import BertConfig, BertForMaskedLM, BertModel

    specials = specials or {**SPECIALS, "<user>": 3, "<assistant>": 4}
    save_tokenizer(folder, specials, tokenizer_vocab, mask="[MASK]", eos="[SEP]", pad="[PAD]", chat_template=chat)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=vocab, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64, **cfg)
    (BertForMaskedLM if head else BertModel)(config).save_pretrained(folder)
    return folder


def test_a_masked_lm_is_a_denoiser_whose_rows_do_not_depend_on_their_batch(tmp_path):
    lm = lk.load(str(bert(tmp_path / "bert")))
    assert lm.kind == "masked" and lm.mask_id == 1 and lm.max_length == 64 and lm.family.name == "masked LM"
    check_family(lm, rules=[lk.LowConfidence(), lk.Threshold(threshold=0.5)])


def roberta(folder, *, vocab=96, context=64):
    """A tiny random RoBERTa in its published layout: <s> 0, <pad> 1, </s> 2, <unk> 3, <mask> the last
    id; its position ids start at pad_token_id + 1, so max_position_embeddings is the context + 2."""
    from transformers import RobertaConfig, RobertaForMaskedLM

    save_tokenizer(folder, {"<s>": 0, "<pad>": 1, "</s>": 2, "<mask>": vocab - 1}, vocab, mask="<mask>", eos="</s>",
                   pad="<pad>")
    torch.manual_seed(0)
    config = RobertaConfig(vocab_size=vocab, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                           intermediate_size=32, max_position_embeddings=context + 2, pad_token_id=1, bos_token_id=0,
                           eos_token_id=2)
    RobertaForMaskedLM(config).save_pretrained(folder)
    return folder


def test_a_roberta_decodes_a_left_padded_batch_as_each_row_alone(tmp_path):
    """RoBERTa counts its positions from pad_token_id + 1 on the first real token: a left-padded row
    must get the positions it has alone, or every position of the shorter rows shifts."""
    lm = lk.load(str(roberta(tmp_path / "roberta")))
    assert (lm.kind, lm.pad_id, lm.mask_id, lm.eos_id) == ("masked", 1, 95, 2) and lm.family.name == "masked LM"
    short, long = lm.encode("the mind"), lm.encode("to be or not to be that is the question")
    pad = len(long) - len(short)
    x = torch.tensor([[lm.pad_id] * pad + short + [lm.mask_id] * 4, long + [lm.mask_id] * 4])
    batch = lm(x, (torch.arange(x.shape[1]) >= torch.tensor([[pad], [0]])).long())
    assert torch.allclose(batch[0, pad:], lm(x[:1, pad:])[0], atol=1e-5)
    assert torch.allclose(batch[1], lm(x[1:])[0], atol=1e-5)
    assert torch.allclose(lm(x[1:]), lm.net(input_ids=x[1:]).logits, atol=1e-6)   # the positions RoBERTa counts
    cfg = json.loads((tmp_path / "roberta" / "config.json").read_text())
    assert lm.max_length == cfg["max_position_embeddings"] - lm.pad_id - 1     # positions 0..pad reserved
    with pytest.raises(ValueError, match="exceeds the model's context"):
        lk.generate(lm, "the mind", gen_length=lm.max_length, block_length=lm.max_length, steps=lm.max_length)
    check_family(lm, rules=[lk.LowConfidence(), lk.Threshold(threshold=0.5)])
    prompts = ["to be or not to be that is the question", "the mind", "whether tis nobler in the mind to suffer"]
    for rule in (lk.LowConfidence(), lk.Threshold(threshold=0.5)):
        together = lk.generate(lm, prompts, rule, gen_length=8, block_length=4, steps=8)
        for i, p in enumerate(prompts):
            alone = lk.generate(lm, p, rule, gen_length=8, block_length=4, steps=8)
            assert torch.equal(together.ids[i, -8:], alone.ids[0, -8:]), (rule, i)
            assert together.texts[i] == alone.texts[0]


def test_a_causal_lm_loads_with_its_head_as_the_ar_baseline(tmp_path):
    from transformers import GPT2Config, GPT2LMHeadModel

    save_tokenizer(tmp_path, SPECIALS, 96, eos="[SEP]", pad="[PAD]")
    GPT2LMHeadModel(GPT2Config(vocab_size=96, n_embd=16, n_layer=1, n_head=2, n_positions=64,
                               bos_token_id=2, eos_token_id=2)).save_pretrained(tmp_path)
    ar = lk.load(str(tmp_path))
    assert ar.kind == "causal" and ar.max_length == 64 and ar(torch.tensor([[5, 6]])).shape == (1, 2, 96)
    out = lk.generate(ar, ["to be", "the question is"], gen_length=4, block_length=4, steps=4)
    assert out.stats["nfe"] == 4 and not (out.ids[:, -4:] == ar.mask_id).any()


def test_chat_messages_go_through_the_chat_template(tmp_path):
    lm = lk.load(str(bert(tmp_path / "chat", chat=CHAT)))
    messages = [{"role": "user", "content": "to be or not"}]
    out = lk.generate(lm, messages, gen_length=4, block_length=4, steps=4)
    assert out.trace.prompt_len == len(lm.encode("<user> to be or not <assistant> "))
    same = lk.generate(lm, "<user> to be or not <assistant> ", gen_length=4, block_length=4, steps=4)
    assert torch.equal(out.ids, same.ids)
    batch = lk.generate(lm, [messages, [{"role": "user", "content": "the mind"}]], gen_length=4, block_length=4,
                        steps=4)
    assert batch.ids.shape[0] == 2
    with pytest.raises(ValueError, match="chat message must be"):
        lk.generate(lm, [{"role": "user", "text": "hi"}], gen_length=4, block_length=4, steps=4)
    with pytest.raises(ValueError, match="no chat template"):
        lk.generate(lk.toy(), messages, gen_length=4, block_length=4, steps=4)


def test_the_config_mask_id_wins_even_when_it_is_zero(tmp_path):
    folder = bert(tmp_path / "zero", specials={"<|mdm_mask|>": 0, "[MASK]": 1, "[PAD]": 2, "[SEP]": 3})
    cfg = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**cfg, "mask_token_id": 0}))
    lm = lk.load(str(folder))
    assert lm.mask_id == 0 and lm.tokenizer.mask_token_id == 1


@pytest.mark.parametrize("break_it, message", [
    (lambda f: [p.unlink() for p in f.glob("tokenizer*")] + [p.unlink() for p in f.glob("special*")],
     "no tokenizer files"),
    (lambda f: (f / "config.json").write_text(json.dumps({"model_type": "t5", "architectures": ["T5Model"]})),
     "neither a diffusion LM labkit knows nor a masked or causal language model"),
    (lambda f: (f / "config.json").write_text(json.dumps({"model_type": "vit"})), "model_type 'vit'"),
])
def test_bad_checkpoints_are_refused_in_one_line(tmp_path, break_it, message):
    folder = bert(tmp_path / "m")
    break_it(folder)
    with pytest.raises(ValueError, match=message):
        lk.load(str(folder))


def test_special_ids_read_every_eos_id_and_a_nested_text_config(tmp_path):
    from transformers import AutoTokenizer

    from labkit.models.families import detect
    from labkit.models.load import _special_ids, config_ids

    save_tokenizer(tmp_path, SPECIALS, 96, mask="[MASK]")                 # no eos, no pad token: the config decides
    tok = AutoTokenizer.from_pretrained(tmp_path)
    gemma = {"model_type": "diffusion_gemma", "eos_token_id": [1, 106],   # DiffusionGemma's published shape
             "text_config": {"bos_token_id": 2, "eos_token_id": 1, "pad_token_id": 0}}
    assert config_ids(gemma, "eos_token_id") == [1, 106] and config_ids(gemma, "pad_token_id") == [0]
    ids = _special_ids("gemma", detect(gemma), gemma, tok)
    assert (ids["eos_id"], ids["pad_id"], ids["extra_stop_ids"]) == (1, 0, (106,))
    bare = {"model_type": "bert"}
    assert _special_ids("eos only", detect(bare), {**bare, "eos_token_id": 2}, tok)["pad_id"] == 2
    assert _special_ids("nested", detect(bare), {**bare, "text_config": {"pad_token_id": 3}}, tok)["pad_id"] == 3
    with pytest.raises(ValueError, match=r"^model 'bare': neither pad_token_id nor eos_token_id is set "
                                         r"\(tokenizer or config\.json\).*set pad_token_id in config\.json"):
        _special_ids("bare", detect(bare), bare, tok)


def test_a_checkpoint_with_neither_a_pad_nor_an_eos_id_is_refused(tmp_path):
    folder = bert(tmp_path / "bare")
    for f in folder.glob("*token*"):
        f.unlink()
    save_tokenizer(folder, SPECIALS, 96, mask="[MASK]")
    cfg = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({k: v for k, v in cfg.items() if k not in ("pad_token_id",
                                                                                              "eos_token_id")}))
    with pytest.raises(ValueError, match="neither pad_token_id nor eos_token_id is set"):
        lk.load(str(folder))


def test_a_headless_checkpoint_is_refused(tmp_path):
    with pytest.raises(ValueError, match="headless or classification checkpoint"):
        lk.load(str(bert(tmp_path / "headless", head=False)))


def test_a_tokenizer_larger_than_the_embedding_table_is_refused(tmp_path):
    with pytest.raises(ValueError, match="tokenizer has 120 tokens"):
        lk.load(str(bert(tmp_path / "big", vocab=96, tokenizer_vocab=120)))


def test_a_missing_relative_folder_is_not_mistaken_for_a_cached_hub_model():
    with pytest.raises(ValueError, match="no local folder of that name and no hub model"):
        lk.load("runs/not-trained-yet")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_cuda_without_cuda_is_one_line(tmp_path):
    with pytest.raises(ValueError, match="not available"):
        lk.load(str(bert(tmp_path / "m")), device="cuda")


def test_readme_lists_every_family_labkit_loads():
    from pathlib import Path

    from labkit.models.families import FAMILIES

    readme = Path(__file__).parents[1].joinpath("README.md").read_text()
    table = readme.split("## Real models", 1)[1].split("\n## ", 1)[0]
    import re

    model_types = re.findall(r"^\| `([^`]+)` \|", table, re.M)          # the first column
    assert model_types
    for family in FAMILIES:
        assert family.model_type in model_types, f"{family.name} is not in the table"


def test_the_panel_sends_a_chat_message_through_the_template(tmp_path):
    from labkit.ui import widgets

    lm = lk.load(str(bert(tmp_path / "chat", chat=CHAT)))
    lab = widgets.Lab(lm, prompt="to be or not", gen_length=4, block_length=4, steps=4, run=False)
    assert not lab.chat.disabled
    lab.chat.value = True
    out = lab.run()
    assert out.trace.prompt_len == len(lm.encode("<user> to be or not <assistant> "))
    plain = widgets.Lab(lk.toy(), run=False)
    assert plain.chat.disabled and plain.prompt_value() == plain.prompt.value


def test_the_cli_sends_a_chat_message_through_the_template(tmp_path, capsys):
    from labkit.cli.main import main

    folder = bert(tmp_path / "chat", chat=CHAT)
    assert main(["generate", "--model", str(folder), "--chat", "--gen-length", "4", "--block-length", "4",
                 "--steps", "4", "--temperature", "0", "--trace", str(tmp_path / "run.npz"), "to be or not"]) == 0
    lm = lk.load(str(folder))
    assert lk.Trace.load(tmp_path / "run.npz").prompt_len == len(lm.encode("<user> to be or not <assistant> "))
    assert main(["generate", "--chat", "--gen-length", "4", "--block-length", "4", "--steps", "4", "ROMEO"]) == 2
    assert "no chat template" in capsys.readouterr().err


def test_remote_code_that_fails_under_this_transformers_is_one_line(tmp_path):
    """trust_remote_code=True on a checkpoint whose own modeling file breaks under transformers 5
    (as LLaDA's and Dream's do): one line naming the model, the transformers version and labkit's
    native families, not a traceback from inside the remote code."""
    import transformers

    folder = bert(tmp_path / "remote")
    (folder / "modeling_broken.py").write_text(
        "from transformers import BertForMaskedLM\n\n\n"
        "class BrokenForMaskedLM(BertForMaskedLM):\n"
        "    def __init__(self, config):\n"
        "        super().__init__(config)\n"
        "        self.written_for_transformers_4   # an attribute transformers 5 no longer sets\n")
    config = json.loads((folder / "config.json").read_text())
    config["auto_map"] = {"AutoModelForMaskedLM": "modeling_broken.BrokenForMaskedLM"}
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError) as err:
        lk.load(str(folder), trust_remote_code=True)
    message = str(err.value)
    assert "\n" not in message and "remote code" in message and transformers.__version__ in message
    assert "AttributeError" in message and "LLaDA" in message, message
    assert lk.load(str(folder)).family.name == "masked LM"       # without remote code it loads as a masked LM
