"""The neutral judge (labkit.eval.ngram): an interpolated Kneser-Ney model that sums to one, that matches a
hand count, that reads only the training plays (none of the held-out prompts), and that scores texts in the
parts gen-PPL's intervals use."""
import math

import numpy as np
import pytest

from labkit.eval.ngram import ORDER, Judge, KneserNey
from labkit.training import corpus
from labkit.training.prompts import FORMS, form_prompts, sample_prompts

TOY = [[0, 1, 2, 0, 1, 3, 0, 1, 2, 2], [3, 0, 1, 2]]


def _distribution(model: KneserNey, history: list[int]) -> np.ndarray:
    """P(w | history) for every w of the vocabulary. (V,)"""
    return np.array([math.exp(model.logprob(history + [w], len(history))[0]) for w in range(model.vocab_size)])


@pytest.mark.parametrize("order", [1, 2, 3, 4])
@pytest.mark.parametrize("history", [[], [0], [0, 1], [1, 2], [3, 3, 3], [2, 0, 1]])
def test_every_conditional_sums_to_one(order, history):
    model = KneserNey.fit(TOY, vocab_size=5, order=order)       # token 4 is never seen
    p = _distribution(model, history)
    assert p.min() > 0 and math.isclose(p.sum(), 1.0, rel_tol=1e-9), p


def test_a_bigram_matches_the_hand_count():
    """order 2 on one sequence [0, 1, 0, 2] (BOS = 3 in front): the bigrams (3,0) (0,1) (1,0) (0,2).
    Top order (raw): after 0, counts 1 (->1) and 1 (->2), T = 2, N = 2, D = n1 / (n1 + 2 n2) = 4 / 4 = 1
    clipped to 0.999. Unigrams (continuation): 0 after {3, 1} -> 2, 1 after {0} -> 1, 2 after {0} -> 1;
    T = 4, N = 3, D = 2 / (2 + 2) = 0.5; P_1(w) = max(c - 0.5, 0) / 4 + 0.5 * 3 / 4 * (1 / 4)."""
    model = KneserNey.fit([[0, 1, 0, 2]], vocab_size=3 + 1, order=2)
    uni = {w: max(c - 0.5, 0) / 4 + 0.5 * 3 / 4 / 4 for w, c in {0: 2, 1: 1, 2: 1, 3: 0}.items()}
    d = 0.999
    want = (1 - d) / 2 + d * 2 / 2 * uni[1]
    assert math.isclose(math.exp(model.logprob([0, 1], 1)[0]), want, rel_tol=1e-12)
    # an unseen context (after 2) backs off whole to the unigram level
    assert math.isclose(math.exp(model.logprob([2, 0], 1)[0]), uni[0], rel_tol=1e-12)


def test_bad_arguments_name_the_parameter():
    with pytest.raises(ValueError, match="order must be"):
        KneserNey.fit(TOY, vocab_size=5, order=9)
    with pytest.raises(ValueError, match="vocab_size must be"):
        KneserNey.fit(TOY, vocab_size=0)
    with pytest.raises(ValueError, match="token ids must be in 0..4"):
        KneserNey.fit([[0, 7]], vocab_size=5)
    with pytest.raises(ValueError, match="start must be in"):
        KneserNey.fit(TOY, vocab_size=5).logprob([0, 1], 5)


@pytest.fixture(scope="module")
def judge():
    return Judge.train()


def test_the_judge_reads_the_training_plays_only(judge):
    """Its counts are the training split's tokens, and no held-out prompt of any form comes from it: every
    held-out prompt is cut from a held-out play, none of which the judge counted."""
    train = corpus.load_plays("train")
    assert not set(train) & set(corpus.HELDOUT)
    counted = sum(len(judge.encode(t)) for t in train.values())
    top = judge.model.levels[-1]
    assert top.counts.sum() == counted                                 # one top-order gram per training token
    held = "\n\n".join(corpus.load_plays("heldout").values())
    for form in FORMS:
        for prompt in form_prompts(16, form) + sample_prompts(16):
            assert prompt.rstrip("\n") in held


def test_the_judge_prefers_real_text_to_a_shuffle(judge):
    """A sanity check that can fail: held-out verse reads better than the same tokens shuffled."""
    text = list(corpus.load_plays("heldout").values())[0][:2000]
    ids = judge.encode(text)
    rng = np.random.default_rng(0)
    shuffled = judge.tokenizer.decode(list(rng.permutation(ids)))
    assert judge.perplexity([text]) < judge.perplexity([shuffled]) / 3


def test_gen_nats_has_gen_ppls_parts(judge):
    prompts, texts = ["ROMEO:\n", "JULIET:\n"], ["O, she doth teach the torches to burn bright!", ""]
    rows = judge.gen_nats(prompts, texts)
    assert rows[1] == (0.0, 0) and rows[0][1] == len(judge.encode(texts[0])) and rows[0][0] > 0
    assert judge.model.order == ORDER and judge.name == f"kneser-ney-{ORDER}gram"
    with pytest.raises(ValueError, match="same length"):
        judge.gen_nats(prompts, texts[:1])
