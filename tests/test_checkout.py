"""labkit.checkout: the lab's clone found from the package or the current directory; without one,
the commands that read it say so and how to get it, and the others do not need it."""
import re
from pathlib import Path

import pytest

from labkit import checkout
from labkit.cli import common
from labkit.cli.main import build_parser, main


def _fake_checkout(folder):
    (folder / "notebooks").mkdir(parents=True)
    (folder / "pyproject.toml").write_text('[project]\nname = "labkit"\nversion = "0"\n')
    return folder


@pytest.fixture
def installed(monkeypatch, tmp_path):
    """The package as a non-editable install sees it: its files outside any checkout."""
    monkeypatch.setattr(checkout, "__file__", str(tmp_path / "site-packages" / "labkit" / "checkout.py"))
    return tmp_path


def test_this_checkout_is_found_from_the_package_wherever_the_command_runs(monkeypatch, tmp_path):
    here = checkout.find()
    assert (here / "notebooks" / "01_quickstart.ipynb").is_file() and (here / "labkit" / "checkout.py").is_file()
    monkeypatch.chdir(tmp_path)
    assert checkout.find() == checkout.root("a test") == here


def test_an_installed_package_finds_the_checkout_from_the_current_directory_upwards(installed, monkeypatch):
    clone = _fake_checkout(installed / "clone")
    (clone / "notebooks" / "zh-CN").mkdir()
    monkeypatch.chdir(clone / "notebooks" / "zh-CN")
    assert checkout.find() == clone.resolve()
    other = installed / "elsewhere"
    other.mkdir()
    (other / "pyproject.toml").write_text('[project]\nname = "labkit-fork"\n')     # not the lab's project
    (other / "notebooks").mkdir()
    assert checkout.find(other) is None


def test_without_a_checkout_what_needs_one_says_so_and_how_to_get_it(installed, monkeypatch):
    monkeypatch.chdir(installed)
    assert checkout.find() is None
    with pytest.raises(checkout.NoCheckout, match=r"^labkit student \(the teacher's notebooks\) needs the lab's "
                                                  r"checkout .* clone the lab's repository"):
        checkout.root("labkit student (the teacher's notebooks)")
    assert issubclass(checkout.NoCheckout, FileNotFoundError)
    a = build_parser().parse_args(["bench", "rl", "--out", str(installed)])
    with pytest.raises(checkout.NoCheckout, match="committed benchmark results"):
        common.bench_input(a, "tasks.json")


@pytest.mark.parametrize("argv", [["student", "--out", "copies"], ["slides", "--offline-only"]])
def test_the_commands_that_read_the_checkout_fail_in_one_line_without_it(installed, monkeypatch, capsys, argv):
    monkeypatch.chdir(installed)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"labkit {argv[0]}: error: ") and "needs the lab's checkout" in err and "Traceback" not in err
    assert not (installed / "copies").exists()


def _reaches(path, line: str):
    """The folder a `Path(__file__)...` expression on `line` of module `path` climbs to (None if it climbs not)."""
    m = re.search(r"Path\(__file__\)(?:\.resolve\(\))?((?:\.parent\b)*)(?:\.parents\[(\d+)\])?", line)
    if m is None:
        return None
    up = m.group(1).count(".parent") + (int(m.group(2)) + 1 if m.group(2) else 0)
    return path.parents[up - 1] if up else path


def test_no_module_but_checkout_reads_above_the_package():
    """Package data is read inside the package (a non-editable install has nothing above it); the
    checkout only through labkit.checkout."""
    pkg = Path(checkout.__file__).resolve().parent
    climbs = {}
    for path in sorted(pkg.rglob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            reached = _reaches(path, line)
            if reached is not None:
                climbs[f"{path.relative_to(pkg)}:{n}"] = reached
    assert len(climbs) >= 4, climbs                          # the weights, the lm-eval tasks, checkout's own
    above = [where for where, reached in climbs.items() if not reached.is_relative_to(pkg)]
    assert above == [], f"these read the checkout by climbing from __file__: use labkit.checkout.root: {above}"
    assert _reaches(pkg / "cli" / "common.py", 'X = Path(__file__).resolve().parents[2] / "benchmarks"') == pkg.parent
