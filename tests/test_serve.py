"""`labkit serve`: the OpenAI-compatible server, started in the test on a free 127.0.0.1 port and
driven by the official openai client (and httpx for malformed input)."""
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

pytest.importorskip("fastapi")
openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")

from labkit.decode import generate  # noqa: E402
from labkit.serve import scheduler as scheduler_module  # noqa: E402
from labkit.serve.app import create_app, run_in_thread  # noqa: E402
from labkit.serve.schemas import answer, render_chat  # noqa: E402

KEY = "test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
ASK = [{"role": "user", "content": "Who art thou?"}]
GREEDY = {"temperature": 0, "seed": 0}


@pytest.fixture(scope="module")
def server(tiny):
    running = run_in_thread(create_app(tiny, "tiny", api_key=KEY, max_batch=16, queue_size=128, timeout=60))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, timeout=60, max_retries=0)


@pytest.fixture(scope="module")
def http(server):
    with httpx.Client(base_url=server.url, headers=AUTH, timeout=60) as c:
        yield c


def _chat(client, **kw):
    return client.chat.completions.create(model="tiny", messages=ASK, **{"max_tokens": 16, **kw}, extra_body=GREEDY)


def test_models_and_a_chat_answer_equal_to_the_loops_own(client, tiny):
    assert [m.id for m in client.models.list().data] == ["tiny"]
    r = _chat(client, max_tokens=12)
    assert r.object == "chat.completion" and r.model == "tiny" and r.id.startswith("chatcmpl-")
    choice = r.choices[0]
    assert choice.index == 0 and choice.message.role == "assistant"
    prompt = render_chat(tiny, ASK)
    out = generate(tiny, prompt, "low_confidence", gen_length=12, block_length=12, steps=12, seed=0,
                   eos_early_stop=True)
    ids, reason = answer(tiny, out.ids[0, out.trace.prompt_len:].tolist(), 12)
    assert choice.message.content == tiny.decode(ids) and choice.finish_reason == reason
    assert r.usage.prompt_tokens == len(tiny.encode(prompt)) and r.usage.completion_tokens == len(ids)
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
    extra = r.model_extra["diffusion"]
    assert extra["nfe"] == out.stats["nfe"] and extra["sampler"] == "low_confidence" and extra["steps"] == 12


def test_finish_reason_is_stop_when_the_answer_ends(client, tiny):
    """A long canvas: the tiny model ends a speech with an end-of-text token somewhere; wherever it
    does, the answer is cut there and finish_reason says so."""
    r = client.completions.create(model="tiny", prompt="ROMEO:\n", max_tokens=96, extra_body=GREEDY)
    assert r.object == "text_completion"
    c = r.choices[0]
    assert c.finish_reason in ("stop", "length")
    assert (c.finish_reason == "stop") == (r.usage.completion_tokens < 96)
    assert r.usage.completion_tokens == len(tiny.encode(c.text))


def test_streamed_chat_reassembles_to_the_plain_answer(client):
    knobs = {**GREEDY, "block_length": 4}
    plain = client.chat.completions.create(model="tiny", messages=ASK, max_tokens=16, extra_body=knobs)
    chunks = list(client.chat.completions.create(model="tiny", messages=ASK, max_tokens=16, stream=True,
                                                 extra_body=knobs))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks)
    content = [c.choices[0].delta.content for c in chunks[1:] if c.choices[0].delta.content]
    assert len(content) > 1                               # block by block, not all at the end
    assert "".join(content) == plain.choices[0].message.content
    assert chunks[-1].choices[0].finish_reason == plain.choices[0].finish_reason


def test_stream_with_drafts_and_usage(http):
    body = {"model": "tiny", "prompt": "ROMEO:\n", "max_tokens": 8, "stream": True, "drafts": True, "block_length": 4,
            "stream_options": {"include_usage": True}, **GREEDY}
    with http.stream("POST", "/v1/completions", json=body) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        lines = [line[6:] for line in r.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    events = [json.loads(x) for x in lines[:-1]]
    assert any("draft" in e for e in events)
    assert events[-1]["usage"]["completion_tokens"] >= 1 and events[-1]["choices"] == []
    assert events[-2]["choices"][0]["finish_reason"] in ("stop", "length")


def test_completions_and_generate(client, http):
    r = client.completions.create(model="tiny", prompt=["ROMEO:\n", "JULIET:\n"], max_tokens=8, extra_body=GREEDY)
    assert [c.index for c in r.choices] == [0, 1] and all(c.text for c in r.choices)
    g = http.post("/generate", json={"prompt": "ROMEO:\n", "max_len": 8, "steps": 8, "batch_size": 3})
    assert g.status_code == 200
    texts = g.json()["texts"]
    assert len(texts) == 3 and len(set(texts)) > 1          # temperature 1 by default: three samples


def test_openai_error_types(server, client):
    wrong = openai.OpenAI(base_url=server.url + "/v1", api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        wrong.models.list()
    with pytest.raises(openai.NotFoundError, match="nope"):
        client.chat.completions.create(model="nope", messages=ASK)
    with pytest.raises(openai.BadRequestError, match="sampler"):
        client.chat.completions.create(model="tiny", messages=ASK, extra_body={"sampler": "nope"})


def _ok(http, path="/v1/chat/completions"):
    r = http.post(path, json={"model": "tiny", "messages": ASK, "max_tokens": 4, **GREEDY})
    assert r.status_code == 200, r.text
    return r.json()


def test_fifty_concurrent_requests_are_all_answered_and_batched(server, http, tiny):
    prompts = [f"{name}:\n" for name in ("ROMEO", "JULIET", "KING HENRY", "NURSE", "MERCUTIO")] * 10

    def one(p):
        with httpx.Client(base_url=server.url, headers=AUTH, timeout=120) as c:
            return c.post("/v1/completions", json={"model": "tiny", "prompt": p, "max_tokens": 8, **GREEDY})

    before = server.server.config.app.state.scheduler.stats()
    with ThreadPoolExecutor(50) as pool:
        replies = list(pool.map(one, prompts))
    assert [r.status_code for r in replies] == [200] * 50
    bodies = [r.json() for r in replies]
    assert len({b["id"] for b in bodies}) == 50
    assert all(b["object"] == "text_completion" and b["choices"][0]["finish_reason"] in ("stop", "length")
               for b in bodies)
    after = server.server.config.app.state.scheduler.stats()
    assert after["requests"] - before["requests"] == 50
    assert after["multi_request_batches"] > before["multi_request_batches"]
    batched = [(p, b) for p, b in zip(prompts, bodies) if b["diffusion"]["batch"] > 1]
    assert batched
    for p, b in batched[:5]:                                  # the same request alone: the same answer
        alone = http.post("/v1/completions", json={"model": "tiny", "prompt": p, "max_tokens": 8, **GREEDY}).json()
        assert alone["diffusion"]["batch"] == 1
        assert alone["choices"][0]["text"] == b["choices"][0]["text"]
    _ok(http)


def _chat_body(**kw):
    return {"model": "tiny", "messages": ASK, "max_tokens": 16, **kw}


BAD = [  # (path, body, status, a word the message must name)
    ("/v1/chat/completions", b"{not json", 400, "JSON"),
    ("/v1/chat/completions", b"[1, 2]", 400, "JSON object"),
    ("/v1/chat/completions", {"model": "tiny"}, 400, "messages"),
    ("/v1/chat/completions", _chat_body(messages=[]), 400, "messages"),
    ("/v1/chat/completions", _chat_body(messages="hello"), 400, "messages"),
    ("/v1/chat/completions", _chat_body(messages=[{"role": "wizard", "content": "hi"}]), 400, "role"),
    ("/v1/chat/completions", _chat_body(messages=[{"role": "user", "content": 5}]), 400, "content"),
    ("/v1/chat/completions", _chat_body(max_tokens=-1), 400, "max_tokens"),
    ("/v1/chat/completions", _chat_body(max_tokens=10**6), 400, "max_tokens"),
    ("/v1/chat/completions", _chat_body(max_tokens="16"), 400, "max_tokens"),
    ("/v1/chat/completions", _chat_body(temperature=-1), 400, "temperature"),
    ("/v1/chat/completions", _chat_body(temperature="hot"), 400, "temperature"),
    ("/v1/chat/completions", _chat_body(top_p=0), 400, "top_p"),
    ("/v1/chat/completions", _chat_body(sampler="nope"), 400, "sampler"),
    ("/v1/chat/completions", _chat_body(sampler="threshold", threshold=1.5), 400, "threshold"),
    ("/v1/chat/completions", _chat_body(threshold=0.5), 400, "threshold"),       # low_confidence does not read it
    ("/v1/chat/completions", _chat_body(sampler="speed", editing_threshold=2), 400, "editing_threshold"),
    ("/v1/chat/completions", _chat_body(max_tokens=32, block_length=16, steps=15), 400, "steps"),
    ("/v1/chat/completions", _chat_body(steps=64), 400, "steps"),
    ("/v1/chat/completions", _chat_body(block_length=0), 400, "block_length"),
    ("/v1/chat/completions", _chat_body(preset="fast"), 400, "preset"),
    ("/v1/chat/completions", _chat_body(preset="speed", sampler="threshold"), 400, "preset"),
    ("/v1/chat/completions", _chat_body(seed="x"), 400, "seed"),
    ("/v1/chat/completions", _chat_body(seed=2**70), 400, "seed"),
    ("/v1/chat/completions", _chat_body(n=2), 400, "n"),
    ("/v1/chat/completions", _chat_body(stream="yes"), 400, "stream"),
    ("/v1/chat/completions", _chat_body(keywords="love"), 400, "keywords"),
    ("/v1/chat/completions", _chat_body(stop=["\n", ""]), 400, "stop"),
    ("/v1/chat/completions", _chat_body(response_format={"type": "json_object"}), 400, "response_format"),
    ("/v1/chat/completions", _chat_body(messages=[{"role": "user", "content": ""}]), 400, "messages"),
    ("/v1/chat/completions", _chat_body(foo=1), 400, "foo"),
    ("/v1/chat/completions", {"messages": ASK}, 400, "model"),
    ("/v1/chat/completions", _chat_body(model="gpt-4o"), 404, "gpt-4o"),
    ("/v1/completions", {"model": "tiny", "prompt": 5}, 400, "prompt"),
    ("/v1/completions", {"model": "tiny", "prompt": ["a", "b"], "stream": True}, 400, "stream"),
    ("/generate", {"prompt": "ROMEO:\n", "batch_size": 0}, 400, "batch_size"),
    ("/generate", {"prompt": "ROMEO:\n", "max_len": 10, "block_length": 4}, 400, "max_len"),
    ("/v1/chat/completions", json.dumps(_chat_body(messages=[{"role": "user", "content": "x" * 2_000_000}])), 413,
     "body"),
    ("/v1/nothing", {}, 404, "route"),
]


@pytest.mark.parametrize("path, body, status, word", BAD, ids=[f"{i}-{w}" for i, (_, _, _, w) in enumerate(BAD)])
def test_bad_input_is_a_4xx_openai_error_naming_the_parameter(http, path, body, status, word):
    kw = {"json": body} if isinstance(body, (dict, list)) else {"content": body,
                                                               "headers": {**AUTH, "Content-Type": "application/json"}}
    r = http.post(path, **kw)
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert set(err) >= {"message", "type", "code"} and word in err["message"], err
    _ok(http)                                                 # the server still answers


def test_missing_key_is_401_json(server):
    r = httpx.post(server.url + "/v1/chat/completions", json=_chat_body())
    assert r.status_code == 401 and r.json()["error"]["type"] == "authentication_error"


def test_queue_full_is_429_and_timeout_is_504_and_the_server_goes_on(tiny, monkeypatch):
    slow = threading.Event()
    slow.set()

    def slow_generate(*a, on_step=None, **k):
        def step(rec):
            if slow.is_set():
                time.sleep(0.1)
            on_step(rec)
        return generate(*a, on_step=step, **k)

    monkeypatch.setattr(scheduler_module, "generate", slow_generate)
    running = run_in_thread(create_app(tiny, "tiny", queue_size=1, timeout=1.0))
    sched = running.server.config.app.state.scheduler
    try:
        def post():
            return httpx.post(running.url + "/v1/chat/completions", json=_chat_body(max_tokens=32, **GREEDY), timeout=30)
        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(post)
            _until(lambda: sched.stats()["batches"] == 1)           # running, 32 steps x 0.1 s
            second = pool.submit(post)
            _until(lambda: sched.stats()["waiting"] == 1)           # queued
            full = post()
            assert full.status_code == 429 and full.json()["error"]["code"] == "queue_full"
            assert first.result().status_code == 504 and second.result().status_code == 504
            assert "timeout" in first.result().json()["error"]["message"]
        slow.clear()
        # the queued one was dropped, or stopped if it started before its deadline
        _until(lambda: sched.stats()["dropped"] + sched.stats()["stopped_runs"] == 2)
        sched.timeout = 60.0              # the next request is timed by the machine, not by this test
        good = post()
        assert good.status_code == 200 and good.json()["choices"][0]["message"]["content"]
        stats = sched.stats()
        assert stats["dropped"] + stats["stopped_runs"] == 2, stats
    finally:
        running.stop()


def _until(cond, seconds: float = 20.0):
    end = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < end, "condition not reached"
        time.sleep(0.01)


def test_cli_refuses_a_public_host_without_a_key(capsys):
    from labkit.cli import main
    from labkit.cli.serve import base_url, client_settings, is_loopback

    assert main.main(["serve", "--host", "0.0.0.0"]) == 2
    assert "--api-key" in capsys.readouterr().err
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")
    url = base_url("127.0.0.1", 8000)
    assert url == "http://127.0.0.1:8000/v1"
    text = client_settings(url, "k", "tiny")
    assert "export OPENAI_BASE_URL=http://127.0.0.1:8000/v1\n" in text and "export OPENAI_MODEL=tiny" in text
    assert 'base_url = "http://127.0.0.1:8000/v1"' in text


def test_json_that_breaks_the_parser_is_a_400_in_the_error_shape(http):
    for raw in (b"[" * 100000 + b"]" * 100000, b'{"model": "tiny", "seed": ' + b"9" * 5000 + b"}"):
        r = http.post("/v1/chat/completions", content=raw, headers={"Content-Type": "application/json"})
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_json", r.text[:200]
    assert http.get("/v1/models").status_code == 200


def test_an_app_serves_again_after_a_restart(tiny):
    app = create_app(tiny, "tiny")
    for _ in range(2):
        running = run_in_thread(app)
        try:
            r = httpx.post(running.url + "/v1/completions", json={"model": "tiny", "prompt": "ROMEO:\n", "max_tokens": 4,
                                                                  **GREEDY}, timeout=30)
            assert r.status_code == 200, r.text
        finally:
            running.stop()


def test_a_long_prompt_without_max_tokens_gets_the_room_left(http, tiny):
    words = ("to be or not to be " * 200).split()
    prompt = " ".join(words[:10])
    while len(tiny.encode(prompt)) < tiny.max_length - 47:
        prompt += " " + words[len(prompt.split()) % len(words)]
    body = {"model": "tiny", "prompt": prompt, **GREEDY}
    r = http.post("/v1/completions", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["usage"]["prompt_tokens"] + r.json()["diffusion"]["gen_length"] <= tiny.max_length


def test_a_stream_refused_by_the_loop_is_a_plain_400(http):
    body = _chat_body(stream=True, keywords=["x" * 300], **GREEDY)
    r = http.post("/v1/chat/completions", json=body)
    assert r.status_code == 400 and "keyword" in r.json()["error"]["message"].lower(), r.text[:300]


def test_sampling_seeds_reproduce_and_no_seed_draws_a_fresh_sample(http):
    def text(**kw):
        body = {"model": "tiny", "prompt": "ROMEO:\n", "max_tokens": 16, "temperature": 1.0, **kw}
        return http.post("/v1/completions", json=body).json()["choices"][0]["text"]
    assert text(seed=7) == text(seed=7)
    assert len({text() for _ in range(3)}) > 1


def test_a_client_that_hangs_up_stops_its_run(tiny, monkeypatch):
    def slow_generate(*a, on_step=None, **k):
        def step(rec):
            time.sleep(0.1)
            on_step(rec)
        return generate(*a, on_step=step, **k)

    monkeypatch.setattr(scheduler_module, "generate", slow_generate)
    running = run_in_thread(create_app(tiny, "tiny", timeout=60))
    sched = running.server.config.app.state.scheduler
    try:
        with pytest.raises(httpx.ReadTimeout):            # 32 steps x 0.1 s; the client leaves after 0.5 s
            httpx.post(running.url + "/v1/chat/completions", json=_chat_body(max_tokens=32, **GREEDY), timeout=0.5)
        _until(lambda: sched.stats()["stopped_runs"] == 1, seconds=10)
    finally:
        running.stop()


def test_a_block_that_ends_inside_a_character_is_held_back_not_lost(tiny):
    import asyncio

    from labkit.serve import app as app_module
    from labkit.serve import streaming
    from labkit.serve.scheduler import Row

    ids = tiny.encode("日本!")
    assert tiny.decode(ids[:1]).endswith("\ufffd")          # the first token is half a character

    class Ticket:
        deadline = time.monotonic() + 30
        cancelled = False

        def __init__(self, job):
            self.job, self.events = job, asyncio.Queue()

    async def run():
        job = app_module.parse_text(tiny, {"model": "tiny", "prompt": "ROMEO:\n", "max_tokens": len(ids), "stream": True,
                                           **GREEDY}, 16)
        ticket = Ticket(job)
        result = scheduler_module.Result(rows=(Row(ids=tuple(ids), nfe=1),), batch_requests=1, batch_rows=1, seconds=0)
        for event in (("final", ids[:1]), ("done", result)):
            ticket.events.put_nowait(event)
        cfg = app_module.ServeConfig(model_id="tiny", api_key=None, max_batch=1, queue_size=1, timeout=30,
                                     max_body=1 << 20, batch_wait=0)
        return [e async for e in streaming._events(tiny, cfg, ticket)]
    events = asyncio.run(run())
    chunks = [json.loads(e[6:]) for e in events if e.startswith("data: {")]
    assert "".join(c["choices"][0]["text"] for c in chunks) == "日本!"


def test_the_diffusion_summary_covers_every_row_of_the_request(client, tiny):
    prompts = ["ROMEO:\n", "First Citizen:\nBefore we proceed any further, hear me speak.\n"]
    knobs = {**GREEDY, "sampler": "threshold", "threshold": 0.5}
    r = client.completions.create(model="tiny", prompt=prompts, max_tokens=32, extra_body=knobs)
    from labkit.samplers.registry import rule
    out = generate(tiny, prompts, rule("threshold", threshold=0.5, temperature=0), gen_length=32, block_length=32,
                   steps=32, seed=0, eos_early_stop=True)
    row_nfe = out.trace.row_nfe().tolist()
    decided = int((out.ids[:, out.trace.prompt_len:] != tiny.mask_id).sum())
    d = r.model_extra["diffusion"]
    assert d["nfe"] == max(row_nfe) and d["tpf"] == round(decided / sum(row_nfe), 4)
