"""The lab's one list of rules: what the panel, the command line, the server, lm-eval and
`generate(lm, p, "speed")` offer, which knobs each rule reads (described once in `knobs`), and how
a name plus knobs becomes a rule object.

    rule("speed")                          # DraftEdit.speed(): LLaDA2.1's S mode
    rule("threshold", threshold=0.7)       # Threshold(threshold=0.7)
    rule("low_confidence", threshold=0.7)  # KnobError: low_confidence does not read threshold
    resolve("quality") / resolve(Threshold())   # a name or a rule object → a rule object
    defaults("draft_edit")                 # {"threshold": 0.95, "editing_threshold": 0.9, ...}: the rule's own
    default_rule(lm)                       # the rule a model gets when none is asked for

A knob given as None counts as not given (the rule's own default applies). Adding a rule is one
entry here; a new knob is one `Knob` in `knobs.py` listed on the entries that read it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .autoregressive import Autoregressive
from .base import Rule, Sampler
from .draft_edit import DraftEdit
from .knobs import EDITING_THRESHOLD, ENTROPY_BOUND, FACTOR, SAMPLING, SCORE, THRESHOLD, Knob, KnobError
from .low_confidence import LowConfidence
from .threshold import EntropyBound, Threshold

DEFAULT_TOP_P = 0.9   # the nucleus the lab samples from at temperature > 0 unless told (defaults.TOP_P)


@dataclass(frozen=True)
class Entry:
    build: Callable[..., Rule]        # knobs → rule object
    knobs: tuple[Knob, ...]           # the knobs it reads besides the sampling ones (knobs.SAMPLING)
    summary: str

    @property
    def budgeted(self) -> bool:       # spends the `steps` budget (else runs until blocks are done)
        return self.build().uses_step_budget

    @property
    def kinds(self) -> tuple[str, ...]:   # the model kinds the lab offers it for
        return ("causal",) if self.build().decodes_causal else ("masked",)


_EDIT = (THRESHOLD, EDITING_THRESHOLD)
RULES: dict[str, Entry] = {
    "low_confidence": Entry(lambda **k: LowConfidence(**k), (SCORE,),
                            "LLaDA: commit the most confident masks, a fixed number per step"),
    "random": Entry(lambda **k: LowConfidence(remasking="random", **k), (),
                    "LLaDA's random remasking: a fixed number per step, positions at random"),
    "left_to_right": Entry(lambda **k: LowConfidence(remasking="left_to_right", **k), (),
                           "one mask per step in reading order (the order an AR model writes in)"),
    "right_to_left": Entry(lambda **k: LowConfidence(remasking="right_to_left", **k), (),
                           "one mask per step from the end backwards"),
    "threshold": Entry(lambda **k: Threshold(**k), (THRESHOLD,),
                       "Fast-dLLM: commit every mask whose confidence clears the threshold"),
    "factor": Entry(lambda factor=1.0, **k: Threshold(threshold=None, factor=factor, **k), (FACTOR,),
                    "Fast-dLLM's factor rule: as many as its error bound allows"),
    "entropy_bound": Entry(lambda **k: EntropyBound(**k), (ENTROPY_BOUND,),
                           "EB-sampler: commit the surest masks while their entropy sum stays bounded"),
    "draft_edit": Entry(lambda **k: DraftEdit(**k), _EDIT,
                        "LLaDA2.1: draft masks above threshold, edit tokens above editing_threshold"),
    "speed": Entry(lambda **k: DraftEdit.speed(**k), _EDIT, "LLaDA2.1's S mode: draft_edit with thresholds "
                   f"{DraftEdit.speed().threshold} / {DraftEdit.speed().editing_threshold}"),
    "quality": Entry(lambda **k: DraftEdit.quality(**k), _EDIT, "LLaDA2.1's Q mode: draft_edit with thresholds "
                     f"{DraftEdit.quality().threshold} / {DraftEdit.quality().editing_threshold}"),
    "autoregressive": Entry(lambda **k: Autoregressive(**k), (),
                            "left to right, one token per step (the only rule for a causal model)"),
}
NAMES = tuple(RULES)                  # the built-in names (names() also sees entries added since)
PRESETS = ("speed", "quality")        # the S and Q modes: DraftEdit's presets, by name
SAMPLING_NAMES = frozenset(k.name for k in SAMPLING)


def rule_knobs() -> dict[str, Knob]:
    """Every rule knob some entry reads, in the registry's order, by name (one description each)."""
    found: dict[str, Knob] = {}
    for name, entry in RULES.items():
        for k in entry.knobs:
            if found.setdefault(k.name, k) != k:
                raise ValueError(f"two descriptions of knob {k.name!r} (rule {name!r}): describe it once")
    return found


def all_knobs() -> dict[str, Knob]:
    """The sampling knobs and every rule knob, by name."""
    return {**{k.name: k for k in SAMPLING}, **rule_knobs()}


def knobs(name: str) -> frozenset[str]:
    """Every knob rule `name` reads, sampling knobs included."""
    return frozenset(k.name for k in _entry(name).knobs) | SAMPLING_NAMES


def readers(knob: str) -> list[str]:
    """The rule names that read `knob`."""
    return [n for n in names() if knob in knobs(n)]


def names() -> tuple[str, ...]:
    """The rule names, in the registry's order (NAMES, read now: an entry added later counts)."""
    return tuple(RULES)


def defaults(name: str) -> dict:
    """The rule's own value of each knob it reads (sampling knobs included), read off the rule object."""
    built = _entry(name).build()
    return {k: getattr(built, k) for k in sorted(knobs(name)) if hasattr(built, k)}


def default_rule(lm) -> str:
    """The rule a model gets when none is asked for: its family's own (LLaDA2.x: quality), else
    LLaDA's rule for a diffusion model and left to right for a causal one."""
    own = getattr(getattr(lm, "family", None), "default_sampler", None)
    if own is not None:
        return own
    return "autoregressive" if lm.kind == "causal" else "low_confidence"


def budgeted(name: str) -> bool:
    return _entry(name).budgeted


def names_for(kind: str) -> tuple[str, ...]:
    """The rule names the lab offers for a model of this kind ("masked" or "causal")."""
    return tuple(n for n in names() if kind in RULES[n].kinds)


def sampling(temperature: float, top_p: float | None = None) -> dict:
    """The sampling knobs as the lab fills them in: at temperature > 0 a top_p not given is
    DEFAULT_TOP_P; at temperature 0 (greedy) top_p is None."""
    if temperature > 0:
        return {"temperature": temperature, "top_p": DEFAULT_TOP_P if top_p is None else top_p}
    return {"temperature": temperature, "top_p": None}


def check_given(name: str, given: dict) -> dict:
    """The knobs given for rule `name` (None = not given), each checked against its description:
    a knob the rule does not read, or a value out of range, is a KnobError naming it."""
    entry = _entry(name)
    given = {k: v for k, v in given.items() if v is not None}
    reads = knobs(name)
    for k in sorted(given):
        if k not in reads:
            if k not in all_knobs():
                raise KnobError(k, f"{k}: not a knob of any rule (the knobs: {', '.join(sorted(all_knobs()))})")
            raise KnobError(k, f"{k}: not read by sampler {name!r} (it reads {', '.join(sorted(reads))}; "
                               f"{k} is read by {', '.join(readers(k))})")
    described = {**{k.name: k for k in SAMPLING}, **{k.name: k for k in entry.knobs}}
    return {k: described[k].check(v) for k, v in given.items()}


def rule(name: str, **given):
    """The rule object for `name` with these knobs (None = not given), each checked (KnobError)."""
    return _entry(name).build(**check_given(name, given))


def resolve(sampler):
    """A rule object from a rule object or a rule name; None stays None (the loop's default)."""
    if sampler is None or isinstance(sampler, str) and sampler in RULES:
        return None if sampler is None else rule(sampler)
    if isinstance(sampler, (str, type)) or not isinstance(sampler, Sampler):
        raise ValueError(f"sampler must be a rule object (e.g. lk.Threshold(); your own rules subclass "
                         f"labkit.samplers.Rule) or one of the names {', '.join(names())}; got {sampler!r}")
    return sampler


def _entry(name) -> Entry:
    if name not in RULES:
        raise KnobError("sampler", f"sampler must be one of {', '.join(names())}; got {name!r}")
    return RULES[name]


__all__ = ["DEFAULT_TOP_P", "NAMES", "PRESETS", "RULES", "SAMPLING_NAMES", "all_knobs", "budgeted", "check_given",
           "default_rule", "defaults", "Entry", "KnobError", "knobs", "names", "names_for", "readers", "resolve",
           "rule", "rule_knobs", "sampling"]
