"""Confidence against accuracy (labkit.eval.calibration): the bins by hand, and the points of a real
decoding are the still-masked cells of every pass."""
import pytest
import torch

from labkit.eval.calibration import CONFIDENT, prediction_points, reliability
from labkit.models.load import load
from labkit.tasks import heldout


def test_bins_ece_and_confident_errors_by_hand():
    conf = torch.tensor([0.05, 0.55, 0.58, 0.95, 0.97, 0.99])
    right = torch.tensor([False, True, False, True, True, False])
    r = reliability(conf, right, bins=10)
    assert [(b["lo"], b["n"]) for b in r["bins"]] == [(0.0, 1), (0.5, 2), (0.9, 3)]
    want = (1 / 6) * 0.05 + (2 / 6) * abs(0.5 - 0.565) + (3 / 6) * abs(2 / 3 - 0.97)
    assert r["ece"] == pytest.approx(want, abs=1e-4)
    assert r["confident_share"] == 0.5 and r["confident_wrong"] == pytest.approx(1 / 3, abs=1e-4)
    assert reliability(torch.tensor([1.0]), torch.tensor([True]))["bins"][0]["lo"] == 0.9   # 1.0 falls in the top bin
    with pytest.raises(ValueError, match="conf and right"):
        reliability(torch.tensor([]), torch.tensor([], dtype=torch.bool))


def test_every_pass_scores_each_still_masked_cell():
    lm = load("tiny-sudoku")
    items = heldout("sudoku")[:5]
    conf, right = prediction_points(lm, items)
    blanks = sum(it.prompt.count(".") for it in items)
    # one cell committed per pass: a puzzle with k blanks gives k + (k - 1) + ... + 1 points
    assert conf.numel() == sum(k * (k + 1) // 2 for k in (it.prompt.count(".") for it in items)) > blanks
    assert ((conf > 0) & (conf <= 1)).all() and right.float().mean() > 0.5
    assert CONFIDENT == 0.9
