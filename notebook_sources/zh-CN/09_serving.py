# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% tags=["zh-setup"]
# 中文版：代码与英文版逐格相同，输出也相同。这一格把内核移到上一级目录 notebooks/，
# 英文版代码里的相对路径（../benchmarks/results）从那里才成立。
import os
if os.path.basename(os.getcwd()) == "zh-CN":
    os.chdir("..")

# %% [markdown]
# # 09 · Serving: a diffusion LM behind an OpenAI-compatible API（服务部署：把扩散语言模型放到兼容 OpenAI 的 API 后面）
#
# *阅读并运行约 30 分钟，不含练习 · 前置：notebook 01（快速上手） · 下一步：课程（docs/course.zh-CN.md），或者你自己的问题。*
#
# **问题：** 编程工具、评测框架、聊天前端和批处理脚本都说同一种协议：OpenAI 的 `/v1/chat/completions`。怎样把
# 扩散语言模型放到它后面？客户端会看到什么？与放在同一个 API 后面的自回归模型相比，又有什么不同？
#
# 任何这样的客户端都需要三样东西，即**三件套**（triple）：
#
# | | 是什么 | 在这里 |
# |---|---|---|
# | **base URL** | API 所在的地址，一直写到 `/v1`（含）为止；客户端自己在后面接上 `/chat/completions`、`/models` 等 | `http://127.0.0.1:PORT/v1` |
# | **API key** | 以 `Authorization: Bearer KEY` 形式发送的密钥 | 下文的 `KEY`（`labkit serve --api-key`） |
# | **模型 id**（model id） | 服务器在 `GET /v1/models` 中列出的确切 id，而不是显示名称 | `tiny` |
#
# `labkit serve --model tiny` 在这个 API 后面运行实验室的解码循环（`lk.generate`）。本 notebook 在后台启动它，
# 用官方的 `openai` Python 客户端与它对话，把它与放在同一个 API 后面的自回归孪生模型（AR 孪生模型）`tiny-ar`
# 作比较，然后使用与之配套的两个工具：`labkit check-endpoint`（我的三件套对吗？）和 `labkit batch`
# （运行一个 JSONL 提示词文件，既可在本地运行，也可发往任意端点）。

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
# ## Start the server（启动服务器）
#
# `labkit serve` 是一个长时间运行的进程，所以 notebook 把它作为**子进程**（subprocess）启动（也就是你在终端里
# 会输入的 `labkit serve --model tiny --port 8000 --api-key ...`），监听 `127.0.0.1` 上的一个空闲端口。
# 不带 `--api-key` 时，它拒绝监听本机回环地址以外的任何地址；带上 key，它才可以监听 `0.0.0.0`。它的输出写进
# 一个日志文件，notebook 一直等到 `GET /v1/models` 有应答为止。
#
# 启动时它会打印客户端设置，可以直接粘贴使用（端口是这次运行选中的那个）。

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
# 这就是一个工具需要的三个值，按各种工具接受的形式给出：环境变量（`openai` SDK 和许多工具读取
# `OPENAI_BASE_URL`、`OPENAI_API_KEY`；`OPENAI_MODEL` 是一种常见约定）、一个 JSON 对象，以及一条 TOML 提供方
# （provider）条目。要让编程工具或聊天界面使用实验室的模型，就在它的设置里添加一个*自定义的兼容 OpenAI 的提供方*，
# 填入完全相同的 base URL、key 和模型 id，并选择 Chat Completions 线路格式（wire format，`wire_api = "chat"`）：
# `labkit serve` 没有 `/v1/responses`。扩散模型的一个回答要做很多次前向传播，所以请把请求超时设得宽裕些。
#
# ## Talk to it with the official client（用官方客户端对话）
#
# 客户端一侧没有任何 labkit 特有的东西：`openai.OpenAI(base_url=..., api_key=...)`。`temperature=0` 让回答
# 可以复现（服务器的默认设置和实验室一样，以温度 1 采样）。

# %%
client = openai.OpenAI(base_url=BASE_URL, api_key=KEY, timeout=120, max_retries=0)
print("models:", [m.id for m in client.models.list().data])

r = client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=32, temperature=0)
print("object:", r.object, "| model:", r.model, "| finish_reason:", r.choices[0].finish_reason)
print("usage:", r.usage.prompt_tokens, "prompt +", r.usage.completion_tokens, "completion tokens")
print("answer:", repr(r.choices[0].message.content))

# %% [markdown]
# 回答里还带着一个不属于 OpenAI 的字段 `diffusion`：它说明解码循环是怎么运行的。标准客户端会忽略未知字段；
# `openai` 客户端把它们保存在 `model_extra` 中。**NFE**（前向次数）是前向传播的次数，**TPF**（每次前向写下的
# token 数）是每次前向传播决定的 token 数；`batch` 是有多少个请求被放在一起解码（它的 `seconds` 是计时，这里略去）。

# %%
diffusion = {k: v for k, v in r.model_extra["diffusion"].items() if k != "seconds"}
print(diffusion)

# %% [markdown]
# API 后面就是实验室那唯一的解码循环。服务器把聊天消息渲染成一个提示词（使用模型的聊天模板；`tiny` 没有聊天模板，
# 所以用一段普通的对话记录，形式与它训练所用的剧本相同），然后以 `max_tokens` 作为画布运行 `lk.generate`。
# 在这个内核里做同样的事，得到同样的回答：

# %%
lm = lk.load(MODEL)
prompt = render_chat(lm, ASK)
out = lk.generate(lm, prompt, lk.LowConfidence(temperature=0), gen_length=32, block_length=32, steps=32, seed=0)
print("prompt:", repr(prompt))
print("same answer as the server's:", out.text == r.choices[0].message.content, "| NFE", out.stats["nfe"])

# %% [markdown]
# ## Streaming（流式输出）
#
# 设置 `stream=True` 时，服务器发送服务器推送事件（server-sent events），即一个个 `chat.completion.chunk` 对象。
# 扩散语言模型不是从左往右写的，所以服务器要等文本成为**最终结果**才发送：一块一块地发，画布的每个块完全解码后
# 就发出。在 `block_length=8` 时，一个 32 个 token 的回答分四段到达；最后一段带有 `finish_reason` 和
# `diffusion` 字段。

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
# ## The diffusion knobs（扩散解码参数）
#
# OpenAI 的模式（schema）里没有表示解码规则或步数预算的字段，所以它们作为额外的 JSON 字段传递，`openai` 客户端
# 用 `extra_body` 发送它们：`sampler`（`lk.samplers.registry` 中的一条规则）、`preset`（`"speed"` / `"quality"`，
# 即 LLaDA2.1 的 S 模式（极速模式）和 Q 模式（质量模式））、`steps`、`block_length`、`threshold`、
# `editing_threshold`、`seed`、`keywords`。同一个问题，配上其中几个参数：

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
# `steps` 是步数预算：用 16 步写 32 个 token，每次前向传播落定（commit，即 unmask，去掩码）两个 token；8 步则是
# 四个，文本随之变差。`threshold` 落定置信度高于阈值的每个 token；`tiny` 的置信度很少那么高，所以每次前向仍然
# 只落定大约一个。`"quality"` 按草稿—编辑解码（notebook 04）；它的 NFE 也把编辑用的前向算在内。在为并行解码
# 训练过的模型上，它们会落定更多：在保存的采样器表（`docs/benchmarks.md`）里，`tiny-cap` 在阈值 0.9 时达到
# 每次前向 2.30 个 token。
#
# ## The autoregressive twin behind the same API（同一个 API 后面的自回归孪生模型）
#
# `tiny-ar` 是同一个网络从左到右训练出的版本（`tiny` 由它改造而来）。另一个端口上的第二个服务器提供它的服务
# （在开头就已启动，所以此时已经加载完毕）；客户端不变，变的只有三件套。

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
# 两个回答都是同一个小网络的 32 次前向传播（扩散循环取 `steps = max_tokens`，AR 孪生模型每次前向一个 token），
# 所以在任何机器上两者的耗时都在同一个量级（上面的数字是这台机器上的，检查并不比较它们）。扩散只有在每次前向
# 落定多个 token 时才可能领先（更少的步数，或在置信度足够高的模型上使用阈值规则），何况 AR 服务器还有 KV 缓存
# （notebook 07 对两者都做了测量）。客户端看到的是相同的结构，键一一对应：

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
# ## Requests that arrive together are batched（同时到达的请求合批处理）
#
# 一个工作线程独占模型。请求在队列中等待；工作线程取出最早的那个请求，连同所有解码参数相同的等待中请求
# （最多 `--max-batch` 行），把它们的提示词作为解码循环的**一个批**一起解码：一次前向传播服务所有请求。
# 在温度 0 下，某一行的回答与它被放在哪个批里解码无关。`GET /labkit/stats`（labkit 自己的路由，不是 OpenAI 的）
# 统计各个批。
#
# 八个客户端同时发出请求；然后每个客户端再单独问一次，以便比较回答。

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
# ## Bad requests get OpenAI errors（错误的请求得到 OpenAI 格式的错误）
#
# 错误的输入会得到 4xx 应答和 OpenAI 的错误体 `{"error": {"message", "type", "param", "code"}}`，于是客户端
# 抛出它惯常的异常（400 对应 `openai.BadRequestError`），消息中会指出是哪个参数。错误的模型 id 得到 404，
# 错误的 key 得到 401。
#
# 日常客户端发送的内容都会被接受：`stop`（一个字符串，或最多 4 个；即 lm-eval 的 `until`、`llm -o stop`）、
# 空的消息内容，以及取值不会改变任何东西的字段（`response_format` `{"type": "text"}`、`tools: []`、
# `tool_choice: "none"`、`logit_bias: {}`、`echo: false` 等）。*会*改变回答的取值（JSON 模式、要调用的工具）
# 则被拒绝，并指出是哪个字段。

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
# ## The channel, as a client sees it（客户端眼中的通道）
#
# 当一个工具对某个 API“不起作用”时，能查清问题的检查按这个顺序进行：
#
# 1. 带上 key 用 **curl** 请求 models 路由：200 表示 base URL、key 和服务器都没问题，出错的是工具的配置；
#    不带 key，服务器回答 401。
# 2. **超时会触发，重试能恢复。** 客户端在超时后放弃（`openai.APITimeoutError`；如果服务器先放弃，它回答 504）；
#    带指数退避的重试（等待 0.5 s、1 s、2 s……）能从超时、断开的连接、429 和 5xx 中恢复，但从不重试注定会再次
#    失败的 4xx。
# 3. **看看返回了什么**：`response.choices[0]` 是回答；调试时，`model_dump_json()` 打印整个响应，包括额外字段。
# 4. `POST /generate` 是 labkit 自己的简短路由（`prompt`、`max_len`、`steps`、`batch_size` → `texts`），
#    供不需要聊天结构的脚本使用。

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
# 延迟是一个分布，而不是一个数：评判一项服务要看它的慢请求（p95：100 个请求中有 95 个比它快），而要测量这些
# 慢请求，需要的请求数远多于上面每个服务器计时的那三个。

# %% [markdown]
# 负载下的分布由 `labkit bench serve` 测量（`benchmarks/results/serve.json`），用的是同样的请求：分别从 1、4、16
# 和 64 个并发客户端向 `tiny` 发送 32 个 token 的贪心请求，每个客户端 2 个请求；一次开启合批（`--max-batch 16`），
# 一次逐个处理请求（`--max-batch 1`）。保存的那次运行，在本项目的 2 核 CPU 上：

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
# 只有一个客户端时，两种方式的延迟大致相同。当客户端多于服务器能同时解码的数量时，一个请求的延迟主要是它在
# 队列中的等待：在 64 个客户端时，请求延迟的中位数在合批时为 13.75 s，逐个处理时为 18.32 s；慢请求（p95）也
# 不比中位数长多少，因为每个请求都排在同一个队列后面。合批把 64 个客户端时的吞吐量从每秒 3.35 个请求提高到
# 4.37 个（1.30×）：CPU 的两个核心在批大小为 1 时就已经忙满了，所以合批在这里带来的收益不如在 GPU 上大
# （见 notebook 07 的批大小扫描）。

# %% [markdown]
# ## Is my triple right? `labkit check-endpoint`（我的三件套对吗？）
#
# 大多数“模型不能用”的报告，都是三个值中的某一个写错了。`labkit check-endpoint`（或它的 Python 一侧，
# `labkit.serve.endpoint.diagnose` + `table`）按顺序检查它们：base URL 的形式、key、代理变量、`GET /models`
# （能否连通、key 是否被接受、模型是否在列表中），然后是一次最小的聊天请求（遇到连接错误、429 和 5xx 时带退避
# 重试），以及回答的结构。它适用于任何兼容 OpenAI 的服务器。只有每项检查都是 `ok` 时，退出状态才为 0。
# notebook 调用命令行自己的入口（`labkit.cli.main.main`，也就是 `labkit` 命令所运行的），传入你会在 `labkit`
# 后面输入的参数，就在这个内核里运行：代码相同，只是不必另起一个 Python 进程。正确的三件套：

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
# 同一个三件套，常常是复制粘贴后的样子：URL 末尾多了一个斜杠，key 连同换行符一起被复制，模型写的是显示名称
# 而不是它的 id。这次通过 Python API 检查：

# %%
findings = endpoint.diagnose(BASE_URL + "/", KEY + "\n", "Tiny Shakespeare", retries=0, env=CLEAN_ENV)
print(endpoint.table(findings))
print("passed:", endpoint.passed(findings))

# %% [markdown]
# 每个问题都附上了它的修法；随后聊天请求以服务器自己的消息失败（404，模型 id）。末尾的斜杠只是一个警告：
# `labkit` 和 `openai` 客户端都能应对它，但有些工具会去请求 `//chat/completions`。
#
# 更隐蔽的一种情况：某个已经不再运行的工具留下的**代理变量**。客户端把每个请求都经由 `HTTP_PROXY` 转发，于是
# 一个正确的三件套也会失败，报出来自一个你从没输入过的端口的 “connection refused”。下面是正确的三件套，但
# `HTTP_PROXY` 指向一个没有人监听的端口：

# %%
dead = free_port()                               # bound and released: nothing listens there
check_endpoint(BASE_URL, KEY, MODEL, {**CLEAN_ENV, "HTTP_PROXY": f"http://127.0.0.1:{dead}"})

# %% [markdown]
# ## Many prompts: `labkit batch`（大量提示词）
#
# `labkit batch in.jsonl out.jsonl` 运行一个 JSONL 提示词文件（`{"id": ..., "prompt": ...}` 或
# `{"id": ..., "messages": [...]}`），一次处理一批，在开始下一批之前写入这一批的结果并执行 fsync，所以被中断的
# 运行能从停下的地方接着跑（重新运行时会跳过输出中已有的 id）。失败的记录写进一个错误文件，不会让运行停下。
# 在本地，每 `--batch-size` 行作为一个批一起解码（同样是在这个内核里调用命令行的入口）：

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
# 加上 `--endpoint`，同一个运行器改为把每条记录发送给服务器（每次 `--concurrency` 个请求，每个请求都有超时和
# 重试）：这里就是上面正在运行的那个服务器。普通提示词发往 `/v1/completions`，聊天记录发往
# `/v1/chat/completions`。服务器在它那一侧对并发请求合批，在温度 0 下，回答与本地的相同。

# %%
served = batch("served.jsonl", "--endpoint", BASE_URL, "--endpoint-model", MODEL, "--api-key", KEY,
               "--concurrency", "4")
print("the same texts as the local run:", sorted((r["id"], r["text"]) for r in served) ==
      sorted((r["id"], r["text"]) for r in local))

# %% [markdown]
# ## Scaling out（横向扩展）
#
# 上面的一切都不依赖于 `labkit serve`：`check-endpoint` 和 `batch --endpoint` 说的是普通的 OpenAI API，所以只要
# 换掉三件套，同一个 JSONL 作业就能在生产服务器上运行：
#
# - **SGLang** 在 GPU 上提供 LLaDA2.x（`inclusionAI/LLaDA2.1-mini`）的服务，解码方式在启动时选定：
#   `python -m sglang.launch_server --model-path inclusionAI/LLaDA2.1-mini --dllm-algorithm JointThreshold
#   --port 30000`。`JointThreshold` 就是 LLaDA2.1 的草稿—编辑（notebook 04）：置信度高于 `threshold` 的掩码被
#   落定（掩码→token），置信度高于 `edit_threshold` 时已落定的 token 被改写（token→token），这些值写在一个
#   YAML 文件里，用 `--dllm-algorithm-config` 传入；`LowConfidence` 是不带编辑的阈值规则。请对照你所用 SGLang
#   版本的文档核对这些参数。
# - **vLLM** 提供自回归模型的服务，它们是用来对比的基线。
#
# ```bash
# labkit check-endpoint --base-url http://gpu-box:30000/v1 --api-key $KEY --model inclusionAI/LLaDA2.1-mini
# labkit batch prompts.jsonl llada2.jsonl --endpoint http://gpu-box:30000/v1 --endpoint-model inclusionAI/LLaDA2.1-mini \
#     --api-key $KEY --concurrency 32 --gen-length 256 --temperature 0
# ```
#
# 使用 `--endpoint` 时不会发送 labkit 特有的解码参数（`sampler`、`steps` 等）：生产服务器在启动时就选定了
# 解码方式。`diffusion` 字段是 labkit 自己的；其他服务器报告的是它们各自的内容。

# %% [markdown]
# ## Exercises（练习）
#
# 每道练习的参考答案就在它的正下方：请先在一个新单元格里自己试一试。练习只用本 notebook 启动的两个服务器，
# 不用别的。
#
# **1.** 在阈值 0.9、0.5 和 0.1 下重做解码参数表中的阈值那一行（`{"sampler": "threshold", "threshold": 0.9}` 等）：
# 在 `tiny` 上，TPF 能比 1 高出多少？文本会怎样？

# %% tags=["solution"]
# NBVAL_CHECK_OUTPUT
# Solution
for threshold in (0.9, 0.5, 0.1):
    r = client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=32, temperature=0,
                                       extra_body={"sampler": "threshold", "threshold": threshold, "seed": 0})
    d = r.model_extra["diffusion"]
    print(f"threshold {threshold}: NFE {d['nfe']:>2}  TPF {d['tpf']:.2f}  {r.choices[0].message.content[:40]!r}")


# %% [markdown]
# 在 `tiny` 上，阈值从 0.9 降到 0.5，TPF 几乎没有超过 1（1.03 和 1.10）：模型对一个 token 的置信度很少那么高。
# 只有到了 0.1，它才每次前向落定多个 token（TPF 6.40，5 次前向传播），而回答里满是换行。被训练得置信度高的
# `tiny-cap`，在保存的采样器表（`docs/benchmarks.md`）中，阈值 0.9 时达到每次前向 2.30 个 token；要为它提供
# 服务，用的是同一条命令，只需改成 `--model tiny-cap`。

# %% [markdown]
# **2.** 同时发送 8 个请求，其中 4 个的 `steps` 为 16，4 个的 `steps` 为 8（每个都是 16 个 token）。只有解码参数
# 相同的请求才会共用一个批：在每个回答的 `diffusion` 字段和 `/labkit/stats` 的 `batch_sizes` 中验证这一点。

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
# 没有哪个回答报告的批大于 4，而这 8 个请求至少用了 2 次解码循环：工作线程只把解码参数相同的请求放进同一个批，
# 所以 `steps` 16 和 `steps` 8 的请求是分开解码的。`/labkit/stats` 在 `batch_sizes` 中按批大小统计每次运行
# （“Requests that arrive together are batched”一节打印了那八个请求的统计）。

# %% [markdown]
# **3.** 中断一次 `labkit batch` 运行，然后再次运行同一条命令：它跳过了哪些 id？（模拟中断：只保留
# `served.jsonl` 的前两行，就好像运行在那里停下了一样。）

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
# 重新运行跳过了已在输出中的 id 0 和 1，只发送了 2 和 3；文件里每个 id 又只出现一次，文本是第一次运行写下的。
# 真正按下 Ctrl-C 留下的也是同一种文件：都是完整的批，每一批都在下一批开始之前写入并 fsync。

# %% [markdown]
# ## Stop the servers（停止服务器）
#
# 后台服务器会一直运行到被停止为止；如果没有什么去停止它，即使本 notebook 的内核已经关掉，它也还在运行：
# `terminate()` 发送 SIGTERM，uvicorn 处理完正在进行的请求后关闭，`wait()` 收回退出状态（-15：按要求被
# SIGTERM 结束）。它的日志会说明关闭是否干净。

# %%
for model, (proc, _) in SERVERS.items():
    proc.terminate()
    status = proc.wait(timeout=30)
    clean = "Application shutdown complete" in (WORK / f"{model}.log").read_text()
    print(f"{model:<8} stopped: exit status {status}, clean shutdown {clean}, still running {proc.poll() is None}")
shutil.rmtree(WORK)                  # the logs, prompts and results
