"""labkit batch: bad records recorded without stopping, resume, a torn last line, kill -9, --endpoint."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from test_endpoint import KEY, Fake, _handler

from labkit.cli.main import main
from labkit.serve import batch as jobs

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--gen-length", "8", "--block-length", "8", "--steps", "8", "--quiet"]
PROMPTS = ["ROMEO:\n", "JULIET:\n", "First Citizen:\n", "KING RICHARD III:\n"]


def write_input(path: Path, n: int, bad: bool = True) -> list:
    """n good records (ids 0..n-1, one of them a string id) and, with bad, four bad lines."""
    lines = [json.dumps({"id": i if i != 3 else "three", "prompt": PROMPTS[i % 4]}) for i in range(n)]
    if bad:
        lines[5:5] = ['{"id": 99, "prompt": "ROMEO', json.dumps({"id": "nope"}),
                      json.dumps({"id": 1, "prompt": "again"}), json.dumps({"id": "long", "prompt": "word " * 300})]
    path.write_text("\n".join(lines) + "\n\n")
    return [i if i != 3 else "three" for i in range(n)]


def ids_in(path: Path) -> list:
    return [json.loads(line)["id"] for line in path.read_text().splitlines()]


def test_bad_records_are_recorded_and_the_rest_done(tmp_path, capsys):
    good = write_input(tmp_path / "in.jsonl", 20)
    out = tmp_path / "out.jsonl"
    assert main(["batch", str(tmp_path / "in.jsonl"), str(out), "--batch-size", "6", *FAST]) == 1
    assert sorted(ids_in(out), key=str) == sorted(good, key=str)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(isinstance(r["text"], str) and r["finish_reason"] in ("stop", "length") and r["stats"]["nfe"] > 0
               for r in rows)
    errors = [json.loads(line) for line in (tmp_path / "out.errors.jsonl").read_text().splitlines()]
    by_line = {e["line"]: e for e in errors}
    assert sorted(by_line) == [6, 7, 8, 9]
    assert "not JSON" in by_line[6]["error"] and by_line[6]["id"] is None
    assert by_line[7]["id"] == "nope" and "missing prompt" in by_line[7]["error"]
    assert by_line[8]["id"] == 1 and "duplicate id (first on line 2)" in by_line[8]["error"]
    assert by_line[9]["id"] == "long" and "prompt too long" in by_line[9]["error"]
    assert "20 done, 4 failed, 0 skipped" in capsys.readouterr().err

    # resume: nothing left to do, nothing written twice; the input's bad lines still count
    assert main(["batch", str(tmp_path / "in.jsonl"), str(out), "--batch-size", "6", *FAST]) == 1
    assert len(ids_in(out)) == 20 and "0 done, 4 failed, 20 skipped" in capsys.readouterr().err


def test_resume_after_a_torn_last_line(tmp_path, capsys):
    good = write_input(tmp_path / "in.jsonl", 10, bad=False)
    out = tmp_path / "out.jsonl"
    done = [{"id": i, "text": "x", "finish_reason": "length"} for i in (0, 1, 2)]
    out.write_text("".join(json.dumps(r) + "\n" for r in done) + '{"id": 4, "text": "half a li')
    assert main(["batch", str(tmp_path / "in.jsonl"), str(out), "--batch-size", "4", *FAST]) == 0
    ids = ids_in(out)                                   # every line parses: the torn one is gone
    assert ids[:3] == [0, 1, 2] and sorted(ids, key=str) == sorted(good, key=str)
    assert [json.loads(line)["text"] for line in out.read_text().splitlines()[:3]] == ["x", "x", "x"]
    assert "7 done, 0 failed, 3 skipped" in capsys.readouterr().err
    assert (tmp_path / "out.errors.jsonl").read_text() == ""


def test_a_failing_batch_is_retried_row_by_row(tmp_path):
    class Flaky:
        def prepare(self, record):
            return record.prompt

        def run(self, prompts):
            if "boom" in prompts:
                raise RuntimeError("out of memory")
            return [{"text": p.upper()} for p in prompts]

    records = [jobs.Record(i, i + 1, prompt=p) for i, p in enumerate(["a", "boom", "c", "d"])]
    summary = jobs.run(records, [], Flaky(), tmp_path / "o.jsonl", batch_size=3, progress=False, log=lambda m: None)
    assert (summary.done, summary.failed) == (3, 1)
    assert {r["id"]: r["text"] for r in map(json.loads, (tmp_path / "o.jsonl").read_text().splitlines())} == \
        {0: "A", 2: "C", 3: "D"}
    (err,) = map(json.loads, (tmp_path / "o.errors.jsonl").read_text().splitlines())
    assert err == {"id": 1, "line": 2, "error": "RuntimeError: out of memory"}


def test_a_second_run_on_the_same_output_is_refused(tmp_path):
    out = tmp_path / "o.jsonl"
    sink = jobs.Sink(out, tmp_path / "e.jsonl")
    try:
        with pytest.raises(ValueError, match="another labkit batch"):
            jobs.Sink(out, tmp_path / "e2.jsonl")
    finally:
        sink.close()


def test_usage_errors_exit_2(tmp_path, capsys):
    write_input(tmp_path / "in.jsonl", 2, bad=False)
    args = ["batch", str(tmp_path / "in.jsonl"), str(tmp_path / "o.jsonl")]
    assert main([*args, "--batch-size", "0"]) == 2 and "--batch-size" in capsys.readouterr().err
    assert main([*args, "--threshold", "0.9"]) == 2 and "--threshold" in capsys.readouterr().err
    assert main([*args, "--endpoint", "http://127.0.0.1:1/v1", "--threshold", "0.9"]) == 2
    assert "--threshold: not sent with --endpoint" in capsys.readouterr().err
    assert main(["batch", str(tmp_path / "missing.jsonl"), str(tmp_path / "o.jsonl")]) == 2


def test_kill_9_mid_run_then_resume_writes_each_id_once(tmp_path):
    good = write_input(tmp_path / "in.jsonl", 32, bad=False)
    out = tmp_path / "out.jsonl"
    cmd = [sys.executable, "-m", "labkit", "batch", str(tmp_path / "in.jsonl"), str(out), "--batch-size", "2",
           "--gen-length", "8", "--block-length", "8", "--steps", "8", "--quiet"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "LABKIT_THREADS": "1"}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None and not (out.exists() and out.stat().st_size > 0):
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL, proc.stderr.read().decode()[-2000:]
    first = ids_in(out) if out.read_bytes().endswith(b"\n") else None
    assert first is None or 0 < len(first) < 32          # stopped mid-run
    again = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr[-2000:]
    ids = ids_in(out)
    assert len(ids) == 32 and sorted(ids, key=str) == sorted(good, key=str)


@pytest.fixture
def fake_server(monkeypatch):
    for var in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "OPENAI_API_KEY", "OPENAI_MODEL"):
        monkeypatch.delenv(var, raising=False)
    fake = Fake()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    fake.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    yield fake
    httpd.shutdown()
    httpd.server_close()


def test_endpoint_mode(tmp_path, fake_server, capsys):
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join([json.dumps({"id": "p", "prompt": "ROMEO:"}),
                              json.dumps({"id": "m", "messages": [{"role": "user", "content": "hi"}]}),
                              json.dumps({"id": "x", "prompt": ""}),
                              json.dumps({"id": "r", "prompt": "retry me"})]) + "\n")
    fake_server.chat_statuses = [503]                    # the first request answered is retried
    out = tmp_path / "out.jsonl"
    args = ["batch", str(src), str(out), "--endpoint", fake_server.url, "--api-key", KEY,
            "--endpoint-model", "tiny", "--concurrency", "2", "--retries", "2", "--gen-length", "12", "--quiet"]
    assert main(args) == 1                               # "x" has an empty prompt
    rows = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert rows["p"]["text"] == "echo:ROMEO:" and rows["m"]["text"] == "OK" and rows["r"]["text"] == "echo:retry me"
    sent = {b.get("prompt", "messages"): (p, b) for m, p, b in fake_server.seen if m == "POST"}
    assert sent["ROMEO:"][0] == "/v1/completions" and sent["messages"][0] == "/v1/chat/completions"
    assert sent["ROMEO:"][1]["max_tokens"] == 12 and sent["ROMEO:"][1]["model"] == "tiny"
    assert "x" in (tmp_path / "out.errors.jsonl").read_text()
    capsys.readouterr()
    fake_server.key = "other"                            # a request error is recorded, not fatal
    src.write_text(src.read_text() + json.dumps({"id": "late", "prompt": "z"}) + "\n")
    assert main(args) == 1
    errors = (tmp_path / "out.errors.jsonl").read_text()
    assert "late" in errors and "HTTP 401" in errors
    assert "0 done, 2 failed, 3 skipped" in capsys.readouterr().err
    assert sorted(ids_in(out)) == ["m", "p", "r"]


def test_a_line_that_is_not_utf8_is_one_bad_record(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"id": 1, "prompt": "caf\xe9"}\n' + json.dumps({"id": 2, "prompt": "ROMEO:\n"}).encode() + b"\n")
    records, bad = jobs.read_records(path)
    assert [r.id for r in records] == [2] and len(bad) == 1 and bad[0].line == 1 and "UTF-8" in bad[0].error


def test_an_output_that_is_not_ours_is_refused_and_left_unlocked(tmp_path):
    out = tmp_path / "o.jsonl"
    out.write_text("not a result\n")
    for _ in range(2):                    # the first refusal releases the file: the second says the same
        with pytest.raises(ValueError, match="not a result of labkit batch"):
            jobs.Sink(out, tmp_path / "e.jsonl")
