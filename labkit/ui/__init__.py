"""The views of a run: figures of a trace (`viz`), the HTML report (`report`), training-loss views
(`training_views`) and the interactive lab (`widgets`, the front door to `panel`, `panel_run`,
`compare` and `plumbing`). Nothing is imported here: `lk.viz` and `lk.widgets` load on first use."""
