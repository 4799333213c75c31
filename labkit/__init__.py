"""labkit: see, teach and measure how diffusion language models write.

    import labkit as lk
    lm = lk.load("tiny")
    out = lk.generate(lm, "ROMEO:\\n", lk.LowConfidence(), gen_length=64, block_length=32, steps=64)
"""
from . import cache, control, defaults, profile, viz, widgets
from .control import Ban, Infill, Keywords, Pin, ReNoise
from .decode import Output, generate, stream
from .model import DLM, load, toy
from .samplers import Autoregressive, DecodeState, DraftEdit, EntropyBound, LowConfidence, StepRecord, Threshold
from .threads import set_threads
from .trace import Trace

__all__ = ["Autoregressive", "Ban", "cache", "control", "defaults", "DLM", "DecodeState", "DraftEdit", "EntropyBound",
           "Infill", "Keywords", "LowConfidence", "Pin", "ReNoise", "Threshold", "Output", "StepRecord", "Trace",
           "generate", "load", "profile", "set_threads", "stream", "toy", "viz", "widgets"]
__version__ = "0.1.0"
