"""Reading blocks.json (`labkit bench blocks`): the conversion pairs, a curve's point at a step, and
the budget points where a conversion is not ahead of training from scratch (notebook 13 prints them;
the block benchmark's targets, judged beside the docs in benchmarks/docgen, read them too)."""
from __future__ import annotations

__all__ = ["PAIRS", "behind_points", "point", "sudoku_behind"]

PAIRS = {"block 4": ("block 4 from tiny-ar (LLaDA2.0)", "block 4 from scratch"),
         "full attention opened at once": ("full, opened at once from tiny-ar (Dream: tiny)", "full from scratch"),
         "full attention annealed": ("full, annealed from tiny-ar (DiffuLLaMA)", "full from scratch")}


def point(curve: dict, step: int) -> dict:
    """A curve's point (bits per token, its s.e., minutes) at `step`."""
    return next(p for p in curve["points"] if p["step"] == step)


def behind_points(result: dict, pair: str) -> list[int]:
    """The budget points (steps > 0) where the conversion is not ahead of from-scratch training."""
    conv, scratch = (result["curves"]["curves"][k] for k in PAIRS[pair])
    return [p["step"] for p in scratch["points"]
            if p["step"] and point(conv, p["step"])["bits_per_token"] >= p["bits_per_token"]]


def sudoku_behind(result: dict) -> list[int]:
    """The steps (> 0) where the converted Sudoku model is not ahead of the same recipe from scratch."""
    conv = {p["step"]: p["accuracy"] for p in result["sudoku"]["curve"]}
    return [p["step"] for p in result["sudoku"]["control"] if conv[p["step"]] <= p["accuracy"]]
