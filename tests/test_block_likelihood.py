"""The likelihood of block models (labkit.eval.likelihood.predicted_bits, block_draws): at block size
1 an AR model's weights give its exact likelihood; at larger blocks the Monte-Carlo estimate averages
to the bound computed by enumerating every mask of every block."""
from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F

import labkit as lk
from labkit.eval.likelihood import LN2, ar_bits, block_draws, predicted_bits
from labkit.models.handle import DLM
from labkit.models.tiny_net import TinyDLM, TinyDLMConfig
from labkit.training.convert import as_block_model


def random_ar():
    tok = lk.load("tiny-sudoku").tokenizer
    torch.manual_seed(1)
    net = TinyDLM(TinyDLMConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=64, max_position_embeddings=32, is_causal=True,
                                mask_token_id=tok.mask_token_id, pad_token_id=tok.pad_token_id,
                                eos_token_id=tok.eos_token_id)).eval()
    with torch.no_grad():
        for p in net.parameters():
            p.mul_(4)                                                    # predictions far from uniform
    return DLM(net=net, tokenizer=tok, mask_id=tok.mask_token_id, eos_id=tok.eos_token_id, pad_id=tok.pad_token_id,
               name="random-ar", kind="causal", max_length=32)


def test_block_one_is_the_ar_likelihood():
    ar = random_ar()
    w = torch.randint(5, 60, (6, 20))
    exact = ar_bits(ar, w)
    got = predicted_bits(as_block_model(ar, 1), w, mc_num=2)
    assert torch.allclose(got["per_window"], exact["per_window"], atol=1e-4) and got["mc_se"] == 0
    assert predicted_bits(ar, w)["bits_per_token"] == pytest.approx(exact["bits_per_token"])
    four = predicted_bits(as_block_model(ar, 4), w, mc_num=2)
    assert abs(four["bits_per_token"] - exact["bits_per_token"]) > 0.1     # not the AR model at block 4


def test_block_estimate_averages_to_the_enumerated_bound():
    """L = 7 in blocks of 3 (positions 0 given): each block's bound Σ_l (1/l) E_|S|=l[Σ_S CE] by
    enumeration, summed, against the mean of 3000 draws."""
    lm = as_block_model(random_ar(), 3)
    net, mask = lm.net, lm.mask_id
    x0 = torch.randint(5, 60, (1, 7))
    blocks = [[1, 2], [3, 4, 5], [6]]
    exact = 0.0
    with torch.no_grad():
        for pos in blocks:
            for k in range(1, len(pos) + 1):
                subsets = list(itertools.combinations(pos, k))
                for S in subsets:
                    xt = x0.clone()
                    xt[0, list(S)] = mask
                    ce = F.cross_entropy(net.run_two_streams(xt, x0, block=3)[0], x0[0], reduction="none")
                    exact += float(ce[list(S)].sum()) / k / len(subsets)
        g = torch.Generator().manual_seed(0)
        draws = []
        for _ in range(3000):
            counts = torch.tensor([[torch.randint(1, len(p) + 1, (1,), generator=g).item() for p in blocks]])
            draws.append(float(block_draws(net, x0, counts, 3, g)))
    mc = sum(draws) / len(draws)
    se = torch.tensor(draws).std().item() / len(draws) ** 0.5
    assert abs(mc - exact) < 4 * se, (mc, exact, se)
    bits = predicted_bits(lm, x0, mc_num=64)["bits_per_token"]
    assert abs(bits - exact / 6 / LN2) < 0.15 * exact / 6 / LN2


def test_bad_inputs_are_refused():
    ar = random_ar()
    with pytest.raises(ValueError, match="windows must be"):
        predicted_bits(ar, torch.zeros(3, 1, dtype=torch.long))
    with pytest.raises(ValueError, match="mc_num"):
        predicted_bits(as_block_model(ar, 2), torch.zeros(3, 8, dtype=torch.long), mc_num=0)
    with pytest.raises(ValueError, match="block_size must be"):
        as_block_model(ar, -1)
    with pytest.raises(ValueError, match="causal labkit TinyDLM"):
        as_block_model(as_block_model(ar, 2), 2)
