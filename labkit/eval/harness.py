"""labkit inside lm-evaluation-harness: any model `lk.load` takes, decoded by any rule of the
registry, as lm-eval model "labkit".

    labkit lm-eval --model labkit --model_args model=tiny,sampler=threshold,threshold=0.9 \\
        --tasks labkit_shakespeare --include_path $(python -c "import labkit.eval.harness as h; print(h.TASKS_DIR)")
    lm_eval.simple_evaluate(model=LabkitLM(model="tiny"), tasks=[...])       # Python

lm-eval 0.4 finds models only in its own registry and has no plugin entry point for them, so
importing this module registers "labkit" there (the `labkit lm-eval` command does it, then runs
lm-eval's own command line).

- `generate_until`: requests grouped by their generation settings and decoded in batches (left
  padding), `until` honoured (the answer cut before the first stop string), the canvas
  `max_gen_toks` rounded up to whole blocks (a task may set `block_length` in its
  generation_kwargs); each request's NFE and TPF kept in `decode_log`.
- `loglikelihood`: a masked model through LLaDA's Monte-Carlo estimator
  (`labkit.eval.likelihood.answer_log_likelihood`, `mc_num` draws, as the official eval_llada.py),
  a causal model exactly; `loglikelihood_rolling` likewise over windows of the context length.
- model_args are checked against the knob descriptions (labkit.samplers.knobs): an unknown rule, a
  knob the rule does not read or a value out of range is a one-line error naming the argument.
"""
from __future__ import annotations

import sys
from pathlib import Path

import lm_eval.models  # noqa: F401  (lm-eval's own model names, registered lazily, stay available beside ours)
import torch
from lm_eval.api.model import LM
from lm_eval.api.registry import register_model
from lm_eval.utils import simple_parse_args_string

from ..decode import generate
from ..models.formats import fit
from ..models.load import load
from ..samplers import registry
from ..serve.schemas import render_chat
from .likelihood import answer_log_likelihood, ar_log_likelihood, check_mc_num

TASKS_DIR = Path(__file__).parent / "lm_eval_tasks"       # --include_path for the shipped tasks
LOOP_ARGS = {"max_gen_toks": int, "block_length": int, "steps": int, "mc_num": int, "batch_size": int, "seed": int,
             "cfg_scale": float, "penalty_lambda": float}
MODEL_ARGS = ("model", "sampler", "device", "dtype", "trust_remote_code")


def parse_model_args(args: dict) -> dict:
    """lm-eval's model_args (strings, or values from Python) checked and typed: the loop's numbers,
    the rule name and each knob through its description. One-line errors name the argument."""
    args = dict(args)
    known = set(MODEL_ARGS) | set(LOOP_ARGS) | set(registry.all_knobs())
    unknown = sorted(set(args) - known)
    if unknown:
        raise ValueError(f"model_args: {unknown[0]} is not an argument of the labkit model (it takes "
                         f"{', '.join(sorted(known))})")
    out = {}
    for name, value in args.items():
        if value is None:
            continue
        if name in LOOP_ARGS:
            out[name] = _number(name, value, LOOP_ARGS[name])
        elif name in registry.all_knobs():
            knob = registry.all_knobs()[name]
            out[name] = knob.parse(value) if isinstance(value, str) else knob.check(value)
        elif name == "trust_remote_code":
            out[name] = value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes")
        else:
            out[name] = str(value)
    if out.get("mc_num") is not None:
        try:
            check_mc_num(out["mc_num"])
        except ValueError as e:
            raise ValueError(f"model_args: mc_num: {e}") from None
    for name in ("max_gen_toks", "block_length", "steps", "batch_size"):
        if out.get(name) is not None and out[name] < 1:
            raise ValueError(f"model_args: {name} must be a positive integer, got {out[name]}")
    return out


def _number(name: str, value, kind):
    try:
        v = kind(float(value)) if kind is int and isinstance(value, str) and "." not in value else kind(value)
    except (TypeError, ValueError):
        raise ValueError(f"model_args: {name} must be {'an integer' if kind is int else 'a number'}, "
                         f"got {value!r}") from None
    if kind is int and isinstance(value, float) and not value.is_integer():
        raise ValueError(f"model_args: {name} must be an integer, got {value!r}")
    return v


def cut_at_stop(text: str, until) -> tuple[str, bool]:
    """The text before the first of the stop strings, and whether one was found."""
    stops = [until] if isinstance(until, str) else list(until or [])
    cut = min((i for i in (text.find(s) for s in stops if s) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


@register_model("labkit")
class LabkitLM(LM):
    """A labkit model and decoding rule as an lm-eval LM (see the module docstring)."""

    def __init__(self, model="tiny", sampler=None, device="cpu", dtype="auto", trust_remote_code=False,
                 max_gen_toks=64, block_length=None, steps=None, mc_num=32, batch_size=8, seed=0,
                 cfg_scale=0.0, penalty_lambda=0.0, **rule_knobs):
        super().__init__()
        a = parse_model_args(dict(model=model, sampler=sampler, device=device, dtype=dtype,
                                  trust_remote_code=trust_remote_code, max_gen_toks=max_gen_toks,
                                  block_length=block_length, steps=steps, mc_num=mc_num, batch_size=batch_size,
                                  seed=seed, cfg_scale=cfg_scale, penalty_lambda=penalty_lambda, **rule_knobs))
        if a.get("sampler") is not None and a["sampler"] not in registry.names():
            raise ValueError(f"model_args: sampler must be one of {', '.join(registry.names())}, got {a['sampler']!r}")
        dtypes = {"auto": None, "float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
        if a["dtype"] not in dtypes:
            raise ValueError(f"model_args: dtype must be one of {', '.join(dtypes)}, got {a['dtype']!r}")
        self.lm = load(a["model"], device=a["device"], dtype=dtypes[a["dtype"]],
                       trust_remote_code=a["trust_remote_code"])
        self.sampler_name = a.get("sampler") or registry.default_rule(self.lm)
        given = {k: a[k] for k in registry.all_knobs() if k in a}
        try:
            self.rule_knobs = registry.check_given(self.sampler_name, given)
        except ValueError as e:
            raise ValueError(f"model_args: {e}") from None
        self.loop = {k: a[k] for k in ("block_length", "steps", "cfg_scale", "penalty_lambda") if a.get(k) is not None}
        self.max_gen_toks, self.mc_num, self.seed = a["max_gen_toks"], a["mc_num"], a["seed"]
        self._batch_size = a["batch_size"]
        self.decode_log: list[dict] = []     # one entry per generate_until request: nfe, tokens, tpf

    @classmethod
    def create_from_arg_string(cls, arg_string: str, additional_config: dict | None = None):
        args = simple_parse_args_string(arg_string) if arg_string else {}
        return cls.create_from_arg_obj(args, additional_config)

    @classmethod
    def create_from_arg_obj(cls, arg_dict: dict, additional_config: dict | None = None):
        """model_args win over lm-eval's own flags; of those, batch_size and device are read. lm-eval's
        command line passes device cuda:0 when none is given: where this torch has no CUDA, that
        default is left out (the model_args' device, else cpu) with a note, never a failure."""
        extra = {k: v for k, v in (additional_config or {}).items() if v is not None and k in ("batch_size", "device")}
        if extra.get("batch_size") in ("auto", "auto:1"):
            extra.pop("batch_size")
        device = str(extra.get("device", "cpu"))
        if device.startswith("cuda") and not torch.cuda.is_available() and "device" not in arg_dict:
            print(f"labkit: lm-eval's device {device!r} is not available here; running on cpu "
                  "(pass device=... in --model_args to choose)", file=sys.stderr)
            extra.pop("device")
        return cls(**{**extra, **dict(arg_dict)})

    # --- what lm-eval asks ----------------------------------------------------------------
    @property
    def tokenizer_name(self) -> str:
        return str(self.lm.name).replace("/", "__")

    def apply_chat_template(self, chat_history, add_generation_prompt: bool = True) -> str:
        return render_chat(self.lm, [dict(m) for m in chat_history])

    def rule(self, gen_kwargs: dict):
        """The rule for one group of requests: the model's rule with its knobs; a task's
        temperature (do_sample false: 0) overrides the model's."""
        sampling = {}
        if gen_kwargs.get("do_sample") is False:
            sampling["temperature"] = 0.0
        elif gen_kwargs.get("temperature") is not None:
            sampling["temperature"] = float(gen_kwargs["temperature"])
        knobs = {**self.rule_knobs, **sampling}
        temperature = knobs.pop("temperature", 0.0)
        return registry.rule(self.sampler_name, **{**registry.sampling(temperature, knobs.pop("top_p", None)), **knobs})

    def _canvas(self, kw: dict) -> dict:
        """The canvas of a group of requests: max_gen_toks rounded up to whole blocks (block_length
        from model_args, else from the task's generation_kwargs, else min(32, max_gen_toks))."""
        max_gen_toks = int(kw.get("max_gen_toks", self.max_gen_toks))
        block = self.loop.get("block_length", int(kw.get("block_length", min(32, max_gen_toks))))
        gen_length = -(-max_gen_toks // block) * block
        steps = self.loop.get("steps", gen_length)
        return dict(gen_length=gen_length, block_length=block, steps=steps,
                    cfg_scale=self.loop.get("cfg_scale", 0.0), penalty_lambda=self.loop.get("penalty_lambda", 0.0))

    def _fit(self, context: str, gen_length: int) -> str:
        """The context, cut from the left so that it and the canvas fit the model's context; a task
        model's question (labkit.models.formats) is laid out by the loop in its own layout, whole."""
        if self.lm.max_length is None or fit(self.lm, [context]) is not None:
            return context
        ids = self.lm.encode(context)
        room = self.lm.max_length - gen_length
        if room < 1:
            raise ValueError(f"max_gen_toks: a canvas of {gen_length} tokens leaves no room for a prompt in "
                             f"model {self.lm.name!r}'s context of {self.lm.max_length} tokens")
        return context if len(ids) <= room else self.lm.decode(ids[-room:], skip_special=False)

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        groups: dict[tuple, list[int]] = {}
        for i, req in enumerate(requests):
            context, kw = req.args
            key = (repr(sorted((k, repr(v)) for k, v in kw.items())),)
            groups.setdefault(key, []).append(i)
        answers = [""] * len(requests)
        for idx in groups.values():
            kw = requests[idx[0]].args[1]
            canvas = self._canvas(kw)
            rule = self.rule(kw)
            for start in range(0, len(idx), self._batch_size):
                part = idx[start:start + self._batch_size]
                contexts = [self._fit(requests[i].args[0], canvas["gen_length"]) for i in part]
                out = generate(self.lm, contexts, rule, seed=self.seed, eos_early_stop=True, **canvas)
                nfe = out.trace.row_nfe().tolist()
                for j, i in enumerate(part):
                    text, stopped = cut_at_stop(out.texts[j], kw.get("until"))
                    answers[i] = text
                    tokens = canvas["gen_length"]
                    self.decode_log.append({"request": i, "nfe": int(nfe[j]), "tokens": tokens,
                                            "tpf": round(tokens / max(int(nfe[j]), 1), 3), "stopped": stopped})
                    self.cache_hook.add_partial("generate_until", (requests[i].args[0], kw), text)
        return answers

    def loglikelihood(self, requests, disable_tqdm: bool = False) -> list[tuple[float, bool]]:
        out = []
        for req in requests:
            context, continuation = req.args
            ctx, cont = self.lm.encode(context), self.lm.encode(continuation)
            out.append(self._score(ctx, cont))
            self.cache_hook.add_partial("loglikelihood", (context, continuation), out[-1])
        return out

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False) -> list[float]:
        """log p(text): windows of the model's context, each scored given the text before it
        (a causal model: after an EOS standing in for BOS)."""
        out = []
        for req in requests:
            (text,) = req.args
            ids = self.lm.encode(text)
            width = (self.lm.max_length or 256) - 1
            total = 0.0
            for s in range(0, len(ids), width):
                prefix = ids[max(0, s - width // 2):s] if s else []
                if self.lm.kind == "causal" and not prefix:
                    prefix = [self.lm.eos_id]
                total += self._score(prefix, ids[s:s + width])[0]
            out.append(total)
        return out

    @torch.no_grad()
    def _score(self, context: list[int], continuation: list[int]) -> tuple[float, bool]:
        """(log p(continuation | context), whether greedy decoding writes it): exact for a causal
        model; for a masked one the Monte-Carlo bound, and greedy means one forward pass with the
        whole continuation masked proposes it at every position."""
        if self.lm.max_length is not None and len(context) + len(continuation) > self.lm.max_length:
            context = context[len(context) + len(continuation) - self.lm.max_length:]
        seq = torch.tensor([context + continuation], device=self.lm.device)
        P = len(context)
        if self.lm.kind == "causal":
            logp = ar_log_likelihood(self.lm, context, continuation)
            greedy = self.lm(seq[:, :-1]).argmax(-1)[0, P - 1:]
        else:
            logp = answer_log_likelihood(self.lm, context, continuation, mc_num=self.mc_num,
                                         batch_size=min(self.mc_num, 32), seed=self.seed).value
            greedy = self.lm(seq.clone().index_fill_(1, torch.arange(P, seq.shape[1], device=seq.device),
                                                     self.lm.mask_id)).argmax(-1)[0, P:]
        return float(logp), bool((greedy.cpu() == torch.tensor(continuation)).all())

    def decode_summary(self) -> dict:
        """Requests, mean NFE and TPF (answer tokens per forward pass over all requests) so far."""
        n = len(self.decode_log)
        if not n:
            return {"requests": 0}
        nfe = sum(r["nfe"] for r in self.decode_log)
        return {"requests": n, "nfe_mean": round(nfe / n, 3),
                "tpf": round(sum(r["tokens"] for r in self.decode_log) / max(nfe, 1), 3)}


__all__ = ["LOOP_ARGS", "LabkitLM", "MODEL_ARGS", "TASKS_DIR", "cut_at_stop", "parse_model_args"]
