"""The task models' tokenizer: one token per character (digits, letters, the tasks' marks),
so a puzzle cell, a digit or a letter is always exactly one canvas position."""
from __future__ import annotations

import string

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

SPECIALS = {"pad_token": "<pad>", "eos_token": "<eos>", "mask_token": "<mask>", "unk_token": "<unk>"}
CHARS = string.digits + string.ascii_lowercase + string.ascii_uppercase + ".=+-<>|:, \n"


def char_tokenizer() -> PreTrainedTokenizerFast:
    """Specials first (<pad> 0, <eos> 1, <mask> 2, <unk> 3), then CHARS in order."""
    vocab = {tok: i for i, tok in enumerate(SPECIALS.values())}
    for ch in CHARS:
        vocab[ch] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab, unk_token=SPECIALS["unk_token"]))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.add_special_tokens(list(SPECIALS.values()))
    return PreTrainedTokenizerFast(tokenizer_object=tok, **SPECIALS)
