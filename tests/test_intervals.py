"""Bootstrap intervals over prompts (labkit.eval.intervals) and gen-PPL's per-prompt parts."""
from __future__ import annotations

import math

import pytest

import labkit as lk
from labkit.eval.intervals import overlap, paired_ratio, ppl_interval, ratio_interval, verdict
from labkit.eval.metrics import gen_nats, gen_ppl, word_counts, word_validity

ROWS = [(10.0, 5), (30.0, 10), (6.0, 6), (40.0, 8), (12.0, 12), (20.0, 4)]


def test_the_interval_holds_the_figure_and_narrows_with_more_prompts():
    figure = math.exp(sum(n for n, _ in ROWS) / sum(k for _, k in ROWS))
    lo, hi = ppl_interval(ROWS)
    assert lo < figure < hi
    lo8, hi8 = ppl_interval(ROWS * 8)
    assert hi8 - lo8 < hi - lo
    assert ppl_interval(ROWS, seed=1) != (lo, hi) and ppl_interval(ROWS) == (lo, hi)   # seeded


def test_identical_samples_give_a_point():
    lo, hi = ratio_interval([(2.0, 1)] * 5)
    assert lo == hi == 2.0


def test_paired_ratio_of_a_rule_with_itself_is_one():
    assert paired_ratio(ROWS, ROWS) == (1.0, 1.0, 1.0)
    worse = [(n * 1.5, k) for n, k in ROWS]
    r, lo, hi = paired_ratio(worse, ROWS)
    assert lo <= r <= hi and r > 1
    with pytest.raises(ValueError, match="same prompts"):
        paired_ratio(ROWS, ROWS[:3])


def test_verdict_says_within_noise_when_intervals_overlap():
    assert overlap((1, 3), (2, 4)) and not overlap((1, 2), (3, 4))
    assert verdict("S", (5.0, 7.0), "Q", (6.0, 8.0)) == "S and Q within noise"
    assert verdict("S", (5.0, 5.5), "Q", (6.0, 8.0)) == "S better"
    assert verdict("S", (5.0, 5.5), "Q", (6.0, 8.0), lower_is_better=False) == "Q better"


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="at least 2 samples"):
        ppl_interval([(1.0, 1)])
    with pytest.raises(ValueError, match="zero denominator"):
        ratio_interval([(1.0, 0), (2.0, 0)])
    with pytest.raises(ValueError, match="draws must be"):
        ppl_interval(ROWS, draws=10)
    with pytest.raises(ValueError, match="level must be"):
        ppl_interval(ROWS, level=1.5)


def test_gen_nats_are_gen_ppls_parts():
    ar = lk.load("tiny-ar")
    prompts = ["ROMEO:\n", "JULIET:\n", "KING:\n"]
    texts = ["What say you, my lord?", "", "O, speak again, bright angel!"]
    rows = gen_nats(ar, prompts, texts)
    assert rows[1] == (0.0, 0) and all(k > 0 for i, (_, k) in enumerate(rows) if i != 1)
    assert math.exp(sum(n for n, _ in rows) / sum(k for _, k in rows)) == pytest.approx(gen_ppl(ar, prompts, texts), rel=1e-6)


def test_word_counts_are_word_validitys_parts():
    texts = ["the king is dead", "zzqx blorp the"]
    counts = word_counts(texts)
    assert sum(a for a, _ in counts) / sum(b for _, b in counts) == pytest.approx(word_validity(texts))
