"""`labkit doctor`: each check on this machine, and its non-zero exit with the fix on planted faults
(a missing or disabled widget extension, a model that does not load, a slow machine)."""
import json

from labkit.cli import doctor


def _extension(root):
    pkg = root / "labextensions" / "@jupyter-widgets" / "jupyterlab-manager"
    pkg.mkdir(parents=True)
    (pkg / "package.json").write_text("{}")
    return root / "labextensions"


def test_this_environment_is_ready(tmp_path):
    checks = doctor.run(models=["tiny"], timing=False)
    assert doctor.exit_status(checks) == 0, doctor.report(checks)
    names = [c.name for c in checks]
    assert names == ["python", "torch", "jupyterlab", "ipywidgets", "widget extension", "model tiny", "checkout"]
    assert "ready for the lab" in doctor.report(checks)


def test_without_a_checkout_the_report_names_what_needs_one_and_does_not_fail(monkeypatch):
    monkeypatch.setattr(doctor.checkout, "find", lambda start=None: None)
    monkeypatch.setattr(doctor, "generation_seconds", lambda: 0.4)
    checks = doctor.run(models=["tiny"])
    text = doctor.report(checks)
    assert doctor.exit_status(checks) == 0, text
    assert "warn checkout" in text and "labkit slides" in text and "the notebooks" in text
    assert "clone the lab's repository" in text
    speed = next(c for c in checks if c.name == "speed")
    assert speed.ok and "benchmarks/results/doctor.json, is in the lab's checkout" in speed.detail


def test_a_missing_widget_extension_fails_with_its_fix(tmp_path):
    checks = doctor.jupyter_checks(data_dirs=[tmp_path], config_dirs=[tmp_path])
    bad = [c for c in checks if not c.ok]
    assert [c.name for c in bad] == ["widget extension"] and "jupyterlab_widgets" in bad[0].fix
    assert doctor.exit_status(checks) == 1 and "FAIL widget extension" in doctor.report(checks)


def test_a_disabled_widget_extension_fails_with_the_command_that_enables_it(tmp_path):
    data = _extension(tmp_path)
    (tmp_path / "labconfig").mkdir()
    (tmp_path / "labconfig" / "page_config.json").write_text(json.dumps({"disabledExtensions": {doctor.WIDGETS: True}}))
    bad = [c for c in doctor.jupyter_checks(data_dirs=[data], config_dirs=[tmp_path]) if not c.ok]
    assert len(bad) == 1 and bad[0].fix == f"jupyter labextension enable {doctor.WIDGETS}"
    (tmp_path / "labconfig" / "page_config.json").write_text(json.dumps({"disabledExtensions": {doctor.WIDGETS: False}}))
    assert all(c.ok for c in doctor.jupyter_checks(data_dirs=[data], config_dirs=[tmp_path]))


def test_a_model_that_does_not_load_fails_and_the_others_are_still_checked():
    checks = doctor.model_checks(["no-such-model", "tiny-sudoku"])
    assert [c.ok for c in checks] == [False, True] and "does not load" in checks[0].detail
    assert doctor.exit_status(checks) == 1


def test_a_slow_machine_is_a_warning_not_a_failure(tmp_path):
    ref = tmp_path / "doctor.json"
    ref.write_text(json.dumps({"generate_64_s": 0.5}))
    slow, fine = doctor.speed_check(5.0, ref), doctor.speed_check(0.6, ref)
    assert not slow.ok and not slow.needed and "10.0x" in slow.detail and fine.ok
    assert doctor.exit_status([slow]) == 0 and "warn speed" in doctor.report([slow])
    assert doctor.speed_check(1.0, tmp_path / "none.json").ok


def test_the_command_line_exits_non_zero_on_a_fault(monkeypatch, capsys):
    from labkit.cli.main import main

    monkeypatch.setattr(doctor, "widget_extension", lambda *a: ([], []))
    assert main(["doctor", "--no-timing", "--json"]) == 1
    checks = json.loads(capsys.readouterr().out)
    assert {c["name"] for c in checks if not c["ok"]} == {"widget extension"}
    from labkit.models.load import EMBEDDED
    assert sum(c["name"].startswith("model ") for c in checks) == len(EMBEDDED)


def test_the_install_figures_in_readme_and_handouts_are_the_measured_ones():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    r = json.loads((root / "benchmarks" / "results" / "install.json").read_text())
    gb = f"{r['venv_mb'] / 1000:.1f} GB"
    readme = " ".join((root / "README.md").read_text().split())
    assert f"took {r['seconds']} s and the `.venv` holds {gb}" in readme
    assert f"用了 {r['seconds']} 秒，`.venv` 占 {gb}" in (root / "docs" / "README.zh-CN.md").read_text()
    assert f"about {round(r['seconds'] / 60)} minutes and {gb}" in (root / "docs" / "handout.md").read_text()
    assert f"约 {round(r['seconds'] / 60)} 分钟，占 {gb}" in (root / "docs" / "handout.zh-CN.md").read_text()
