"""The embedded model's tokenizer: byte-level BPE trained with `tokenizers` on the training plays."""
from __future__ import annotations

from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

SPECIALS = {"pad_token": "<pad>", "eos_token": "<eos>", "mask_token": "<mask>"}


def train_tokenizer(texts: list[str], vocab_size: int = 2048) -> PreTrainedTokenizerFast:
    """Byte-level BPE over `texts`; the specials get the first ids, but nothing relies on that."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIALS.values()),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, **SPECIALS)


def load_tokenizer(path: str | Path) -> PreTrainedTokenizerFast:
    path = Path(path)
    if not (path / "tokenizer.json").is_file():
        raise FileNotFoundError(f"no tokenizer.json in {path}")
    tok = PreTrainedTokenizerFast(tokenizer_file=str(path / "tokenizer.json"), **SPECIALS)
    return tok
