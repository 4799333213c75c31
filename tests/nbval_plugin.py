"""nbval settings for the notebooks, loaded by `make test` with `-p tests.nbval_plugin` (kept
out of notebooks/, which holds only what students open): compare text, never rich media, timings
or widget state. Figures (plotly JSON, HTML, JS, PNG) are checked by running without error, not
by bytes; tests/nbval_sanitize.cfg masks addresses, seconds and rates in the text."""
SKIP = ["text/html", "application/javascript", "application/vnd.plotly.v1+json",
        "application/vnd.jupyter.widget-view+json", "image/svg+xml", "stderr"]


def pytest_collectstart(collector):
    if getattr(collector, "path", None) is not None and collector.path.suffix == ".ipynb":
        collector.skip_compare += tuple(SKIP)
