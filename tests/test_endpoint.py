"""labkit check-endpoint and its HTTP client, against a fake OpenAI-compatible server in a thread."""
from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from labkit.cli.main import main
from labkit.serve import endpoint as ep

KEY = "sk-test-0123456789"
GOOD = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1730000000, "model": "llada-8b-instruct",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "OK"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}}


class Fake:
    """What the fake server does: its key, its models, a queue of statuses for the chat route
    (then 200), the chat answer's body, and every request it saw."""

    def __init__(self, prefix="/v1"):
        self.prefix, self.key, self.models = prefix, KEY, ["llada-8b-instruct", "tiny"]
        self.chat_statuses, self.answer, self.seen = [], dict(GOOD), []


def _handler(fake: Fake):
    class H(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _route(self, method):
            n = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(n)) if n else None
            fake.seen.append((method, self.path, body))
            if not self.path.startswith(fake.prefix + "/") or "//" in self.path:
                return self._send(404, {"error": {"message": f"no route {self.path}"}})
            if self.headers.get("Authorization") != f"Bearer {fake.key}":
                return self._send(401, {"error": {"message": "Invalid API key", "type": "invalid_request_error"}})
            route = self.path[len(fake.prefix):]
            if method == "GET" and route == "/models":
                return self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in fake.models]})
            if method == "POST" and route in ("/chat/completions", "/completions"):
                if fake.chat_statuses:
                    status = fake.chat_statuses.pop(0)
                    return self._send(status, {"error": {"message": f"status {status}"}})
                return self._answer(route, body)
            return self._send(404, {"error": {"message": "not found"}})

        def _answer(self, route, body):
            if body.get("model") not in fake.models:
                return self._send(404, {"error": {"message": f"model {body.get('model')!r} not found"}})
            if route == "/completions":
                text = f"echo:{body['prompt'][:10]}"
                return self._send(200, {"object": "text_completion", "choices": [{"text": text, "finish_reason": "length"}]})
            return self._send(200, fake.answer)

        def do_GET(self):
            self._route("GET")

        def do_POST(self):
            self._route("POST")

    return H


@pytest.fixture
def server(monkeypatch):
    for var in ep.PROXY_VARS + ("NO_PROXY", "no_proxy", "OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL"):
        monkeypatch.delenv(var, raising=False)
    fake = Fake()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    fake.root = f"http://127.0.0.1:{httpd.server_address[1]}"
    fake.url = fake.root + "/v1"
    yield fake
    httpd.shutdown()
    httpd.server_close()


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def diagnose(url, key=KEY, model="llada-8b-instruct", **kw):
    return ep.diagnose(url, key, model, timeout=5, backoff=0.01, **kw)


def bad(findings, check=None):
    return [f for f in findings if f.status != ep.OK and (check is None or f.check == check)]


def test_a_good_triple_passes(server):
    found = diagnose(server.url)
    assert ep.passed(found), found
    assert {f.check for f in found} >= {"base URL", "API key", "proxy", "reachable", "model", "chat request", "response"}
    chat = [b for m, p, b in server.seen if p == "/v1/chat/completions"]
    assert chat and chat[0]["max_tokens"] <= 16 and chat[0]["messages"][0]["role"] == "user"


def test_trailing_and_double_slashes_are_flagged_and_repaired(server):
    found, fixed = ep.check_base_url(server.url + "/")
    assert fixed == server.url and [f.status for f in found] == [ep.WARN] and "trailing slash" in found[0].detail
    found, fixed = ep.check_base_url(server.root + "//v1")
    assert fixed == server.url and "double slash" in bad(found)[0].detail
    found = diagnose(server.url + "/")
    assert not ep.passed(found) and bad(found) == [f for f in found if "trailing" in f.detail]


def test_url_shapes_scheme_and_endpoint_suffix(server):
    found, fixed = ep.check_base_url(server.url + "/chat/completions")
    assert fixed == server.url and "/chat/completions" in bad(found)[0].detail
    found, fixed = ep.check_base_url("127.0.0.1:8000/v1")
    assert fixed == "http://127.0.0.1:8000/v1" and "no scheme" in bad(found)[0].detail
    assert ep.check_base_url("")[1] is None


def test_missing_v1_is_hinted(server):
    found = diagnose(server.root)
    (f,) = bad(found, "base URL")
    assert "404" in f.detail and f"{server.root}/v1" in f.fix


def test_key_with_whitespace_or_placeholder_is_flagged(server):
    for key, words in ((KEY + "\n", "ends with a newline"), (" " + KEY, "starts"), ("sk-abc\ndef12345", "inside")):
        (f,) = bad(ep.check_key(key))
        assert f.status == ep.FAIL and words in f.detail, (key, f)
    assert bad(ep.check_key("sk-你的Key"))[0].status == ep.WARN
    assert ep.check_key(KEY)[0].status == ep.OK and KEY not in ep.check_key(KEY)[0].detail   # masked
    found = diagnose(server.url, key=KEY + "\n")
    assert bad(found) == bad(found, "API key") and len(bad(found)) == 1   # diagnosed; the stripped key then works


def test_wrong_key_is_a_key_problem(server):
    found = diagnose(server.url, key="sk-wrong-0123456789")
    (f,) = bad(found)
    assert f.check == "API key" and "401" in f.detail and "Invalid API key" in f.detail


def test_display_name_gets_the_closest_ids(server):
    found = diagnose(server.url, model="LLaDA 8B Instruct")
    model = bad(found, "model")[0]
    assert "display name" in model.detail and "'llada-8b-instruct'" in model.fix
    assert "404" in bad(found, "chat request")[0].detail
    assert bad(diagnose(server.url, model=None), "model")[0].fix.endswith("llada-8b-instruct, tiny")


def test_dead_proxy_variable_is_flagged(server, monkeypatch):
    port = closed_port()
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{port}")
    found = ep.check_proxies("https://api.example.com/v1")
    assert found[0].status == ep.FAIL and f"127.0.0.1:{port}" in found[0].detail and "HTTPS_PROXY" in found[0].fix
    assert ep.check_proxies(server.url)[0].status == ep.WARN      # http:// is not carried by HTTPS_PROXY
    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{port}")
    found = diagnose(server.url)                             # urllib now sends through the dead proxy
    assert [f.status for f in bad(found, "proxy")] == [ep.WARN, ep.FAIL] and "http_proxy" in bad(found, "proxy")[1].detail
    assert bad(found, "reachable")[0].status == ep.FAIL
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    assert all(f.status == ep.WARN for f in ep.check_proxies(server.url))


def test_live_proxy_without_no_proxy_for_localhost(server, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", server.root)          # something listens there
    (f,) = ep.check_proxies(server.url)
    assert f.status == ep.FAIL and "NO_PROXY" in f.fix
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    assert ep.check_proxies(server.url)[0].status == ep.OK


def test_retries_503_then_success_with_backoff(server):
    server.chat_statuses = [503, 503]
    slept = []
    client = ep.Client(server.url, KEY, timeout=5, retries=2, backoff=0.01, sleep=slept.append)
    found = ep.check_chat(client, "tiny")
    assert [f.status for f in found] == [ep.OK, ep.OK] and "after 2 retries (HTTP 503, HTTP 503)" in found[0].detail
    assert slept == [0.01, 0.02]
    server.chat_statuses = [503, 503, 503]
    (f,) = ep.check_chat(client, "tiny")
    assert f.status == ep.FAIL and "HTTP 503 after 2 retries" in f.detail


def test_4xx_is_not_retried_429_is(server):
    client = ep.Client(server.url, KEY, timeout=5, retries=2, backoff=0.001)
    server.chat_statuses = [400]
    (f,) = ep.check_chat(client, "tiny")
    assert f.status == ep.FAIL and "HTTP 400" in f.detail
    assert sum(p == "/v1/chat/completions" for _, p, _ in server.seen) == 1
    server.chat_statuses = [429]
    assert ep.check_chat(client, "tiny")[0].status == ep.OK


def test_malformed_answer_is_reported(server):
    server.answer = {k: v for k, v in GOOD.items() if k != "usage"}
    found = diagnose(server.url)
    (f,) = bad(found)
    assert f.check == "response" and f.status == ep.WARN and "usage missing" in f.detail
    server.answer = {**GOOD, "choices": []}
    (f,) = bad(diagnose(server.url))
    assert f.status == ep.FAIL and "choices" in f.detail
    assert "choices[0].message.content missing or not a string" in ep.response_problems(
        {**GOOD, "choices": [{"message": {"content": None}, "finish_reason": "stop"}]})


def test_unreachable_base_url_fails_fast(monkeypatch):
    for var in ep.PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    t0 = time.perf_counter()
    found = ep.diagnose(f"http://127.0.0.1:{closed_port()}/v1", KEY, "tiny", timeout=5)
    assert time.perf_counter() - t0 < 3
    (f,) = bad(found)
    assert f.check == "reachable" and "cannot connect" in f.detail
    with pytest.raises(ep.EndpointError):
        ep.Client(f"http://127.0.0.1:{closed_port()}", retries=1, backoff=0.001).post("/x", {})


def test_cli_exit_codes(server, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_MODEL", "tiny")
    assert main(["check-endpoint"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:2] == ["check", "status"] and "FAIL" not in out
    assert main(["check-endpoint", "--model", "Tiny Model", "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["ok"] is False and any(f["check"] == "model" and "'tiny'" in f["fix"] for f in result["findings"])
    assert main(["check-endpoint", "--timeout", "0"]) == 2
    assert "--timeout" in capsys.readouterr().err


def test_a_local_server_without_a_key_passes_and_one_that_wants_a_key_says_so(tiny):
    """`labkit serve` without --api-key prints OPENAI_API_KEY=none: check-endpoint passes that triple;
    a local server that does need a key is caught at GET /models."""
    from labkit.serve.app import create_app, run_in_thread

    assert ep.check_key("none", local=True)[0].status == ep.OK and ep.check_key(None, local=True)[0].status == ep.OK
    assert ep.check_key("none")[0].status == ep.WARN                       # a remote server: still a placeholder
    for api_key, ok in ((None, True), ("secret", False)):
        running = run_in_thread(create_app(tiny, "tiny", api_key=api_key))
        try:
            found = ep.diagnose(running.url + "/v1", "none", "tiny", timeout=30, retries=0, env={})
            assert ep.passed(found) == ok, ep.table(found)
            if not ok:
                assert any(f.status == ep.FAIL and "401" in f.detail for f in found), ep.table(found)
        finally:
            running.stop()
