"""Comparing step records field by field (shared by the loop and cache tests)."""
import torch

FIELDS = ("step", "block", "tokens", "candidates", "confidence", "committed", "edited", "active", "pinned")


def assert_same_record(a, b, where=""):
    """Every field of two StepRecords equal (confidence: nan at the same places, equal to the bit
    elsewhere); `seconds` is wall time and is left out."""
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor):
            torch.testing.assert_close(x, y, rtol=0, atol=0, equal_nan=True, msg=lambda m, name=name: f"{where} {name}: {m}")
        else:
            assert x == y, f"{where} {name}: {x!r} != {y!r}"
