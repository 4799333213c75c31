"""How many CPU threads labkit's decoding uses, chosen so a shared machine stays fast.

torch's default is one thread per core, and its OpenMP workers spin while they wait. When another
busy process shares the cores (a classmate's kernel, a training job, the browser), those spinning
workers fight it: next to a CPU-bound neighbour the panel's first Generate took 26 s with torch's
2 threads and at most 3.2 s with one, on 2 cores, while on a quiet machine the two differed by
less than the noise (`labkit bench panel`; the table is in README.md). labkit therefore uses half
the cores (at least one) for its work.

It is applied where labkit starts work (`lk.load`, the `labkit` command), never at import, and
only until you choose: `lk.set_threads(n)` or the environment variable LABKIT_THREADS=n pins a
number, and LABKIT_THREADS=torch leaves torch's own setting alone.
"""
from __future__ import annotations

import os

import torch

ENV = "LABKIT_THREADS"
_chosen: int | None = None            # set by set_threads(); wins over everything else


def cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:                                   # not on Linux
        return os.cpu_count() or 1


def default_threads() -> int:
    return max(1, cores() // 2)


def wanted() -> int | None:
    """The thread count labkit will apply: set_threads(), else LABKIT_THREADS, else half the
    cores; None when LABKIT_THREADS=torch (leave torch's setting alone)."""
    if _chosen is not None:
        return _chosen
    env = os.environ.get(ENV, "").strip().lower()
    if env == "torch":
        return None
    if env:
        if not env.isdigit() or int(env) < 1:
            raise ValueError(f"{ENV} must be a positive integer or 'torch', got {os.environ[ENV]!r}")
        return int(env)
    return default_threads()


def apply() -> int:
    """Set torch's intra-op threads to `wanted()`; returns the number in force."""
    n = wanted()
    if n is not None and torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return torch.get_num_threads()


def set_threads(n: int | None) -> int:
    """Use `n` CPU threads for labkit's work from now on (None: back to the default policy)."""
    global _chosen
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ValueError(f"threads must be a positive integer or None, got {n!r}")
    _chosen = n
    return apply()


__all__ = ["ENV", "apply", "cores", "default_threads", "set_threads", "wanted"]
