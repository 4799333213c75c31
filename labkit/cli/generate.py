"""`labkit generate`: one run from the command line, with every knob checked before the model loads."""
from __future__ import annotations

import sys
import time

from .common import Given, load_model, model_args, note, output_file


def add_parser(sub) -> None:
    from .. import defaults

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
    g.set_defaults(fn=run, steps_given=False)


def sampler_args(g) -> None:
    """The rule and loop flags (`labkit generate`, `labkit batch`): one list of them."""
    from .. import defaults
    from ..samplers import registry

    g.add_argument("--gen-length", type=int, default=defaults.GEN_LENGTH)
    g.add_argument("--block-length", type=int, default=defaults.BLOCK_LENGTH)
    g.add_argument("--steps", type=int, action=Given, help=f"step budget (default {defaults.STEPS}; "
                   "rules that run until each block is done ignore it)")
    g.add_argument("--temperature", type=float, help=f"default {defaults.TEMPERATURE}; 0 is greedy")
    g.add_argument("--top-p", type=float, help=f"nucleus at temperature > 0 (default {defaults.TOP_P})")
    g.add_argument("--sampler", choices=registry.NAMES, help="rule (default: low_confidence; autoregressive "
                   "for a causal model); speed / quality are LLaDA2.1's S and Q modes")
    g.add_argument("--threshold", type=float, help="threshold, draft_edit, speed, quality: commit at or "
                   "above this confidence, in [0, 1]")
    g.add_argument("--editing-threshold", type=float, help="draft_edit, speed, quality: edit at or above "
                   "this probability, in [0, 1]")
    g.add_argument("--factor", type=float, help="factor: Fast-dLLM's factor (> 0, default 1.0)")
    g.add_argument("--entropy-bound", type=float, help="entropy_bound: the EB-sampler's bound in nats "
                   "(>= 0, default 0.1)")
    g.add_argument("--remasking", choices=["low_confidence", "random"], help="low_confidence (default) "
                   "or random (the same as --sampler random)")
    g.add_argument("--eos-early-stop", action="store_true", help="stop once an EOS is written")
    g.add_argument("--penalty-lambda", type=float, default=0.0, help="anti-stutter penalty (SGLang)")
    g.add_argument("--cfg-scale", type=float, default=0.0)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--cache", choices=["none", "prefix", "dual"], default="none",
                   help="Fast-dLLM's block KV cache (labkit.models.kv_cache; masked models with a KV-cache pass)")
    g.add_argument("--gpu-path", action="store_true", help="lk.Accel.GPU: no per-step device reads or timing "
                   "(same tokens; steps are not timed one by one)")
    g.add_argument("--compile", choices=["none", "default", "reduce-overhead", "max-autotune"], default="none",
                   help="torch.compile the forward pass (reduce-overhead: CUDA graphs on a GPU; same tokens)")


def run(a) -> int:
    from .. import defaults
    from ..accel import Accel
    from ..decode import generate

    # everything that needs no model is checked first, so bad input fails before the model loads
    html_path = output_file(a.html, "--html", ".html")
    trace_path = output_file(a.trace, "--trace", ".npz")
    name, sampler, notes = rule_before_load(a)
    controls = controls_from_flags(a)
    lm = load_model(a)
    name, sampler = rule_after_load(a, lm, name, sampler, notes)
    prompt = a.prompt if a.prompt.endswith("\n") or not a.prompt.endswith(":") else a.prompt + "\n"
    if a.chat:
        from ..decode import chat_text
        prompt = chat_text(lm, [{"role": "user", "content": a.prompt}])
    model = fast_model(lm, a.cache, a.compile)
    t0 = time.perf_counter()
    out = generate(model, prompt, sampler, gen_length=a.gen_length, block_length=a.block_length,
                   steps=a.steps, cfg_scale=a.cfg_scale, seed=a.seed, eos_early_stop=a.eos_early_stop,
                   penalty_lambda=a.penalty_lambda, controls=controls, accel=Accel.GPU if a.gpu_path else None)
    seconds = time.perf_counter() - t0
    print(prompt + out.text)
    print(f"--- NFE {out.stats['nfe']} · {out.stats['gen_tokens']} tokens · "
          f"TPF {out.stats['tpf']:.2f} · {seconds:.2f} s · {out.stats['tps']:.1f} tok/s", file=sys.stderr)
    parallel = defaults.parallel_note(lm.name, name, out.stats["tpf"])
    if parallel:
        note(parallel)
    if html_path:
        from ..ui.viz import to_html
        path = to_html(out.trace, lm, html_path, title=f"{lm.name}: {prompt.strip()}", stats=out.stats)
        print(f"step-through view written to {path}", file=sys.stderr)
    if trace_path:
        print(f"trace written to {out.trace.save(trace_path)}", file=sys.stderr)
    return 0


def fast_model(lm, cache: str, compile_mode: str):
    """The model behind --cache and --compile: a KV-cache wrapper (compiled passes) or a compiled forward."""
    from ..accel import compiled
    from ..models.kv_cache import DualCache, PrefixCache

    mode = None if compile_mode == "none" else compile_mode
    if cache != "none":
        return {"prefix": PrefixCache, "dual": DualCache}[cache](lm, compile=mode)
    return lm if mode is None else compiled(lm, mode)


def rule_before_load(a):
    """(rule name, rule object, notes) from the flags, every knob checked that needs no model, so
    bad input fails before the model loads. Picks the model when --model is not given (S / Q mode
    on the lab's model that can run them)."""
    from .. import defaults
    from ..decode import check_knobs, check_seed
    from ..models.load import embedded_kind
    from ..samplers import registry

    chosen = a.model is not None
    if not chosen:
        a.model = defaults.PARALLEL_MODEL if a.sampler in registry.PRESETS else defaults.MODEL
    causal = embedded_kind(a.model) == "causal"  # known before loading for the embedded models
    name, sampler, notes = sampler_from_flags(a, default="autoregressive" if causal else "low_confidence")
    if a.sampler is not None or embedded_kind(a.model) is not None:   # else the model's family picks the rule
        check_knobs(sampler, **_knobs(a))
    check_seed(a.seed)
    if not chosen and a.sampler in registry.PRESETS:
        notes.insert(0, f"{a.sampler} mode runs on {a.model}, the lab's model for parallel decoding "
                        f"(choose another with --model)")
    return name, sampler, notes


def rule_after_load(a, lm, name: str, sampler, notes: list[str]):
    """The rule for the loaded model (a causal model: autoregressive; a family with its own rule,
    e.g. LLaDA2.x: quality, unless --sampler says otherwise), checked again; prints the notes."""
    from ..decode import check_knobs

    own = lm.family.default_sampler if lm.family is not None else None
    if a.sampler is None and lm.kind == "causal" and name != "autoregressive":
        name, sampler, notes = sampler_from_flags(a, default="autoregressive")     # its flags checked again
    elif a.sampler is None and own is not None and name != own:
        name, sampler, notes = sampler_from_flags(a, default=own)
    check_knobs(sampler, **_knobs(a))
    for text in notes:
        note(text)
    return name, sampler


def _knobs(a) -> dict:
    return dict(gen_length=a.gen_length, block_length=a.block_length, steps=a.steps, cfg_scale=a.cfg_scale,
                penalty_lambda=a.penalty_lambda)


def controls_from_flags(a) -> list:
    from ..controls import Ban, Keywords, Pin

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
    from .. import defaults
    from ..samplers import registry

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
    flags = {"threshold": a.threshold, "editing_threshold": a.editing_threshold, "factor": a.factor,
             "entropy_bound": a.entropy_bound}
    for knob, value in flags.items():
        if value is not None and knob not in registry.knobs(name):
            reads = sorted(registry.knobs(name) & set(flags))
            raise ValueError(f"--{knob.replace('_', '-')}: not read by sampler {name!r}"
                             + (f" (it reads {', '.join('--' + r.replace('_', '-') for r in reads)})" if reads
                                else f"; use --sampler {' or '.join(registry.readers(knob))}"))
    if a.steps_given and not registry.budgeted(name):
        notes.append(f"--steps is ignored by sampler {name!r}: it runs each block until it is done")
    a.steps = defaults.STEPS if a.steps is None else a.steps
    return name, registry.rule(name, **registry.sampling(temperature, a.top_p), **flags), notes
