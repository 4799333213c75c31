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


# Files whose tests take tens of seconds each (lm-eval runs, servers, subprocesses, the GPU check on
# the CPU, compiled passes, the course's activities, a non-editable install): `make check` leaves them to `make test`.
SLOW_FILES = {"test_harness.py", "test_profile.py", "test_cli.py", "test_accel.py", "test_threads.py",
              "test_batch.py", "test_serve.py", "test_serve_clients.py", "test_endpoint.py", "test_course.py",
              "test_loop_rules.py", "test_distill.py", "test_scratch.py", "test_likelihood.py", "test_continuous.py",
              "test_install.py"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow_file)
