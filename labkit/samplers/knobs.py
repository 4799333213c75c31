"""Every decoding knob, described once: name, type, allowed range, one line of help, the panel's
slider. The rule registry (`registry.RULES`) says which rules read which rule knob; the panel, the
`labkit` command's flags, the server's request fields and their 400 messages, and lm-eval's
model_args are all built from these descriptions, so a knob is added in one place.

    THRESHOLD.check(1.5)      # KnobError: threshold must be a number in [0, 1], got 1.5
    THRESHOLD.flag            # "--threshold"

Three groups:
- SAMPLING: how a proposal is drawn (every rule reads them);
- rule knobs (RULE_KNOBS): read by the rules that list them in the registry;
- LOOP: the canvas and the loop (decode.generate's keywords), the same for every rule.
A knob's default is not here: a rule knob's default is the rule's own (registry.defaults), a loop
knob's is decode.generate's.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass


class KnobError(ValueError):
    """A knob value that is not allowed: `param` names the knob (the server's `param`, the CLI's flag)."""

    def __init__(self, param: str, message: str):
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class Knob:
    name: str
    kind: type                       # int, float, str or bool
    help: str                        # one line: what it does
    low: float | None = None         # allowed range (numbers): [low, high], or (low, high] with low_open
    high: float | None = None
    low_open: bool = False
    choices: tuple[str, ...] = ()    # allowed values (kind str)
    optional: bool = False           # None is allowed and means "off" (top_k)
    slider: tuple[float, float, float] | None = None   # the panel's (min, max, step); None: a box

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def allowed(self) -> str:
        """What the knob takes, in words: 'a number in [0, 1]', 'an integer >= 1', 'one of a, b'."""
        if self.kind is bool:
            return "true or false"
        if self.kind is str:
            return "one of " + ", ".join(self.choices)
        noun = "an integer" if self.kind is int else "a number"
        lo = None if self.low is None else (int(self.low) if self.kind is int else f"{self.low:g}")
        hi = None if self.high is None else (int(self.high) if self.kind is int else f"{self.high:g}")
        if self.kind is int and self.low == 1 and hi is None and not self.low_open:
            text = "a positive integer"
        elif lo is not None and hi is not None:
            text = f"{noun} in {'(' if self.low_open else '['}{lo}, {hi}]"
        elif lo is not None:
            text = f"{noun} {'>' if self.low_open else '>='} {lo}"
        else:
            text = noun
        return text + (" (or None: off)" if self.optional else "")

    def check(self, value):
        """The value as the rule takes it (an int for an int knob), or a KnobError naming the knob."""
        if value is None and self.optional:
            return None
        if not self._fits(value):
            raise KnobError(self.name, f"{self.name} must be {self.allowed()}, got {value!r}")
        return int(value) if self.kind is int else float(value) if self.kind is float else value

    def _fits(self, value) -> bool:
        if self.kind is bool:
            return isinstance(value, bool)
        if self.kind is str:
            return isinstance(value, str) and value in self.choices
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return False
        if self.kind is int and not (isinstance(value, numbers.Integral) or float(value).is_integer()):
            return False
        if isinstance(value, float) and not math.isfinite(value) and self.high is not None:
            return False
        above = self.low is None or (value > self.low if self.low_open else value >= self.low)
        return above and (self.high is None or value <= self.high)

    def parse(self, text: str):
        """A command-line or model_args string as the knob's type, checked ('none' for an optional knob)."""
        text = text.strip()
        if self.optional and text.lower() in ("none", "off"):
            return None
        try:
            if self.kind is bool:
                if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError
                value = text.lower() in ("true", "1", "yes")
            else:
                value = self.kind(float(text)) if self.kind is int and "." not in text else self.kind(text)
        except ValueError:
            raise KnobError(self.name, f"{self.name} must be {self.allowed()}, got {text!r}") from None
        return self.check(value)


# --- sampling: read by every rule ------------------------------------------------------------
TEMPERATURE = Knob("temperature", float, "softmax temperature of the proposals; 0 is greedy (argmax)",
                   low=0.0, high=2.0, slider=(0.0, 2.0, 0.05))
TOP_P = Knob("top_p", float, "sample within the smallest set of tokens holding this much probability "
             "(nucleus, at temperature > 0)", low=0.0, high=1.0, low_open=True, optional=True,
             slider=(0.05, 1.0, 0.05))
TOP_K = Knob("top_k", int, "sample among the k most likely tokens only (at temperature > 0)", low=1,
             optional=True)
SAMPLING = (TEMPERATURE, TOP_P, TOP_K)

# --- rule knobs: the registry says which rules read each ---------------------------------------
THRESHOLD = Knob("threshold", float, "commit every mask whose confidence is at or above this (τ_mask)",
                 low=0.0, high=1.0, slider=(0.05, 1.0, 0.05))
EDITING_THRESHOLD = Knob("editing_threshold", float, "rewrite a written token when another has at least "
                         "this probability (τ_edit)", low=0.0, high=1.0, slider=(0.0, 1.0, 0.05))
FACTOR = Knob("factor", float, "Fast-dLLM's factor: commit rank r while its confidence >= 1 - factor / (r + 1)",
              low=0.0, low_open=True, slider=(0.1, 4.0, 0.1))
ENTROPY_BOUND = Knob("entropy_bound", float, "EB-sampler: commit the surest masks while their entropy "
                     "sum (nats) stays within this bound", low=0.0, slider=(0.01, 2.0, 0.01))
SCORE = Knob("score", str, "what ranks the masks: the proposal's probability, its margin over the "
             "runner-up, or its negative entropy (Dream's orders)",
             choices=("probability", "margin", "neg_entropy"))

# --- loop knobs: decode.generate's, the same for every rule -----------------------------------
GEN_LENGTH = Knob("gen_length", int, "tokens on the canvas (the answer's length)", low=1, slider=(8, 256, 8))
BLOCK_LENGTH = Knob("block_length", int, "tokens per block, decoded left to right (semi-autoregressive); "
                    "gen_length must be a multiple", low=1, slider=(4, 128, 4))
STEPS = Knob("steps", int, "forward passes for the whole canvas, for rules that spend a fixed budget "
             "(low_confidence, random)", low=1, slider=(1, 256, 1))
CFG_SCALE = Knob("cfg_scale", float, "classifier-free guidance: logits + scale · (logits - logits "
                 "without the prompt); 0 is off", low=0.0)
PENALTY_LAMBDA = Knob("penalty_lambda", float, "anti-stutter: subtract this from the logit of the token "
                      "written just before each position (SGLang); 0 is off", low=0.0)
SEED = Knob("seed", int, "the random seed of a sampled run (nothing changes with it at temperature 0)",
            low=-2**63, high=2**64 - 1)
LOOP = (GEN_LENGTH, BLOCK_LENGTH, STEPS, CFG_SCALE, PENALTY_LAMBDA, SEED)


__all__ = ["BLOCK_LENGTH", "CFG_SCALE", "EDITING_THRESHOLD", "ENTROPY_BOUND", "FACTOR", "GEN_LENGTH", "LOOP", "Knob",
           "KnobError", "PENALTY_LAMBDA", "SAMPLING", "SCORE", "SEED", "STEPS", "TEMPERATURE", "THRESHOLD", "TOP_K",
           "TOP_P"]
