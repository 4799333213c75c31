"""Run a JSONL file of prompts through a model or an endpoint: `labkit batch in.jsonl out.jsonl`.

Input: one JSON object per line, with
- `id`: a string or an integer, unique in the file;
- `prompt`: text, decoded as is (as `labkit generate` does; with --chat it is sent as one user
  message through the chat template), or `messages`: chat messages [{"role", "content"}, ...].
Other fields are ignored. The answer length is the run's --gen-length (with --endpoint: sent as
max_tokens); there is no per-record length. Blank lines are skipped.

Output: one JSON object per line, in the order the batches finish:
  {"id": ..., "text": ..., "finish_reason": "stop" | "length", "batch": i, "stats": {...}}
Locally `stats` are the batch's (nfe, gen_tokens, tpf, seconds, ...; rows of a batch are decoded
together) plus `rows`; with an endpoint they are the answer's `usage` and its seconds.

Each batch's lines are written in one write, flushed and fsync'ed before the next batch starts,
so an interrupted run (Ctrl-C, kill -9, a power cut) loses at most the batch in flight. A rerun
with the same output file resumes: it reads the ids already there, skips them and never writes an
id twice. A last line without its newline (a write cut short) is cut off, every complete line is
kept. The output file is locked while a run writes it, so two runs cannot interleave.

Failures do not stop the run: a line that is not JSON, a record without an id or a prompt, a
duplicate id, a prompt too long for the model's context, a generation or request error. Each
goes to the errors file (default: the output path with .errors.jsonl) as {"id", "line", "error"},
rewritten by each run, since a rerun tries every failed id again. A batch that fails as a whole is
run again row by row, so one bad row does not sink the others. Exit status 1 when anything failed.

With an endpoint (`--endpoint URL`, an OpenAI-compatible server such as `labkit serve`), a record
with `messages` (or a prompt under --chat) goes to /chat/completions, a plain prompt to
/completions, so that a prompt means raw text in both modes. Requests of a batch run on
--concurrency threads, each with the timeout and retries of labkit.serve.endpoint.Client.
Locally the seed is the same for each batch, so a row's text depends on the rows decoded with it:
a resumed run is not bit-identical to an uninterrupted one.
"""
from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from ..decode import generate
from ..prompts import chat_text


@dataclass(frozen=True)
class Record:
    id: str | int
    line: int
    prompt: str | None = None
    messages: list | None = None


@dataclass(frozen=True)
class Failure:
    id: str | int | None
    line: int | None
    error: str

    def row(self) -> dict:
        return {"id": self.id, "line": self.line, "error": self.error}


@dataclass
class Summary:
    done: int = 0
    failed: int = 0
    skipped: int = 0


def read_records(path) -> tuple[list[Record], list[Failure]]:
    """The records of a JSONL file and the lines that are not records (with why)."""
    records, failures, first = [], [], {}
    with open(path, "rb") as f:                 # bytes: a line that is not UTF-8 is one bad record
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line.decode("utf-8"))
            except ValueError as e:                 # UnicodeDecodeError is a ValueError
                failures.append(Failure(None, n, f"not JSON (or not UTF-8): {str(e)[:200]}"))
                continue
            rec = _record(obj, n)
            if isinstance(rec, Failure):
                failures.append(rec)
            elif (rec.id, type(rec.id)) in first:
                failures.append(Failure(rec.id, n, f"duplicate id (first on line {first[rec.id, type(rec.id)]})"))
            else:
                first[rec.id, type(rec.id)] = n
                records.append(rec)
    return records, failures


def _record(obj, n: int) -> Record | Failure:
    if not isinstance(obj, dict):
        return Failure(None, n, f"a record must be a JSON object, got {type(obj).__name__}")
    rid = obj.get("id")
    if isinstance(rid, bool) or not isinstance(rid, (str, int)) or rid == "":
        return Failure(None, n, f"id must be a non-empty string or an integer, got {rid!r}")
    prompt, messages = obj.get("prompt"), obj.get("messages")
    if prompt is not None and messages is not None:
        return Failure(rid, n, "give prompt or messages, not both")
    if messages is not None:
        ok = isinstance(messages, list) and messages and all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in messages)
        if not ok:
            return Failure(rid, n, "messages must be a non-empty list of {'role': str, 'content': str}")
        return Record(rid, n, messages=messages)
    if not isinstance(prompt, str) or not prompt.strip():
        return Failure(rid, n, "missing prompt (a non-empty string) or messages")
    return Record(rid, n, prompt=prompt)


def recover(f) -> set:
    """The ids in an output file open in binary read/write mode, after cutting off a last line
    without its newline (a write that was cut short). A complete line that is not a result is
    an error: the file is not one this runner wrote."""
    f.seek(0)
    data = f.read()
    keep = data.rfind(b"\n") + 1
    if keep < len(data):
        f.truncate(keep)
        f.flush()
        os.fsync(f.fileno())
    done = set()
    for n, line in enumerate(data[:keep].splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            done.add((obj["id"], type(obj["id"])))
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError(f"output file {f.name}: line {n} is not a result of labkit batch ({e}); "
                             f"choose another output file") from None
    return done


class Sink:
    """The output and errors files: locked, appended batch by batch, each write fsync'ed."""

    def __init__(self, out_path, errors_path):
        self.out = open(out_path, "a+b")
        try:
            fcntl.flock(self.out.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.out.close()
            raise ValueError(f"{out_path} is being written by another labkit batch run") from None
        try:
            self.done = recover(self.out)
            self.errors = open(errors_path, "w", encoding="utf-8")
        except BaseException:
            self.out.close()                        # releases the lock too
            raise

    def write(self, results: list[dict], failures: list[Failure]) -> None:
        fresh = [r for r in results if (r["id"], type(r["id"])) not in self.done]
        if fresh:
            self.out.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in fresh).encode())
            self.out.flush()
            os.fsync(self.out.fileno())
            self.done.update((r["id"], type(r["id"])) for r in fresh)
        if failures:
            self.errors.write("".join(json.dumps(f.row(), ensure_ascii=False) + "\n" for f in failures))
            self.errors.flush()
            os.fsync(self.errors.fileno())

    def close(self) -> None:
        self.errors.close()
        self.out.close()


def run(records: list[Record], input_failures: list[Failure], backend, out_path, errors_path=None, *,
        batch_size: int = 8, progress: bool = True, log=None) -> Summary:
    """Run every record not yet in `out_path` through `backend` (LocalBackend or EndpointBackend),
    batch_size at a time; see the module docstring. Returns the counts."""
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    errors_path = errors_path or default_errors_path(out_path)
    log = log or (lambda m: tqdm.write(m, file=sys.stderr))
    sink = Sink(out_path, errors_path)
    try:
        summary = Summary(failed=len(input_failures))
        sink.write([], input_failures)
        todo = [r for r in records if (r.id, type(r.id)) not in sink.done]
        summary.skipped = len(records) - len(todo)
        with tqdm(total=len(todo), file=sys.stderr, unit="rec", disable=not progress) as bar:
            for i in range(0, len(todo), batch_size):
                index = i // batch_size
                results, failures, seconds = run_batch(backend, todo[i:i + batch_size], index)
                sink.write(results, failures)
                summary.done += len(results)
                summary.failed += len(failures)
                bar.update(len(results) + len(failures))
                ids = [r.id for r in todo[i:i + batch_size]]
                shown = ", ".join(map(str, ids[:4])) + (f", … ({len(ids)})" if len(ids) > 4 else "")
                log(f"batch {index + 1}/{-(-len(todo) // batch_size)}: ids {shown}: {len(results)} done, "
                    f"{len(failures)} failed, {seconds:.2f} s")
    finally:
        sink.close()
    return summary


def default_errors_path(out_path) -> Path:
    out = Path(out_path)
    stem = out.name[: -len(".jsonl")] if out.name.endswith(".jsonl") else out.name
    return out.with_name(stem + ".errors.jsonl")


def run_batch(backend, records: list[Record], index: int) -> tuple[list[dict], list[Failure], float]:
    """One batch: prepare each record (a bad one fails alone), run the rest together; if that
    fails as a whole, run them one by one."""
    t0 = time.perf_counter()
    ready, failures = [], []
    for r in records:
        try:
            ready.append((r, backend.prepare(r)))
        except ValueError as e:
            failures.append(Failure(r.id, r.line, str(e)))
    outcomes = []
    if ready:
        try:
            outcomes = backend.run([p for _, p in ready])
        except Exception as e:  # noqa: BLE001 - any generation error: retry the rows alone
            outcomes = [e] if len(ready) == 1 else [_alone(backend, p) for _, p in ready]
    results = []
    for (r, _), out in zip(ready, outcomes):
        if isinstance(out, Exception):
            failures.append(Failure(r.id, r.line, f"{type(out).__name__}: {out}"))
        else:
            results.append({"id": r.id, **out, "batch": index})
    return results, failures, time.perf_counter() - t0


def _alone(backend, payload):
    try:
        return backend.run([payload])[0]
    except Exception as e:  # noqa: BLE001
        return e


class LocalBackend:
    """Decode with a labkit model: a batch of prompts is one left-padded batch of rows."""

    def __init__(self, lm, sampler, *, gen_length: int, block_length: int, steps: int, seed=0, chat=False,
                 eos_early_stop=False, penalty_lambda=0.0, cfg_scale=0.0):
        self.lm, self.sampler, self.chat = lm, sampler, chat
        self.knobs = dict(gen_length=gen_length, block_length=block_length, steps=steps, seed=seed,
                          eos_early_stop=eos_early_stop, penalty_lambda=penalty_lambda, cfg_scale=cfg_scale)

    def prepare(self, record: Record) -> str:
        if record.messages is not None:
            text = chat_text(self.lm, record.messages)
        elif self.chat:
            text = chat_text(self.lm, [{"role": "user", "content": record.prompt}])
        else:
            text = record.prompt
        n, limit, gen = len(self.lm.encode(text)), self.lm.max_length, self.knobs["gen_length"]
        if limit is not None and n + gen > limit:
            raise ValueError(f"prompt too long: {n} tokens + gen_length {gen} exceed the model's context of {limit}")
        return text

    def run(self, texts: list[str]) -> list[dict]:
        out = generate(self.lm, texts, self.sampler, **self.knobs)
        stops = set(self.lm.stop_ids)
        P = out.trace.prompt_len
        stats = {**out.stats, "rows": len(texts)}
        return [{"text": text, "finish_reason": "stop" if stops & set(out.ids[i, P:].tolist()) else "length",
                 "stats": stats} for i, text in enumerate(out.texts)]


class EndpointBackend:
    """Send each record to an OpenAI-compatible server, `concurrency` requests at a time."""

    def __init__(self, client, model: str, *, max_tokens: int, chat=False, concurrency: int = 4, extra=None):
        if not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"concurrency must be a positive integer, got {concurrency!r}")
        if not model:
            raise ValueError("endpoint model: pass --endpoint-model (or set OPENAI_MODEL)")
        self.client, self.model, self.chat, self.concurrency = client, model, chat, concurrency
        self.fields = {"max_tokens": max_tokens, **(extra or {})}

    def prepare(self, record: Record) -> tuple[str, dict]:
        body = {"model": self.model, **self.fields}
        if record.messages is not None:
            return "/chat/completions", {**body, "messages": record.messages}
        if self.chat:
            return "/chat/completions", {**body, "messages": [{"role": "user", "content": record.prompt}]}
        return "/completions", {**body, "prompt": record.prompt}

    def run(self, payloads: list[tuple[str, dict]]) -> list:
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(payloads))) as pool:
            return list(pool.map(self._one, payloads))

    def _one(self, payload: tuple[str, dict]):
        path, body = payload
        t0 = time.perf_counter()
        try:
            answer = self.client.post(path, body)
            choice = answer["choices"][0]
            text = choice["message"]["content"] if path == "/chat/completions" else choice["text"]
            if not isinstance(text, str):
                raise TypeError(f"the answer's text is {type(text).__name__}, not a string")
        except (KeyError, IndexError, TypeError) as e:
            return ValueError(f"answer without choices[0] text ({type(e).__name__}: {e})")
        except Exception as e:  # noqa: BLE001 - EndpointError and anything the socket raises
            return e
        stats = {"usage": answer.get("usage"), "seconds": round(time.perf_counter() - t0, 4)}
        return {"text": text, "finish_reason": choice.get("finish_reason"), "stats": stats}
