"""Request bodies of `labkit serve`, parsed and checked into frozen Jobs before anything is queued.

Every refusal is a one-line ServeError whose message names the parameter and what it may be. What
the server does with the standard fields:

- `max_tokens` (or `max_completion_tokens`): the answer's length limit. The canvas is max_tokens
  rounded up to a multiple of block_length (block_length defaults to min(32, max_tokens), so an
  answer of up to 32 tokens is one block of exactly max_tokens); the answer returned is the
  canvas's first max_tokens tokens, cut at the first end-of-text / end-of-turn token. The prompt
  and the answer must fit the model's context (the 400 says how long it is).
  `completion_tokens` counts the tokens returned; `finish_reason` is "stop" when the answer ended
  at such a token or at a stop string, else "length".
- `stop`: a string or a list of up to 4 non-empty strings ("" and [] mean none). The answer is cut
  before the stop string that is complete first, reading its decoded text left to right;
  `completion_tokens` then counts the answer tokens that make up the text returned. A stream holds
  back text that could still be the start of a stop string, ends at the stop and stops the run.
  Each prompt of a /v1/completions list is cut on its own.
- `messages`: roles system, developer, user, assistant; content as text or text parts, and may be
  empty or null (an empty message is left out of a plain transcript), but not every one of them.
- `temperature`, `top_p`, `seed`: the registry's sampling knobs (temperature 0 is greedy). Without a
  seed a sampling request draws a fresh one; with a seed it runs alone, so the seed reproduces it.
- `stream`, `stream_options.include_usage`: server-sent chunks, block by block (labkit.serve.streaming).
- Accepted with the value that changes nothing, refused (400 naming the field) with any other
  (NO_OP): n 1, best_of 1, presence/frequency_penalty 0, logprobs false / 0, top_logprobs 0,
  logit_bias {}, echo false, suffix "", response_format {"type": "text"}, tools [] / functions [],
  tool_choice / function_call "none" or "auto", modalities ["text"]. Read and ignored (they never
  change the answer): user, metadata, store, service_tier, parallel_tool_calls, prompt_cache_key,
  safety_identifier. Any other field is refused by name (GET /v1/models lists the fields read).
- Diffusion knobs as extra fields (`diffusion_fields()`): sampler, preset ("speed"/"quality"), the
  loop's steps, block_length, seed, cfg_scale, penalty_lambda, every knob of the rule registry
  (threshold, editing_threshold, factor, entropy_bound, score, top_k, ... as described in
  labkit.samplers.knobs), keywords (words that must appear), drafts (streaming only: send each
  step's draft of the current block in an extra field).

Where an answer ends (max_tokens, end tokens, stop strings) is read off the canvas by
labkit.serve.answers; its names are importable from here too.
"""
from __future__ import annotations

import dataclasses
import difflib
import json
import numbers
from dataclasses import dataclass

from .. import defaults
from ..controls import Keywords
from ..decode import check_knobs
from ..models.handle import model_block
from ..prompts import chat_text
from ..samplers import knobs as kn  # `knobs` is this module's function below
from ..samplers import registry
from ..samplers.knobs import KnobError
from .answers import answer, final_text, find_stop, held_back, tokens_for  # noqa: F401  (how an answer ends)

MAX_BODY = 1 << 20                      # bytes of a request body
MAX_TOKENS = 4096                       # answer limit for a model without a context limit
MAX_STOPS = 4                           # stop strings per request, as OpenAI allows
ROLES = ("system", "developer", "user", "assistant")
NO_EFFECT = frozenset({"user", "stream_options", "metadata", "store", "service_tier", "parallel_tool_calls",
                       "prompt_cache_key", "safety_identifier"})
OPENAI = ("model", "max_tokens", "max_completion_tokens", "stream", "n", "temperature", "top_p", "stop",
          "presence_penalty", "frequency_penalty", "logprobs", "logit_bias")
LOOP_FIELDS = ("steps", "block_length", "seed", "cfg_scale", "penalty_lambda")   # samplers.knobs.LOOP, by name
EXTRA = ("sampler", "preset", "keywords", "drafts")
_TOOLS = "(this server does not call tools)"
# standard fields accepted only with the value that changes nothing: (those values, what the field may be)
NO_OP = {
    "n": ((1,), "n must be 1 (one answer per request)"),
    "best_of": ((1,), "best_of must be 1 (one answer per request)"),
    "presence_penalty": ((0,), "presence_penalty must be 0 (penalties are not supported)"),
    "frequency_penalty": ((0,), "frequency_penalty must be 0 (penalties are not supported)"),
    "logprobs": ((False, 0), "logprobs must be false or 0 (this server returns no log probabilities)"),
    "top_logprobs": ((0,), "top_logprobs must be 0 (this server returns no log probabilities)"),
    "logit_bias": (({},), "logit_bias must be {} (this server does not bias tokens)"),
    "echo": ((False,), "echo must be false (the answer never repeats the prompt)"),
    "suffix": (("",), 'suffix must be "" or null (this server does not fill in text before a suffix)'),
    "response_format": (({"type": "text"},), 'response_format: only {"type": "text"} is supported (this server '
                                             'writes plain text)'),
    "tools": (([],), f"tools must be [] {_TOOLS}"),
    "functions": (([],), f"functions must be [] {_TOOLS}"),
    "tool_choice": (("none", "auto"), f'tool_choice must be "none" or "auto" {_TOOLS}'),
    "function_call": (("none", "auto"), f'function_call must be "none" or "auto" {_TOOLS}'),
    "modalities": ((["text"],), 'modalities must be ["text"] (this server writes text)'),
}
CHAT_NO_OP = ("top_logprobs", "response_format", "tools", "functions", "tool_choice", "function_call", "modalities")
TEXT_NO_OP = ("best_of", "echo", "suffix")


def diffusion_fields() -> tuple[str, ...]:
    """The diffusion knobs a request may carry as extra fields: the loop's, and every knob of the
    rule registry (read now, so a rule added to the registry is served with its knobs)."""
    rule = tuple(k for k in registry.all_knobs() if k not in OPENAI)
    return (*EXTRA[:2], *LOOP_FIELDS, *rule, *EXTRA[2:])


def chat_fields() -> frozenset[str]:
    return frozenset(("messages", *OPENAI, *CHAT_NO_OP, *diffusion_fields())) | NO_EFFECT


def text_fields() -> frozenset[str]:
    return frozenset(("prompt", *OPENAI, *TEXT_NO_OP, *diffusion_fields())) | NO_EFFECT


def generate_fields() -> frozenset[str]:
    rule = (k for k in registry.all_knobs() if k not in OPENAI)
    return frozenset({"prompt", "max_len", "batch_size", "temperature", "top_p", *EXTRA[:3], *LOOP_FIELDS, *rule})


class ServeError(Exception):
    """An answer other than 200: status, message, OpenAI error type and code, the parameter."""

    def __init__(self, status: int, message: str, *, param: str | None = None, code: str | None = None,
                 type: str = "invalid_request_error", headers: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.param, self.code, self.type = status, message, param, code, type
        self.headers = headers or {}

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def bad(param: str, message: str) -> ServeError:
    return ServeError(400, message if message.startswith(param) else f"{param}: {message}", param=param,
                      code="invalid_value")


@dataclass(frozen=True)
class Knobs:
    """Everything the loop is run with besides the prompts: requests with equal Knobs can share a batch."""
    sampler: str
    gen_length: int
    block_length: int
    steps: int
    temperature: float
    top_p: float | None
    seed: int | None                 # None: a fresh random seed for the run (sampling without a seed)
    keywords: tuple[str, ...] = ()
    rule_knobs: tuple[tuple[str, object], ...] = ()   # the registry knobs given (threshold, ...), sorted
    cfg_scale: float = 0.0
    penalty_lambda: float = 0.0

    @property
    def stochastic(self) -> bool:    # the run draws from its generator (sampling, random remasking)
        return self.temperature > 0 or self.sampler == "random"

    def rule(self):
        return registry.rule(self.sampler, **registry.sampling(self.temperature, self.top_p), **dict(self.rule_knobs))

    def loop(self) -> dict:
        """decode.generate's keywords besides the rule, the prompts and the seed."""
        return dict(gen_length=self.gen_length, block_length=self.block_length, steps=self.steps,
                    cfg_scale=self.cfg_scale, penalty_lambda=self.penalty_lambda)

    def controls(self) -> tuple:
        return (Keywords(list(self.keywords)),) if self.keywords else ()


@dataclass(frozen=True)
class Job:
    """One request, checked: its prompts (one row each), knobs and answer limit."""
    kind: str                        # "chat", "text" or "generate"
    prompts: tuple[str, ...]
    prompt_tokens: tuple[int, ...]
    knobs: Knobs
    max_tokens: int
    stream: bool = False
    drafts: bool = False
    include_usage: bool = False
    stop: tuple[str, ...] = ()       # the answer ends before the first of these (not a Knob: it batches)

    @property
    def batchable(self) -> bool:
        """Streams and keyword runs run alone, and so does a seeded sampling request: the rows of a
        batch share one generator, so its answer would depend on its batch-mates."""
        k = self.knobs
        return not self.stream and not k.keywords and not (k.stochastic and k.seed is not None)


def _get_int(body: dict, name: str, default, low: int, high: int):
    v = body.get(name)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not low <= v <= high:
        raise bad(name, f"{name} must be an integer in [{low}, {high}], got {v!r}")
    return int(v)


def _get_knob(body: dict, knob, default=None):
    """A described knob's value from the body (its default when absent), checked: a 400 naming it."""
    v = body.get(knob.name)
    if v is None:
        return default
    if knob.kind is int and not isinstance(v, numbers.Integral):     # JSON 3.0 is not an integer
        raise bad(knob.name, f"{knob.name} must be {knob.allowed()}, got {v!r}")
    try:
        return knob.check(v)
    except KnobError as e:
        raise bad(e.param, str(e)) from None


def _get_bool(body: dict, name: str, default: bool = False) -> bool:
    v = body.get(name)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise bad(name, f"{name} must be true or false, got {v!r}")
    return v


def _check_fields(body, allowed: frozenset, route: str) -> None:
    if not isinstance(body, dict):
        raise ServeError(400, f"the request body must be a JSON object, got {type(body).__name__}", code="invalid_json")
    unknown = sorted(set(body) - allowed)
    if unknown:
        name = unknown[0]
        close = difflib.get_close_matches(name, sorted(allowed), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ServeError(400, f"{name}: unknown parameter for {route}{hint} (GET /v1/models lists the fields "
                              f"this server reads)", param=name, code="unknown_parameter")


def _same(value, allowed) -> bool:
    """JSON equality where true is not 1 and false is not 0 (0 and 0.0 are the same number)."""
    if isinstance(value, bool) or isinstance(allowed, bool):
        return type(value) is type(allowed) and value == allowed
    return value == allowed


def _short(value, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "..."


def _refused(body: dict) -> None:
    """Standard fields the server cannot honour: accepted with the value that changes nothing (or
    null), refused with any other rather than silently ignored."""
    for name, (values, allowed) in NO_OP.items():
        v = body.get(name)
        if v is not None and not any(_same(v, a) for a in values):
            raise bad(name, f"{allowed}, got {_short(v)}")


def stops(body: dict) -> tuple[str, ...]:
    """`stop`: a string or a list of up to MAX_STOPS non-empty strings; null, "" and [] are none."""
    v = body.get("stop")
    if v is None or v == "" or v == []:
        return ()
    if isinstance(v, str):
        return (v,)
    if not isinstance(v, list) or len(v) > MAX_STOPS or not all(isinstance(s, str) and s for s in v):
        raise bad("stop", f"stop must be a string or a list of up to {MAX_STOPS} non-empty strings, got {_short(v)}")
    return tuple(dict.fromkeys(v))


def _sampler(lm, body: dict) -> str:
    offered = registry.names_for(lm.kind)
    preset, name = body.get("preset"), body.get("sampler")
    if preset is not None and preset not in registry.PRESETS:
        raise bad("preset", f"preset must be one of {', '.join(registry.PRESETS)}, got {preset!r}")
    if name is not None and name not in offered:
        raise bad("sampler", f"sampler must be one of {', '.join(offered)} for model {lm.name!r} "
                             f"(kind {lm.kind!r}), got {name!r}")
    if preset is not None and name is not None and name != preset:
        raise bad("preset", f"preset {preset!r} contradicts sampler {name!r}: give one of them")
    if preset is not None and preset not in offered:
        raise bad("preset", f"preset {preset!r} needs a masked diffusion model; {lm.name!r} is {lm.kind!r}")
    return name or preset or registry.default_rule(lm)


def _keywords(body: dict) -> tuple[str, ...]:
    words = body.get("keywords")
    if words is None:
        return ()
    if not isinstance(words, list) or not 1 <= len(words) <= 16 or not all(isinstance(w, str) and w.strip()
                                                                          for w in words):
        raise bad("keywords", f"keywords must be a list of 1 to 16 non-empty strings, got {words!r}")
    return tuple(w.strip() for w in words)


def _block(lm, body: dict, max_tokens: int, longest_prompt: int) -> tuple[int, int]:
    """(block_length, gen_length): the canvas is max_tokens rounded up to whole blocks (a block model's
    own when the request names none), and must fit."""
    limit = lm.max_length
    block = _get_int(body, "block_length", None, 1, MAX_TOKENS)
    if block is None and model_block(lm):
        block = model_block(lm)               # a block-diffusion model decodes in its own blocks
    elif block is None:
        block = min(defaults.BLOCK_LENGTH, max_tokens)
        if limit is not None and longest_prompt + -(-max_tokens // block) * block > limit:
            block = max_tokens                # rounding up would not fit: the answer is one block
    gen_length = -(-max_tokens // block) * block
    if limit is not None and longest_prompt + gen_length > limit:
        room = (limit - longest_prompt) // block * block
        raise bad("max_tokens", f"max_tokens: the prompt ({longest_prompt} tokens) + the canvas ({gen_length} tokens: "
                                f"max_tokens rounded up to a multiple of block_length {block}) exceeds the model's "
                                f"context of {limit} tokens; max_tokens may be at most {max(room, 0)} here")
    return block, gen_length


def knobs(lm, body: dict, max_tokens: int, longest_prompt: int) -> tuple[Knobs, int]:
    """The loop's knobs from a body and the answer limit: (Knobs, gen_length). Every knob is read
    through its description (labkit.samplers.knobs); a refusal names the knob (KnobError.param)."""
    name = _sampler(lm, body)
    block, gen_length = _block(lm, body, max_tokens, longest_prompt)
    temperature = _get_knob(body, kn.TEMPERATURE, defaults.TEMPERATURE)
    given = {k: _get_knob(body, knob) for k, knob in registry.all_knobs().items() if k not in OPENAI}
    try:
        given = registry.check_given(name, {k: v for k, v in given.items() if v is not None})
    except KnobError as e:
        raise bad(e.param, str(e)) from None
    k = Knobs(sampler=name, gen_length=gen_length, block_length=block, steps=_get_int(body, "steps", gen_length, 1,
              MAX_TOKENS), temperature=temperature,
              top_p=registry.sampling(temperature, _get_knob(body, kn.TOP_P))["top_p"],
              seed=_get_knob(body, kn.SEED), keywords=_keywords(body), rule_knobs=tuple(sorted(given.items())),
              cfg_scale=_get_knob(body, kn.CFG_SCALE, 0.0), penalty_lambda=_get_knob(body, kn.PENALTY_LAMBDA, 0.0))
    if not k.stochastic:                      # greedy: the seed changes nothing, so requests batch whatever it is
        k = dataclasses.replace(k, seed=0)
    try:
        check_knobs(k.rule(), **k.loop())
    except KnobError as e:
        raise bad(e.param, str(e)) from None
    except ValueError as e:                   # a combination the rule itself refuses
        raise bad("sampler", str(e)) from None
    try:
        k.controls()
    except ValueError as e:
        raise bad("keywords", str(e)) from None
    return k, gen_length


def _max_tokens(lm, body: dict, longest_prompt: int, name: str = "max_tokens") -> int:
    given = [n for n in (name, "max_completion_tokens") if body.get(n) is not None]
    key = given[0] if given else name
    room = MAX_TOKENS if lm.max_length is None else lm.max_length - longest_prompt
    if room < 1:
        raise bad("messages" if "messages" in body else "prompt",
                  f"the prompt is {longest_prompt} tokens, which leaves no room in the model's context of "
                  f"{lm.max_length} tokens")
    high = min(room, MAX_TOKENS)
    try:
        return _get_int(body, key, min(defaults.GEN_LENGTH, room), 1, high)
    except ServeError as e:
        if lm.max_length is None or high == MAX_TOKENS:
            raise
        raise bad(key, f"{e.message}: the prompt ({longest_prompt} tokens) and the answer must fit the model's "
                       f"context of {lm.max_length} tokens") from None


def _content(i: int, m) -> str:
    """A message's text: a string, a list of {"type": "text", "text"} parts, or null (empty)."""
    if not isinstance(m, dict) or m.get("role") not in ROLES:
        role = m.get("role") if isinstance(m, dict) else m
        raise bad("messages", f"messages[{i}].role must be one of {', '.join(ROLES)}, got {_short(role)}")
    content = m.get("content")
    if isinstance(content, list):               # [{"type": "text", "text": ...}, ...]
        if not all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
                   for p in content):
            raise bad("messages", f"messages[{i}].content parts must all be {{'type': 'text', 'text': str}}")
        content = "".join(p["text"] for p in content)
    if content is None:
        return ""
    if not isinstance(content, str):
        raise bad("messages", f"messages[{i}].content must be text, got {_short(content)}")
    return content


def render_chat(lm, messages) -> str:
    """Chat messages as the prompt text: the model's chat template when it has one, else a plain
    transcript ("USER:\\n...\\n\\nASSISTANT:\\n", the shape of the embedded models' play text)
    that leaves out empty messages. Empty contents are fine, a conversation of nothing else is not."""
    if not isinstance(messages, list) or not messages:
        raise bad("messages", f"messages must be a non-empty list of {{'role', 'content'}} objects, got "
                              f"{_short(messages)}")
    plain = [{"role": m["role"], "content": _content(i, m)} for i, m in enumerate(messages)]
    if not any(m["content"].strip() for m in plain):
        raise bad("messages", "messages: every message's content is empty (at least one must hold some text)")
    if getattr(lm.tokenizer, "chat_template", None):
        return chat_text(lm, plain)
    return "".join(f"{m['role'].upper()}:\n{m['content'].strip()}\n\n" for m in plain
                   if m["content"].strip()) + "ASSISTANT:\n"


def _job(lm, body: dict, kind: str, prompts: list[str], max_batch: int, limit_name: str = "max_tokens") -> Job:
    counts = tuple(len(lm.encode(p)) for p in prompts)
    if len(prompts) > max_batch:
        raise bad("prompt", f"prompt: at most {max_batch} prompts per request (the server's --max-batch), "
                            f"got {len(prompts)}")
    longest = max(counts)
    if kind == "generate":
        max_tokens = _get_int(body, "max_len", defaults.GEN_LENGTH, 1, MAX_TOKENS)
    else:
        max_tokens = _max_tokens(lm, body, longest, limit_name)
    k, _ = knobs(lm, body, max_tokens, longest)
    stream = _get_bool(body, "stream")
    opts = body.get("stream_options")
    if opts is not None and not isinstance(opts, dict):
        raise bad("stream_options", f"stream_options must be an object, got {opts!r}")
    return Job(kind=kind, prompts=tuple(prompts), prompt_tokens=counts, knobs=k, max_tokens=max_tokens,
               stream=stream, drafts=_get_bool(body, "drafts"),
               include_usage=bool(stream and opts and opts.get("include_usage")), stop=stops(body))


def parse_chat(lm, body, max_batch: int) -> Job:
    _check_fields(body, chat_fields(), "/v1/chat/completions")
    _refused(body)
    return _job(lm, body, "chat", [render_chat(lm, body.get("messages"))], max_batch)


def parse_text(lm, body, max_batch: int) -> Job:
    _check_fields(body, text_fields(), "/v1/completions")
    _refused(body)
    prompt = body.get("prompt")
    prompts = [prompt] if isinstance(prompt, str) else prompt
    if not isinstance(prompts, list) or not prompts or not all(isinstance(p, str) and p.strip() for p in prompts):
        raise bad("prompt", f"prompt must be non-empty text or a list of non-empty texts, got {prompt!r}")
    job = _job(lm, body, "text", prompts, max_batch)
    if job.stream and len(prompts) > 1:
        raise bad("stream", "stream: a streamed completion takes one prompt")
    return job


def parse_generate(lm, body, max_batch: int) -> Job:
    """/generate: {prompt, max_len, steps, batch_size} → batch_size answers to one prompt, decoded
    as one batch; max_len is the canvas (gen_length) exactly."""
    _check_fields(body, generate_fields(), "/generate")
    prompt = body.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise bad("prompt", f"prompt must be non-empty text, got {prompt!r}")
    n = _get_int(body, "batch_size", 1, 1, max_batch)
    job = _job(lm, body, "generate", [prompt] * n, max_batch)
    if job.knobs.gen_length != job.max_tokens:
        raise bad("max_len", f"max_len ({job.max_tokens}) must be a multiple of block_length "
                             f"({job.knobs.block_length})")
    return job
