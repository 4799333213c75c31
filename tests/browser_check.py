"""Real-browser check of every notebook: `make browser-check` (not collected by pytest).

Starts JupyterLab (galata's test server config, loopback only, no token) on a temporary copy of
notebooks/, drives Debian's chromium through playwright, runs all cells of each notebook and
asserts, per notebook:
- no cell has an error output and every code cell ran;
- every plotly figure in the outputs is rendered (`.js-plotly-plot` count ≥ figures stored);
- before any cell runs (the fresh kernel holds no widget), every stored panel is drawn from the
  notebook's saved widget state: its sliders and its heatmaps are on the page (the notebooks are
  trusted first, as `make lab` does: JupyterLab shows an untrusted notebook's widget views as text);
- every widget panel rendered its sliders (`.widget-slider`);
- in every panel (Lab, Compare), dragging the step slider to step 0 moves every heatmap's step
  marker as drawn (the marker's SVG path) and changes the token grid;
- pressing the first panel's Generate turns it into Stop with a progress line while it decodes,
  then back into Generate.
Screenshots go to --shots (default build/browser); --docs also copies the quickstart and the lab
panel screenshots to docs/ for the README.

    python tests/browser_check.py [--chromium /usr/bin/chromium] [--only 05_lab_panel.ipynb]
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLOTLY_MIME = "application/vnd.plotly.v1+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
DOCS_SHOTS = {"01_quickstart.ipynb": "quickstart.png", "05_lab_panel.ipynb": "lab_panel.png"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_lab(root: Path, port: int, log) -> subprocess.Popen:
    settings = root.parent / "settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    # Render every cell (no virtual scrolling): figures below the fold must exist in the DOM.
    (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    notify = root.parent / "settings" / "@jupyterlab" / "apputils-extension"
    notify.mkdir(parents=True)
    (notify / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    cfg = root.parent / "jupyter_server_config.py"
    cfg.write_text(
        "from jupyterlab.galata import configure_jupyter_server\n"
        "configure_jupyter_server(c)\n"
        f"c.ServerApp.ip = '127.0.0.1'\nc.ServerApp.port = {port}\n"
        f"c.ServerApp.root_dir = {str(root)!r}\nc.ServerApp.allow_root = True\n"
        f"c.LabApp.user_settings_dir = {str(root.parent / 'settings')!r}\n"
        "c.LabApp.news_url = None\nc.LabApp.check_for_updates_class = 'jupyterlab.NeverCheckForUpdate'\n")
    proc = subprocess.Popen([sys.executable, "-m", "jupyter", "lab", f"--config={cfg}"],
                            stdout=log, stderr=subprocess.STDOUT, cwd=root)
    for _ in range(120):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/lab", timeout=2)
            return proc
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {proc.returncode}; see {log.name}") from None
            time.sleep(1)
    proc.terminate()
    raise RuntimeError(f"jupyter lab did not answer on port {port} within 120 s; see {log.name}")


def notebook_json(page) -> dict:
    return page.evaluate("() => window.jupyterapp.shell.currentWidget.context.model.toJSON()")


def wait_until_run(page, timeout_s: float) -> dict:
    """Poll the open notebook's model until every code cell has an execution count and the
    kernel is idle."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        busy = page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.session"
                             "?.kernel?.status !== 'idle'")
        nb = notebook_json(page)
        code = [c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]
        failed = any(o["output_type"] == "error" for c in code for o in c.get("outputs", []))
        if not busy and (failed or all(c.get("execution_count") for c in code)):
            return nb                                   # run-all stops at the first error
        time.sleep(1)
    pending = [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"
               and "".join(c["source"]).strip() and not c.get("execution_count")]
    raise TimeoutError(f"after {timeout_s:.0f} s cells {pending} have not run (kernel busy: {busy})")


def check_notebook(page, base: str, name: str, shots: Path, timeout_s: float) -> dict:
    page.goto(f"{base}/lab/tree/{name}?reset")        # ?reset: no tabs restored from earlier pages
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
                           " && window.jupyterapp.shell.currentWidget.context"
                           " && window.jupyterapp.shell.currentWidget.sessionContext.session", timeout=120_000)
    page.wait_for_function("() => window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel"
                           "?.status === 'idle'", timeout=120_000)
    nb_id = page.evaluate("() => window.jupyterapp.shell.currentWidget.node.id")
    panel = page.locator(f"[id='{nb_id}']")                # count only inside this notebook
    problems = []
    saved = saved_panels(page, panel, panel_outputs(notebook_json(page)))
    if saved is not None and not (saved["sliders"] and saved["heatmaps"]):
        problems.append(f"before running: {saved} (want the stored panels drawn from the notebook's widget "
                        f"state; execute it with --ExecutePreprocessor.store_widget_state=True)")
    if saved is not None:
        shoot(page, shots / name.replace(".ipynb", ".saved.png"), panel=True)
    t0 = time.time()
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    time.sleep(2)
    nb = wait_until_run(page, timeout_s)
    outputs = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]
    problems += [f"error output: {o.get('ename')}: {o.get('evalue')}" for o in outputs if o["output_type"] == "error"]
    n_plotly = sum(PLOTLY_MIME in o.get("data", {}) for o in outputs)
    n_panels = panel_outputs(nb)
    if n_plotly:
        # plotly's JupyterLab renderer shows a figure's PNG (labkit's static twin) first and draws the
        # live graph when the pointer enters it: hover each figure, as a reader does
        shown = panel.locator(".jp-RenderedPlotly")
        for i in range(shown.count()):
            try:
                shown.nth(i).scroll_into_view_if_needed(timeout=5_000)
                shown.nth(i).hover(timeout=5_000)
            except Exception:
                pass
        try:
            page.wait_for_function(f"() => document.getElementById('{nb_id}')"
                                   f".querySelectorAll('.js-plotly-plot').length >= {n_plotly}", timeout=60_000)
        except Exception:
            pass
    rendered = panel.locator(".js-plotly-plot").count()
    if rendered < n_plotly:
        problems.append(f"{n_plotly} plotly figures stored but {rendered} rendered")
    result = {"notebook": name, "seconds": round(time.time() - t0, 1), "plotly_stored": n_plotly,
              "plotly_rendered": rendered, "widget_outputs": n_panels, "saved_state": saved}
    if n_panels:
        try:
            panel.locator(".widget-slider").first.wait_for(timeout=60_000)
        except Exception:
            pass
        sliders = panel.locator(".widget-slider").count()
        result["sliders"] = sliders
        if not sliders:
            problems.append("widget outputs stored but no slider rendered")
        else:
            result["panels"] = panels_follow_the_slider(page, panel)
            for p in result["panels"]:
                if not p["markers"]:
                    problems.append(f"panel {p['panel']}: no heatmap with a step marker was drawn")
                elif p["markers_moved"] < p["markers"]:
                    problems.append(f"panel {p['panel']}: dragging the step slider moved "
                                    f"{p['markers_moved']} of {p['markers']} heatmap step markers")
                if not p["grid_changed"]:
                    problems.append(f"panel {p['panel']}: dragging the step slider left the token grid as it was")
            live = generate_runs_live(page, panel)
            if live is not None:
                result["generate_live"] = live
                if not (live["saw_stop"] and live["progress"] and live["back_to_generate"]):
                    problems.append(f"pressing Generate: {live} (want Stop and a progress line while "
                                    f"decoding, then Generate again)")
    shoot(page, shots / name.replace(".ipynb", ".png"), panel=bool(n_panels))
    result["problems"] = problems
    return result


def panel_outputs(nb: dict) -> int:
    """Widget views in the cells that build the lab's panels (lk.widgets.Lab / Compare); other
    widget outputs (tqdm's progress bars) have no slider."""
    return sum(WIDGET_MIME in o.get("data", {}) for c in nb["cells"] if c["cell_type"] == "code"
               and "widgets." in "".join(c["source"]) for o in c.get("outputs", []))


def saved_panels(page, panel, stored: int) -> dict | None:
    """What the page draws of the stored panels before any cell has run: the kernel is fresh and
    holds no widget, so what is drawn comes from the widget state saved in the notebook. None when
    the notebook stores no panel."""
    if not stored:
        return None
    try:
        panel.locator(".widget-slider").first.wait_for(timeout=60_000)
        panel.locator(".widget-vbox .js-plotly-plot").first.wait_for(timeout=60_000)
    except Exception:
        pass
    return {"stored_panels": stored, "sliders": panel.locator(".widget-slider").count(),
            "heatmaps": panel.locator(".widget-vbox .js-plotly-plot").count()}


def shoot(page, path: Path, panel: bool) -> None:
    """Screenshot with the first panel (or the first plotly figure) at the top of the view; a
    panel's is taller, so its heatmaps are in the picture too."""
    if panel:
        page.set_viewport_size({"width": 1400, "height": 1800})
    first = page.locator(".widget-vbox" if panel else ".js-plotly-plot").first
    if first.count():
        first.evaluate("e => e.scrollIntoView({block: 'start'})")
        time.sleep(2)
    page.screenshot(path=str(path), full_page=False)


# For each panel (the widget box around a "step" slider that holds plotly figures): the `d`
# attribute of every heatmap's step marker (its last layout shape, drawn as an SVG path) and the
# token grid's HTML. The marker's path is what the browser drew, in pixels.
MARKERS_JS = """(slider) => {
    let root = slider;
    while (root && !root.querySelector('.js-plotly-plot')) root = root.parentElement;
    if (!root) return null;
    const markers = Array.from(root.querySelectorAll('.js-plotly-plot')).map(plot => {
        const shapes = plot._fullLayout ? plot._fullLayout.shapes || [] : [];
        const last = shapes.length ? shapes[shapes.length - 1] : null;
        if (!last || last.type !== 'rect') return null;           // a figure without a marker
        const paths = Array.from(plot.querySelectorAll('.shapelayer path[data-index]'));
        const drawn = paths.find(p => +p.getAttribute('data-index') === shapes.length - 1);
        return drawn ? drawn.getAttribute('d') : 'not drawn';
    }).filter(m => m !== null);
    const grids = Array.from(root.querySelectorAll('.lk-grid')).map(g => g.innerHTML).join('|');
    return {markers, grids};
}"""


def step_sliders(page, panel):
    return panel.locator(".widget-slider", has=page.locator("label", has_text=re.compile(r"^\s*step\s*$")))


def drag_to_start(page, slider) -> bool:
    """Drag the slider's handle to its left end, as a person would."""
    slider.scroll_into_view_if_needed()
    track = slider.locator(".noUi-target").first.bounding_box()
    handle = slider.locator(".noUi-handle").first.bounding_box()
    if not track or not handle:
        return False
    page.mouse.move(handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2)
    page.mouse.down()
    page.mouse.move(track["x"] + 2, handle["y"] + handle["height"] / 2, steps=8)   # drag to step 0
    page.mouse.up()
    return True


def panels_follow_the_slider(page, panel) -> list[dict]:
    """Drag every panel's step slider to step 0 and see, in what the browser draws, whether the
    token grid changed and every heatmap's step marker moved. One dict per panel."""
    results = []
    sliders = step_sliders(page, panel)
    for i in range(sliders.count()):
        slider = sliders.nth(i)
        before = slider.evaluate(MARKERS_JS)
        if before is None or not drag_to_start(page, slider):
            results.append({"panel": i, "markers": 0, "markers_moved": 0, "grid_changed": False})
            continue
        after = before
        for _ in range(30):                 # the kernel round trip re-renders the views
            time.sleep(0.5)
            after = slider.evaluate(MARKERS_JS)
            moved = sum(a != b for a, b in zip(after["markers"], before["markers"]))
            if moved == len(before["markers"]) and after["grids"] != before["grids"]:
                break
        results.append({"panel": i, "markers": len(before["markers"]),
                        "markers_moved": sum(a != b for a, b in zip(after["markers"], before["markers"])),
                        "grid_changed": after["grids"] != before["grids"]})
    return results


def generate_runs_live(page, panel) -> dict | None:
    """Press the first panel's Generate and watch it: the button must turn into Stop and a
    progress line count steps while the run decodes, then Generate come back."""
    found = panel.locator("button", has_text=re.compile(r"^\s*Generate\s*$")).first
    if not found.count():
        return None
    button = found.element_handle()         # this very button, whatever its label becomes
    button.scroll_into_view_if_needed()
    # A short run can show and clear its progress line between two polls: record every change
    # the page receives instead of sampling it.
    panel.evaluate("""el => {
        window.__progress = [];
        const seen = () => { const m = el.textContent.match(/decoding: step \\d+[^\\n]*/);
                             if (m) window.__progress.push(m[0]); };
        new MutationObserver(seen).observe(el, {subtree: true, childList: true, characterData: true});
    }""")
    button.click()
    seen_stop, progress = False, ""
    deadline = time.time() + 60
    while time.time() < deadline:
        label = button.inner_text().strip()
        seen_stop |= label == "Stop"
        text = panel.locator("text=/decoding: step \\d+/").first
        if text.count():
            progress = progress or text.inner_text()
        if label == "Generate" and (seen_stop or time.time() > deadline - 50):
            break
        time.sleep(0.05)
    progress = progress or next(iter(page.evaluate("window.__progress || []")), "")
    return {"saw_stop": seen_stop, "progress": progress, "back_to_generate": button.inner_text().strip() == "Generate"}


def shutdown_kernels(base: str) -> None:
    """Stop every kernel through the REST API (no dialogs in the page)."""
    kernels = json.load(urllib.request.urlopen(f"{base}/api/kernels", timeout=10))
    for k in kernels:
        req = urllib.request.Request(f"{base}/api/kernels/{k['id']}", method="DELETE")
        urllib.request.urlopen(req, timeout=30)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    ap.add_argument("--only", action="append", help="notebook file name(s) to check")
    ap.add_argument("--shots", default=str(ROOT / "build" / "browser"))
    ap.add_argument("--docs", action="store_true", help="copy the README screenshots to docs/")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per notebook")
    ap.add_argument("--notebooks", default=str(ROOT / "notebooks"), help="folder of notebooks to check")
    ap.add_argument("--workers", type=int, default=1,
                    help="notebooks checked side by side, each worker with its own JupyterLab and browser (1-8)")
    ap.add_argument("--results", help="write the results here (default SHOTS/results.json)")
    args = ap.parse_args(argv)
    if not 1 <= args.workers <= 8:
        ap.error(f"--workers must be between 1 and 8, got {args.workers}")
    if not Path(args.chromium).exists():
        print(f"chromium not found at {args.chromium}: apt-get install chromium", file=sys.stderr)
        return 2
    shots = Path(args.shots)
    shots.mkdir(parents=True, exist_ok=True)
    src = Path(args.notebooks)
    names = sorted(p.name for p in src.glob("*.ipynb"))
    if args.only:
        names = [n for n in names if n in args.only]
    results_path = Path(args.results) if args.results else shots / "results.json"
    if args.workers > 1 and len(names) > 1:
        results = side_by_side(args, names, shots)
    else:
        results = check_all(args, names, shots)
    results_path.write_text(json.dumps(results, indent=1))
    if args.docs:
        (ROOT / "docs").mkdir(exist_ok=True)
        for name, png in DOCS_SHOTS.items():
            if (shots / name.replace(".ipynb", ".png")).is_file():
                shutil.copy(shots / name.replace(".ipynb", ".png"), ROOT / "docs" / png)
    failed = [r for r in results if r["problems"]]
    print(f"browser check: {len(results) - len(failed)}/{len(results)} notebooks passed")
    return 1 if failed or len(results) < len(names) or not results else 0


def side_by_side(args, names: list[str], shots: Path) -> list[dict]:
    """The notebooks split over args.workers processes of this script (round robin in name order),
    each with its own JupyterLab, browser and kernels; their results in name order."""
    groups = [names[k::args.workers] for k in range(args.workers)]
    procs = []
    for k, group in enumerate(g for g in groups if g):
        cmd = [sys.executable, __file__, "--chromium", args.chromium, "--shots", str(shots), "--timeout",
               str(args.timeout), "--notebooks", args.notebooks, "--results", str(shots / f"results-{k}.json")]
        procs.append((subprocess.Popen(cmd + [a for n in group for a in ("--only", n)]), shots / f"results-{k}.json"))
    results = []
    for proc, path in procs:
        proc.wait()
        if path.is_file():
            results += json.loads(path.read_text())
            path.unlink()
    return sorted(results, key=lambda r: r["notebook"])


def check_all(args, names: list[str], shots: Path) -> list[dict]:
    """Each notebook of `names` checked in turn in one JupyterLab and one browser."""
    from playwright.sync_api import sync_playwright

    src = Path(args.notebooks)
    with tempfile.TemporaryDirectory(prefix="labkit-browser-") as tmp:
        root = Path(tmp) / "notebooks"
        shutil.copytree(src, root, ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
        # as `make lab` does: trusted notebooks draw their stored widget views (an untrusted one shows text)
        subprocess.run([sys.executable, "-m", "jupyter", "trust", *map(str, sorted(root.glob("*.ipynb")))],
                       check=True, capture_output=True)
        for part in ("results", "docgen"):     # notebooks read ../benchmarks/results and print the docs' tables
            if (ROOT / "benchmarks" / part).is_dir():    # with ../benchmarks/docgen, as they do in the checkout
                shutil.copytree(ROOT / "benchmarks" / part, Path(tmp) / "benchmarks" / part,
                                ignore=shutil.ignore_patterns("__pycache__"))
        port = free_port()
        log = open(Path(tmp) / "lab.log", "w")
        lab = start_lab(root, port, log)
        results = []
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=args.chromium, args=FLAGS,
                                             headless=True)
                for name in names:
                    page = browser.new_page(viewport={"width": 1400, "height": 1000})
                    page.on("console", lambda m: m.type == "error" and print("console:", m.text[:300], file=sys.stderr))
                    try:
                        r = check_notebook(page, f"http://127.0.0.1:{port}", name, shots, args.timeout)
                    except Exception as e:                      # report, then go on to the next
                        r = {"notebook": name, "problems": [f"{type(e).__name__}: {e}"]}
                        page.screenshot(path=str(shots / name.replace(".ipynb", ".png")))
                    results.append(r)
                    print(json.dumps(r), flush=True)
                    page.close()
                    shutdown_kernels(f"http://127.0.0.1:{port}")
                browser.close()
        finally:
            lab.terminate()
            lab.wait(timeout=30)
            log.close()
    return results


if __name__ == "__main__":
    sys.exit(main())
