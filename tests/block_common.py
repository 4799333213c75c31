"""A random block-diffusion TinyDLM on a character vocabulary (shared by the block-model tests)."""
import functools
import tempfile

import torch

import labkit as lk
from labkit.models.tiny_net import TinyDLM, TinyDLMConfig


def random_char_model(block_size: int, shift: bool = False, context: int = 96):
    """A 2-layer TinyDLM (block_size 0 = full attention) on tiny-sudoku's character tokenizer, its
    weights scaled up 20x so attention is far from uniform (a cache that is not exact shows)."""
    tok = lk.load("tiny-sudoku").tokenizer                                  # a character tokenizer, 77 ids
    torch.manual_seed(0)
    net = TinyDLM(TinyDLMConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=64, max_position_embeddings=context, block_size=block_size,
                                shift_logits=shift, mask_token_id=tok.mask_token_id, pad_token_id=tok.pad_token_id,
                                eos_token_id=tok.eos_token_id)).eval()
    with torch.no_grad():
        for p in net.parameters():
            p.mul_(20)
    with tempfile.TemporaryDirectory() as tmp:
        net.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        return lk.load(tmp)


shared_char_model = functools.lru_cache(maxsize=None)(random_char_model)   # read-only uses share one
