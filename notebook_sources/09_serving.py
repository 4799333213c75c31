# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 09 · Serving: a diffusion LM behind an OpenAI-compatible API
#
# *About 30 minutes to read and run, exercises apart · needs: notebook 01 · Quickstart · next: the course (docs/course.md) or a question of your own.*
#
# **The question:** coding tools, evaluation harnesses, chat front ends and batch scripts all speak one
# protocol, OpenAI's `/v1/chat/completions`. How do you put a diffusion LM behind it, what does a client
# see, and what is different from an autoregressive model behind the same API?
#
# Any such client needs three things, the **triple**:
#
# | | what it is | here |
# |---|---|---|
# | **base URL** | where the API lives, up to and including `/v1`; the client appends `/chat/completions`, `/models`, ... itself | `http://127.0.0.1:PORT/v1` |
# | **API key** | a secret sent as `Authorization: Bearer KEY` | `KEY` below (`labkit serve --api-key`) |
# | **model id** | the exact id the server lists at `GET /v1/models`, not a display name | `tiny` |
#
# `labkit serve --model tiny` runs the lab's loop (`lk.generate`) behind that API. This notebook starts it in
# the background, talks to it with the official `openai` Python client, compares it with the autoregressive
# twin `tiny-ar` behind the same API, and then uses the two tools that go with it: `labkit check-endpoint`
# (is my triple right?) and `labkit batch` (run a JSONL file of prompts, locally or against any endpoint).

# %%
# Parameters: CI runs this notebook on a CPU with these values.
MODEL, AR_TWIN = "tiny", "tiny-ar"
KEY = "lab09-secret"                          # any string; the servers below require it
ASK = [{"role": "user", "content": "Who art thou?"}]

import atexit
import contextlib
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from unittest import mock

import openai
import labkit as lk
from labkit.cli.main import main as labkit_cli
from labkit.serve import endpoint
from labkit.serve.schemas import render_chat
lk.viz.notebook_mode()

# %% [markdown]
# ## Start the server
#
# `labkit serve` is a long-running process, so the notebook starts it as a **subprocess** (what you would
# type in a terminal: `labkit serve --model tiny --port 8000 --api-key ...`) on a free port of `127.0.0.1`.
# Without `--api-key` it refuses any address other than this machine's loopback; with a key it may listen
# on `0.0.0.0`. Its output goes to a log file, and the notebook waits until `GET /v1/models` answers.
#
# On start-up it prints the client settings, ready to paste (the port is the one this run picked).

# %%
WORK = Path(tempfile.mkdtemp(prefix="labkit-serve-"))      # logs, prompts and results of this notebook
SERVERS = {}                                               # model -> (process, base URL)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url: str, key: str = KEY) -> dict:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.load(r)


def launch(model: str) -> str:
    """`labkit serve --model MODEL` in the background, on a free port; returns its base URL at once."""
    port = free_port()
    with open(WORK / f"{model}.log", "w") as log:           # the server writes its own copy of the file
        proc = subprocess.Popen([sys.executable, "-m", "labkit", "serve", "--model", model, "--port", str(port),
                                 "--api-key", KEY], stdout=log, stderr=subprocess.STDOUT)
    SERVERS[model] = (proc, f"http://127.0.0.1:{port}/v1")
    return SERVERS[model][1]


def start(model: str, timeout: float = 120.0) -> str:
    """launch(model) unless it runs already; returns its base URL once /v1/models answers."""
    if model not in SERVERS:
        launch(model)
    proc, url = SERVERS[model]
    end = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"labkit serve exited with {proc.returncode}:\n{(WORK / f'{model}.log').read_text()}")
        try:
            get_json(url + "/models")
            return url
        except OSError:
            if time.monotonic() > end:
                raise TimeoutError(f"labkit serve --model {model} did not answer within {timeout:g} s")
            time.sleep(0.2)


def stop_all() -> None:
    for proc, _ in SERVERS.values():
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=30)


atexit.register(stop_all)           # also when the kernel stops before the last cell

BASE_URL = start(MODEL)
launch(AR_TWIN)          # the AR twin's server, used further down: it loads meanwhile
settings = (WORK / f"{MODEL}.log").read_text().split("\nINFO:")[0].rstrip()
print(settings)

# %% [markdown]
# These are the three values a tool needs, in the shapes tools take them: environment variables (the
# `openai` SDKs and many tools read `OPENAI_BASE_URL`, `OPENAI_API_KEY`; `OPENAI_MODEL` is a common
# convention), a JSON object and a TOML provider entry. To point a coding tool or a chat UI at the lab's model,
# add a *custom OpenAI-compatible provider* in its settings with exactly this base URL, key and model id, and
# choose the Chat Completions wire format (`wire_api = "chat"`): `labkit serve` has no `/v1/responses`.
# A diffusion model's answer takes many forward passes, so give it a generous request timeout.
#
# ## Talk to it with the official client
#
# Nothing labkit-specific on the client side: `openai.OpenAI(base_url=..., api_key=...)`. `temperature=0` makes
# the answers reproducible (the server's default, like the lab's, samples at temperature 1).

# %%
client = openai.OpenAI(base_url=BASE_URL, api_key=KEY, timeout=120, max_retries=0)
print("models:", [m.id for m in client.models.list().data])

r = client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=32, temperature=0)
print("object:", r.object, "| model:", r.model, "| finish_reason:", r.choices[0].finish_reason)
print("usage:", r.usage.prompt_tokens, "prompt +", r.usage.completion_tokens, "completion tokens")
print("answer:", repr(r.choices[0].message.content))

# %% [markdown]
# The answer also carries one field that is not OpenAI's, `diffusion`: how the loop ran. Standard clients
# ignore unknown fields; the `openai` client keeps them in `model_extra`. **NFE** is the number of forward
# passes, **TPF** the tokens decided per forward pass; `batch` is how many requests were decoded together
# (its `seconds` is a timing, left out here).

# %%
diffusion = {k: v for k, v in r.model_extra["diffusion"].items() if k != "seconds"}
print(diffusion)

# %% [markdown]
# Behind the API is the lab's one loop. The server renders the chat messages into a prompt (with the model's
# chat template; `tiny` has none, so a plain transcript in the shape of its training plays) and runs `lk.generate`
# with `max_tokens` as the canvas. The same in this kernel gives the same answer:

# %%
lm = lk.load(MODEL)
prompt = render_chat(lm, ASK)
out = lk.generate(lm, prompt, lk.LowConfidence(temperature=0), gen_length=32, block_length=32, steps=32, seed=0)
print("prompt:", repr(prompt))
print("same answer as the server's:", out.text == r.choices[0].message.content, "| NFE", out.stats["nfe"])

# %% [markdown]
# ## Streaming
#
# With `stream=True` the server sends server-sent events, `chat.completion.chunk` objects. A diffusion LM does
# not write left to right, so the server sends text once it is **final**: block by block, as each block of the
# canvas is fully decoded. With `block_length=8` a 32-token answer arrives in four pieces; the last chunk has the
# `finish_reason` and the `diffusion` field.

# %%
stream = client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=32, temperature=0, stream=True,
                                        extra_body={"block_length": 8, "seed": 0})
for chunk in stream:
    delta, reason = chunk.choices[0].delta, chunk.choices[0].finish_reason
    if delta.role:
        print("role:", delta.role)
    if delta.content:
        print("text:", repr(delta.content), flush=True)
    if reason:
        extra = chunk.model_extra["diffusion"]
        print("finish_reason:", reason, "| NFE", extra["nfe"], "| TPF", extra["tpf"])

# %% [markdown]
# ## The diffusion knobs
#
# The OpenAI schema has no field for a decoding rule or a step budget, so they travel as extra JSON fields,
# which the `openai` client sends with `extra_body`: `sampler` (a rule of `lk.samplers.registry`), `preset`
# (`"speed"` / `"quality"`, LLaDA2.1's S and Q modes), `steps`, `block_length`, `threshold`,
# `editing_threshold`, `seed`, `keywords`. The same question with a few of them:

# %%
KNOBS = [{"steps": 32}, {"steps": 16}, {"steps": 8},
         {"sampler": "threshold", "threshold": 0.5}, {"preset": "quality"}]
for knobs in KNOBS:
    r = client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=32, temperature=0,
                                       extra_body={**knobs, "seed": 0})
    d = r.model_extra["diffusion"]
    print(f"{json.dumps(knobs):<45} {d['sampler']:<15} NFE {d['nfe']:>2}  TPF {d['tpf']:.2f}  "
          f"{r.choices[0].message.content[:40]!r}")

# %% [markdown]
# `steps` is the step budget: 16 steps for 32 tokens commit two tokens per forward pass, 8 steps four, and the text
# degrades. `threshold` commits every token above a confidence; `tiny` is rarely that sure, so it still commits
# about one per pass. `"quality"` drafts and edits (notebook 04); its NFE counts the edit passes too. On a
# model trained for parallel decoding they commit more: `tiny-cap` reached 2.30 tokens per pass at threshold 0.9
# in the saved sampler table (`docs/benchmarks.md`).
#
# ## The autoregressive twin behind the same API
#
# `tiny-ar` is the same network trained left to right (`tiny` was adapted from it). A second server on another
# port serves it (launched at the start, so it has loaded by now); the client is the same, only the triple changes.

# %%
AR_URL = start(AR_TWIN)
ar_client = openai.OpenAI(base_url=AR_URL, api_key=KEY, timeout=120, max_retries=0)
print("models:", [m.id for m in ar_client.models.list().data])


# %%
# NBVAL_IGNORE_OUTPUT
def latency(c, model, n=3):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        c.chat.completions.create(model=model, messages=ASK, max_tokens=32, temperature=0)
        times.append(time.perf_counter() - t0)
    return sorted(times)[n // 2]


for c, model in ((client, MODEL), (ar_client, AR_TWIN)):
    print(f"{model:<8} median of 3 requests for 32 tokens: {latency(c, model) * 1000:.0f} ms")

# %% [markdown]
# Both answers are 32 forward passes of the same small network (the diffusion loop at `steps = max_tokens`,
# the AR twin one token per pass), so on any machine the two timings are of the same order (the figures
# above are this machine's, and the checks do not compare them). Diffusion can come out ahead only by
# committing several tokens per pass (fewer steps, or a threshold rule on a model confident enough), and an
# AR server has a KV cache besides (notebook 07 measures both). What a client sees is the same structure,
# key for key:

# %%
a = client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=32, temperature=0).model_dump()
b = ar_client.chat.completions.create(model=AR_TWIN, messages=ASK, max_tokens=32, temperature=0).model_dump()
parts = {"response": lambda x: x, "choices[0]": lambda x: x["choices"][0],
         "message": lambda x: x["choices"][0]["message"], "usage": lambda x: x["usage"],
         "diffusion": lambda x: x["diffusion"]}
print(f"{'':<11} {MODEL + ' (diffusion)':<80} {AR_TWIN + ' (autoregressive)'}")
for name, get in parts.items():
    ka, kb = sorted(k for k, v in get(a).items() if v is not None), sorted(k for k, v in get(b).items() if v is not None)
    print(f"{name:<11} {', '.join(ka):<80} {'same' if ka == kb else ', '.join(kb)}")
print()
for x in (a, b):
    d = x["diffusion"]
    print(f"{x['model']:<8} sampler {d['sampler']:<15} NFE {d['nfe']}  TPF {d['tpf']}  "
          f"{x['choices'][0]['message']['content'][:40]!r}")

# %% [markdown]
# ## Requests that arrive together are batched
#
# One worker thread owns the model. Requests wait in a queue; the worker takes the oldest and every waiting
# request with the same knobs (up to `--max-batch` rows) and decodes their prompts together as **one batch** of
# the loop: one forward pass serves all of them. At temperature 0 a row's answer does not depend on the batch it
# was decoded in. `GET /labkit/stats` (a labkit route, not OpenAI's) counts the batches.
#
# Eight clients send at the same moment; each then asks again alone, to compare the answers.

# %%
ROOT = BASE_URL.removesuffix("/v1")
NAMES = ["ROMEO", "JULIET", "NURSE", "MERCUTIO", "TYBALT", "FRIAR LAURENCE", "CAPULET", "BENVOLIO"]


def ask(name):
    r = client.completions.create(model=MODEL, prompt=f"{name}:\n", max_tokens=16, temperature=0)
    return r.choices[0].text, r.model_extra["diffusion"]["batch"]


before = get_json(ROOT + "/labkit/stats")
gate = threading.Barrier(len(NAMES))
with ThreadPoolExecutor(len(NAMES)) as pool:
    together = list(pool.map(lambda n: (gate.wait(), ask(n))[1], NAMES))
after = get_json(ROOT + "/labkit/stats")
alone = [ask(n) for n in NAMES]

batches = after["batches"] - before["batches"]
assert after["requests"] - before["requests"] == len(NAMES) and batches < len(NAMES), (before, after)
assert all(b == 1 for _, b in alone)
print(f"{len(NAMES)} concurrent requests answered in fewer than {len(NAMES)} runs of the loop:", batches < len(NAMES))
print("each answer the same as the same request decoded alone:", [t for t, _ in together] == [t for t, _ in alone])
for name, (text, _) in zip(NAMES[:3], together):
    print(f"  {name + ':':<8} {text!r}")

# %%
# NBVAL_IGNORE_OUTPUT
# How they were grouped depends on timing: requests that arrive while a batch is decoding wait for the next
# one, so the eight may form one batch or several. Every request of a batch reports that batch's size.
print("runs of the loop:", batches, "| batch size each request saw:", [b for _, b in together])
print({k: after[k] for k in ("batches", "requests", "multi_request_batches", "largest_batch", "batch_sizes")})


# %% [markdown]
# ## Bad requests get OpenAI errors
#
# Bad input is answered with a 4xx and OpenAI's error body `{"error": {"message", "type", "param", "code"}}`,
# so a client raises its usual exception (`openai.BadRequestError` for 400) with a message that names the
# parameter. A wrong model id is a 404 and a wrong key a 401.
#
# What everyday clients send is accepted: `stop` (a string or up to 4; lm-eval's `until`, `llm -o stop`),
# an empty message content, and fields at values that change nothing (`response_format` `{"type": "text"}`,
# `tools: []`, `tool_choice: "none"`, `logit_bias: {}`, `echo: false`, ...). A value that *would* change the
# answer (JSON mode, a tool to call) is refused, naming the field.

# %%
def show(call):
    try:
        call()
        print("no error")
    except openai.APIStatusError as e:
        print(f"{type(e).__name__} {e.status_code}  param={e.body.get('param')!r}  {e.body['message']}")


show(lambda: client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=32, extra_body={"steps": 0}))
show(lambda: client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=32, extra_body={"block_length": 16, "steps": 15}))
show(lambda: client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=32, extra_body={"threshold": 0.9}))
show(lambda: ar_client.chat.completions.create(model=AR_TWIN, messages=ASK, extra_body={"preset": "speed"}))
show(lambda: client.chat.completions.create(model=MODEL, messages=ASK, response_format={"type": "json_object"}))
show(lambda: client.chat.completions.create(model="Tiny Shakespeare", messages=ASK))
show(lambda: openai.OpenAI(base_url=BASE_URL, api_key="wrong", max_retries=0).models.list())

# %%
plain = client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=32, temperature=0)
cut = client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=32, temperature=0, stop=["\n"],
                                     response_format={"type": "text"}, tool_choice="none")
for name, r in (("no stop", plain), ('stop=["\\n"]', cut)):
    print(f"{name:<12} finish_reason={r.choices[0].finish_reason:<7} {r.choices[0].message.content!r}")
assert plain.choices[0].message.content.startswith(cut.choices[0].message.content)


# %% [markdown]
# ## The channel, as a client sees it
#
# When a tool "does not work" against an API, the checks that settle it come in this order:
#
# 1. **curl** the models route with the key: a 200 means the base URL, the key and the server are right, and
#    whatever fails is the tool's configuration; without the key the server answers 401.
# 2. **Timeouts fire, retries recover.** A client gives up after its timeout (`openai.APITimeoutError`; a
#    server that gives up first answers 504); a retry with exponential backoff (wait 0.5 s, 1 s, 2 s, ...)
#    recovers from timeouts, dropped connections, 429 and 5xx, and never retries a 4xx that will fail again.
# 3. **Read what came back**: `response.choices[0]` is the answer; `model_dump_json()` prints the whole
#    response, extra fields included, when debugging.
# 4. `POST /generate` is labkit's own short route (`prompt`, `max_len`, `steps`, `batch_size` → `texts`),
#    for scripts that want no chat structure.

# %%
def status(url, key=None):
    """The HTTP status of GET url: with curl where it is installed, else urllib (the same request)."""
    if shutil.which("curl"):
        cmd = ["curl", "-s", "-o", os.devnull, "-w", "%{http_code}", url] + (["-H", f"Authorization: Bearer {key}"] if key else [])
        return int(subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout)
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


print("GET /v1/models with the key:   ", status(BASE_URL + "/models", KEY))
print("GET /v1/models without a key:  ", status(BASE_URL + "/models"))


# %%
def with_backoff(call, tries=4, base=0.5):
    """call() until it answers: exponential backoff on timeouts, dropped connections, 429 and 5xx."""
    for k in range(tries):
        try:
            return call(k), k + 1
        except (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError) as e:
            print(f"try {k + 1}: {type(e).__name__}; waiting {base * 2 ** k:g} s")
            time.sleep(base * 2 ** k)
    raise RuntimeError(f"no answer after {tries} tries")


timeouts = [0.001, 120]              # the first try's timeout is too short for any answer; the next one is not
r, tries = with_backoff(lambda k: openai.OpenAI(base_url=BASE_URL, api_key=KEY, timeout=timeouts[min(k, 1)], max_retries=0)
                        .chat.completions.create(model=MODEL, messages=ASK, max_tokens=16, temperature=0))
print(f"answered on try {tries}: {r.choices[0].message.content!r} (finish_reason {r.choices[0].finish_reason})")

# %%
# NBVAL_IGNORE_OUTPUT
print(r.model_dump_json(indent=1))       # id and created change with every request

# %%
req = urllib.request.Request(ROOT + "/generate", method="POST", headers={"Authorization": f"Bearer {KEY}",
                             "Content-Type": "application/json"},
                             data=json.dumps({"prompt": "ROMEO:\n", "max_len": 32, "steps": 32, "batch_size": 2,
                                               "seed": 0}).encode())
with urllib.request.urlopen(req, timeout=120) as resp:
    body = json.load(resp)
print(sorted(body))                      # sampled (the server's default temperature), seeded: reproducible
for t in body["texts"]:
    print(repr(t))

# %% [markdown]
# Latency is a distribution, not a number: a service is judged by its slow requests (p95: 95 of 100 are
# faster), and those take many more requests to measure than the three per server timed above.

# %% [markdown]
# The distribution under load is what `labkit bench serve` measures (`benchmarks/results/serve.json`), with
# the same requests: 32-token greedy requests to `tiny` from 1, 4, 16 and 64 concurrent clients, 2 requests
# each, once with batching (`--max-batch 16`) and once one request at a time (`--max-batch 1`). The saved
# run, on this project's 2-core CPU:

# %%
# NBVAL_CHECK_OUTPUT
saved = json.loads((Path("..") / "benchmarks" / "results" / "serve.json").read_text())
modes = ("batched", "one_at_a_time")
print(f"{saved['model']}, {saved['gen_length']}-token requests | latency p50 / p95 in seconds, requests per second")
print(f"{'clients':>7}   {'batched (max 16)':^22}   {'one at a time':^22}")
for rows in zip(*(saved["modes"][m]["rows"] for m in modes)):
    print(f"{rows[0]['clients']:>7}   " + "   ".join(f"{r['p50_s']:6.2f} / {r['p95_s']:6.2f}  {r['requests_per_s']:5.2f}/s"
                                                   for r in rows))
print("largest batch:", {m: saved["modes"][m]["scheduler"]["largest_batch"] for m in modes})


# %% [markdown]
# One client sees about the same latency either way. With more clients than the server decodes at
# once, a request's latency is mostly its wait in the queue: at 64 clients the median request took
# 13.75 s with batching and 18.32 s one at a time, and the slow ones (p95) not much longer than the
# median, since every request waits behind the same queue. Batching raised the throughput at 64
# clients from 3.35 to 4.37 requests per second (1.30×): the CPU's two cores are already busy at batch 1,
# so batching buys less here than on a GPU (notebook 07's batch sweeps).

# %% [markdown]
# ## Is my triple right? `labkit check-endpoint`
#
# Most "the model does not work" reports are one of the three values written wrong. `labkit check-endpoint`
# (or its Python side, `labkit.serve.endpoint.diagnose` + `table`) checks them in order: the base URL's shape,
# the key, proxy variables, `GET /models` (reachable, key accepted, model listed), then one minimal chat
# request (with retries and backoff on connection errors, 429 and 5xx) and the answer's structure. It works
# against any OpenAI-compatible server. Exit status 0 only when every check is `ok`. The notebook
# calls the command line's own entry point (`labkit.cli.main.main`, what the `labkit` command runs) with
# the arguments you would type after `labkit`, in this kernel: the same code, without starting a second
# Python. The good triple:

# %%
def check_endpoint(base_url, key, model, env):
    """`labkit check-endpoint ...` (the command line's own entry point, run in this kernel) with environment `env`."""
    with mock.patch.dict(os.environ, env, clear=True):
        status = labkit_cli(["check-endpoint", "--base-url", base_url, "--api-key", key, "--model", model,
                             "--retries", "0"])
    print("exit status:", status)


CLEAN_ENV = {k: v for k, v in os.environ.items()          # this kernel's environment without proxy variables
             if k.upper() not in ("NO_PROXY", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")}
check_endpoint(BASE_URL, KEY, MODEL, CLEAN_ENV)

# %% [markdown]
# The same triple as it often arrives from a copy and paste: a trailing slash on the URL, the key copied with
# its line break, and the model's display name instead of its id. Through the Python API this time:

# %%
findings = endpoint.diagnose(BASE_URL + "/", KEY + "\n", "Tiny Shakespeare", retries=0, env=CLEAN_ENV)
print(endpoint.table(findings))
print("passed:", endpoint.passed(findings))

# %% [markdown]
# Each problem is named with its fix; the chat request then fails with the server's own message (404, the
# model id). The trailing slash is only a warning: `labkit` and the `openai` client cope with it, some tools
# request `//chat/completions`.
#
# A subtler one: a **proxy variable** left over from a tool that is no longer running. Clients route every
# request through `HTTP_PROXY`, so a correct triple fails with "connection refused" from a port you never
# typed. Here the good triple with `HTTP_PROXY` pointing at a port nobody listens on:

# %%
dead = free_port()                               # bound and released: nothing listens there
check_endpoint(BASE_URL, KEY, MODEL, {**CLEAN_ENV, "HTTP_PROXY": f"http://127.0.0.1:{dead}"})

# %% [markdown]
# ## Many prompts: `labkit batch`
#
# `labkit batch in.jsonl out.jsonl` runs a JSONL file of prompts (`{"id": ..., "prompt": ...}` or
# `{"id": ..., "messages": [...]}`), a batch at a time, writing and fsync-ing each batch's results before the
# next, so an interrupted run resumes where it stopped (a rerun skips the ids already in the output). Failures
# go to an errors file without stopping the run. Locally, `--batch-size` rows are decoded as one batch
# (the command line's entry point again, in this kernel):

# %%
prompts = WORK / "prompts.jsonl"
prompts.write_text("".join(json.dumps({"id": i, "prompt": f"{n}:\n"}) + "\n" for i, n in enumerate(NAMES[:4])))
KNOBS_CLI = ["--gen-length", "16", "--temperature", "0", "--seed", "0"]


def batch(out, *args):
    """`labkit batch prompts.jsonl OUT --quiet ...`: the command line's own entry point, run in this kernel."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = labkit_cli(["batch", str(prompts), str(WORK / out), "--quiet", *KNOBS_CLI, *args])
    print(err.getvalue().strip().splitlines()[-1].replace(f"{WORK}{os.sep}", ""), "| exit status", status)
    rows = [json.loads(line) for line in (WORK / out).read_text().splitlines()]
    for row in rows:
        print(f"  id {row['id']}  {row['finish_reason']:<6} {row['text']!r}")
    return rows


local = batch("local.jsonl", "--model", MODEL, "--batch-size", "4", "--block-length", "16", "--steps", "16")
print("stats keys:", sorted(local[0]["stats"]))

# %% [markdown]
# With `--endpoint` the same runner sends each record to a server instead (`--concurrency` requests at a time,
# each with a timeout and retries): here the one running above. Plain prompts go to `/v1/completions`, chat
# records to `/v1/chat/completions`. The server batches the concurrent requests on its side, and at
# temperature 0 the answers are the local ones.

# %%
served = batch("served.jsonl", "--endpoint", BASE_URL, "--endpoint-model", MODEL, "--api-key", KEY,
               "--concurrency", "4")
print("the same texts as the local run:", sorted((r["id"], r["text"]) for r in served) ==
      sorted((r["id"], r["text"]) for r in local))

# %% [markdown]
# ## Scaling out
#
# Nothing above depends on `labkit serve`: `check-endpoint` and `batch --endpoint` speak the plain OpenAI API,
# so the same JSONL job runs against a production server by changing the triple:
#
# - **SGLang** serves LLaDA2.x (`inclusionAI/LLaDA2.1-mini`) on GPUs, with the decoding chosen at launch:
#   `python -m sglang.launch_server --model-path inclusionAI/LLaDA2.1-mini --dllm-algorithm JointThreshold
#   --port 30000`. `JointThreshold` is LLaDA2.1's draft-and-edit (notebook 04): masks are committed above
#   `threshold` (mask to token) and committed tokens rewritten above `edit_threshold` (token to token), values
#   set in a YAML file passed with `--dllm-algorithm-config`; `LowConfidence` is the threshold rule without
#   edits. Check the flags against your SGLang version's documentation.
# - **vLLM** serves the autoregressive models, the baselines to compare against.
#
# ```bash
# labkit check-endpoint --base-url http://gpu-box:30000/v1 --api-key $KEY --model inclusionAI/LLaDA2.1-mini
# labkit batch prompts.jsonl llada2.jsonl --endpoint http://gpu-box:30000/v1 --endpoint-model inclusionAI/LLaDA2.1-mini \
#     --api-key $KEY --concurrency 32 --gen-length 256 --temperature 0
# ```
#
# The labkit-specific knobs (`sampler`, `steps`, ...) are not sent with `--endpoint`: a production server chooses
# its decoding at launch. The `diffusion` field is labkit's own; other servers report what they report.

# %% [markdown]
# ## Exercises
#
# Each has its solution just below it: try it in a new cell first. They use the two servers this notebook
# started, nothing else.
#
# **1.** Repeat the knob table's threshold row at thresholds 0.9, 0.5 and 0.1
# (`{"sampler": "threshold", "threshold": 0.9}`, ...): how far does TPF rise above 1 on `tiny`, and what happens to the text?

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
for threshold in (0.9, 0.5, 0.1):
    r = client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=32, temperature=0,
                                       extra_body={"sampler": "threshold", "threshold": threshold, "seed": 0})
    d = r.model_extra["diffusion"]
    print(f"threshold {threshold}: NFE {d['nfe']:>2}  TPF {d['tpf']:.2f}  {r.choices[0].message.content[:40]!r}")


# %% [markdown]
# On `tiny`, TPF barely rises above 1 from threshold 0.9 to 0.5 (1.03 and 1.10): the model is rarely
# that sure of a token. Only at 0.1 does it commit several tokens per pass (TPF 6.40, 5 forward passes),
# and the answer fills with line breaks. `tiny-cap`, trained to be confident, reached 2.30 tokens per pass
# at threshold 0.9 in the saved sampler table (`docs/benchmarks.md`); serving it is the same command with
# `--model tiny-cap`.

# %% [markdown]
# **2.** Send 8 requests at the same moment, 4 with `steps` 16 and 4 with `steps` 8 (16 tokens each). Only
# requests with the same knobs share a batch: check it in each answer's `diffusion` field and in the
# `batch_sizes` of `/labkit/stats`.

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
def ask_steps(steps):
    r = client.completions.create(model=MODEL, prompt="ROMEO:\n", max_tokens=16, temperature=0,
                                  extra_body={"steps": steps})
    return steps, r.model_extra["diffusion"]["batch"]


before = get_json(ROOT + "/labkit/stats")
gate = threading.Barrier(8)
with ThreadPoolExecutor(8) as pool:
    seen = list(pool.map(lambda s: (gate.wait(), ask_steps(s))[1], [16, 8] * 4))
after = get_json(ROOT + "/labkit/stats")
print("no batch larger than the 4 requests of one steps value:", max(b for _, b in seen) <= 4)
print("requests answered:", after["requests"] - before["requests"], "| runs of the loop >= 2:",
      after["batches"] - before["batches"] >= 2)

# %% [markdown]
# No answer reports a batch of more than 4, and the 8 requests took at least 2 runs of the loop: the
# worker puts only requests with the same knobs in one batch, so the `steps` 16 and `steps` 8 requests
# were decoded apart. `/labkit/stats` counts each run under its size in `batch_sizes` (printed for the
# eight requests of "Requests that arrive together are batched").

# %% [markdown]
# **3.** Interrupt a `labkit batch` run and run the same command again: which ids does it skip? (Simulate
# the interruption: keep only the first two lines of `served.jsonl`, as if the run had stopped there.)

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
out = WORK / "served.jsonl"
out.write_text("".join(out.read_text().splitlines(keepends=True)[:2]))     # what an interrupted run leaves
print("ids already done:", [json.loads(line)["id"] for line in out.read_text().splitlines()])
again = batch("served.jsonl", "--endpoint", BASE_URL, "--endpoint-model", MODEL, "--api-key", KEY,
              "--concurrency", "4")
print("each id once, the texts of the first run:", sorted((r["id"], r["text"]) for r in again) ==
      sorted((r["id"], r["text"]) for r in served))

# %% [markdown]
# The rerun skipped ids 0 and 1, already in the output, and sent only 2 and 3; the file again holds each
# id once, with the first run's texts. A real Ctrl-C leaves the same kind of file: whole batches, each
# written and fsync-ed before the next one starts.

# %% [markdown]
# ## Stop the servers
#
# A background server lives until it is stopped, even after this notebook's kernel is gone if nothing stops
# it: `terminate()` sends SIGTERM, uvicorn finishes the requests in flight and shuts down, `wait()` collects the
# exit status (-15: ended by SIGTERM, as asked). Its log says whether the shutdown was clean.

# %%
for model, (proc, _) in SERVERS.items():
    proc.terminate()
    status = proc.wait(timeout=30)
    clean = "Application shutdown complete" in (WORK / f"{model}.log").read_text()
    print(f"{model:<8} stopped: exit status {status}, clean shutdown {clean}, still running {proc.poll() is None}")
shutil.rmtree(WORK)                  # the logs, prompts and results
