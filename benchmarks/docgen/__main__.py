"""`python -m benchmarks.docgen` (from the repository root): every generated part of docs/models.md
and docs/benchmarks.md written again from benchmarks/results/ (`git diff docs` shows what moved)."""
from . import benchmarks_md, models_md

if __name__ == "__main__":
    for write in (models_md.write_tasks, models_md.write_rl, models_md.write_blocks, benchmarks_md.write):
        print(f"written: {write().relative_to(models_md.ROOT)} ({write.__name__})")
