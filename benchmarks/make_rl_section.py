"""Writes docs/models.md's section on reinforcement learning from benchmarks/results/rl.json, its
targets judged from the rows and kept in it first (docgen.models_md.write_rl;
tests/test_rl_results.py checks that the committed section is the one this writes).

    python benchmarks/make_rl_section.py     # after labkit bench rl --out benchmarks/results
"""
from docgen.models_md import write_rl

if __name__ == "__main__":
    print(f"written: {write_rl()}")
