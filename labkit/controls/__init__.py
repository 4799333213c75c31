"""Content controls: hooks the decoding loop runs around every sampler rule.

A diffusion LM's canvas is whole at every step, so content can be steered by writing into it and
by shaping the logits before the rule picks. Pass any combination to `generate(..., controls=[...])`:

- `Pin(position, text)`: fixed text at a fixed offset of the answer.
- `Infill(template)`: "To be, or ___ to be"; the model writes only the gaps (`___{n}`: n tokens).
- `Keywords(words)`: each word appears somewhere, where the model finds it fits best.
- `Ban(words, eos=False)`: never write these words (and, with eos=True, no end of text).
- `Topic(words, strength)`: a soft steer: + strength on those words' logits at every step (nothing forced).
- `ReNoise(text, spans=... | ratio=...)`: re-mask part of an existing text and denoise only that.

How they act, per step (decode.stream calls `apply` before the rule and `fix` after it):
- `setup` writes fixed tokens into the canvas before step 0 and freezes them. A frozen position is
  never committed or edited by any rule (DecodeState.frozen), and the loop restores it if one tried.
- `place` may write tokens into masked positions of a live row and freeze them (keyword placement);
  those count as committed at that step.
- `bias` adds to the logits every rule reads (keyword boosts, bans).
- `fix` repairs what the rule wrote (a banned word finished by a parallel commit).

One rule holds for all of them: no end-of-text token is written before the last frozen answer
position, so a decoded answer never stops short of text the user fixed.

Keyword methods (`Keywords(method=...)`), compared in notebooks/06_controls.ipynb:
- "place" (default): at the first steps, each keyword is placed at the free span where the model
  finds it most likely (sum of log-probabilities of its tokens there, at that step's logits), one
  word per step so the next placement sees the last; then the model writes around them.
- "boost": every step adds `strength * min(1, progress / deadline)` to the logits of each missing
  keyword's first token at masked positions (progress = share of the answer decided), and to the
  next token of a keyword already begun; a keyword still missing at the deadline is placed as above.
- "boost_only": boosting without placement (no guarantee; for comparison).
Either placing method makes every keyword appear when it fits at all (`labkit bench controls`
measures hit rates and the cost in gen-PPL: docs/benchmarks.md).
Keyword tokens the model writes itself, and placed ones, are frozen: edits never touch them.
"""
from .base import Canvas, Control, apply, check, controlled_step, fix, setup
from .spans import Infill, Pin, ReNoise, parse_template
from .words import KEYWORD_METHODS, Ban, Keywords, Topic, contains_word, glue_ids, variants

__all__ = ["Ban", "Canvas", "Control", "Infill", "Keywords", "KEYWORD_METHODS", "Pin", "ReNoise", "Topic", "apply", "check",
           "contains_word", "controlled_step", "fix", "glue_ids", "parse_template", "setup", "variants"]
