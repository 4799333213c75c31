"""Where the lab's checkout is: the clone of the lab's repository, which holds what the installed
package does not ship (the notebooks, the course and benchmarks/results with the committed
figures and the doctor's reference time).

`import labkit`, `labkit generate`, `labkit serve` and `labkit doctor` need no checkout (the models
are package data, labkit/weights); what reads the checkout asks `root(what)` for it, which names
`what` and how to get one when there is none.

The checkout is found in one place (`find`), in this order: the one this package was imported from (an editable
install, or a virtual environment inside the clone), so the code and the notebooks it teaches with
belong together; else the first from the current directory upwards.
"""
from __future__ import annotations

import re
from pathlib import Path

__all__ = ["HOW", "NoCheckout", "find", "is_checkout", "root"]

_PROJECT = re.compile(r'^name\s*=\s*"labkit"\s*$', re.M)        # pyproject.toml's [project] name
HOW = ("clone the lab's repository and run this from inside the clone (`pip install -e .` there "
       "makes it the default wherever you run)")


class NoCheckout(FileNotFoundError):
    """Something needs the lab's checkout and there is none here (a FileNotFoundError, so the
    command reports it as one line)."""


def is_checkout(folder: Path) -> bool:
    """A folder is the lab's checkout when it holds notebooks/ and a pyproject.toml naming labkit."""
    project = folder / "pyproject.toml"
    return (folder / "notebooks").is_dir() and project.is_file() and bool(_PROJECT.search(project.read_text()))


def find(start: str | Path | None = None) -> Path | None:
    """The lab's checkout: the one above this package if it sits in one, else the first folder from
    `start` (default: the current directory) upwards that is one; None if neither finds one."""
    for begin in (Path(__file__).resolve().parent, Path.cwd() if start is None else Path(start).resolve()):
        found = next((f for f in (begin, *begin.parents) if is_checkout(f)), None)
        if found is not None:
            return found
    return None


def root(what: str, start: str | Path | None = None) -> Path:
    """The lab's checkout, or NoCheckout saying that `what` needs it and how to get it."""
    found = find(start)
    if found is None:
        where = Path.cwd() if start is None else Path(start).resolve()
        raise NoCheckout(f"{what} needs the lab's checkout (it is not part of the installed package), and none "
                         f"was found from {where} upwards: {HOW}")
    return found
