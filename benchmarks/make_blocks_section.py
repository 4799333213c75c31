"""Writes docs/models.md's section on block diffusion and conversion from benchmarks/results/blocks.json,
its targets judged from the rows and kept in it first (docgen.models_md.write_blocks;
tests/test_block_results.py checks that the committed section is the one this writes).

    python benchmarks/make_blocks_section.py     # after labkit bench blocks --out benchmarks/results
"""
from docgen.models_md import write_blocks

if __name__ == "__main__":
    print(f"written: {write_blocks()}")
