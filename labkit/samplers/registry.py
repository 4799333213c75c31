"""The lab's one list of rule names: what the panel, the command line and `generate(lm, p, "speed")`
offer, which knobs each rule reads, and how a name plus knobs becomes a rule object.

    rule("speed")                          # DraftEdit.speed(): LLaDA2.1's S mode
    rule("threshold", threshold=0.7)       # Threshold(threshold=0.7)
    rule("low_confidence", threshold=0.7)  # ValueError: low_confidence does not read threshold
    resolve("quality") / resolve(Threshold())   # a name or a rule object → a rule object

A knob given as None counts as not given (the rule's own default applies).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .autoregressive import Autoregressive
from .base import Rule, Sampler
from .draft_edit import DraftEdit
from .low_confidence import LowConfidence
from .threshold import EntropyBound, Threshold

SAMPLING = frozenset({"temperature", "top_k", "top_p"})
DEFAULT_TOP_P = 0.9   # the nucleus the lab samples from at temperature > 0 unless told (defaults.TOP_P)


@dataclass(frozen=True)
class Entry:
    build: Callable[..., Rule]        # knobs → rule object
    knobs: frozenset[str]             # the knobs it reads besides temperature / top_k / top_p
    summary: str

    @property
    def budgeted(self) -> bool:       # spends the `steps` budget (else runs until blocks are done)
        return self.build().uses_step_budget

    @property
    def kinds(self) -> tuple[str, ...]:   # the model kinds the lab offers it for
        return ("causal",) if self.build().decodes_causal else ("masked",)


_EDIT = frozenset({"threshold", "editing_threshold"})
RULES: dict[str, Entry] = {
    "low_confidence": Entry(lambda **k: LowConfidence(**k), frozenset(),
                            "LLaDA: commit the most confident masks, a fixed number per step"),
    "random": Entry(lambda **k: LowConfidence(remasking="random", **k), frozenset(),
                    "LLaDA's random remasking: a fixed number per step, positions at random"),
    "threshold": Entry(lambda **k: Threshold(**k), frozenset({"threshold"}),
                       "Fast-dLLM: commit every mask whose confidence clears the threshold"),
    "factor": Entry(lambda factor=1.0, **k: Threshold(threshold=None, factor=factor, **k), frozenset({"factor"}),
                    "Fast-dLLM's factor rule: as many as its error bound allows"),
    "entropy_bound": Entry(lambda **k: EntropyBound(**k), frozenset({"entropy_bound"}),
                           "EB-sampler: commit the surest masks while their entropy sum stays bounded"),
    "draft_edit": Entry(lambda **k: DraftEdit(**k), _EDIT,
                        "LLaDA2.1: draft masks above threshold, edit tokens above editing_threshold"),
    "speed": Entry(lambda **k: DraftEdit.speed(**k), _EDIT, "LLaDA2.1's S mode: draft_edit with thresholds "
                   f"{DraftEdit.speed().threshold} / {DraftEdit.speed().editing_threshold}"),
    "quality": Entry(lambda **k: DraftEdit.quality(**k), _EDIT, "LLaDA2.1's Q mode: draft_edit with thresholds "
                     f"{DraftEdit.quality().threshold} / {DraftEdit.quality().editing_threshold}"),
    "autoregressive": Entry(lambda **k: Autoregressive(**k), frozenset(),
                            "left to right, one token per step (the only rule for a causal model)"),
}
NAMES = tuple(RULES)
PRESETS = ("speed", "quality")        # the S and Q modes: DraftEdit's presets, by name


def knobs(name: str) -> frozenset[str]:
    """Every knob rule `name` reads, sampling knobs included."""
    return _entry(name).knobs | SAMPLING


def readers(knob: str) -> list[str]:
    """The rule names that read `knob`."""
    return [n for n in NAMES if knob in RULES[n].knobs | SAMPLING]


def budgeted(name: str) -> bool:
    return _entry(name).budgeted


def names_for(kind: str) -> tuple[str, ...]:
    """The rule names the lab offers for a model of this kind ("masked" or "causal")."""
    return tuple(n for n in NAMES if kind in RULES[n].kinds)


def sampling(temperature: float, top_p: float | None = None) -> dict:
    """The sampling knobs as the lab fills them in: at temperature > 0 a top_p not given is
    DEFAULT_TOP_P; at temperature 0 (greedy) top_p is None."""
    if temperature > 0:
        return {"temperature": temperature, "top_p": DEFAULT_TOP_P if top_p is None else top_p}
    return {"temperature": temperature, "top_p": None}


def rule(name: str, **given):
    """The rule object for `name` with these knobs (None = not given). A knob the rule does not
    read is an error that names the knobs it does read."""
    entry = _entry(name)
    given = {k: v for k, v in given.items() if v is not None}
    unused = sorted(set(given) - entry.knobs - SAMPLING)
    if unused:
        reads = ", ".join(sorted(entry.knobs | SAMPLING))
        raise ValueError(f"{', '.join(unused)}: not read by sampler {name!r} (it reads {reads})")
    return entry.build(**given)


def resolve(sampler):
    """A rule object from a rule object or a rule name; None stays None (the loop's default)."""
    if sampler is None or isinstance(sampler, str) and sampler in RULES:
        return None if sampler is None else rule(sampler)
    if isinstance(sampler, (str, type)) or not isinstance(sampler, Sampler):
        raise ValueError(f"sampler must be a rule object (e.g. lk.Threshold(); your own rules subclass "
                         f"labkit.samplers.Rule) or one of the names {', '.join(NAMES)}; got {sampler!r}")
    return sampler


def _entry(name) -> Entry:
    if name not in RULES:
        raise ValueError(f"sampler must be one of {', '.join(NAMES)}; got {name!r}")
    return RULES[name]


__all__ = ["DEFAULT_TOP_P", "NAMES", "PRESETS", "RULES", "budgeted", "knobs", "names_for", "readers", "resolve", "rule",
           "sampling"]
