"""`python -m benchmarks.docgen` (from the repository root): every generated part of docs/models.md
and docs/benchmarks.md written again from benchmarks/results/, and every embedded model's card from
its folder (`git diff docs labkit/weights` shows what moved).
`python -m benchmarks.docgen cards [NAME...]`: the model cards only, of every embedded model with an
eval.json or of the models named (an embedded name or a folder)."""
import sys
from pathlib import Path

from . import benchmarks_md, cards, models_md
from .markdown import ROOT

USAGE = "usage: python -m benchmarks.docgen [cards [NAME...]]"


def _shown(path: Path) -> Path:
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def main(argv: list[str]) -> int:
    if argv and argv[0] != "cards":
        print(USAGE, file=sys.stderr)
        return 2
    if not argv:
        for write in (models_md.write_tasks, models_md.write_editor, models_md.write_rl_search, models_md.write_rl,
                      models_md.write_blocks, models_md.write_llada21, benchmarks_md.write):
            print(f"written: {_shown(write())} ({write.__name__})")
    for path in cards.write(argv[1:]):
        print(f"written: {_shown(path)} (card)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
