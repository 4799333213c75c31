"""`labkit bench roofline`: when does parallel decoding pay? One cached forward pass timed against
the number of positions it computes, beside a roofline prediction, on this machine.

A block decoder's pass computes W new positions over a KV cache of `prefix` positions
(`TinyDLM.run(x, past=past, start=prefix)`); the AR twin's cached step is the same pass at W = 1.
Each pass is predicted from the network's config and the machine's measured peaks:

    FLOPs  = B·W·[layers·(8D² + 6DI + 4LD) + 2DV]        L = prefix + W keys, D hidden, I SwiGLU, V vocab
    bytes  = 4·{weights once + K/V (cat and attention) + each matmul's input and output}    (float32)
    t_pred = max(FLOPs / measured FLOP/s, bytes / measured bytes/s)      intensity = FLOPs / bytes

(`pass_flops`, `pass_bytes`; norms, RoPE, softmax and the element-wise SwiGLU are left out, and the
attention counts every key, as scaled_dot_product_attention with a mask computes them all). While
the weights dominate the bytes, a pass costs about the same at any small B·W (memory-bound); past
the ridge point, intensity = machine FLOP/s / bytes/s, time grows with B·W (compute-bound).

Break-even: a pass over a block of W positions costs k* = t(W) / t(1) cached AR steps, so a block
decoder must commit more than k* tokens per pass to beat the AR twin on forwards alone; when
k* > W no number of tokens per pass can pay. Measured on tiny-ar and on wider stand-ins of the same
architecture with random weights (timing only), interleaved over W so that load on the machine hits
every W alike; the H200 figures of benchmarks/results/gpu_check.json (a random LLaDA-8B-shaped model
in bf16) are read beside them, normalised (time over the time at its smallest size), so that shapes
compare. Runs on the CPU, at the thread count in use (recorded). A window past tiny-ar's 256-token
trained context (prefix 128 + W 256) measures speed only, as `labkit bench length` does.
"""
from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

import torch

from .. import checkout
from ..models.load import load
from .common import Column, check_repeats, format_table, interleaved, metadata, save, stopwatch

POSITIONS = (1, 2, 4, 8, 16, 32, 64, 128, 256)   # W: new positions one pass computes
BATCHES = (1, 8)
BLOCKS = (4, 8, 16, 32)                          # block lengths whose break-even k* is reported
PREFIX = 128                                     # positions already in the cache
WIDTHS = (512, 1024, 2048)                       # stand-ins' hidden sizes (6 layers, as tiny-ar)
TINY = "tiny-ar"
FLOAT32 = 4                                      # bytes per value
HEAD_DIM = 64                                    # stand-ins: heads = hidden / 64, as tiny-ar (256 / 4)
MATMUL_N = 1024                                  # the machine's FLOP/s: (N, N) @ (N, N)
STREAM_BYTES = 256 * 2**20                       # the machine's bytes/s: a sum over 256 MiB
MACHINE_REPEATS = 5                              # best of, for both peaks


@dataclass(frozen=True)
class Shape:
    """A TinyDLM's shape, all the roofline reads."""
    name: str
    hidden: int          # D
    layers: int
    heads: int           # head dim = hidden / heads
    intermediate: int    # I, SwiGLU's hidden width
    vocab: int           # V, the LM head's outputs (tied to the embedding)

    def __post_init__(self):
        for field in ("hidden", "layers", "heads", "intermediate", "vocab"):
            if not isinstance(getattr(self, field), int) or getattr(self, field) < 1:
                raise ValueError(f"{field} must be a positive integer, got {getattr(self, field)!r}")
        if self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) must be a multiple of heads ({self.heads})")

    @classmethod
    def of(cls, name: str, config) -> Shape:
        """The shape of a TinyDLMConfig."""
        return cls(name, config.hidden_size, config.num_hidden_layers, config.num_attention_heads,
                   config.intermediate_size, config.vocab_size)

    @classmethod
    def stand_in(cls, hidden: int, layers: int = 6, vocab: int = 2048) -> Shape:
        """tiny-ar widened: head dim 64, SwiGLU width 2.6875·D (tiny-ar's 688 / 256)."""
        if not isinstance(hidden, int) or not 64 <= hidden <= 4096 or hidden % HEAD_DIM:
            raise ValueError(f"widths: each a multiple of {HEAD_DIM} from 64 to 4096, got {hidden!r}")
        return cls(f"hidden-{hidden}", hidden, layers, hidden // HEAD_DIM, hidden * 43 // 16, vocab)


def weight_count(s: Shape) -> int:
    """Parameters: per layer qkv 3D², out D², gate_up 2DI, down DI, two norms; final norm; the
    LM head V·D (the embedding is the same matrix)."""
    return s.layers * (4 * s.hidden**2 + 3 * s.hidden * s.intermediate + 2 * s.hidden) + s.hidden + s.vocab * s.hidden


def pass_flops(s: Shape, batch: int, window: int, prefix: int) -> int:
    """Multiply-adds × 2 of one cached pass: W new positions per row over prefix + W keys."""
    D, ffn, L = s.hidden, s.intermediate, prefix + window                 # ffn: I of the formula
    per_layer = 2 * D * 3 * D + 2 * D * D + 2 * D * 2 * ffn + 2 * ffn * D + 2 * 2 * L * D  # qkv, out, gate_up, down, QK+AV
    return batch * window * (s.layers * per_layer + 2 * D * s.vocab)                        # + the LM head


def pass_bytes(s: Shape, batch: int, window: int, prefix: int) -> dict[str, int]:
    """Bytes one cached pass moves (float32), by kind:
    weights: every weight read once;
    kv: per layer K and V: the cache's prefix read and the L keys written by the cat of
        kv_cache.window_kv (write=False), then the L keys read by the attention;
    activations: each matmul's input read and output written (qkv D→3D, attention q→y,
        out D→D, gate_up D→2I, down I→D), the embedding rows and the LM head D→V."""
    D, ffn, L = s.hidden, s.intermediate, prefix + window
    kv = s.layers * 2 * batch * D * (prefix + 2 * L)                          # K and V, each (B, H, ., hd)
    acts = batch * window * (s.layers * (10 * D + 3 * ffn) + 2 * D + s.vocab)
    return {"weights": FLOAT32 * weight_count(s), "kv": FLOAT32 * kv, "activations": FLOAT32 * acts}


def predict(s: Shape, batch: int, window: int, prefix: int, machine: dict) -> dict:
    """The roofline's time for one pass: the slower of its compute and its memory traffic."""
    flops = pass_flops(s, batch, window, prefix)
    moved = sum(pass_bytes(s, batch, window, prefix).values())
    compute_s, memory_s = flops / machine["flops_per_s"], moved / machine["bytes_per_s"]
    return {"flops": flops, "bytes": moved, "intensity": round(flops / moved, 3),
            "pred_ms": round(1000 * max(compute_s, memory_s), 4),
            "bound": "compute" if compute_s >= memory_s else "memory"}


# --- measuring ------------------------------------------------------------------------------------------
def measure_machine(repeats: int = MACHINE_REPEATS, n: int = MATMUL_N, stream_bytes: int = STREAM_BYTES) -> dict:
    """Best of `repeats`: FLOP/s of an (n, n) @ (n, n) float32 matmul and bytes/s of a sum over
    `stream_bytes` of float32 (read once), at torch's thread count in use."""
    check_repeats(repeats)
    a, b = torch.randn(n, n), torch.randn(n, n)
    x = torch.ones(stream_bytes // FLOAT32)
    stopwatch(lambda: a @ b)                                              # warm-up
    stopwatch(x.sum)
    matmul_s = min(stopwatch(lambda: a @ b)[0] for _ in range(repeats))
    stream_s = min(stopwatch(x.sum)[0] for _ in range(repeats))
    flops_per_s, bytes_per_s = 2 * n**3 / matmul_s, x.nbytes / stream_s
    return {"threads": torch.get_num_threads(), "matmul": f"({n}, {n}) @ ({n}, {n}) float32",
            "flops_per_s": round(flops_per_s), "stream": f"sum over {x.nbytes / 2**20:.0f} MiB float32",
            "bytes_per_s": round(bytes_per_s), "ridge_flop_per_byte": round(flops_per_s / bytes_per_s, 2)}


def build_stand_in(s: Shape, like, seed: int = 0):
    """A TinyDLM of shape `s` with random weights (timing only), otherwise configured as `like`."""
    from ..models.tiny_net import TinyDLM, TinyDLMConfig  # transformers: see models.load's EMBEDDED

    config = TinyDLMConfig(vocab_size=s.vocab, hidden_size=s.hidden, num_hidden_layers=s.layers,
                           num_attention_heads=s.heads, intermediate_size=s.intermediate,
                           max_position_embeddings=like.max_position_embeddings, is_causal=like.is_causal)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return TinyDLM(config).eval()


def time_windows(net, batch: int, positions, prefix: int, repeats: int) -> dict[int, float]:
    """Median seconds of one cached pass over W new positions per row after `prefix` cached ones,
    for each W in `positions`, interleaved (W = 1, 2, 4, ... then again) after one warm-up round."""
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(net.config.vocab_size, (batch, prefix + max(positions)), generator=gen)  # (B, P + W_max)
    with torch.inference_mode():
        _, past = net.run(ids[:, :prefix])                     # per layer K, V, each (B, H, P, hd)

        def one_pass(w: int):
            net.run(ids[:, prefix:prefix + w], None, past=past, start=prefix)   # logits (B, W, V), dropped
        passes = {w: partial(one_pass, w) for w in positions}
        for fn in passes.values():
            fn()
        medians, _ = interleaved(passes, repeats)
    return medians


def break_even(times: dict[int, float], blocks=BLOCKS) -> list[dict]:
    """For each block length W measured: ratio = t(W) / t(1), the AR steps one block pass costs;
    k_min, the fewest whole tokens per pass at which the pass costs no more than k_min AR steps;
    pays: whether any tokens per pass can (k_min <= W)."""
    if 1 not in times:
        raise ValueError(f"break_even needs the AR step's time, times[1]; got windows {sorted(times)}")
    rows = []
    for w in (b for b in blocks if b in times):
        ratio = times[w] / times[1]
        k_min = max(1, math.ceil(round(ratio, 9)))
        rows.append({"block": w, "ratio": round(ratio, 4), "k_min": k_min, "pays": k_min <= w})
    return rows


def gpu_points(path: str | Path | None = None) -> dict | None:
    """The H200 figures of gpu_check.json (default: the checkout's committed copy; None when absent,
    or when its forward_floor or batch section failed): LLaDA-8B-shaped forwards at batch 1 by canvas
    length, and ms per decoding step by batch, each also relative to its smallest size (positions
    and time), as the plot compares them."""
    if path is None:
        found = checkout.find()
        path = None if found is None else found / "benchmarks" / "results" / "gpu_check.json"
    if path is None or not Path(path).is_file():
        return None
    g = json.loads(Path(path).read_text())
    if not isinstance(g.get("forward_floor"), list) or not isinstance(g.get("batch"), dict) or not g["batch"].get("rows"):
        return None
    forward = sorted(g["forward_floor"], key=lambda r: r["length"])
    rows = g["batch"]["rows"]
    f0, b0 = forward[0], rows[0]
    return {"source": Path(path).name, "gpu": g["gpu"], "shape": g["shape"], "dtype": g["dtype"],
            "params": g["params"], "peak_bf16_tflops": g["peak_bf16_tflops"],
            "forward": [{"positions": r["length"], "batch": 1, "ms": r["median_ms"], "floor_ms": r["floor_ms"],
                         "relative_positions": round(r["length"] / f0["length"], 4),
                         "relative_time": round(r["median_ms"] / f0["median_ms"], 4)} for r in forward],
            "batch_gen_length": g["batch"]["gen_length"],
            "batch": [{"batch": r["batch"], "ms": r["ms_per_step"],
                       "relative_positions": round(r["batch"] / b0["batch"], 4),
                       "relative_time": round(r["ms_per_step"] / b0["ms_per_step"], 4)} for r in rows]}


def _check_sizes(name: str, values, low: int, high: int) -> tuple[int, ...]:
    values = tuple(values)
    if not values or any(isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high for v in values):
        raise ValueError(f"{name} must be integers from {low} to {high}, got {values!r}")
    return tuple(sorted(set(values)))


def _networks(tiny, widths, with_tiny: bool):
    """(shape, network) for tiny-ar (its trained weights) and each stand-in, built one at a time."""
    if with_tiny:
        yield Shape.of(TINY, tiny.config), tiny
    for d in widths:
        shape = Shape.stand_in(d, layers=tiny.config.num_hidden_layers, vocab=tiny.config.vocab_size)
        yield shape, build_stand_in(shape, tiny.config)


def _point(shape: Shape, batch: int, window: int, prefix: int, seconds: float, machine: dict) -> dict:
    """One measured pass beside its prediction; ratio = measured / predicted."""
    pred = predict(shape, batch, window, prefix, machine)
    ms = round(1000 * seconds, 4)
    return {"model": shape.name, "batch": batch, "window": window, "positions": batch * window, "ms": ms, **pred,
            "ratio": round(ms / pred["pred_ms"], 3)}


def bench_roofline(*, widths=WIDTHS, positions=POSITIONS, batches=BATCHES, prefix: int = PREFIX, blocks=BLOCKS,
                   repeats: int = 3, with_tiny: bool = True, gpu_check: str | Path | None = None, log=None) -> dict:
    """The machine's peaks, then for tiny-ar and each stand-in width, each batch and each W in
    `positions`: the median ms of `repeats` cached passes beside the roofline's prediction, and the
    break-even k* of each block length; the H200 points of `gpu_check` (default: the committed file)."""
    check_repeats(repeats)
    positions = _check_sizes("positions", positions, 1, 1024)
    if positions[0] != 1:
        raise ValueError(f"positions must include 1 (the AR step every break-even divides by), got {positions!r}")
    batches = _check_sizes("batches", batches, 1, 64)
    blocks = _check_sizes("blocks", blocks, 2, 1024)
    widths = _check_sizes("widths", widths, 64, 4096) if widths else ()
    for d in widths:
        Shape.stand_in(d)                          # a multiple of the head dim, or the ValueError naming widths
    if not widths and not with_tiny:
        raise ValueError("widths must name a stand-in when with_tiny is False: nothing to measure")
    if not isinstance(prefix, int) or not 1 <= prefix <= 4096:
        raise ValueError(f"prefix must be an integer from 1 to 4096, got {prefix!r}")
    lm = load(TINY)
    machine = measure_machine()
    if log:
        log(f"machine: {machine['flops_per_s'] / 1e9:.1f} GFLOP/s, {machine['bytes_per_s'] / 1e9:.1f} GB/s, "
            f"{machine['threads']} threads")
    shapes, points, even = {}, [], []
    for shape, net in _networks(lm.net.eval(), widths, with_tiny):
        shapes[shape.name] = {**asdict(shape), "weights": weight_count(shape)}
        for b in batches:
            times = time_windows(net, b, positions, prefix, repeats)
            points += [_point(shape, b, w, prefix, times[w], machine) for w in positions]
            even += [{"model": shape.name, "batch": b, **row} for row in break_even(times, blocks)]
            if log:
                log(f"{shape.name} batch {b}: " + " ".join(f"W{w} {1000 * times[w]:.2f}" for w in positions) + " ms")
    return {"prefix": prefix, "repeats": repeats, "positions": list(positions), "batches": list(batches),
            "blocks": list(blocks), "machine": machine, "shapes": shapes, "points": points, "break_even": even,
            "gpu": gpu_points(gpu_check), "meta": {**metadata(lm), "model": list(shapes)}}


# --- reading the result ---------------------------------------------------------------------------------
def table(result: dict) -> str:
    """Every measured point beside its prediction, then the break-even per model and batch."""
    cols = [Column("model", 12, align="<"), Column("B", 3), Column("W", 5), Column("ms", 10, ".3f"),
            Column("pred ms", 10, ".3f"), Column("x pred", 8, ".2f"), Column("FLOP/B", 8, ".1f"),
            Column("bound", 9)]
    rows = [(p["model"], p["batch"], p["window"], p["ms"], p["pred_ms"], p["ratio"], p["intensity"], p["bound"])
            for p in result["points"]]
    m = result["machine"]
    title = (f"== one cached pass over W new positions after {result['prefix']} cached ones; this machine: "
             f"{m['flops_per_s'] / 1e9:.1f} GFLOP/s, {m['bytes_per_s'] / 1e9:.1f} GB/s, {m['threads']} threads")
    even = [Column("model", 12, align="<"), Column("B", 3), Column("block", 7), Column("k*", 9, ".2f"),
            Column("k_min", 7), Column("pays", 6)]
    erows = [(e["model"], e["batch"], e["block"], e["ratio"], e["k_min"], "yes" if e["pays"] else "no")
             for e in result["break_even"]]
    return "\n\n".join([format_table(cols, rows, title),
                        format_table(even, erows, "== break-even: AR steps one block pass costs (k* = t(W) / t(1))")])


def _largest_block(result: dict, model: str, batch: int) -> dict | None:
    rows = [e for e in result["break_even"] if e["model"] == model and e["batch"] == batch]
    return max(rows, key=lambda e: e["block"]) if rows else None


def _model_line(result: dict, model: str) -> str:
    """The break-even of the largest block measured, at each batch, in words."""
    shape = result["shapes"][model]
    parts = []
    for b in result["batches"]:
        e = _largest_block(result, model, b)
        if e is None:
            continue
        if e["ratio"] <= 1:
            verdict = "no more than one AR step: a pass pays as soon as it commits a token"
        elif e["pays"]:
            verdict = f"a block decoder needs more than {e['ratio']:.1f} tokens per pass to beat the cached AR twin"
        else:
            verdict = "more than the block holds: no tokens per pass make it pay"
        step = next(p for p in result["points"] if p["model"] == model and p["batch"] == b and p["window"] == 1)
        parts.append(f"at batch {b}, a {e['block']}-position pass costs {e['ratio']:.1f} AR steps ({verdict}; "
                     f"the AR step takes {step['ms']:.2f} ms, x{step['ratio']:.1f} its roofline)")
    return (f"{model} (hidden {shape['hidden']}, {shape['weights'] / 1e6:.1f}M weights), on forwards alone: "
            + "; ".join(parts) + ".")


def _gpu_line(gpu: dict) -> str:
    small, large = gpu["forward"][0], gpu["forward"][-1]
    last = gpu["batch"][-1]
    return (f"On the {gpu['gpu']} ({gpu['source']}: {gpu['shape']}, {gpu['dtype'].replace('torch.', '')}), a "
            f"{large['positions']}-position forward takes {large['ms']:.1f} ms against {small['ms']:.1f} ms for "
            f"{small['positions']} (x{large['relative_time']:.2f} the time for x{large['relative_positions']:.2f} "
            f"the positions; {large['ms'] / large['floor_ms']:.1f}x its compute floor), and batch {last['batch']} "
            f"costs x{last['relative_time']:.2f} batch 1's time per step: memory- or launch-bound, so positions "
            f"there are nearly free.")


def conclusion(result: dict) -> str:
    """Where parallel decoding pays on this machine, in numbers from `result`."""
    m = result["machine"]
    lines = [f"This machine ({m['threads']} threads): {m['flops_per_s'] / 1e9:.1f} GFLOP/s, "
             f"{m['bytes_per_s'] / 1e9:.1f} GB/s, ridge at {m['ridge_flop_per_byte']:.1f} FLOP/byte."]
    lines += [_model_line(result, model) for model in result["shapes"]
              if any(e["model"] == model for e in result["break_even"])]
    if result.get("gpu"):
        lines.append(_gpu_line(result["gpu"]))
    return "\n".join(lines)


def figure(result: dict):
    """Log-log: ms per pass against positions computed (B·W), measured solid and predicted dashed;
    beside it each series relative to its smallest size, with the H200 points of gpu_check.json."""
    from matplotlib.figure import Figure  # on the first figure: `labkit`'s start and the tables need none

    fig = Figure(figsize=(12, 4.8))
    ax, rel = fig.subplots(1, 2)
    for i, (model, b) in enumerate((m, b) for m in result["shapes"] for b in result["batches"]):
        pts = [p for p in result["points"] if p["model"] == model and p["batch"] == b]
        x, color = [p["positions"] for p in pts], f"C{i % 10}"
        ax.plot(x, [p["ms"] for p in pts], "o-", color=color, label=f"{model}, batch {b}")
        ax.plot(x, [p["pred_ms"] for p in pts], "--", color=color)
        rel.plot([p["window"] for p in pts], [p["ms"] / pts[0]["ms"] for p in pts], "o-", color=color, ms=3)
    gpu = result.get("gpu")
    if gpu:
        label = f"{gpu['gpu']} / {gpu['shape']} {gpu['dtype'].replace('torch.', '')} ({gpu['source']})"
        rel.plot([p["relative_positions"] for p in gpu["forward"]], [p["relative_time"] for p in gpu["forward"]],
                 "ks-", label=f"{label}: forward, length {gpu['forward'][0]['positions']}→")
        rel.plot([p["relative_positions"] for p in gpu["batch"]], [p["relative_time"] for p in gpu["batch"]],
                 "k^:", label=f"{label}: decode step, batch 1→")
    top = max([p["window"] for p in result["points"]] + [p["relative_positions"] for p in
                                                          (gpu["forward"] + gpu["batch"] if gpu else [])] + [2])
    rel.plot([1, top], [1, 1], color="0.6", lw=0.8, label="flat: extra positions free")
    rel.plot([1, top], [1, top], color="0.8", lw=0.8, label="proportional to positions")
    ax.set(xscale="log", yscale="log", xlabel="positions computed per pass (batch × W)", ylabel="ms per pass",
           title=f"cached pass after {result['prefix']} positions (dashed: roofline)")
    rel.set(xscale="log", yscale="log", xlabel="positions relative to the series' smallest",
            ylabel="time relative to the series' smallest", title="shapes compared (CPU lines: t(W) / t(1))")
    ax.legend(fontsize=7)
    rel.legend(fontsize=6)
    fig.tight_layout()
    return fig


# --- the command ----------------------------------------------------------------------------------------
def add_flags(p) -> None:
    """`labkit bench roofline`'s own flags."""
    p.add_argument("--widths", type=int, nargs="*", default=list(WIDTHS), help="stand-ins' hidden sizes beside "
                   "tiny-ar (multiples of 64 from 64 to 4096; default 512 1024 2048; none: tiny-ar alone)")
    p.add_argument("--positions", type=int, nargs="+", default=list(POSITIONS),
                   help="new positions per pass, W (1 to 1024, 1 included; default 1 2 4 ... 256)")
    p.add_argument("--batches", type=int, nargs="+", default=list(BATCHES), help="batch sizes (1 to 64; default 1 8)")
    p.add_argument("--blocks", type=int, nargs="+", default=list(BLOCKS),
                   help="block lengths whose break-even k* is reported, among --positions (default 4 8 16 32)")
    p.add_argument("--prefix", type=int, default=PREFIX, help=f"positions in the cache (default {PREFIX})")
    p.add_argument("--repeats", type=int, default=3, help="timed passes per point, median (default 3)")
    p.add_argument("--gpu-check", default=None, help="gpu_check.json read for the H200 points "
                   "(default: benchmarks/results/gpu_check.json of the checkout)")


def run_cli(a) -> int:
    """Run, write roofline.json and roofline.png to --out, print the tables and the conclusion."""
    log = None if a.quiet else (lambda m: print(m, file=sys.stderr))
    result = bench_roofline(widths=a.widths, positions=a.positions, batches=a.batches, blocks=a.blocks,
                            prefix=a.prefix, repeats=a.repeats, gpu_check=a.gpu_check, log=log)
    path = save(result, Path(a.out) / "roofline.json")
    figure(result).savefig(path.with_name("roofline.png"), dpi=120)
    if a.json:
        print(json.dumps(result))
    else:
        print(table(result), conclusion(result), f"written: {path}, {path.with_name('roofline.png')}", sep="\n\n")
    return 0


__all__ = ["BATCHES", "BLOCKS", "FLOAT32", "HEAD_DIM", "MACHINE_REPEATS", "MATMUL_N", "POSITIONS", "PREFIX",
           "STREAM_BYTES", "TINY", "WIDTHS", "Shape", "add_flags", "bench_roofline", "break_even", "build_stand_in",
           "conclusion", "figure", "gpu_points", "measure_machine", "pass_bytes", "pass_flops", "predict", "run_cli",
           "table", "time_windows", "weight_count"]
