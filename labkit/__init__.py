"""labkit: see, teach and measure how diffusion language models write.

    import labkit as lk
    lm = lk.load("tiny")
    out = lk.generate(lm, "ROMEO:\\n", lk.LowConfidence(), gen_length=64, block_length=32, steps=64)

The core is built in layers, each importing only the ones below it: samplers/ and threads, then
trace and output, models/, controls/ and accel, the loops (decode, continuous, recorded, profile),
then defaults and this module; the wings (bench/, eval/, training/, ui/, serve/, tasks/, course/,
cli/) are built on it (docs/architecture.md, checked by tests/test_layout.py).
"""
import importlib

from . import defaults
from .accel import Accel
from .controls import Ban, Infill, Keywords, Pin, ReNoise, Topic
from .decode import Output, generate, stream
from .models.load import DLM, load, toy
from .samplers import Autoregressive, DecodeState, DraftEdit, EntropyBound, LowConfidence, StepRecord, Threshold
from .threads import set_threads
from .trace import Trace

# lk.viz, lk.widgets, ... are imported on first use, so `import labkit` stays light (no ipywidgets)
_LAZY = {"cache": "labkit.models.kv_cache", "profile": "labkit.profile", "viz": "labkit.ui.viz",
         "widgets": "labkit.ui.widgets"}


def __getattr__(name: str):
    if name in _LAZY:
        module = importlib.import_module(_LAZY[name])
        globals()[name] = module
        return module
    raise AttributeError(f"module 'labkit' has no attribute {name!r}")


__all__ = ["Accel", "Autoregressive", "Ban", "DLM", "DecodeState", "DraftEdit", "EntropyBound", "Infill", "Keywords",
           "LowConfidence", "Output", "Pin", "ReNoise", "StepRecord", "Threshold", "Topic", "Trace", "cache",
           "defaults", "generate", "load", "profile", "set_threads", "stream", "toy", "viz", "widgets"]
__version__ = "0.1.0"
