"""Notebooks 07, 09 and 10 as stored: exercises with their solutions (issue 34), the loss written by hand
in notebook 10 with the derivation of its weight, the renderer of the first cell, and nothing checked or
drawn less than before is tests/test_nb_listing.py's. Read with nbformat, never executed."""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from notebook_cells import compared

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
NAMES = ("07_profiling.ipynb", "09_serving.ipynb", "10_train_from_scratch.ipynb")


def read(name):
    return nbformat.read(NOTEBOOKS / name, as_version=4)


@pytest.mark.parametrize("name", NAMES)
def test_first_cell_sets_up_the_figure_renderer(name):
    first = next(c for c in read(name).cells if c.cell_type == "code")
    assert "lk.viz.notebook_mode()" in first.source


@pytest.mark.parametrize("name", NAMES)
def test_exercises_each_have_a_checked_solution_right_after(name):
    cells = read(name).cells
    assert not any(re.search(r"^## (Things|What) to try", c.source, re.M) for c in cells if c.cell_type == "markdown")
    start = next(i for i, c in enumerate(cells) if c.cell_type == "markdown" and "## Exercises" in c.source)
    asked = [i for i, c in enumerate(cells) if i >= start and c.cell_type == "markdown"
             and re.search(r"^\*\*\d+\.\*\*", c.source, re.M)]
    assert len(asked) >= 3
    for n, i in enumerate(asked, 1):
        assert re.search(rf"^\*\*{n}\.\*\*", cells[i].source, re.M), f"exercise {n} out of order"
        solution = cells[i + 1]
        assert solution.cell_type == "code" and compared(solution), f"exercise {n}: no checked solution after it"
        assert solution.source.startswith("# NBVAL_CHECK_OUTPUT\n# Solution\n")
        assert solution.get("outputs"), f"exercise {n}: the solution has no stored output"
        assert not any(o.output_type == "error" for o in solution.outputs)
        answer = next(c for c in cells[i + 2:] if c.cell_type == "markdown")
        assert "ANSWER" not in answer.source and len(answer.source) > 100, f"exercise {n}: no answer in words"


def test_notebook_09s_exercises_use_its_servers_before_they_stop():
    cells = read("09_serving.ipynb").cells
    heads = [(i, m.group(1)) for i, c in enumerate(cells) if c.cell_type == "markdown"
             for m in re.finditer(r"^## (.+)$", c.source, re.M)]
    assert heads[-1][1] == "Stop the servers" and heads[-2][1] == "Exercises"
    solutions = [c.source for c in cells if c.cell_type == "code" and "# Solution" in c.source]
    assert not any("subprocess" in s or "launch(" in s or "start(" in s for s in solutions)


def test_notebook_10s_masked_loss_by_hand_equals_labkits_and_its_weight_is_derived():
    cells = read("10_train_from_scratch.ipynb").cells
    code = next(c for c in cells if c.cell_type == "code" and "def masked_loss_by_hand(" in c.source)
    assert compared(code)
    body = code.source.split("def masked_loss_by_hand(", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    assert len(body) <= 12, "the loss by hand stays about ten lines"
    assert "masked_diffusion_loss(logits_fn, x0, lm.mask_id, generator=gen())" in code.source
    assert "masked_loss_by_hand(logits_fn, x0, lm.mask_id, gen())" in code.source   # the same seed, so the same draws
    text = "".join(o.get("text", "") for o in code.outputs)
    by_hand, labkit = map(float, re.search(r"by hand ([\d.]+) nats per token \| labkit ([\d.]+)", text).groups())
    assert abs(by_hand - labkit) < 1e-5 and "torch.allclose: True" in text
    i = cells.index(code)
    derivation = cells[i + 1].source
    assert cells[i + 1].cell_type == "markdown" and "### Where the 1/t comes from" in derivation
    for piece in (r"q(x_t^i = \mathrm{M} \mid x_0) = t", r"\mathrm{KL}\big(q(x_s \mid x_t, x_0)", r"\frac{t-s}{t}",
                  r"\mathbb{E}_{t \sim U(0,1)}", r"\frac{1}{t} \sum_{i:\, x_t^i = \mathrm{M}}", "LLaDA", "MDLM", "SMDM",
                  r"t \cdot \frac{1}{t} = 1"):
        assert piece in derivation, piece


def test_notebook_10s_default_budget_fits_its_150_seconds():
    budget = next(c.source for c in read("10_train_from_scratch.ipynb").cells
                  if c.cell_type == "code" and "BUDGET = " in c.source)
    default = float(re.search(r'"LABKIT_SCRATCH_SECONDS", "(\d+)"', budget).group(1))
    assert 2 * 1.5 * default <= 100           # two trainings at their 1.5 x stop leave 50 s for the rest
