"""The RL recipe search (labkit.bench.rl_sweep): every run a valid RLConfig off one base, and a run's
record read from its checkpoint or its finished folder alike."""
import dataclasses
import json

import pytest
import torch

from labkit.bench import rl_sweep
from labkit.training.rl import CHECKPOINT, RL_RECIPES


def test_every_run_is_the_base_with_its_own_settings():
    for name, (tries, settings) in rl_sweep.SWEEP.items():
        cfg = rl_sweep.config(name)
        assert tries and all(getattr(cfg, k) == v for k, v in settings.items())
        assert dataclasses.replace(cfg, **{k: getattr(rl_sweep.BASE, k) for k in settings}) == rl_sweep.BASE
    assert rl_sweep.BASE.init_from == "tiny-sudoku" and set(rl_sweep.BASE.eval_rules) >= {"S mode", "threshold 0.9"}
    with pytest.raises(ValueError, match="run must be one of"):
        rl_sweep.config("nope")


def test_the_committed_rl_models_recipe_is_the_run_the_search_kept():
    """tiny-sudoku-rl's recipe is the sweep's dec-mix-kl0.2, setting for setting (docs/models.md says so)."""
    assert rl_sweep.config("dec-mix-kl0.2") == RL_RECIPES["tiny-sudoku-rl"]


def test_a_run_is_read_from_its_checkpoint_or_its_record(tmp_path):
    history = [{"reward": 1.0 + i / 10, "signal_share": 0.5, "clip_fraction": 0.01, "approx_kl": 1e-3, "kl": 0.01 * i}
               for i in range(20)]
    evals = [{"step": 0, "S mode": {"accuracy": 0.8, "tpf": 7.0}}, {"step": 20, "S mode": {"accuracy": 0.9, "tpf": 7.1}}]
    torch.save({"history": history, "evals": evals}, tmp_path / "dec-pen.pt")
    (tmp_path / "dec-pen").mkdir()
    (tmp_path / "dec-pen.pt").rename(tmp_path / "dec-pen" / CHECKPOINT)
    (tmp_path / "dec-mix").mkdir()
    (tmp_path / "dec-mix" / "training.json").write_text(json.dumps({"rl": {"history": history[:10], "evals": evals}}))
    out = rl_sweep.bench_rl_sweep(tmp_path)
    assert [r["name"] for r in out["runs"]] == ["dec-pen", "dec-mix"]                 # SWEEP's order, started runs only
    pen = out["runs"][0]
    assert pen["steps"] == 20 and pen["reward_tenths"] == [1.05, 2.85] and pen["kl_end"] == pytest.approx(0.19)
    assert out["runs"][1]["reward_tenths"] == [1.0, 1.9] and "dec-pen" in rl_sweep.text_table(out)
