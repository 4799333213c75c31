"""What every model family's test does with a tiny random checkpoint in its published format:
a word-level tokenizer with the family's special tokens, and the checks every family must pass
(load, decode with three rules and a control, draw a heatmap, batch invariance)."""
from __future__ import annotations

import json
from pathlib import Path

import torch

import labkit as lk

WORDS = ("to be or not that is the question whether tis nobler in mind suffer slings and arrows of "
         "outrageous fortune take arms against a sea troubles by opposing end them die sleep no more").split()


def save_weights(folder: Path, weights: dict, shards: int = 1) -> None:
    """weights as model.safetensors, or as `shards` files named by model.safetensors.index.json."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    if shards == 1:
        save_file(weights, str(folder / "model.safetensors"))
        return
    names, weight_map = sorted(weights), {}
    for s in range(shards):
        file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: weights[n] for n in names[s::shards]}
        save_file(part, str(folder / file))
        weight_map |= dict.fromkeys(part, file)
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))


def save_tokenizer(folder: Path, specials: dict[str, int], vocab_size: int, *, mask: str | None = None,
                   eos: str | None = None, pad: str | None = None, chat_template: str | None = None) -> dict:
    """A word-level tokenizer of `vocab_size` ids: the special tokens at the ids given (the
    family's layout), the words of WORDS after them, and filler tokens up to vocab_size.
    Returns token → id."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = dict(specials)
    free = (i for i in range(vocab_size) if i not in specials.values())
    for w in ("<unk>", *WORDS):
        vocab.setdefault(w, next(free))
    for i in free:
        vocab[f"<filler_{i}>"] = i
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", mask_token=mask, eos_token=eos,
                                  pad_token=pad, additional_special_tokens=[t for t in specials if t not in
                                                                            (mask, eos, pad)])
    if chat_template:
        tok.chat_template = chat_template
    tok.save_pretrained(folder)
    return vocab


def check_family(lm, *, rules=None) -> None:
    """Decode with LowConfidence, Threshold and a DraftEdit preset plus a Keywords control, draw a
    heatmap, and check a row's answer does not depend on the rest of its left-padded batch."""
    rules = rules or [lk.LowConfidence(), lk.Threshold(threshold=0.5), lk.DraftEdit.quality()]
    for rule in rules:
        out = lk.generate(lm, "to be or not", rule, gen_length=8, block_length=4, steps=8,
                          controls=[lk.Keywords(["question"])])
        assert not (out.ids[:, out.trace.prompt_len:] == lm.mask_id).any(), rule
        assert "question" in out.texts[0].split(), (rule, out.texts[0])
    fig = lk.viz.heatmap(out.trace, lm, "state")
    assert fig.data
    prompts = ["to be or not to be that is the question", "the mind"]
    batch = lk.generate(lm, prompts, lk.LowConfidence(), gen_length=8, block_length=4, steps=8)
    for i, p in enumerate(prompts):
        alone = lk.generate(lm, p, lk.LowConfidence(), gen_length=8, block_length=4, steps=8)
        assert torch.equal(batch.ids[i, -8:], alone.ids[0, -8:]), f"row {i} depends on its batch"
