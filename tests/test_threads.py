"""labkit's CPU thread policy: applied when labkit starts work, overridable, never at import."""
import subprocess
import sys

import pytest
import torch

import labkit as lk
from labkit import threads


@pytest.fixture(autouse=True)
def restore(monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.delenv(threads.ENV, raising=False)
    monkeypatch.setattr(threads, "_chosen", None)        # undone after the test
    yield
    torch.set_num_threads(before)


def test_load_applies_half_the_cores(monkeypatch):
    monkeypatch.setattr(threads, "cores", lambda: 8)
    torch.set_num_threads(3)
    lk.load("tiny")
    assert torch.get_num_threads() == 4


def test_environment_and_set_threads_override(monkeypatch):
    monkeypatch.setenv(threads.ENV, "1")
    lk.load("tiny")
    assert torch.get_num_threads() == 1
    monkeypatch.setenv(threads.ENV, "torch")
    torch.set_num_threads(2)
    lk.load("tiny")
    assert torch.get_num_threads() == 2                  # left alone
    assert lk.set_threads(1) == 1
    monkeypatch.setenv(threads.ENV, "2")
    lk.load("tiny")
    assert torch.get_num_threads() == 1                  # set_threads wins


@pytest.mark.parametrize("value", ["0", "two", "-1"])
def test_a_bad_environment_value_names_the_variable(monkeypatch, value):
    monkeypatch.setenv(threads.ENV, value)
    with pytest.raises(ValueError, match="LABKIT_THREADS must be a positive integer or 'torch'"):
        lk.load("tiny")


def test_set_threads_checks_its_argument():
    with pytest.raises(ValueError, match="threads must be a positive integer"):
        lk.set_threads(0)


def test_importing_labkit_leaves_torch_threads_alone():
    code = ("import torch; n = torch.get_num_threads(); import labkit; "
            "assert torch.get_num_threads() == n, (n, torch.get_num_threads()); print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == "ok", r.stderr


def test_the_panel_benchmark_runs_each_setting_in_its_own_process():
    from labkit.bench.panel import _panel_child, busy_neighbour
    r = _panel_child("tiny", 1, {"LABKIT_THREADS": "1"}, None, timeout=300)
    assert r["threads"] == 1 and r["steps"] == 64 and r["generate_median_s"] > 0
    with busy_neighbour() as n:
        assert n.proc.poll() is None                     # running beside us
    assert n.proc.poll() is not None                     # and gone afterwards
