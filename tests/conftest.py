import os

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402

import labkit as lk  # noqa: E402


@pytest.fixture(scope="session")
def toy():
    return lk.toy(seed=0)


@pytest.fixture(scope="session")
def tiny():
    return lk.load("tiny")
