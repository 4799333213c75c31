"""`labkit serve` takes what everyday OpenAI clients send (litellm, langchain-openai, the `llm` CLI,
the JS SDK): stop strings, empty message contents, standard fields with values that change nothing,
a body over the limit written whole before the answer is read, a client that hangs up mid-body, and
langchain's default max_tokens on a small model. Driven by the official openai client and raw HTTP
(urllib, http.client, a socket) against a server on a free 127.0.0.1 port."""
import asyncio
import http.client
import json
import logging
import socket
import time
import urllib.error
import urllib.request
from urllib.parse import urlsplit

import pytest

pytest.importorskip("fastapi")
openai = pytest.importorskip("openai")

from labkit.serve import app as app_module  # noqa: E402
from labkit.serve import scheduler as scheduler_module  # noqa: E402
from labkit.serve import streaming  # noqa: E402
from labkit.serve.app import create_app, run_in_thread  # noqa: E402
from labkit.serve.schemas import find_stop, held_back  # noqa: E402

ASK = [{"role": "user", "content": "Who art thou?"}]
GREEDY = {"temperature": 0, "seed": 0}
STREAMED = {**GREEDY, "block_length": 4}          # four blocks of a 16-token answer


@pytest.fixture(scope="module")
def server(tiny):
    running = run_in_thread(create_app(tiny, "tiny", timeout=120))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="none", timeout=120, max_retries=0)


def _raw(server, path: str, body, method: str = "POST", headers: dict | None = None) -> tuple[int, dict, dict]:
    """(status, JSON body, headers) of one request on a fresh connection (urllib writes the whole body first)."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(server.url + path, data=data if method == "POST" else None, method=method,
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read()), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read()), dict(e.headers)


def _serves(server):
    status, body, _ = _raw(server, "/v1/completions", {"model": "tiny", "prompt": "ROMEO:\n", "max_tokens": 2, **GREEDY})
    assert status == 200 and body["choices"][0]["text"] is not None, body


def _error(server, path: str, body) -> dict:
    status, reply, _ = _raw(server, path, body)
    assert status == 400, reply
    err = reply["error"]
    assert "\n" not in err["message"] and len(err["message"]) < 200, err["message"]
    return err


# --- stop -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def plain_text(client):
    """The 16-token greedy answer to "ROMEO:\\n" in four blocks, without a stop: what stops cut."""
    r = client.completions.create(model="tiny", prompt="ROMEO:\n", max_tokens=16, extra_body=STREAMED)
    text = r.choices[0].text
    assert " know " in text and "\n" not in text[:4], text          # the cuts below fall inside it
    return text, r.model_extra["diffusion"]["nfe"]


def test_stop_cuts_a_chat_answer_and_usage_counts_what_is_returned(client, tiny):
    plain = client.chat.completions.create(model="tiny", messages=ASK, max_tokens=12, extra_body=GREEDY)
    text = plain.choices[0].message.content
    stop = text[len(text) // 2:len(text) // 2 + 2]                # two characters from the middle of it
    for given in (stop, [stop, "\x00never"]):
        r = client.chat.completions.create(model="tiny", messages=ASK, max_tokens=12, stop=given, extra_body=GREEDY)
        c = r.choices[0]
        assert c.message.content == text[:text.index(stop)] and c.finish_reason == "stop"
        assert r.usage.completion_tokens == len(tiny.encode(c.message.content))
        assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
        assert r.model_extra["diffusion"]["sampler"] == "low_confidence"


def test_stop_cuts_each_completion_row_on_its_own(client):
    prompts = ["ROMEO:\n", "JULIET:\n", "First Citizen:\n"]
    plain = client.completions.create(model="tiny", prompt=prompts, max_tokens=8, extra_body=GREEDY)
    r = client.completions.create(model="tiny", prompt=prompts, max_tokens=8, stop=[",", "."], extra_body=GREEDY)
    for before, after in zip(plain.choices, r.choices):
        at = find_stop(before.text, (",", "."))
        if at is None:
            assert after.text == before.text and after.finish_reason == before.finish_reason
        else:
            assert after.text == before.text[:at] and after.finish_reason == "stop"
    assert any(find_stop(c.text, (",", ".")) is not None for c in plain.choices)


def test_a_stream_ends_at_its_stop_and_stops_the_run(server, client, plain_text):
    text, full_nfe = plain_text
    stop = " know "
    sched = server.server.config.app.state.scheduler
    before = sched.stats()["stop_strings"]
    chunks = list(client.completions.create(model="tiny", prompt="ROMEO:\n", max_tokens=16, stop=stop, stream=True,
                                            stream_options={"include_usage": True}, extra_body=STREAMED))
    got = "".join(c.choices[0].text for c in chunks if c.choices)
    assert got == text[:text.index(stop)]
    finish = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert [c.choices[0].finish_reason for c in finish] == ["stop"] and finish[0] is chunks[-2]
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens >= 1
    assert finish[0].model_extra["diffusion"]["nfe"] < full_nfe        # the run ended at the stop
    assert sched.stats()["stop_strings"] == before + 1


def test_a_streamed_chat_with_stop_equals_the_plain_answer_with_stop(client):
    kw = dict(model="tiny", messages=ASK, max_tokens=12, stop=["ou", "\n"], extra_body=STREAMED)
    plain = client.chat.completions.create(**kw)
    chunks = list(client.chat.completions.create(stream=True, **kw))
    content = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert content == plain.choices[0].message.content
    assert chunks[-1].choices[0].finish_reason == plain.choices[0].finish_reason


class _FakeTicket:
    def __init__(self, job, events):
        self.job, self.events, self.deadline = job, asyncio.Queue(), time.monotonic() + 30
        self.cancelled = self.stopped = False
        for e in events:
            self.events.put_nowait(e)


def _stream(tiny, text: str, cut: int, stop) -> tuple[list[str], dict, _FakeTicket]:
    """_events fed the tokens of `text` as two final blocks split after `cut` characters' tokens."""
    ids = tiny.encode(text)
    head = next(k for k in range(len(ids) + 1) if len(tiny.decode(ids[:k])) >= cut)
    body = {"model": "tiny", "prompt": "ROMEO:\n", "max_tokens": len(ids), "stream": True, "stop": stop, **GREEDY}

    async def run():
        job = app_module.parse_text(tiny, body, 16)
        result = scheduler_module.Result(rows=(scheduler_module.Row(ids=tuple(ids), nfe=2),), batch_requests=1,
                                         batch_rows=1, seconds=0)
        ticket = _FakeTicket(job, [("final", ids[:head]), ("final", ids), ("done", result)])
        cfg = app_module.ServeConfig(model_id="tiny")
        return [e async for e in streaming._events(tiny, cfg, ticket)], ticket
    events, ticket = asyncio.run(run())
    assert events[-1] == "data: [DONE]\n\n"
    chunks = [json.loads(e[6:]) for e in events[:-1]]
    return [c["choices"][0]["text"] for c in chunks], chunks[-1]["choices"][0], ticket


def test_a_stream_holds_back_text_that_may_start_a_stop_string(tiny):
    text = "Why, sir, I know not what."
    assert held_back("Why, sir, I kn", ("know", "x")) == 2 and held_back("Why", ("know",)) == 0
    # a block ends inside the stop string: its start is held back, never sent, and the stream stops
    parts, last, ticket = _stream(tiny, text, text.index("know") + 2, "know not")
    assert parts[0] == "Why, sir, I " and "".join(parts) == "Why, sir, I " and last["finish_reason"] == "stop"
    assert ticket.stopped
    # a held-back start that turns out not to be the stop string is sent with the next block
    parts, last, ticket = _stream(tiny, text, text.index("know") + 2, ["know it", "what?"])
    assert parts[:2] == ["Why, sir, I ", "know not what."] and "".join(parts) == text
    assert last["finish_reason"] == "length"
    assert not ticket.stopped


@pytest.mark.parametrize("stop", ["", [], None])
def test_an_empty_stop_is_no_stop(server, stop):
    status, body, _ = _raw(server, "/v1/completions", {"model": "tiny", "prompt": "ROMEO:\n", "max_tokens": 2,
                                                      "stop": stop, **GREEDY})
    assert status == 200 and body["choices"][0]["finish_reason"] in ("stop", "length"), body


@pytest.mark.parametrize("stop", [[""], ["a"] * 5, 5, [1], {"a": 1}, [["\n"]]])
def test_a_bad_stop_is_a_one_line_400_naming_stop(server, stop):
    for path, body in (("/v1/chat/completions", {"model": "tiny", "messages": ASK, "stop": stop}),
                       ("/v1/completions", {"model": "tiny", "prompt": "ROMEO:\n", "stop": stop})):
        assert _error(server, path, body)["param"] == "stop"
    _serves(server)


# --- messages ---------------------------------------------------------------------------------
def test_empty_message_contents_are_accepted(client):
    asked = client.chat.completions.create(model="tiny", messages=ASK, max_tokens=4, extra_body=GREEDY)
    messages = [{"role": "system", "content": ""}, *ASK, {"role": "assistant", "content": ""}]
    r = client.chat.completions.create(model="tiny", messages=messages, max_tokens=4, extra_body=GREEDY)
    assert r.choices[0].message.content == asked.choices[0].message.content   # empty turns leave the prompt alone
    parts = [{"role": "system", "content": []}, {"role": "user", "content": [{"type": "text", "text": "Who art thou?"}]}]
    assert client.chat.completions.create(model="tiny", messages=parts, max_tokens=4, extra_body=GREEDY).choices


def test_a_conversation_of_empty_contents_is_a_one_line_400(server, client):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="tiny", messages=[{"role": "system", "content": ""},
                                                               {"role": "user", "content": " "}], max_tokens=4)
    assert e.value.body["param"] == "messages" and "\n" not in e.value.body["message"]
    _serves(server)


# --- fields whose value changes nothing ---------------------------------------------------------
CHAT_NO_OPS = dict(response_format={"type": "text"}, tools=[], tool_choice="none", logit_bias={}, logprobs=False,
                   top_logprobs=0, functions=[], function_call="none", n=1, presence_penalty=0.0, frequency_penalty=0,
                   user="u1", parallel_tool_calls=False)


def test_the_chat_fields_clients_send_with_no_effect_are_accepted(client):
    plain = client.chat.completions.create(model="tiny", messages=ASK, max_tokens=4, extra_body=GREEDY)
    r = client.chat.completions.create(model="tiny", messages=ASK, max_tokens=4, extra_body=GREEDY, **CHAT_NO_OPS)
    assert r.choices[0].message.content == plain.choices[0].message.content
    r = client.chat.completions.create(model="tiny", messages=ASK, max_tokens=4, tool_choice="auto", logprobs=None,
                                       top_logprobs=None, extra_body={**GREEDY, "tools": None})
    assert r.choices[0].message.content == plain.choices[0].message.content


def test_the_completion_fields_clients_send_with_no_effect_are_accepted(server, client):
    plain = client.completions.create(model="tiny", prompt="ROMEO:\n", max_tokens=4, extra_body=GREEDY)
    r = client.completions.create(model="tiny", prompt="ROMEO:\n", max_tokens=4, echo=False, best_of=1, logprobs=None,
                                  logit_bias={}, presence_penalty=0, extra_body=GREEDY)
    assert r.choices[0].text == plain.choices[0].text
    status, body, _ = _raw(server, "/v1/completions", {"model": "tiny", "prompt": "ROMEO:\n", "max_tokens": 4,
                                                      "suffix": None, "logprobs": 0, "echo": None, **GREEDY})
    assert status == 200 and body["choices"][0]["text"] == plain.choices[0].text


CHANGES = [  # (route, field, a value that would change the answer, a word of what the field may be)
    ("chat", "response_format", {"type": "json_object"}, "text"),
    ("chat", "response_format", {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}, "text"),
    ("chat", "tools", [{"type": "function", "function": {"name": "f"}}], "[]"),
    ("chat", "tool_choice", "required", "none"),
    ("chat", "tool_choice", {"type": "function", "function": {"name": "f"}}, "auto"),
    ("chat", "functions", [{"name": "f"}], "[]"),
    ("chat", "function_call", {"name": "f"}, "none"),
    ("chat", "logit_bias", {"50256": -100}, "{}"),
    ("chat", "logprobs", True, "false"),
    ("chat", "top_logprobs", 3, "0"),
    ("chat", "presence_penalty", 0.5, "0"),
    ("chat", "n", 2, "1"),
    ("text", "echo", True, "false"),
    ("text", "best_of", 2, "1"),
    ("text", "logprobs", 5, "0"),
    ("text", "suffix", "THE END", "suffix"),
    ("text", "logit_bias", {"1": 5}, "{}"),
]


@pytest.mark.parametrize("route, field, value, word", CHANGES, ids=[f"{c[1]}-{i}" for i, c in enumerate(CHANGES)])
def test_a_value_that_would_change_the_answer_is_a_one_line_400(client, server, route, field, value, word):
    create = client.chat.completions.create if route == "chat" else client.completions.create
    base = {"messages": ASK} if route == "chat" else {"prompt": "ROMEO:\n"}
    with pytest.raises(openai.BadRequestError) as e:
        create(model="tiny", max_tokens=4, extra_body={field: value}, **base)
    err = e.value.body
    assert err["param"] == field and word in err["message"], err
    assert "\n" not in err["message"] and len(err["message"]) < 160 and "frequency_penalty" not in err["message"]
    _serves(server)


def test_an_unknown_field_is_a_short_400_naming_it(server):
    for path, base in (("/v1/chat/completions", {"messages": ASK}), ("/v1/completions", {"prompt": "ROMEO:\n"})):
        err = _error(server, path, {"model": "tiny", **base, "temprature": 0.5})
        assert err["param"] == "temprature" and "temperature" in err["message"] and "/v1/models" in err["message"]
        assert len(err["message"]) < 160 and "top_p" not in err["message"]
    assert _raw(server, "/v1/completions", {"model": "tiny", "prompt": "x", "echo": False, "tools": []})[1][
        "error"]["param"] == "tools"                                   # a chat-only field on /v1/completions
    status, models, _ = _raw(server, "/v1/models", None, method="GET")
    fields = models["data"][0]["parameters"]
    assert {"stop", "response_format", "threshold", "sampler"} <= set(fields["/v1/chat/completions"])
    assert {"echo", "suffix", "best_of", "stop"} <= set(fields["/v1/completions"])


# --- max_tokens and the model's context ---------------------------------------------------------
def test_langchains_default_max_tokens_says_the_context_is_the_limit(client, server, tiny):
    assert tiny.max_length == 256
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model="tiny", prompt="ROMEO:\n", max_tokens=256)
    err = e.value.body
    n = len(tiny.encode("ROMEO:\n"))
    assert err["param"] == "max_tokens" and f"[1, {256 - n}]" in err["message"]
    assert f"the prompt ({n} tokens)" in err["message"] and "context of 256 tokens" in err["message"]
    with pytest.raises(openai.BadRequestError, match="context of 256 tokens"):
        client.chat.completions.create(model="tiny", messages=ASK, max_completion_tokens=300)


# --- bodies over the limit, clients that hang up ---------------------------------------------
def _http413(conn: http.client.HTTPConnection, body, chunked: bool = False) -> None:
    conn.request("POST", "/v1/chat/completions", body=body, encode_chunked=chunked,
                 headers={"Content-Type": "application/json"})
    reply = conn.getresponse()
    data = json.loads(reply.read())
    assert reply.status == 413 and data["error"]["code"] == "body_too_large" and "limit" in data["error"]["message"]


def test_fifty_oversize_bodies_written_whole_all_get_their_413(server):
    body = json.dumps({"model": "tiny", "messages": [{"role": "user", "content": "x" * 2_000_000}]}).encode()
    host = urlsplit(server.url)
    for _ in range(20):                                   # urllib: a fresh connection each, the body sent first
        status, reply, _ = _raw(server, "/v1/chat/completions", body)
        assert status == 413 and reply["error"]["code"] == "body_too_large", reply
    for _ in range(25):                                   # http.client: fresh connections
        conn = http.client.HTTPConnection(host.hostname, host.port, timeout=60)
        try:
            _http413(conn, body)
        finally:
            conn.close()
    conn = http.client.HTTPConnection(host.hostname, host.port, timeout=60)
    try:                                                  # one kept-alive connection: 413s, then an answer
        for _ in range(4):
            _http413(conn, body)
        _http413(conn, iter([body[i:i + 65536] for i in range(0, len(body), 65536)]), chunked=True)
        conn.request("GET", "/v1/models")
        assert conn.getresponse().status == 200
    finally:
        conn.close()
    _serves(server)


def test_a_client_that_hangs_up_mid_body_is_one_log_line(tiny, caplog):
    running = run_in_thread(create_app(tiny, "tiny"))
    uvicorn_log = logging.getLogger("uvicorn.error")
    uvicorn_log.addHandler(caplog.handler)
    caplog.set_level(logging.INFO, logger="labkit.serve")
    host = urlsplit(running.url)
    try:
        with socket.create_connection((host.hostname, host.port), timeout=10) as s:
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 1000\r\n\r\n" + b'{"model": ')
        end = time.monotonic() + 20
        while not any(r.name == "labkit.serve" for r in caplog.records):
            assert time.monotonic() < end, "no log line"
            time.sleep(0.05)
        time.sleep(0.3)                                   # anything else it would log comes now
        _serves(running)
    finally:
        uvicorn_log.removeHandler(caplog.handler)
        running.stop()
    ours = [r for r in caplog.records if r.name == "labkit.serve"]
    assert len(ours) == 1 and "client disconnected while sending the request body" in ours[0].getMessage()
    assert "\n" not in ours[0].getMessage() and ours[0].exc_info is None
    assert not [r for r in caplog.records if r.name.startswith("uvicorn") and r.levelno >= logging.WARNING]


def test_a_body_far_over_the_limit_is_refused_unread_and_the_server_goes_on(tiny):
    running = run_in_thread(create_app(tiny, "tiny", max_body=1000))      # read and dropped up to 4000 bytes
    host = urlsplit(running.url)
    try:
        for size, chunked in ((3000, False), (3000, True), (200_000, False), (200_000, True)):
            conn = http.client.HTTPConnection(host.hostname, host.port, timeout=30)
            body = b"x" * size
            try:
                conn.request("POST", "/v1/completions", body=iter([body]) if chunked else body, encode_chunked=chunked,
                             headers={"Content-Type": "application/json"})
                reply = conn.getresponse()
                assert reply.status == 413 and json.loads(reply.read())["error"]["code"] == "body_too_large"
                assert (reply.getheader("connection") == "close") == (size > 4000)
            except (BrokenPipeError, ConnectionResetError):
                assert size > 4000                        # past the bound the connection may close under the writer
            finally:
                conn.close()
        _serves(running)
    finally:
        running.stop()
