"""Metrics: gen-PPL under the AR twin by hand, stutter rate, distinct-n."""
import math

import pytest
import torch
import torch.nn.functional as F

import labkit as lk
from labkit.eval.metrics import distinct_n, gen_ppl, speed, stutter_rate


def test_gen_ppl_is_exp_mean_nll_of_the_answer_tokens_only():
    ar = lk.toy(causal=True, seed=2)
    prompts, texts = ["ROMEO:\n", "KING:\nMy lord"], ["I am here.", " and mine."]
    nll, n = 0.0, 0
    for p, t in zip(prompts, texts):
        pi, ti = ar.encode(p), ar.encode(t)
        x = torch.tensor([pi + ti])
        logp = F.log_softmax(ar(x)[0, :-1].float(), -1)
        for j in range(len(pi), len(pi) + len(ti)):
            nll -= float(logp[j - 1, x[0, j]])
            n += 1
    assert gen_ppl(ar, prompts, texts, batch=1) == pytest.approx(math.exp(nll / n), rel=1e-4)
    assert gen_ppl(ar, prompts, texts, batch=2) == pytest.approx(math.exp(nll / n), rel=1e-4)


def test_gen_ppl_ranks_real_text_above_word_salad():
    ar = lk.load("tiny-ar")
    good = gen_ppl(ar, ["ROMEO:\n"], ["I will not stay, my lord; I pray you, go.\n"])
    salad = gen_ppl(ar, ["ROMEO:\n"], ["quantum zebra pixel of the of banana lord lord"])
    assert good * 5 < salad


def test_gen_ppl_errors():
    with pytest.raises(ValueError, match="causal"):
        gen_ppl(lk.toy(), ["a"], ["b"])
    with pytest.raises(ValueError, match="same length"):
        gen_ppl(lk.toy(causal=True), ["a", "b"], ["c"])
    with pytest.raises(ValueError, match="empty"):
        gen_ppl(lk.toy(causal=True), ["a"], [""])


def test_stutter_and_distinct():
    assert stutter_rate([1, 1, 2, 3, 3, 3]) == pytest.approx(3 / 5)
    assert stutter_rate([1]) == 0.0
    assert distinct_n([1, 2, 1, 2], 2) == pytest.approx(2 / 3)


def test_speed_reads_the_output_stats(toy):
    out = lk.generate(toy, "ROMEO:\n", lk.LowConfidence(), gen_length=32, block_length=16, steps=16)
    assert speed(out) == {"nfe": 16, "tpf": 2.0, "tps": out.stats["tps"]}


def test_the_prompt_sets_share_one_form():
    from labkit.training.prompts import heldout_lines, opening, sample_prompts, spread, train_prompts
    assert spread(list(range(10)), 4) == [0, 3, 6, 9] and spread(list(range(10)), 1) == [0]
    assert opening("A:\nline one\nline two") == "A:\nline one\n"
    for p in sample_prompts(4) + train_prompts(4):
        head, first, rest = p.split("\n")
        assert head.endswith(":") and first and rest == ""
    pairs = heldout_lines(3)
    assert [p for p, _ in pairs] == [opening(p + line) for p, line in pairs]
    assert all(len(line.split()) >= 8 for _, line in pairs)
    assert sample_prompts(2)[0] == sample_prompts(32)[0]           # both start at the first speech
