"""Writes docs/models.md's section on the task model pairs from benchmarks/results/tasks.json and
task_seeds.json (docgen.models_md.write_tasks; tests/test_task_results.py reads the tables and the
section's claims back).

    python benchmarks/make_models_section.py     # after labkit bench tasks / task-seeds
"""
from docgen.models_md import write_tasks

if __name__ == "__main__":
    print(f"written: {write_tasks()}")
