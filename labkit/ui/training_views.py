"""Training-loss views: `loss_figure(histories)`, a static figure of loss curves, and `LiveLoss`,
the same curves redrawn in place while models train (a callback per run). They read loss
histories, never a trace or a model; notebook 10 draws its trainings with them."""
from __future__ import annotations

import time

import numpy as np

from .viz import png_figure


def loss_figure(histories: dict, smooth: int = 25, title: str = "training loss", every: int = 1):
    """matplotlib Figure (renders in a notebook): one panel per run in `histories`
    {name: [(step, loss), ...]} (one point per `every` steps, as a training.json's loss_history: 50),
    the raw loss faint and its moving average over `smooth` points."""
    if not histories:
        raise ValueError("histories is empty: give {name: [(step, loss), ...]}")
    fig = png_figure()(figsize=(4.2 * len(histories), 3.0), layout="constrained")
    for ax, (name, hist) in zip(fig.subplots(1, len(histories), squeeze=False)[0], histories.items()):
        if hist:
            steps, loss = np.asarray(hist, dtype=np.float64).T              # (n,), (n,)
            ax.plot(steps, loss, color="#93c5fd", lw=0.8)
            k = max(1, min(smooth, len(loss)))
            ax.plot(steps[k - 1:], np.convolve(loss, np.ones(k) / k, "valid"), color="#1d4ed8", lw=1.8)
        ax.set(title=f"{name} ({len(hist) * every} steps)", xlabel="step", ylabel="loss")
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    return fig


class LiveLoss:
    """Loss curves redrawn in place while models train: pass `live.on_step(name)` as a training
    callback. The figure is a PNG re-sent to one notebook output (IPython display_id), so it
    needs no widget and survives nbconvert; redrawn at most every `every` seconds, and by `draw()`."""

    def __init__(self, names=("loss",), every: float = 3.0, smooth: int = 25, title: str = "training loss"):
        self.history = {n: [] for n in names}
        self.every, self.smooth, self.title = every, smooth, title
        self._handle, self._last = None, float("-inf")

    def on_step(self, name: str):
        """A callback (step, loss) that records `name`'s loss and redraws when due."""
        if name not in self.history:
            raise ValueError(f"unknown run {name!r}; LiveLoss has {tuple(self.history)}")

        def record(step: int, loss: float) -> None:
            self.history[name].append((step, float(loss)))
            if time.perf_counter() - self._last >= self.every:
                self.draw()
        return record

    def figure(self):
        return loss_figure(self.history, self.smooth, self.title)

    def draw(self) -> None:
        from IPython.display import display  # IPython comes with the lab's extra: only a live view needs it
        fig = self.figure()
        if self._handle is None:
            self._handle = display(fig, display_id=True)
        else:
            self._handle.update(fig)
        self._last = time.perf_counter()
