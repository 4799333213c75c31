"""The two install routes name the same dependencies; the corpus split is sound."""
import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def norm(spec: str) -> str:
    return re.sub(r"\s+", "", spec).lower()


def test_environment_yml_matches_pyproject():
    py = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {norm(d) for d in py["dependencies"] if not d.startswith("torch")}
    for extra in ("lab", "dev", "serve"):
        wanted |= {norm(d) for d in py["optional-dependencies"][extra]}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert env["channels"] == ["conda-forge"]
    assert "python=3.11" in env["dependencies"]
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    got = {norm(d) for d in pip if not d.startswith(("-e", "torch"))}
    assert got == wanted
    makefile = (ROOT / "Makefile").read_text()
    torch_pin = next(d for d in pip if d.startswith("torch"))
    assert f"TORCH_SPEC  ?= {torch_pin}" in makefile        # same CPU torch pin in both routes


def test_heldout_plays_are_never_trained_on():
    from labkit.training.corpus import HELDOUT, load_plays
    train, held = load_plays("train"), load_plays("heldout")
    assert set(held) == set(HELDOUT) and len(held) >= 2
    assert not set(train) & set(held)
    assert len(train) >= 30


def test_cleaning_strips_markup_and_directions():
    from labkit.training.corpus import clean_play
    md = ("# Play\n\n## ACT I\n\n_Enter ROMEO_\n\n**ROMEO**  \nBut, soft! _Aside_ what light  \n"
          "through yonder window breaks?\n\n_Exit\nall_\n\n**Juliet**  \nAy me!\n")
    assert clean_play(md) == "ROMEO:\nBut, soft! what light\nthrough yonder window breaks?\n\nJULIET:\nAy me!\n"


def test_notebooks_are_committed_executed():
    """nbval compares only cells that were run: every code cell must carry a count and outputs
    must never be errors, and the kernel must be python3."""
    import json
    nbs = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert nbs
    for path in nbs:
        nb = json.loads(path.read_text())
        assert nb["metadata"]["kernelspec"]["name"] == "python3", path.name
        for cell in (c for c in nb["cells"] if c["cell_type"] == "code"):
            assert cell["execution_count"] is not None, f"{path.name}: unexecuted cell"
            assert not any(o["output_type"] == "error" for o in cell["outputs"]), path.name
            if "NBVAL_CHECK_OUTPUT" in "".join(cell["source"]):
                assert cell["outputs"], f"{path.name}: checked cell without stored output"


def test_make_lab_opens_notebook_01():
    """The URL `make lab` prints must open the first notebook, not JupyterLab's Launcher."""
    import subprocess
    cmd = subprocess.run(["make", "-n", "lab", "BIN=.venv/bin", "STAMP=/dev/null"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"--LabApp\.default_url=/lab/tree/(\S+)", cmd)
    assert m and "--ServerApp.root_dir=notebooks" in cmd, cmd
    assert (ROOT / "notebooks" / m.group(1)).is_file() and m.group(1).startswith("01_")
    student = subprocess.run(["make", "-n", "lab", "BIN=.venv/bin", "STAMP=/dev/null", "NOTEBOOKS=student"], cwd=ROOT,
                             capture_output=True, text=True, timeout=60).stdout     # the students' copies (make student)
    assert "--ServerApp.root_dir=student" in student and "trust student/*.ipynb" in student, student


def test_notebooks_folder_holds_only_notebooks():
    """Students open notebooks/: the nbval configuration lives in tests/."""
    names = {p.name for p in (ROOT / "notebooks").iterdir() if not p.name.startswith(".")}
    assert names and all(n.endswith(".ipynb") or n == "zh-CN" for n in names), sorted(names)
    twins = {p.name for p in (ROOT / "notebooks" / "zh-CN").iterdir() if not p.name.startswith(".")}
    assert twins and all(n.endswith(".ipynb") for n in twins), sorted(twins)     # the Chinese twins only
    assert "-p tests.nbval_plugin" in (ROOT / "Makefile").read_text()


def test_stored_widget_views_have_their_state_saved():
    """A notebook opened without a kernel (or on GitHub) draws a widget only from the state saved in
    its metadata: every stored widget view, the lab panels of notebooks 05 and 06 among them, must
    find its model there, with the models it holds."""
    import json
    view, key = "application/vnd.jupyter.widget-view+json", "application/vnd.jupyter.widget-state+json"
    with_views = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = json.loads(path.read_text())
        ids = [o["data"][view]["model_id"] for c in nb["cells"] if c["cell_type"] == "code"
               for o in c["outputs"] if view in o.get("data", {})]
        if not ids:
            continue
        with_views.append(path.name[:2])
        state = nb["metadata"].get("widgets", {}).get(key, {}).get("state", {})
        assert state, f"{path.name}: widget views stored without widget state (make notebooks stores it)"
        missing = [i for i in ids if i not in state]
        assert not missing, f"{path.name}: views of {len(missing)} widgets without saved state"
        held = {m for s in state.values() for m in re.findall(r"IPY_MODEL_([0-9a-f]+)", json.dumps(s["state"]))}
        assert held <= set(state), f"{path.name}: saved widgets refer to {len(held - set(state))} unsaved models"
    assert {"05", "06"} <= set(with_views), with_views
