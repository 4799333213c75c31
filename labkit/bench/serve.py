"""`labkit bench serve`: the server under load, batching on (max_batch 16) and off (max_batch 1),
against the decoding loop's own speed at batch 16.

Each level runs `clients` threads, each sending `requests` /v1/completions requests one after the
other (greedy, low_confidence, one token per step, gen_length tokens); tokens are the answer
tokens returned (usage.completion_tokens), counted the same way for the loop's own run.
"""
from __future__ import annotations

import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from ..decode import generate
from ..serve.schemas import answer
from ..training.prompts import sample_prompts
from .common import Column, format_table, metadata

LEVELS = (1, 4, 16, 64)


def _percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def _level(url: str, prompts: list[str], clients: int, requests: int, knobs: dict) -> dict:
    import httpx  # no labkit dependency (jupyterlab, the lab's extra, brings it): only this bench's clients

    def client(i: int) -> list[tuple[float, int]]:
        out = []
        with httpx.Client(base_url=url, timeout=600) as c:
            for j in range(requests):
                t0 = time.perf_counter()
                r = c.post("/v1/completions", json={"model": "bench", "prompt": prompts[(i * requests + j) % len(prompts)],
                                                    **knobs})
                r.raise_for_status()
                out.append((time.perf_counter() - t0, r.json()["usage"]["completion_tokens"]))
        return out

    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        done = [x for xs in pool.map(client, range(clients)) for x in xs]
    wall = time.perf_counter() - t0
    latencies = [s for s, _ in done]
    return {"clients": clients, "requests": len(done), "seconds": round(wall, 3),
            "requests_per_s": round(len(done) / wall, 3), "tokens_per_s": round(sum(n for _, n in done) / wall, 2),
            "p50_s": round(statistics.median(latencies), 4), "p95_s": round(_percentile(latencies, 0.95), 4)}


def _loop_speed(lm, prompts: list[str], batch: int, gen_length: int, repeats: int) -> dict:
    """The loop's own answer tokens per second at `batch` rows (median of repeats)."""
    rates = []
    for r in range(repeats):
        rows = [prompts[(r * batch + i) % len(prompts)] for i in range(batch)]
        t0 = time.perf_counter()
        out = generate(lm, rows, "low_confidence", gen_length=gen_length, block_length=min(32, gen_length),
                       steps=gen_length, seed=0, eos_early_stop=True)
        seconds = time.perf_counter() - t0
        P = out.trace.prompt_len
        tokens = sum(len(answer(lm, row[P:].tolist(), gen_length)[0]) for row in out.ids)
        rates.append(tokens / seconds)
    return {"batch": batch, "tokens_per_s": round(statistics.median(rates), 2)}


def bench_serve(lm, *, levels=LEVELS, requests: int = 2, gen_length: int = 32, max_batch: int = 16,
                loop_repeats: int = 3, log=None) -> dict:
    """Requests/s, tokens/s and p50/p95 latency per client level with batching on and off, and the
    served tokens/s at `max_batch` clients over the loop's own at batch `max_batch`."""
    from ..serve.app import create_app, run_in_thread  # fastapi, the serve extra: `labkit bench` lists this without it

    if any(not isinstance(c, int) or c < 1 for c in levels) or requests < 1 or gen_length < 1:
        raise ValueError(f"levels, requests and gen_length must be positive integers, got {levels!r}, "
                         f"{requests!r}, {gen_length!r}")
    prompts = sample_prompts(64)
    knobs = {"max_tokens": gen_length, "temperature": 0, "sampler": "low_confidence", "steps": gen_length}
    loop = _loop_speed(lm, prompts, max_batch, gen_length, loop_repeats)
    if log:
        log(f"loop at batch {max_batch}: {loop['tokens_per_s']:.0f} tok/s")
    modes = {}
    for mode, mb in (("batched", max_batch), ("one_at_a_time", 1)):
        running = run_in_thread(create_app(lm, "bench", max_batch=mb, queue_size=4096, timeout=3600))
        try:
            _level(running.url, prompts, 1, 1, knobs)                               # warm-up
            rows = []
            for c in levels:
                rows.append(_level(running.url, prompts, c, requests, knobs))
                if log:
                    log(f"{mode:>14} {c:>3} clients: {rows[-1]['tokens_per_s']:.0f} tok/s, p50 {rows[-1]['p50_s']:.2f} s")
            modes[mode] = {"max_batch": mb, "rows": rows,
                           "scheduler": running.server.config.app.state.scheduler.stats()}
        finally:
            running.stop()
    at = next((r for r in modes["batched"]["rows"] if r["clients"] == max_batch), None)
    ratio = None if at is None else round(at["tokens_per_s"] / loop["tokens_per_s"], 3)
    return {"model": lm.name, "gen_length": gen_length, "requests_per_client": requests, "levels": list(levels),
            "loop": loop, "modes": modes, "served_over_loop_at_max_batch": ratio, "target_ratio": 0.85,
            "meta": metadata(lm)}


def table(r: dict) -> str:
    cols = [Column("mode", 15, align="<"), Column("clients", 8), Column("req/s", 9, ".2f"), Column("tok/s", 9, ".0f"),
            Column("p50 s", 9, ".3f"), Column("p95 s", 9, ".3f")]
    rows = [(mode, x["clients"], x["requests_per_s"], x["tokens_per_s"], x["p50_s"], x["p95_s"])
            for mode, m in r["modes"].items() for x in m["rows"]]
    title = (f"== labkit serve, {r['model']}, {r['gen_length']} tokens per answer, greedy low_confidence, "
             f"{r['requests_per_client']} requests per client")
    loop = r["loop"]
    tail = (f"loop at batch {loop['batch']}: {loop['tokens_per_s']:.0f} tok/s; served at {loop['batch']} clients / loop: "
            f"{r['served_over_loop_at_max_batch']} (target >= {r['target_ratio']})")
    return format_table(cols, rows, title) + "\n" + tail
