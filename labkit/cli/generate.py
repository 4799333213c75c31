"""`labkit generate`: one run from the command line, with every knob checked before the model loads."""
from __future__ import annotations

import re
import sys
import time

from .. import defaults
from ..accel import COMPILE_MODES, Accel, compiled
from ..controls import Ban, Keywords, Pin
from ..decode import block_for, chat_text, check_knobs, check_seed, generate
from ..models.kv_cache import DualCache, PrefixCache
from ..models.load import embedded_kind
from ..samplers import knobs, registry
from ..samplers.knobs import KnobError
from ..tasks import answer_length, grid_columns, is_task_model, sudoku
from ..ui.viz import to_html
from .common import Given, load_model, model_args, note, output_file


def add_parser(sub) -> None:
    g = sub.add_parser("generate", help="generate text and report NFE and time")
    g.add_argument("prompt")
    g.add_argument("--chat", action="store_true", help="send the prompt as a user message through the "
                   "model's chat template (instruct models)")
    model_args(g, default=None, help_default=f"{defaults.MODEL}; {defaults.PARALLEL_MODEL} for "
                f"--sampler speed / quality")
    sampler_args(g)
    g.add_argument("--keywords", metavar="A,B", help="words that must appear (labkit.controls.Keywords)")
    g.add_argument("--ban", metavar="A,B", help="words that must not appear (labkit.controls.Ban)")
    g.add_argument("--pin", action="append", metavar="OFFSET:TEXT", help="fixed text at a token offset "
                   "of the answer (repeatable)")
    g.add_argument("--html", help="write the step-through view to this HTML file")
    g.add_argument("--trace", help="save the trace (.npz) to this path")
    g.set_defaults(fn=run, steps_given=False, gen_length_given=False, block_length_given=False)


def sampler_args(g) -> None:
    """The rule and loop flags (`labkit generate`, `labkit batch`), built from the knob descriptions
    (labkit.samplers.knobs): a knob added to the registry gets its flag and help here."""
    g.add_argument("--gen-length", type=int, default=defaults.GEN_LENGTH, action=Given,
                   help=f"{_help(knobs.GEN_LENGTH)} (default {defaults.GEN_LENGTH}; a task model's puzzle: its answer)")
    g.add_argument("--block-length", type=int, default=None, action=Given,
                   help=f"{_help(knobs.BLOCK_LENGTH)} (default: a block-diffusion model's own block size, else "
                        f"{defaults.BLOCK_LENGTH})")
    g.add_argument("--steps", type=int, action=Given, help=f"{_help(knobs.STEPS)} (default {defaults.STEPS}; "
                   "rules that run until each block is done ignore it)")
    rule_args(g)
    g.add_argument("--eos-early-stop", action="store_true", help="stop once an EOS is written")
    for knob in (knobs.PENALTY_LAMBDA, knobs.CFG_SCALE):
        g.add_argument(knob.flag, type=float, default=0.0, help=_help(knob))
    g.add_argument("--seed", type=int, default=0, help=_help(knobs.SEED))
    g.add_argument("--cache", choices=["none", "prefix", "dual"], default="none",
                   help="Fast-dLLM's block KV cache (labkit.models.kv_cache; masked models with a KV-cache pass)")
    g.add_argument("--gpu-path", action="store_true", help="lk.Accel.GPU: no per-step device reads or timing "
                   "(same tokens; steps are not timed one by one)")
    g.add_argument("--compile", choices=["none", *COMPILE_MODES], default="none",
                   help="torch.compile the forward pass (reduce-overhead: CUDA graphs on a GPU; same tokens)")


def rule_args(g) -> None:
    """--sampler and the flags of every knob a rule reads (`labkit generate`, `labkit batch`, `labkit eval --tasks`)."""
    g.add_argument("--sampler", choices=registry.names(), help="rule (default: the model's own: low_confidence; "
                   "autoregressive for a causal model); speed / quality are LLaDA2.1's S and Q modes")
    for knob in (*knobs.SAMPLING, *registry.rule_knobs().values()):
        g.add_argument(knob.flag, **_flag_type(knob), help=_help(knob, registry.readers(knob.name)))
    g.add_argument("--remasking", choices=["low_confidence", "random"], help="low_confidence (default) "
                   "or random (the same as --sampler random)")
    g.set_defaults(steps_given=False, steps=None)


def _help(knob, readers: list[str] | None = None) -> str:
    """A flag's help from its description: what it does, what it takes, which rules read it."""
    text = f"{knob.help}; {knob.allowed()}"
    if knob.name == "temperature":
        text += f" (default {defaults.TEMPERATURE})"
    elif knob.name == "top_p":
        text += f" (default {defaults.TOP_P})"
    if readers is not None and set(readers) != set(registry.names()):
        text += f"; read by {', '.join(readers)}"
    return text.replace("%", "%%")


def _flag_type(knob) -> dict:
    """argparse's type / choices for a knob: the range itself is checked with the rule (one-line errors)."""
    if knob.kind is str:
        return {"choices": knob.choices}
    return {"type": knob.kind}


def run(a) -> int:
    # everything that needs no model is checked first, so bad input fails before the model loads
    html_path = output_file(a.html, "--html", ".html")
    trace_path = output_file(a.trace, "--trace", ".npz")
    name, sampler, notes = rule_before_load(a)
    controls = controls_from_flags(a)
    lm = load_model(a)
    name, sampler = rule_after_load(a, lm, name, sampler, notes)
    prompt = a.prompt if a.prompt.endswith("\n") or not a.prompt.endswith(":") else a.prompt + "\n"
    if a.chat:
        prompt = chat_text(lm, [{"role": "user", "content": a.prompt}])
    model = fast_model(lm, a.cache, a.compile)
    t0 = time.perf_counter()
    out = generate(model, prompt, sampler, gen_length=a.gen_length, block_length=a.block_length,
                   steps=a.steps, cfg_scale=a.cfg_scale, seed=a.seed, eos_early_stop=a.eos_early_stop,
                   penalty_lambda=a.penalty_lambda, controls=controls, accel=Accel.GPU if a.gpu_path else None)
    seconds = time.perf_counter() - t0
    print(prompt + out.text)
    _print_grid(prompt, out.text)
    print(f"--- NFE {out.stats['nfe']} · {out.stats['gen_tokens']} tokens · "
          f"TPF {out.stats['tpf']:.2f} · {seconds:.2f} s · {out.stats['tps']:.1f} tok/s", file=sys.stderr)
    parallel = defaults.parallel_note(lm.name, name, out.stats["tpf"])
    if parallel:
        note(parallel)
    if html_path:
        path = to_html(out.trace, lm, html_path, title=f"{lm.name}: {prompt.strip()}", stats=out.stats)
        print(f"step-through view written to {path}", file=sys.stderr)
    if trace_path:
        print(f"trace written to {out.trace.save(trace_path)}", file=sys.stderr)
    return 0


def _print_grid(prompt: str, answer: str) -> None:
    """A Sudoku's question and answer as grids (stderr), beside the line printed above."""
    if grid_columns(prompt) and len(answer) == sudoku.CELLS:
        question = re.search(rf"[1-{sudoku.N}.]{{{sudoku.CELLS}}}", prompt).group()
        left, right = sudoku.format_grid(question).splitlines(), sudoku.format_grid(answer).splitlines()
        print("\n".join(f"{q:<22}  {r}" for q, r in zip(left, right)), file=sys.stderr)


def fast_model(lm, cache: str, compile_mode: str):
    """The model behind --cache and --compile: a KV-cache wrapper (compiled passes) or a compiled forward."""
    mode = None if compile_mode == "none" else compile_mode
    if cache != "none":
        return {"prefix": PrefixCache, "dual": DualCache}[cache](lm, compile=mode)
    return lm if mode is None else compiled(lm, mode)


def rule_before_load(a):
    """(rule name, rule object, notes) from the flags, every knob checked that needs no model, so
    bad input fails before the model loads. Picks the model when --model is not given (S / Q mode
    on the lab's model that can run them)."""
    chosen = a.model is not None
    if not chosen:
        a.model = defaults.PARALLEL_MODEL if a.sampler in registry.PRESETS else defaults.MODEL
    _fit_to_task(a)
    causal = embedded_kind(a.model) == "causal"  # known before loading for the embedded models
    name, sampler, notes = sampler_from_flags(a, default="autoregressive" if causal else "low_confidence")
    if a.sampler is not None or embedded_kind(a.model) is not None:   # else the model's family picks the rule
        check_knobs(sampler, **_knobs(a))
    check_seed(a.seed)
    if not chosen and a.sampler in registry.PRESETS:
        notes.insert(0, f"{a.sampler} mode runs on {a.model}, the lab's model for parallel decoding "
                        f"(choose another with --model)")
    return name, sampler, notes


def _fit_to_task(a) -> None:
    """A task model asked a task's question: the canvas is the answer's length, one block, one
    step per token, unless the flags say otherwise."""
    n = answer_length(getattr(a, "prompt", "")) if is_task_model(a.model) else None
    if n is None:
        return
    if not a.gen_length_given:
        a.gen_length = n
    if not a.block_length_given:
        a.block_length = a.gen_length
    if not a.steps_given:
        a.steps = a.gen_length


def rule_after_load(a, lm, name: str, sampler, notes: list[str]):
    """The rule for the loaded model (a causal model: autoregressive; a family with its own rule,
    e.g. LLaDA2.x: quality, unless --sampler says otherwise), checked again; prints the notes."""
    own = registry.default_rule(lm)       # a causal model: autoregressive; LLaDA2.x: quality
    if a.block_length is None:
        a.block_length = block_for(lm)     # a block model's own block size, else the lab's default
    if a.sampler is None and name != own:
        name, sampler, notes = sampler_from_flags(a, default=own)          # its flags checked again
    check_knobs(sampler, **_knobs(a))
    for text in notes:
        note(text)
    return name, sampler


def _knobs(a) -> dict:
    """The loop's knobs from the flags; before the model is loaded an unset block length (the model's
    own, rule_after_load) is checked as one block, and checked again once it is known."""
    block = a.gen_length if a.block_length is None else a.block_length
    return dict(gen_length=a.gen_length, block_length=block, steps=a.steps, cfg_scale=a.cfg_scale,
                penalty_lambda=a.penalty_lambda)


def controls_from_flags(a) -> list:
    controls = []
    if a.keywords:
        controls.append(Keywords([w.strip() for w in a.keywords.split(",")]))
    if a.ban:
        controls.append(Ban([w.strip() for w in a.ban.split(",")]))
    for spec in a.pin or []:
        offset, sep, text = spec.partition(":")
        if not sep or not offset.strip().isdigit():
            raise ValueError(f"--pin takes OFFSET:TEXT (a token offset of the answer, then the text), got {spec!r}")
        controls.append(Pin(int(offset), text))
    return controls


def sampler_from_flags(a, default: str = "low_confidence"):
    """(rule name, rule object, notes) from the flags; `default` is the rule when --sampler is
    not given. A flag the rule does not read, or that contradicts another, is refused; one that
    only does nothing here (--steps under a rule that runs until each block is done, --top-p at
    temperature 0) gets a note, printed once everything is checked."""
    name, notes = a.sampler or default, []
    if a.remasking is not None:
        if name not in ("low_confidence", "random"):
            raise ValueError(f"--remasking: not read by sampler {name!r} (only by low_confidence)")
        if a.sampler == "random" and a.remasking != "random":
            raise ValueError(f"--remasking {a.remasking} contradicts --sampler random")
        name = "random" if a.remasking == "random" else name
    temperature = defaults.TEMPERATURE if a.temperature is None else a.temperature
    if a.top_p is not None and temperature == 0:
        notes.append("--top-p does nothing at temperature 0 (greedy decoding)")
    flags = {k: getattr(a, k) for k in registry.rule_knobs()}
    for knob, value in flags.items():
        if value is not None and knob not in registry.knobs(name):
            reads = sorted(registry.knobs(name) & set(flags))
            flag = "--" + knob.replace("_", "-")
            raise KnobError(knob, f"{flag}: not read by sampler {name!r}"
                            + (f" (it reads {', '.join('--' + r.replace('_', '-') for r in reads)})" if reads
                               else f"; use --sampler {' or '.join(registry.readers(knob))}"))
    if a.steps_given and not registry.budgeted(name):
        notes.append(f"--steps is ignored by sampler {name!r}: it runs each block until it is done")
    a.steps = defaults.STEPS if a.steps is None else a.steps
    sampling = {**registry.sampling(temperature, a.top_p), "top_k": a.top_k}
    return name, registry.rule(name, **sampling, **flags), notes
