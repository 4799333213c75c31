"""Check an OpenAI-compatible endpoint before trusting it, and talk to it: `labkit check-endpoint`.

An endpoint is a triple: base URL, API key, model id (by default the environment variables
OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL). Most failures are one of them written wrong, not
the model: a trailing slash that becomes `//chat/completions`, a URL that already ends in
`/chat/completions`, a missing `/v1`, a key copied with a space or a newline, a display name
("LLaDA 8B Instruct") where the server wants its id ("llada-8b-instruct"), or a proxy variable
left over from a tool that is no longer running (127.0.0.1:7890, connection refused).

`diagnose()` runs the checks in that order and returns a list of Finding(check, status, detail,
fix), status "ok", "warn" or "FAIL"; only then does it send one minimal chat request, with the
timeout (120 s by default: a diffusion model's answer takes many forward passes) and `retries`
retries with exponential backoff (base delay, then twice that, ...) on connection errors,
timeouts, 429 and 5xx; never on another 4xx, which a retry cannot fix. The answer's structure
is checked field by field (id, object, created, model, choices[0].message.content,
finish_reason, usage).

`Client` is the small HTTP client both this check and `labkit batch --endpoint` use: standard
library only (urllib), so the proxy variables act on it as they act on other clients.
"""
from __future__ import annotations

import difflib
import http.client
import json
import os
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import asdict, dataclass, field
from typing import Callable

OK, WARN, FAIL = "ok", "warn", "FAIL"
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1", "0.0.0.0")
ENDPOINT_SUFFIXES = ("/chat/completions", "/completions", "/models", "/embeddings")
PLACEHOLDERS = ("your", "你的", "xxx", "placeholder", "changeme", "replace", "example", "<", ">", "...", "…")
USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")


@dataclass(frozen=True)
class Finding:
    check: str
    status: str          # "ok", "warn" or "FAIL"
    detail: str
    fix: str = ""


class EndpointError(Exception):
    """A request that did not get a 2xx answer: status (None when nothing answered), message,
    and what each attempt got."""

    def __init__(self, message: str, status: int | None = None, attempts: tuple[str, ...] = ()):
        super().__init__(message)
        self.status, self.attempts = status, attempts


@dataclass
class Reply:
    status: int
    body: object                      # the parsed JSON, None when the body is not JSON
    text: str
    attempts: list[str] = field(default_factory=list)   # what each failed attempt got, in order


def retryable(status: int | None) -> bool:
    """Connection failures (None), 429 and 5xx are worth another try; other answers are not."""
    return status is None or status == 429 or status >= 500


class Client:
    """A minimal OpenAI-compatible client: JSON in, JSON out, a timeout per attempt and `retries`
    further attempts after a retryable failure, waiting backoff, 2 * backoff, 4 * backoff, ...
    seconds (or the server's Retry-After, at most 60 s)."""

    def __init__(self, base_url: str, api_key: str = "", *, timeout: float = 120.0, retries: int = 2,
                 backoff: float = 1.0, sleep: Callable[[float], None] = time.sleep):
        if not timeout > 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
        if not isinstance(retries, int) or retries < 0:
            raise ValueError(f"retries must be an integer >= 0, got {retries!r}")
        self.base_url, self.api_key = base_url.rstrip("/"), api_key
        self.timeout, self.retries, self.backoff, self.sleep = timeout, retries, backoff, sleep
        self._opener = urllib.request.build_opener()      # honours HTTP(S)_PROXY / NO_PROXY

    def _once(self, method: str, path: str, body: dict | None) -> tuple[int | None, str, dict]:
        """One attempt: (status or None, text or the failure, headers)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base_url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if self.api_key:
            req.add_header("Authorization", f"Bearer {self.api_key}")
        try:
            with self._opener.open(req, timeout=self.timeout) as r:
                return r.status, r.read().decode("utf-8", "replace"), dict(r.headers)
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode("utf-8", "replace"), dict(e.headers or {})
        except urllib.error.URLError as e:
            reason = e.reason
            if isinstance(reason, (socket.timeout, TimeoutError)):
                return None, f"no answer within {self.timeout:g} s", {}
            return None, f"cannot connect: {reason}", {}
        except (socket.timeout, TimeoutError):
            return None, f"no answer within {self.timeout:g} s", {}
        except (ConnectionError, OSError, http.client.HTTPException) as e:   # reset, cut mid-body, ...
            return None, f"connection failed: {type(e).__name__}: {e}", {}

    def request(self, method: str, path: str, body: dict | None = None, *, retries: int | None = None) -> Reply:
        """The first non-retryable answer (any status), or the last one once the retries are spent.
        Raises EndpointError when no attempt got an HTTP answer at all."""
        retries = self.retries if retries is None else retries
        attempts: list[str] = []
        for attempt in range(retries + 1):
            status, text, headers = self._once(method, path, body)
            if not retryable(status) or attempt == retries:
                break
            attempts.append(text if status is None else f"HTTP {status}")
            self.sleep(_delay(self.backoff, attempt, headers))
        if status is None:
            attempts.append(text)
            raise EndpointError(f"{method} {self.base_url}{path}: {text}", None, tuple(attempts))
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        return Reply(status, parsed, text, attempts)

    def post(self, path: str, body: dict) -> dict:
        """POST and return the JSON answer; EndpointError for anything but a 2xx JSON object."""
        reply = self.request("POST", path, body)
        if not 200 <= reply.status < 300:
            raise EndpointError(f"HTTP {reply.status}: {error_message(reply)}", reply.status, tuple(reply.attempts))
        if not isinstance(reply.body, dict):
            raise EndpointError(f"the answer is not a JSON object: {reply.text[:200]!r}", reply.status)
        return reply.body


def _delay(backoff: float, attempt: int, headers: dict) -> float:
    after = headers.get("Retry-After") or headers.get("retry-after")
    try:
        return min(60.0, max(float(after), 0.0)) if after else backoff * 2 ** attempt
    except ValueError:
        return backoff * 2 ** attempt


def error_message(reply: Reply) -> str:
    """The server's own error message when it sent one (OpenAI's {"error": {"message"}}), else the text."""
    body = reply.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict) and body["error"].get("message"):
        return str(body["error"]["message"])
    if isinstance(body, dict) and isinstance(body.get("detail"), str):
        return body["detail"]
    return reply.text.strip()[:200] or "(empty body)"


# ---- the checks -----------------------------------------------------------------------------

def check_base_url(url: str | None) -> tuple[list[Finding], str | None]:
    """Findings about the base URL, and the URL the later checks use (repaired where the repair
    is certain), None when there is nothing to use."""
    if not url or not url.strip():
        return [Finding("base URL", FAIL, "no base URL given", "pass --base-url or set OPENAI_BASE_URL, "
                        "e.g. http://127.0.0.1:8000/v1")], None
    found, fixed = [], url.strip()
    if fixed != url:
        found.append(Finding("base URL", FAIL, f"{url!r} has spaces or a newline around it", f"use {fixed!r}"))
    if "://" not in fixed:
        fixed = "http://" + fixed
        found.append(Finding("base URL", FAIL, f"{url.strip()!r} has no scheme", f"write it as {fixed} (or https://)"))
    parts = urllib.parse.urlsplit(fixed)
    if parts.scheme not in ("http", "https"):
        return found + [Finding("base URL", FAIL, f"scheme {parts.scheme!r} is not http or https",
                                "use an http:// or https:// URL")], None
    path = parts.path
    if "//" in path:
        path = re.sub("/{2,}", "/", path)
        found.append(Finding("base URL", FAIL, f"double slash in the path {parts.path!r}", f"use the path {path!r}"))
    if path.endswith("/"):
        found.append(Finding("base URL", WARN, "trailing slash: some clients then request //chat/completions",
                             "drop the final '/'"))
    path = path.rstrip("/")
    for suffix in ENDPOINT_SUFFIXES:
        if path.endswith(suffix):
            path = path[: -len(suffix)]
            found.append(Finding("base URL", FAIL, f"ends in {suffix}: clients add that themselves",
                                 f"use the base {urllib.parse.urlunsplit(parts._replace(path=path))}"))
            break
    fixed = urllib.parse.urlunsplit(parts._replace(path=path, query="", fragment=""))
    if not found:
        found.append(Finding("base URL", OK, fixed))
    return found, fixed


def check_key(key: str | None, local: bool = False) -> list[Finding]:
    """The key's own problems. For a server on this machine (`local`) no key, or the "none" that
    `labkit serve` prints when it needs none, is fine: GET /models says if the server wants one."""
    if local and (key is None or key.strip().lower() in ("", "none")):
        return [Finding("API key", OK, "none (a local server; /models tells if it needs one)")]
    if key is None or key == "":
        return [Finding("API key", WARN, "no key given (fine for a local server without one)",
                        "pass --api-key or set OPENAI_API_KEY if the server needs one")]
    found = []
    if key != key.strip():
        where = " and ".join(w for w, s in (("starts", key[:1]), ("ends", key[-1:])) if s.isspace())
        newline = "a newline" if "\n" in key[:1] + key[-1:] or "\r" in key[:1] + key[-1:] else "whitespace"
        found.append(Finding("API key", FAIL, f"the key {where} with {newline}", "copy the key again without it"))
    if any(c.isspace() for c in key.strip()):
        found.append(Finding("API key", FAIL, "whitespace or a line break inside the key",
                             "copy the key again in one piece"))
    lowered = key.strip().lower()
    if any(p in lowered for p in PLACEHOLDERS) or lowered in ("sk-", "key", "api_key", "none", "null"):
        found.append(Finding("API key", WARN, f"{mask(key)} looks like a placeholder, not a real key",
                             "paste the key you created in the provider's console"))
    return found or [Finding("API key", OK, mask(key))]


def mask(key: str) -> str:
    k = key.strip()
    return repr(k[:3] + "…" + k[-2:]) if len(k) > 8 else f"({len(k)} characters)"


def check_proxies(base_url: str, env=None, connect_timeout: float = 0.5) -> list[Finding]:
    """Proxy variables pointing at a local port nobody listens on, and NO_PROXY not covering a
    local base URL that a proxy would otherwise carry."""
    env = os.environ if env is None else env
    parts = urllib.parse.urlsplit(base_url)
    host = parts.hostname or ""
    bypassed = _bypassed(host, env)
    found = []
    for var in PROXY_VARS:
        value = env.get(var)
        if not value:
            continue
        applies = var.lower() in (f"{parts.scheme}_proxy", "all_proxy") and not bypassed
        proxy = urllib.parse.urlsplit(value if "://" in value else "http://" + value)
        if proxy.hostname in LOCAL_HOSTS and not _listening(proxy.hostname, proxy.port or 80, connect_timeout):
            found.append(Finding("proxy", FAIL if applies else WARN, f"{var}={value}: nothing listens on "
                                 f"{proxy.hostname}:{proxy.port or 80}" + ("" if applies else " (not used for this URL)"),
                                 f"unset {var}, or start the proxy"))
        elif applies and host in LOCAL_HOSTS:
            found.append(Finding("proxy", FAIL, f"{var}={value} would carry requests to {host}",
                                 f"add {host} to NO_PROXY (e.g. NO_PROXY=localhost,127.0.0.1)"))
    return found or [Finding("proxy", OK, "no proxy in the way")]


def _bypassed(host: str, env) -> bool:
    no_proxy = env.get("NO_PROXY") or env.get("no_proxy") or ""
    if no_proxy.strip() == "*":
        return True
    return urllib.request.proxy_bypass_environment(host, {"no": no_proxy}) if no_proxy else False


def _listening(host: str, port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def check_models(client: Client, model: str | None) -> tuple[list[Finding], bool]:
    """GET {base}/models: reachable, key accepted, model id listed. Returns (findings, go on)."""
    try:
        reply = client.request("GET", "/models", retries=0)
    except EndpointError as e:
        return [Finding("reachable", FAIL, str(e), "check the host and port, and that the server runs")], False
    if reply.status in (401, 403):
        what = "rejected the key" if reply.status == 401 else "accepted the key but refuses it this model or route"
        return [Finding("API key", FAIL, f"HTTP {reply.status}: the server {what}: {error_message(reply)}",
                        "check the key: complete, current, for this server")], False
    if reply.status == 404:
        return _models_404(client), False
    if reply.status != 200 or not isinstance(reply.body, dict) or not isinstance(reply.body.get("data"), list):
        return [Finding("models", WARN, f"GET /models: HTTP {reply.status}, not a model list", "")], True
    ids = [m.get("id") for m in reply.body["data"] if isinstance(m, dict) and isinstance(m.get("id"), str)]
    found = [Finding("reachable", OK, f"GET {client.base_url}/models: {len(ids)} model(s)")]
    return found + [_model_in(model, ids)], True


def _models_404(client: Client) -> list[Finding]:
    base = client.base_url
    hint = "check the base URL's path"
    if not base.endswith("/v1"):
        probe = Client(base + "/v1", client.api_key, timeout=client.timeout, retries=0)
        try:
            if probe.request("GET", "/models").status in (200, 401, 403):
                hint = f"the server answers at {base}/v1: use that as the base URL"
        except EndpointError:
            pass
    return [Finding("base URL", FAIL, f"GET {base}/models: HTTP 404", hint)]


def _model_in(model: str | None, ids: list[str]) -> Finding:
    listed = ", ".join(ids[:8]) + (" …" if len(ids) > 8 else "")
    if not model:
        return Finding("model", FAIL, "no model id given", f"pass --model or set OPENAI_MODEL; the server lists {listed}")
    if model in ids:
        return Finding("model", OK, f"{model!r} is listed")
    if model.strip() in ids:
        return Finding("model", FAIL, f"{model!r} has spaces around it", f"use {model.strip()!r}")
    norm = {re.sub(r"[^0-9a-z]", "", i.lower()): i for i in ids}
    same = norm.get(re.sub(r"[^0-9a-z]", "", model.lower()))
    close = [same] if same else [norm[n] for n in difflib.get_close_matches(
        re.sub(r"[^0-9a-z]", "", model.lower()), list(norm), n=3, cutoff=0.5)]
    close = close or difflib.get_close_matches(model, ids, n=3, cutoff=0.3)
    detail = f"{model!r} is not a model id this server lists" + (" (a display name?)" if same or " " in model else "")
    fix = f"use the id {' or '.join(repr(c) for c in close)}" if close else f"the server lists {listed}"
    return Finding("model", FAIL, detail, fix)


def check_chat(client: Client, model: str, max_tokens: int = 8) -> list[Finding]:
    """One minimal chat request, retried as the client retries; then its structure."""
    body = {"model": model, "messages": [{"role": "user", "content": "Reply with OK."}], "max_tokens": max_tokens}
    t0 = time.perf_counter()
    try:
        reply = client.request("POST", "/chat/completions", body)
    except EndpointError as e:
        slow = "no answer within" in str(e)
        fix = "raise --timeout (a diffusion model's answer takes many forward passes)" if slow else "check the server"
        return [Finding("chat request", FAIL, f"{e} after {len(e.attempts)} attempt(s)", fix)]
    seconds = time.perf_counter() - t0
    tried = f" after {len(reply.attempts)} retr{'y' if len(reply.attempts) == 1 else 'ies'} " \
            f"({', '.join(reply.attempts)})" if reply.attempts else ""
    if reply.status != 200:
        fix = "check the key" if reply.status in (401, 403) else "check the model id and the request fields"
        return [Finding("chat request", FAIL, f"HTTP {reply.status}{tried}: {error_message(reply)}", fix)]
    found = [Finding("chat request", OK, f"HTTP 200 in {seconds:.2f} s{tried}")]
    problems = response_problems(reply.body)
    if not problems:
        return found + [Finding("response", OK, "id, object, created, model, choices, finish_reason, usage")]
    fatal = any("choices" in p or "content" in p for p in problems)
    return found + [Finding("response", FAIL if fatal else WARN, "; ".join(problems),
                            "clients reading choices[0].message.content will break" if fatal else
                            "clients that read these fields (usage for costs) will miss them")]


def response_problems(body) -> list[str]:
    """What a chat completion answer lacks or has of the wrong type; [] when it is complete."""
    if not isinstance(body, dict):
        return ["the answer is not a JSON object"]
    out = [f"{k} missing or not {t.__name__}" for k, t in (("id", str), ("created", int), ("model", str))
           if not isinstance(body.get(k), t) or isinstance(body.get(k), bool)]
    if body.get("object") != "chat.completion":
        out.append(f"object is {body.get('object')!r}, not 'chat.completion'")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        out.append("choices missing or empty")
    else:
        message = choices[0].get("message")
        if not isinstance(message, dict) or not isinstance(message.get("content"), str):
            out.append("choices[0].message.content missing or not a string")
        if not isinstance(choices[0].get("finish_reason"), str):
            out.append("choices[0].finish_reason missing")
    usage = body.get("usage")
    if not isinstance(usage, dict):
        out.append("usage missing")
    else:
        out += [f"usage.{k} missing" for k in USAGE_FIELDS if not isinstance(usage.get(k), int)]
    return out


def diagnose(base_url: str | None, api_key: str | None, model: str | None, *, timeout: float = 120.0,
             retries: int = 2, backoff: float = 1.0, env=None) -> list[Finding]:
    """Every check, in order; the network ones only when the URL is usable."""
    found, url = check_base_url(base_url)
    found += check_key(api_key, local=url is not None and urllib.parse.urlsplit(url).hostname in LOCAL_HOSTS)
    if url is None:
        return found
    found += check_proxies(url, env)
    client = Client(url, (api_key or "").strip(), timeout=timeout, retries=retries, backoff=backoff)
    models, go_on = check_models(client, model)
    found += models
    if go_on and model:
        found += check_chat(client, model.strip())
    return found


def passed(findings: list[Finding]) -> bool:
    return all(f.status == OK for f in findings)


def table(findings: list[Finding]) -> str:
    """The findings as a plain text table: check, status, detail, fix."""
    rows = [("check", "status", "detail → fix", "")] + [(f.check, f.status, f.detail, f.fix) for f in findings]
    w = [max(len(r[i]) for r in rows) for i in range(2)]
    return "\n".join(f"{r[0]:<{w[0]}}  {r[1]:<{w[1]}}  {r[2]}" + (f"  → {r[3]}" if r[3] and r is not rows[0] else "")
                     for r in rows)


def as_json(findings: list[Finding]) -> dict:
    return {"ok": passed(findings), "findings": [asdict(f) for f in findings]}
