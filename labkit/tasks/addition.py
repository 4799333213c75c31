"""Addition written most-significant digit first: the carry makes left to right hard.

    A42917+80655=123572         prompt "A" + a + "+" + b + "=" (each WIDTH digits, zero-padded);
                                answer the sum, WIDTH + 1 digits

The first digit of the sum depends on a carry that may start at the last column, so a
left-to-right writer must settle the whole carry chain before its first token; a diffusion
model can write the last digits first, where the carry starts.
"""
from __future__ import annotations

import random

WIDTH = 5                   # digits per operand


def make(rng: random.Random) -> tuple[int, int]:
    return rng.randrange(10 ** WIDTH), rng.randrange(10 ** WIDTH)


def prompt(a: int, b: int) -> str:
    return f"A{a:0{WIDTH}d}+{b:0{WIDTH}d}="


def answer(a: int, b: int) -> str:
    return f"{a + b:0{WIDTH + 1}d}"


def carry_chain(a: int, b: int) -> int:
    """Length of the longest run of columns a carry passes through (0: no carry at all)."""
    longest = run = carry = 0
    for i in range(WIDTH):
        s = a // 10 ** i % 10 + b // 10 ** i % 10 + carry
        carry = s >= 10
        run = run + 1 if carry else 0
        longest = max(longest, run)
    return longest
