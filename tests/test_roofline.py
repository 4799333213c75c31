"""labkit.bench.roofline (`labkit bench roofline`): the FLOP and byte counts against hand counts, the
roofline's choice of roof, the break-even k*, the H200 points read from gpu_check.json, and the
benchmark end to end at a tiny size. Correctness only: no timing is asserted.

    OMP_NUM_THREADS=1 .venv/bin/python -m pytest -q tests/test_roofline.py
"""
import json

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from labkit.bench import roofline as rf
from labkit.cli import common
from labkit.cli.main import build_parser, main
from labkit.models.tiny_net import TinyDLMConfig

# A small shape counted by hand below: D 8, 2 layers, 2 heads, SwiGLU 16, vocab 32;
# a pass over W = 2 new positions per row, batch 3, after a prefix of 5 (L = 7 keys).
SMALL = rf.Shape("small", hidden=8, layers=2, heads=2, intermediate=16, vocab=32)
B, W, P = 3, 2, 5


def test_flops_of_a_pass_match_a_hand_count():
    per_layer = (2 * 8 * 24        # qkv: (8) → (24)
                 + 2 * 8 * 8       # out
                 + 2 * 8 * 32      # gate_up: (8) → (2 · 16)
                 + 2 * 16 * 8      # down
                 + 2 * 7 * 8       # Q·Kᵀ over 7 keys, 2 heads of 4
                 + 2 * 7 * 8)      # attention · V
    assert per_layer == 1504
    per_position = 2 * per_layer + 2 * 8 * 32                     # 2 layers + the LM head
    assert rf.pass_flops(SMALL, B, W, P) == B * W * per_position == 21120


def test_bytes_of_a_pass_match_a_hand_count():
    weights = 2 * (8 * 24 + 8 * 8 + 8 * 32 + 16 * 8 + 2 * 8) + 8 + 32 * 8    # layers, final norm, head (tied)
    kv = 2 * (2 * B * 8 * (5 + 7 + 7))                 # per layer K and V: prefix read, cat written, attention read
    acts = B * W * (2 * ((8 + 24) + (8 + 8) + (8 + 8) + (8 + 32) + (16 + 8)) + 8 + (8 + 32))
    assert rf.pass_bytes(SMALL, B, W, P) == {"weights": 4 * weights, "kv": 4 * kv, "activations": 4 * acts}
    assert (4 * weights, 4 * kv, 4 * acts) == (6304, 7296, 7296)


def test_the_counts_match_the_network_torch_runs():
    """weight_count is the network's parameter count; the matmuls torch counts in a real cached pass
    are pass_flops less the attention (which torch's counter does not see on the CPU)."""
    shape = rf.Shape.stand_in(128, layers=2, vocab=96)
    net = rf.build_stand_in(shape, TinyDLMConfig(is_causal=True))
    assert rf.weight_count(shape) == sum(p.numel() for p in net.parameters())
    ids = torch.randint(96, (B, P + W))
    with torch.inference_mode():
        _, past = net.run(ids[:, :P])
        with FlopCounterMode(display=False) as counter:
            net.run(ids[:, P:], None, past=past, start=P)
    matmuls = sum(n for op, n in counter.get_flop_counts()["Global"].items() if str(op).split(".")[-1] in ("mm", "bmm"))
    attention = B * W * shape.layers * 4 * (P + W) * shape.hidden
    assert matmuls + attention == rf.pass_flops(shape, B, W, P)


def test_stand_ins_keep_tiny_ars_proportions_and_reject_other_widths():
    s = rf.Shape.stand_in(1024)
    assert (s.heads, s.intermediate, s.layers, s.vocab) == (16, 2752, 6, 2048)
    assert rf.Shape.stand_in(256).intermediate == 688                 # tiny-ar's own
    for bad in (100, 32, 8192):
        with pytest.raises(ValueError, match="widths"):
            rf.Shape.stand_in(bad)
    with pytest.raises(ValueError, match="heads"):
        rf.Shape("odd", hidden=10, layers=1, heads=3, intermediate=4, vocab=4)


def test_the_prediction_takes_the_slower_roof():
    flops, moved = rf.pass_flops(SMALL, B, W, P), sum(rf.pass_bytes(SMALL, B, W, P).values())
    slow_memory = {"flops_per_s": 1e12, "bytes_per_s": 1e6}
    p = rf.predict(SMALL, B, W, P, slow_memory)
    assert p["bound"] == "memory" and p["pred_ms"] == pytest.approx(1000 * moved / 1e6, rel=1e-4)
    slow_compute = {"flops_per_s": 1e3, "bytes_per_s": 1e12}
    p = rf.predict(SMALL, B, W, P, slow_compute)
    assert p["bound"] == "compute" and p["pred_ms"] == pytest.approx(1000 * flops / 1e3, rel=1e-4)
    assert p["intensity"] == pytest.approx(flops / moved, abs=1e-3) and (p["flops"], p["bytes"]) == (flops, moved)


def test_break_even_from_given_timings():
    times = {1: 0.002, 2: 0.002, 4: 0.003, 8: 0.005, 32: 0.1}
    rows = rf.break_even(times, blocks=(2, 4, 8, 16, 32))
    assert [r["block"] for r in rows] == [2, 4, 8, 32]                 # 16 was not measured
    assert [(r["ratio"], r["k_min"], r["pays"]) for r in rows] == [
        (1.0, 1, True),      # a 2-position pass costs one AR step: one token per pass already matches
        (1.5, 2, True),
        (2.5, 3, True),
        (50.0, 50, False)]   # more AR steps than the block holds: no tokens per pass can pay
    with pytest.raises(ValueError, match=r"times\[1\]"):
        rf.break_even({4: 0.1})


@pytest.mark.parametrize("kwargs, name", [
    (dict(positions=(2, 4)), "positions must include 1"),
    (dict(positions=(1, 0)), "positions must be integers from 1"),
    (dict(batches=(0,)), "batches must be integers from 1 to 64"),
    (dict(widths=(100,)), "widths: each a multiple of 64 from 64 to 4096"),
    (dict(widths=(8192,)), "widths must be integers from 64 to 4096"),
    (dict(widths=(), with_tiny=False), "widths must name a stand-in"),
    (dict(prefix=0), "prefix must be an integer from 1"),
    (dict(repeats=0), "repeats must be a positive integer"),
    (dict(blocks=(1,)), "blocks must be integers from 2")])
def test_bad_arguments_name_the_parameter_and_its_range(kwargs, name):
    with pytest.raises(ValueError, match=name):
        rf.bench_roofline(**kwargs)


def test_the_h200_points_are_read_from_gpu_check():
    gpu = rf.gpu_points(common.committed() / "gpu_check.json")
    assert gpu == rf.gpu_points()                                     # the committed copy is the default
    assert (gpu["gpu"], gpu["shape"], gpu["dtype"], gpu["source"]) == (
        "NVIDIA H200", "llada-8b", "torch.bfloat16", "gpu_check.json")
    assert [(p["positions"], p["ms"]) for p in gpu["forward"]] == [(275, 17.372), (512, 18.668)]
    assert gpu["forward"][1]["relative_time"] == round(18.668 / 17.372, 4)
    assert gpu["forward"][1]["relative_positions"] == round(512 / 275, 4)
    assert [p["batch"] for p in gpu["batch"]] == [1, 4, 8, 16] and gpu["batch"][0]["ms"] == 23.294
    assert gpu["batch"][-1]["relative_time"] == round(47.322 / 23.294, 4)
    assert rf.gpu_points("no/such/gpu_check.json") is None


def test_a_gpu_check_whose_sections_failed_gives_no_points(tmp_path):
    failed = tmp_path / "gpu_check.json"
    g = json.loads((common.committed() / "gpu_check.json").read_text())
    failed.write_text(json.dumps({**g, "forward_floor": {"error": "OutOfMemoryError: ..."}}))
    assert rf.gpu_points(failed) is None
    failed.write_text(json.dumps(g))
    assert rf.gpu_points(failed)["forward"][0]["positions"] == 275


def test_the_cli_offers_roofline_with_its_flags():
    a = build_parser().parse_args(["bench", "roofline", "--widths", "--positions", "1", "2", "--blocks", "2"])
    assert a.bench is rf.run_cli and a.out == common.SCRATCH
    assert (a.widths, a.positions, a.blocks, a.batches, a.prefix) == ([], [1, 2], [2], [1, 8], 128)
    d = build_parser().parse_args(["bench", "roofline"])
    assert (tuple(d.widths), tuple(d.positions), tuple(d.blocks)) == (rf.WIDTHS, rf.POSITIONS, rf.BLOCKS)


def test_the_benchmark_runs_end_to_end_at_a_tiny_size(tmp_path, capsys):
    assert main(["bench", "roofline", "--widths", "64", "--positions", "1", "2", "--batches", "1", "--blocks", "2",
                 "--prefix", "8", "--repeats", "1", "--json", "--quiet", "--out", str(tmp_path)]) == 0
    printed = json.loads(capsys.readouterr().out)
    result = json.loads((tmp_path / "roofline.json").read_text())
    assert printed == result                                          # the JSON round trip
    assert (tmp_path / "roofline.png").stat().st_size > 10_000
    assert list(result["shapes"]) == ["tiny-ar", "hidden-64"] == result["meta"]["model"]
    assert result["shapes"]["tiny-ar"]["hidden"] == 256 and result["shapes"]["tiny-ar"]["layers"] == 6
    assert [(p["model"], p["window"]) for p in result["points"]] == [
        ("tiny-ar", 1), ("tiny-ar", 2), ("hidden-64", 1), ("hidden-64", 2)]
    m = result["machine"]
    assert m["threads"] == torch.get_num_threads() == result["meta"]["threads"]
    assert m["flops_per_s"] > 0 and m["bytes_per_s"] > 0
    for p in result["points"]:
        assert p["ms"] > 0 and p["ratio"] == round(p["ms"] / p["pred_ms"], 3)
        assert p["flops"] == rf.pass_flops(rf.Shape(**{k: v for k, v in result["shapes"][p["model"]].items()
                                                       if k != "weights"}), 1, p["window"], 8)
    ms = {(p["model"], p["window"]): p["ms"] for p in result["points"]}
    for e in result["break_even"]:
        assert e["block"] == 2 and e["ratio"] == pytest.approx(ms[e["model"], 2] / ms[e["model"], 1], rel=1e-2)
    assert result["gpu"]["forward"][0]["positions"] == 275
    text = rf.conclusion(result)
    assert "tiny-ar (hidden 256" in text and "2-position pass costs" in text and "NVIDIA H200" in text
    assert "written" not in rf.table(result) and "break-even" in rf.table(result)
