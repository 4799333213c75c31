"""labkit's loop against a literal re-statement of LLaDA's generate() (reference-samplers.md §1.1.1),
written independently here as a plain loop with a stored transfer table."""
import pytest
import torch

import labkit as lk


def llada_generate(lm, prompt_ids, steps, gen_length, block_length, cfg_scale=0.0):
    mask = lm.mask_id
    x = torch.full((1, len(prompt_ids) + gen_length), mask, dtype=torch.long)
    x[0, :len(prompt_ids)] = torch.tensor(prompt_ids)
    prompt_index = x != mask
    num_blocks = gen_length // block_length
    spb = steps // num_blocks
    P = len(prompt_ids)
    for b in range(num_blocks):
        s, e = P + b * block_length, P + (b + 1) * block_length
        m = int((x[0, s:e] == mask).sum())
        table = [m // spb + (1 if i < m % spb else 0) for i in range(spb)]
        for i in range(spb):
            mask_index = x == mask
            if cfg_scale > 0:
                un = x.clone()
                un[prompt_index] = mask
                both = lm(torch.cat([x, un]))
                logits = both[1:] + (cfg_scale + 1) * (both[:1] - both[1:])
            else:
                logits = lm(x)
            x0 = logits.argmax(-1)
            p = torch.softmax(logits.float(), -1).gather(-1, x0[..., None]).squeeze(-1)
            p[:, e:] = float("-inf")
            x0 = torch.where(mask_index, x0, x)
            conf = torch.where(mask_index, p, torch.tensor(float("-inf")))
            idx = conf[0].topk(table[i]).indices
            x[0, idx] = x0[0, idx]
    return x


@pytest.mark.parametrize("kw", [dict(steps=32, gen_length=32, block_length=16),
                                dict(steps=16, gen_length=32, block_length=32),
                                dict(steps=32, gen_length=32, block_length=8, cfg_scale=1.0)])
def test_matches_llada_generate_greedy(tiny, kw):
    prompt = "KING HENRY V:\nOnce more unto the breach, dear friends,\n"
    ref = llada_generate(tiny, tiny.encode(prompt), **kw)
    out = lk.generate(tiny, prompt, lk.LowConfidence(), **kw)
    assert torch.equal(out.ids, ref)
