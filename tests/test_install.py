"""A non-editable install runs the lab's checkout-free commands from anywhere: the package is built
from a copy of the checkout (so no build/ or egg-info is left in it) and installed into a fresh
virtual environment, whose `labkit generate`, `labkit serve` and `labkit doctor` then run in a folder
that is no checkout; `labkit student`, which needs one, says so.

The new environment sees this one's packages (torch, transformers, ...) through a plain path
entry, not `--system-site-packages` (that would be the base interpreter's, without torch) and not
this environment's .pth files (their editable finder would import the checkout's labkit)."""
import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import httpx
import pytest

from labkit.models.load import EMBEDDED

ROOT = Path(__file__).resolve().parents[1]


def _link_or_copy(src, dst):
    try:
        os.link(src, dst)                   # the weights (135 MB) are read, never written: a link is enough
    except OSError:
        shutil.copy2(src, dst)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """(the new environment's bin folder, a working folder outside any checkout, the environment variables)."""
    tmp = tmp_path_factory.mktemp("install")
    src = tmp / "src"
    shutil.copytree(ROOT / "labkit", src / "labkit", ignore=shutil.ignore_patterns("__pycache__"),
                    copy_function=_link_or_copy)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = subprocess.check_output([str(venv / "bin" / "python"), "-c", "import sysconfig; "
                                    "print(sysconfig.get_path('purelib'))"], text=True).strip()
    (Path(site) / "outer-env.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--quiet",
                    "--no-deps", "--no-build-isolation", "--no-compile", str(src)], check=True)
    work = tmp / "work"
    work.mkdir()
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return venv / "bin", work, {**environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "LABKIT_THREADS": "1"}


def _run(env, *argv):
    bin_dir, work, environ = env
    return subprocess.run([str(bin_dir / argv[0]), *argv[1:]], cwd=work, env=environ, capture_output=True,
                          text=True, timeout=300)


def test_the_installed_package_is_the_copy_not_the_checkout(env):
    r = _run(env, "python", "-c", "import labkit; print(labkit.__file__)")
    assert r.returncode == 0, r.stderr
    path = Path(r.stdout.strip())
    assert path.is_relative_to(env[0].parent) and not path.is_relative_to(ROOT), path
    assert (path.parent / "weights" / "tiny" / "config.json").is_file(), "the weights are package data"


def test_generate_runs_outside_a_checkout(env):
    r = _run(env, "labkit", "generate", "--gen-length", "16", "--block-length", "16", "--steps", "16", "ROMEO:")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ROMEO:") and len(r.stdout.strip()) > len("ROMEO:") + 8, r.stdout


def test_serve_answers_outside_a_checkout(env):
    bin_dir, work, environ = env
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([str(bin_dir / "labkit"), "serve", "--model", "tiny", "--port", str(port)], cwd=work,
                              env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and server.poll() is None:
            try:
                if httpx.get(url + "/models", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.5)
        assert server.poll() is None, server.stderr.read()
        r = httpx.post(url + "/completions", json={"model": "tiny", "prompt": "ROMEO:\n", "max_tokens": 8,
                                                   "temperature": 0}, timeout=60)
        assert r.status_code == 200 and r.json()["choices"][0]["text"], r.text
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_doctor_names_what_needs_the_checkout_instead_of_failing(env):
    r = _run(env, "labkit", "doctor", "--json", "--no-timing")       # the timed check without a checkout: test_doctor
    assert "Traceback" not in r.stderr, r.stderr
    checks = {c["name"]: c for c in json.loads(r.stdout)}
    assert all(checks[f"model {name}"]["ok"] for name in EMBEDDED), "every embedded model loads from the wheel"
    where = checks["checkout"]
    assert not where["ok"] and not where["needed"] and str(env[1]) in where["detail"]
    for what in ("the notebooks", "labkit student", "labkit slides", "doctor.json"):
        assert what in where["detail"], where
    failing = {name for name, c in checks.items() if not c["ok"] and c["needed"]}
    assert failing <= {"widget extension"}, failing    # the new environment has no JupyterLab extension folder
    assert r.returncode == (1 if failing else 0)


def test_a_command_that_needs_the_checkout_says_so(env):
    r = _run(env, "labkit", "student", "--out", "copies")
    assert r.returncode == 2 and "needs the lab's checkout" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (env[1] / "copies").exists()
