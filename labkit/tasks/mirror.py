"""Mirror: write the letters of the prompt backwards. Every answer token is fixed by one prompt
token, the best case for parallel decoding (a confident model can commit all at once).

    Cqwertyuiop=poiuytrewq      prompt "C" + LENGTH letters + "="; answer the letters reversed
"""
from __future__ import annotations

import random
import string

LENGTH = 10


def make(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(LENGTH))


def prompt(letters: str) -> str:
    return f"C{letters}="


def answer(letters: str) -> str:
    return letters[::-1]
