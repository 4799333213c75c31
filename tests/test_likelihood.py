"""labkit.eval.likelihood: LLaDA's Monte-Carlo likelihood against the enumerated ELBO on a toy
model, its standard error against the actual spread, the exact AR likelihood against a hand
computation, evaluate()'s likelihood keys, and the errors on bad input."""
import itertools
import math

import pytest
import torch
import torch.nn.functional as F

from labkit.eval.likelihood import answer_log_likelihood, ar_bits, ar_log_likelihood, elbo_bits, mean_variance, stratified_counts

V, MASK = 3, 3                     # toy vocabulary 0..2, the mask token 3


class ToyMasked:
    """A fixed random function of the (masked) input: logits[b, i] = Σ_j E[i, j, x[b, j]], so every
    prediction depends on what is masked where. E (L, L, V + 1, V)."""
    kind, mask_id, name, device = "masked", MASK, "toy-masked", torch.device("cpu")

    def __init__(self, length: int, seed: int = 0):
        self.E = torch.randn(length, length, V + 1, V, generator=torch.Generator().manual_seed(seed)) * 1.5

    def __call__(self, x):
        onehot = F.one_hot(x, V + 1).float()                             # (B, L, V+1)
        return torch.einsum("bjk,ijkv->biv", onehot, self.E)             # (B, L, V)


class ToyBigram:
    """A causal model whose next-token logits depend on the current token only: T[x_i]."""
    kind, mask_id, name, device = "causal", None, "toy-bigram", torch.device("cpu")

    def __init__(self, seed: int = 0):
        self.T = torch.randn(V, V, generator=torch.Generator().manual_seed(seed))

    def __call__(self, x):
        return self.T[x]                                                 # (B, L, V)


def exact_negative_elbo(lm, prompt, answer) -> float:
    """E_l[(A/l) · E_{|S| = l} Σ_S CE], l uniform on 1..A, S a uniform subset of the answer: every
    subset enumerated."""
    seq = torch.tensor(prompt + answer)
    A, P = len(answer), len(prompt)
    total = 0.0
    for size in range(1, A + 1):
        subsets = list(itertools.combinations(range(P, P + A), size))
        for s in subsets:
            xt = seq.clone()
            xt[list(s)] = MASK
            logp = F.log_softmax(lm(xt[None])[0], -1)
            ce = -sum(float(logp[i, seq[i]]) for i in s)
            total += (1 / A) * (A / size) * ce / len(subsets)
    return total


PROMPT, ANSWER = [2, 0], [1, 2, 0]


def test_the_estimate_matches_the_enumerated_elbo():
    lm = ToyMasked(len(PROMPT + ANSWER))
    exact = exact_negative_elbo(lm, PROMPT, ANSWER)
    est = answer_log_likelihood(lm, PROMPT, ANSWER, mc_num=4096, batch_size=512, seed=1)
    assert est.se > 0 and abs(-est.value - exact) < 3 * est.se
    assert est.se < 0.05 * exact                     # large mc_num: a tight check, not a loose one


def test_the_standard_error_is_the_actual_spread_and_shrinks_like_one_over_root_mc_num():
    lm = ToyMasked(len(PROMPT + ANSWER), seed=3)
    exact = exact_negative_elbo(lm, PROMPT, ANSWER)
    spread, reported = {}, {}
    for mc in (16, 64):
        runs = [answer_log_likelihood(lm, PROMPT, ANSWER, mc_num=mc, batch_size=64, seed=s) for s in range(300)]
        values = torch.tensor([-r.value for r in runs])
        spread[mc] = float(values.std())
        reported[mc] = sum(r.se for r in runs) / len(runs)
        assert abs(float(values.mean()) - exact) < 3 * spread[mc] / math.sqrt(len(runs))   # unbiased
        assert 0.7 < reported[mc] / spread[mc] < 1.4, (mc, reported[mc], spread[mc])
    assert 1.6 < spread[16] / spread[64] < 2.5 and 1.6 < reported[16] / reported[64] < 2.5


def test_the_prompt_is_never_masked_and_counts_are_stratified():
    seen = []

    class Spy(ToyMasked):
        def __call__(self, x):
            seen.append(x.clone())
            return super().__call__(x)

    lm = Spy(len(PROMPT + ANSWER))
    answer_log_likelihood(lm, PROMPT, ANSWER, mc_num=30, batch_size=7, seed=5)
    xt = torch.cat(seen)                                                 # (30, P + A)
    assert xt.shape == (30, 5) and not (xt[:, :len(PROMPT)] == MASK).any()
    assert sorted((xt == MASK).sum(1).tolist()) == [1] * 10 + [2] * 10 + [3] * 10
    counts = stratified_counts(7, 256, torch.Generator().manual_seed(0))
    assert counts.min() >= 1 and counts.max() <= 256 and counts.sort().values.diff().min() >= 36


def test_mean_variance_ignores_the_trend_in_the_count():
    counts = torch.tensor([[3, 1, 2, 4]])
    draws = counts.double() * 10                     # no noise, a pure trend: plain variance would be large
    assert float(mean_variance(draws, counts)) == pytest.approx(3 * 100 / (2 * 4 * 3))   # 3 steps of 10
    assert float(draws.var() / 4) > 3 * float(mean_variance(draws, counts))
    assert math.isnan(float(mean_variance(draws[:, :1], counts[:, :1])))


def test_elbo_bits_over_windows_agrees_with_the_enumeration():
    lm = ToyMasked(3, seed=7)
    windows = torch.tensor([[0, 1, 2], [2, 2, 1], [1, 0, 0]])
    exact = [exact_negative_elbo(lm, [], w.tolist()) / 3 / math.log(2) for w in windows]
    r = elbo_bits(lm, windows, mc_num=2048, batch=2, seed=0)
    assert r["per_window"].shape == (3,) and r["mc_se"] > 0
    assert abs(r["bits_per_token"] - sum(exact) / 3) < 3 * r["mc_se"]
    assert r["se"] == pytest.approx(float(torch.tensor(exact).std() / math.sqrt(3)), rel=0.1)
    assert math.isnan(elbo_bits(lm, windows, mc_num=1)["mc_se"])


def test_ar_likelihood_is_the_hand_computed_sum():
    lm = ToyBigram()
    seq = [0, 2, 1, 1, 0, 2]
    logp = [math.log(math.exp(lm.T[a, b]) / sum(math.exp(lm.T[a, c]) for c in range(V))) for a, b in zip(seq, seq[1:])]
    assert ar_log_likelihood(lm, seq[:2], seq[2:]) == pytest.approx(sum(logp[1:]), abs=1e-5)
    windows = torch.tensor([seq, seq[::-1]])
    back = [math.log(math.exp(lm.T[a, b]) / sum(math.exp(lm.T[a, c]) for c in range(V)))
            for a, b in zip(seq[::-1], seq[::-1][1:])]
    r = ar_bits(lm, windows, batch=1)
    per = torch.tensor([-sum(logp) / 5, -sum(back) / 5]) / math.log(2)
    assert r["bits_per_token"] == pytest.approx(float(per.mean()), abs=1e-5)
    assert r["se"] == pytest.approx(float(per.std() / math.sqrt(2)), abs=1e-5)


@pytest.mark.parametrize("call, words", [
    (lambda m, a: answer_log_likelihood(m, PROMPT, ANSWER, mc_num=0), "mc_num"),
    (lambda m, a: answer_log_likelihood(m, PROMPT, ANSWER, mc_num=2.5), "mc_num"),
    (lambda m, a: answer_log_likelihood(m, PROMPT, [], mc_num=4), "answer"),
    (lambda m, a: answer_log_likelihood(m, PROMPT, ANSWER, batch_size=0), "batch_size"),
    (lambda m, a: answer_log_likelihood(a, PROMPT, ANSWER), "masked model"),
    (lambda m, a: elbo_bits(a, torch.zeros(2, 3, dtype=torch.long)), "masked model"),
    (lambda m, a: elbo_bits(m, torch.zeros(0, 3, dtype=torch.long)), "windows"),
    (lambda m, a: ar_bits(m, torch.zeros(2, 3, dtype=torch.long)), "causal model"),
    (lambda m, a: ar_log_likelihood(m, PROMPT, ANSWER), "causal model"),
    (lambda m, a: ar_log_likelihood(a, [], ANSWER), "prompt"),
    (lambda m, a: ar_bits(a, torch.zeros(2, 1, dtype=torch.long)), "windows"),
])
def test_bad_input_names_the_parameter(call, words):
    with pytest.raises(ValueError, match=words):
        call(ToyMasked(5), ToyBigram())


def test_evaluate_reports_the_likelihoods_with_their_standard_errors(monkeypatch):
    import labkit as lk
    import labkit.eval.evaluate as ev

    ar = lk.load("tiny-ar")
    windows = ev.heldout_windows(ar)[:3, :64]
    monkeypatch.setattr(ev, "heldout_windows", lambda lm, length=256: windows)
    r = ev.evaluate(ar)
    exact = ar_bits(ar, windows)
    assert r["bits_per_token"] == r["nll_bits_per_token"] == round(exact["bits_per_token"], 4)
    assert r["bits_per_token_se"] == round(exact["se"], 4) > 0
    bits, se = ev.elbo_bits_and_se(lk.load("tiny"), windows, samples=2)
    assert 0 < se < bits
    with pytest.raises(ValueError, match="masked model"):
        ev.elbo_bits_per_token(ar, windows)


def test_bench_likelihood_writes_the_table(tmp_path, capsys):
    import argparse
    import json

    from labkit.cli import bench
    parser = argparse.ArgumentParser()
    bench.add_parser(parser.add_subparsers())

    def main(argv):
        a = parser.parse_args(argv)
        return a.fn(a)
    assert main(["bench", "likelihood", "--models", "tiny", "--mc-nums", "1", "2", "--windows", "2",
                 "--out", str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out
    r = json.loads((tmp_path / "likelihood.json").read_text())
    assert r["windows"] == 2 and r["ar"]["model"] == "tiny-ar" and 0 < r["ar"]["bits_per_token"] < 11
    rows = r["models"]["tiny"]
    assert [x["mc_num"] for x in rows] == [1, 2] and rows[0]["mc_se"] is None and rows[1]["mc_se"] > 0
    assert rows[1]["gap_to_ar"] == pytest.approx(rows[1]["bits_per_token"] - r["ar"]["bits_per_token"], abs=2e-4)
    assert "tiny-ar" in out and "exact" in out and "likelihood.json" in out
    with pytest.raises(ValueError, match="mc_num"):
        main(["bench", "likelihood", "--mc-nums", "0", "--out", str(tmp_path)])
    assert main(["bench", "likelihood", "--models", "tiny", "--mc-nums", "1", "--windows", "2", "--window-tokens", "32",
                 "--out", str(tmp_path), "--quiet"]) == 0
    assert json.loads((tmp_path / "likelihood.json").read_text())["window_tokens"] == 32
    with pytest.raises(ValueError, match="window_tokens .* exceeds model 'tiny-ar'"):
        main(["bench", "likelihood", "--window-tokens", "100000", "--out", str(tmp_path)])
