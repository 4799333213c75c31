"""nbval settings for the notebooks, registered by the root conftest.py (so a plain
`pytest --nbval notebooks/` has them) and named again by `make test` with `-p tests.nbval_plugin`,
the same module, loaded once (kept out of notebooks/, which holds only what students open): compare
text, never rich media, timings or widget state. Figures (plotly JSON, HTML, JS, PNG) are checked by
running without error, not by bytes; tests/nbval_sanitize.cfg, the root conftest's default for
`--nbval-sanitize-with`, masks addresses, seconds, rates and ports in the text."""
SKIP = ["text/html", "application/javascript", "application/vnd.plotly.v1+json",
        "application/vnd.jupyter.widget-view+json", "image/svg+xml", "stderr"]


def pytest_collectstart(collector):
    if getattr(collector, "path", None) is not None and collector.path.suffix == ".ipynb":
        collector.skip_compare += tuple(SKIP)
