"""`labkit check-endpoint` and `labkit batch` (labkit.serve.endpoint, labkit.serve.batch).

    labkit check-endpoint --base-url http://127.0.0.1:8000/v1 --model tiny
    labkit batch prompts.jsonl out.jsonl --model tiny --batch-size 8 --gen-length 32
    labkit batch prompts.jsonl out.jsonl --endpoint http://127.0.0.1:8000/v1 --endpoint-model tiny
"""
from __future__ import annotations

import json
import os
import sys

from ..serve import batch as jobs  # `batch` is this module's command
from ..serve import endpoint
from ..serve.batch import EndpointBackend, LocalBackend
from ..serve.endpoint import Client
from . import generate
from .common import load_model, model_args, output_file

# generate's flags that mean something with --endpoint (sent as OpenAI fields)
ENDPOINT_FLAGS = {"gen_length", "temperature", "top_p", "seed", "chat"}


def add_parser(sub) -> None:
    c = sub.add_parser("check-endpoint", help="diagnose an OpenAI-compatible base URL / key / model",
                       description="Checks the base URL, key, proxy variables, GET /models and one minimal "
                       "chat request. Exit status 0 when all passed, 1 when something did not.")
    c.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL"), help="default: $OPENAI_BASE_URL")
    c.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY"), help="default: $OPENAI_API_KEY")
    c.add_argument("--model", default=os.environ.get("OPENAI_MODEL"), help="model id; default: $OPENAI_MODEL")
    c.add_argument("--timeout", type=float, default=120.0, help="seconds per attempt (default 120)")
    c.add_argument("--retries", type=int, default=2, help="retries of the chat request (default 2)")
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.set_defaults(fn=check_endpoint)

    b = sub.add_parser("batch", help="run a JSONL file of prompts; resumable",
                       description="Each input line: {\"id\": ..., \"prompt\": \"...\"} or {\"id\": ..., "
                       "\"messages\": [...]}. See labkit/serve/batch.py for the formats.")
    b.add_argument("input", help="JSONL file of records")
    b.add_argument("output", help="JSONL file of results (appended; a rerun skips the ids in it)")
    b.add_argument("--errors", help="JSONL file of failures (default: OUTPUT with .errors.jsonl)")
    b.add_argument("--batch-size", type=int, default=8, help="records per batch (default 8)")
    b.add_argument("--quiet", action="store_true", help="no progress bar or batch lines")
    model_args(b, default=None, help_default="tiny")
    b.add_argument("--chat", action="store_true", help="send each `prompt` as a user message through the "
                   "model's chat template (records with `messages` always are)")
    generate.sampler_args(b)                     # the same rule and loop flags as `labkit generate`
    e = b.add_argument_group("endpoint (instead of --model)")
    e.add_argument("--endpoint", help="base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1")
    e.add_argument("--api-key", help="default: $OPENAI_API_KEY")
    e.add_argument("--endpoint-model", help="the server's model id; default: $OPENAI_MODEL")
    e.add_argument("--concurrency", type=int, default=4, help="requests at a time (default 4)")
    e.add_argument("--timeout", type=float, default=120.0, help="seconds per attempt (default 120)")
    e.add_argument("--retries", type=int, default=2, help="retries per request (default 2)")
    b.set_defaults(fn=batch, steps_given=False, gen_length_given=False, block_length_given=False)


def check_endpoint(a) -> int:
    if not a.timeout > 0:
        raise ValueError(f"--timeout must be > 0 seconds, got {a.timeout}")
    if a.retries < 0:
        raise ValueError(f"--retries must be >= 0, got {a.retries}")
    findings = endpoint.diagnose(a.base_url, a.api_key, a.model, timeout=a.timeout, retries=a.retries)
    if a.json:
        print(json.dumps(endpoint.as_json(findings)))
    else:
        print(endpoint.table(findings))
    return 0 if endpoint.passed(findings) else 1


def batch(a) -> int:
    for flag, value in (("--batch-size", a.batch_size), ("--concurrency", a.concurrency)):
        if value < 1:
            raise ValueError(f"{flag} must be a positive integer, got {value}")
    out = output_file(a.output, "output", ".jsonl")
    errors = output_file(a.errors, "--errors", ".jsonl") if a.errors else jobs.default_errors_path(out)
    if os.path.abspath(a.input) in (os.path.abspath(out), os.path.abspath(errors)):
        raise ValueError(f"the output and errors files must differ from the input {a.input!r}")
    records, bad = jobs.read_records(a.input)     # FileNotFoundError names the file
    backend = _endpoint_backend(a) if a.endpoint else _local_backend(a)
    summary = jobs.run(records, bad, backend, out, errors, batch_size=a.batch_size, progress=not a.quiet,
                       log=(lambda m: None) if a.quiet else None)
    print(f"batch: {summary.done} done, {summary.failed} failed, {summary.skipped} skipped (already in {out})"
          + (f"; failures in {errors}" if summary.failed else ""), file=sys.stderr)
    return 1 if summary.failed else 0


def _endpoint_backend(a):
    if a.model is not None:
        raise ValueError("--model and --endpoint exclude each other (--endpoint-model names the server's model)")
    local_only = {"sampler": a.sampler, "threshold": a.threshold, "editing_threshold": a.editing_threshold,
                  "factor": a.factor, "entropy_bound": a.entropy_bound, "remasking": a.remasking,
                  "steps": a.steps if a.steps_given else None,
                  "eos_early_stop": a.eos_early_stop or None, "penalty_lambda": a.penalty_lambda or None,
                  "cfg_scale": a.cfg_scale or None,
                  "block_length": a.block_length if a.block_length_given else None}
    for knob, value in local_only.items():
        if value is not None:
            raise ValueError(f"--{knob.replace('_', '-')}: not sent with --endpoint (only "
                             f"{', '.join('--' + f.replace('_', '-') for f in sorted(ENDPOINT_FLAGS))} are)")
    if a.gen_length < 1:
        raise ValueError(f"--gen-length must be a positive integer, got {a.gen_length}")
    extra = {k: v for k, v in (("temperature", a.temperature), ("top_p", a.top_p), ("seed", a.seed)) if v is not None}
    key = a.api_key if a.api_key is not None else os.environ.get("OPENAI_API_KEY", "")
    client = Client(a.endpoint, key.strip(), timeout=a.timeout, retries=a.retries)
    model = a.endpoint_model or os.environ.get("OPENAI_MODEL")
    return EndpointBackend(client, model, max_tokens=a.gen_length, chat=a.chat,
                           concurrency=a.concurrency, extra=extra)


def _local_backend(a):
    for flag, value in (("--endpoint-model", a.endpoint_model), ("--api-key", a.api_key)):
        if value is not None:
            raise ValueError(f"{flag} is read only with --endpoint")
    name, sampler, notes = generate.rule_before_load(a)
    lm = load_model(a)
    name, sampler = generate.rule_after_load(a, lm, name, sampler, notes)
    return LocalBackend(lm, sampler, gen_length=a.gen_length, block_length=a.block_length, steps=a.steps,
                        seed=a.seed, chat=a.chat, eos_early_stop=a.eos_early_stop,
                        penalty_lambda=a.penalty_lambda, cfg_scale=a.cfg_scale)
