"""The data of the lm-eval tasks shipped in `labkit/eval/lm_eval_tasks/` (JSONL beside their YAML),
made here, deterministically, from the held-out plays and the held-out task suite, so they run
with no network:

- `shakespeare_line_end` (multiple choice, loglikelihood): a line's first half of words, and its
  true end among the ends of three other lines of the same play of about the same length;
- `shakespeare_complete` (generation): a line's first words; the rest of the line is the target
  (exact match and word-overlap F1);
- `puzzle_*` (generation, exact match): the held-out items of `labkit.tasks` that a prompt can ask
  (Sudoku, addition, mirror, and reversal forward and in reversed surface order), the backward
  questions as an infill typed the way a masked task model reads them (`puzzle_reversal_infill`:
  `____>B`, the answer the whole fact, solved in place; a left-to-right model cannot answer), and
  `puzzle_mirror_choice` (multiple choice): a mirror question's answer among three near misses.

    python -m labkit.eval.lm_eval_data          # rewrites the JSONL files (tests check they are current)
"""
from __future__ import annotations

import json
import random
from pathlib import Path

from ..tasks import heldout, reversal
from ..training.corpus import SPEECH_BREAK, load_plays

FOLDER = Path(__file__).parent / "lm_eval_tasks"
LINE_END_ITEMS = 300
COMPLETE_ITEMS = 200
PUZZLE_ITEMS = 200
CHOICES = 4


def _speeches() -> list[tuple[str, str, list[str]]]:
    """(play, speaker, lines) of every held-out speech, in order."""
    out = []
    for play, text in load_plays("heldout").items():
        for speech in text.strip().split(SPEECH_BREAK):
            head, _, body = speech.partition(":\n")
            lines = [line for line in body.split("\n") if line.strip()]
            if head and lines:
                out.append((play, head, lines))
    return out


def shakespeare_line_end(n: int = LINE_END_ITEMS, seed: int = 0) -> list[dict]:
    """A speech's line cut after its first half of words; the choices: the true rest of the line
    and the rests of three other lines of the same play with about as many words."""
    rng = random.Random(f"line-end-{seed}")
    rests = {}
    items = []
    for play, speaker, lines in _speeches():
        for line in lines:
            words = line.split()
            if len(words) >= 6:
                k = len(words) // 2
                rest = " " + " ".join(words[k:])
                rests.setdefault(play, []).append(rest)
                items.append((play, speaker, " ".join(words[:k]), rest))
    rows = []
    for play, speaker, head, rest in rng.sample(items, min(n, len(items))):
        size = len(rest.split())
        others = sorted({r for r in rests[play] if r != rest and abs(len(r.split()) - size) <= 1})
        if len(others) < CHOICES - 1:
            continue
        choices = rng.sample(others, CHOICES - 1) + [rest]
        rng.shuffle(choices)
        rows.append({"context": f"{speaker}:\n{head}", "choices": choices, "label": choices.index(rest)})
    return rows


def shakespeare_complete(n: int = COMPLETE_ITEMS, seed: int = 0) -> list[dict]:
    rng = random.Random(f"complete-{seed}")
    pool = [(speaker, line) for _, speaker, lines in _speeches() for line in lines[:1] if len(line.split()) >= 6]
    rows = []
    for speaker, line in rng.sample(pool, min(n, len(pool))):
        words = line.split()
        k = len(words) // 2
        rows.append({"context": f"{speaker}:\n{' '.join(words[:k])}", "target": " " + " ".join(words[k:])})
    return rows


def puzzles(task: str, group: str = "", n: int = PUZZLE_ITEMS) -> list[dict]:
    items = [it for it in heldout(task) if it.infill is None and (not group or it.group == group)]
    return [{"context": it.prompt, "target": it.answer, "group": it.group} for it in items[:n]]


def reversal_infill(n: int = PUZZLE_ITEMS) -> list[dict]:
    """The backward questions as an infill of the trained layout, typed as a masked task model reads
    them (`____>B`, solved in place): the answer is the whole fact `A>B` (only a model that fills a
    gap around given text can answer; a left-to-right model cannot)."""
    items = [it for it in heldout("reversal") if it.group == "backward_infill"][:n]
    out = []
    for it in items:
        b = it.infill.split(">")[1]
        out.append({"context": "_" * reversal.NAME + ">" + b, "target": f"{it.answer}>{b}", "group": it.group})
    return out


def mirror_choice(n: int = PUZZLE_ITEMS, seed: int = 0) -> list[dict]:
    """Held-out mirror questions as multiple choice: the true answer among three near misses (two
    letters swapped, one letter changed, the letters not reversed)."""
    rng = random.Random(f"mirror-choice-{seed}")
    rows = []
    for it in heldout("mirror")[:n]:
        a = list(it.answer)
        i, j = rng.sample(range(len(a)), 2)
        while a[i] == a[j]:
            i, j = rng.sample(range(len(a)), 2)
        swapped = a[:]
        swapped[i], swapped[j] = a[j], a[i]
        changed = a[:]
        k = rng.randrange(len(a))
        changed[k] = rng.choice([c for c in "abcdefghijklmnopqrstuvwxyz" if c != a[k]])
        choices = ["".join(swapped), "".join(changed), it.answer[::-1], it.answer]
        if len(set(choices)) < CHOICES:
            continue
        rng.shuffle(choices)
        rows.append({"context": it.prompt, "choices": choices, "label": choices.index(it.answer)})
    return rows


def datasets() -> dict[str, list[dict]]:
    """Every shipped data file's rows, by file stem."""
    return {
        "shakespeare_line_end": shakespeare_line_end(),
        "shakespeare_complete": shakespeare_complete(),
        "puzzle_sudoku": puzzles("sudoku"),
        "puzzle_addition": puzzles("addition"),
        "puzzle_mirror": puzzles("mirror"),
        "puzzle_mirror_choice": mirror_choice(),
        "puzzle_reversal_forward": puzzles("reversal", "forward"),
        "puzzle_reversal_backward": puzzles("reversal", "backward_reversed"),
        "puzzle_reversal_infill": reversal_infill(),
    }


def jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def write(folder: Path = FOLDER) -> list[Path]:
    paths = []
    for stem, rows in datasets().items():
        path = folder / f"{stem}.jsonl"
        path.write_text(jsonl(rows), encoding="utf-8")
        paths.append(path)
    return paths


if __name__ == "__main__":
    for p in write():
        print(p)
