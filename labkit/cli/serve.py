"""`labkit serve`: an OpenAI-compatible server over one model (labkit.serve.app).

    labkit serve --model tiny                       # http://127.0.0.1:8000/v1, model id "tiny"
    labkit serve --host 0.0.0.0 --api-key SECRET    # beyond this machine only with a key
"""
from __future__ import annotations

import ipaddress
import json

from .common import load_model, model_args

LOCAL_NAMES = ("localhost",)


def add_parser(sub) -> None:
    s = sub.add_parser("serve", help="an OpenAI-compatible HTTP server (/v1/chat/completions, /v1/completions, "
                                     "/v1/models, /generate)")
    model_args(s)
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only; "
                   "any other needs --api-key)")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--api-key", default=None, help="require 'Authorization: Bearer KEY' on every request")
    s.add_argument("--max-batch", type=int, default=16, help="most requests decoded together as one batch "
                   "(default 16; 1 serves one at a time)")
    s.add_argument("--queue-size", type=int, default=256, help="requests that may wait; more get 429 (default 256)")
    s.add_argument("--timeout", type=float, default=120.0, help="seconds a request may take, queue and run; "
                   "then 504 and it is dropped (default 120)")
    s.set_defaults(fn=run)


def is_loopback(host: str) -> bool:
    if host.lower() in LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check(a) -> None:
    """Everything that needs no model and no fastapi, checked first."""
    if not is_loopback(a.host) and not a.api_key:
        raise ValueError(f"--host {a.host} is not a loopback address: serving beyond this machine needs "
                         f"--api-key KEY (or keep the default --host 127.0.0.1)")
    if not 0 <= a.port <= 65535:
        raise ValueError(f"--port must be in [0, 65535], got {a.port}")
    for flag, v in (("--max-batch", a.max_batch), ("--queue-size", a.queue_size)):
        if v < 1:
            raise ValueError(f"{flag} must be a positive integer, got {v}")
    if not a.timeout > 0:
        raise ValueError(f"--timeout must be > 0 seconds, got {a.timeout}")


def client_settings(base_url: str, api_key: str | None, model_id: str) -> str:
    """Ready-to-paste client settings: environment variables, a JSON shape, a TOML shape."""
    key = api_key or "none"                   # clients want some key; without --api-key any is accepted
    shape = {"base_url": base_url, "api_key": key, "model": model_id}
    toml = "\n".join(["[[providers]]", 'name = "labkit"', f"base_url = {json.dumps(base_url)}",
                      f"api_key = {json.dumps(key)}", f"model = {json.dumps(model_id)}", 'wire_api = "chat"',
                      "request_timeout = 120"])
    return "\n".join([f"export OPENAI_BASE_URL={base_url}", f"export OPENAI_API_KEY={key}",
                      f"export OPENAI_MODEL={model_id}", "", "JSON:", json.dumps(shape, indent=1), "", "TOML:", toml])


def base_url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}/v1"


def run(a) -> int:
    check(a)
    try:
        import fastapi  # noqa: F401  (the serve extra: checked for here, for its one-line error)
        import uvicorn
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError(f'labkit serve needs fastapi and uvicorn ({e}): pip install "labkit[serve]"') \
            from None
    from ..serve.app import create_app  # fastapi, the serve extra: for this command only

    lm = load_model(a)
    app = create_app(lm, a.model, api_key=a.api_key, max_batch=a.max_batch, queue_size=a.queue_size,
                     timeout=a.timeout)
    url = base_url(a.host, a.port)
    print(f"labkit serve: model {a.model!r} ({lm.kind}) at {url}\n\n{client_settings(url, a.api_key, a.model)}\n",
          flush=True)
    uvicorn.run(app, host=a.host, port=a.port, log_level="info")
    return 0
