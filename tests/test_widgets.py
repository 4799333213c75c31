"""labkit.widgets, headless: set slider values and click buttons, then read the panel's state."""
import base64

import numpy as np
import pytest

import labkit as lk
from labkit import widgets

pytest.importorskip("ipywidgets")
SMALL = dict(gen_length=16, block_length=8, steps=16)


@pytest.fixture()
def lab(toy):
    return widgets.Lab(toy, "ROMEO:\n", **SMALL)


def _z(fig):
    z = fig["data"][0]["z"]
    assert isinstance(z, dict) and "bdata" in z, "z must travel as a typed array, not a list"
    arr = np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"]))
    return arr.reshape([int(n) for n in z["shape"].split(",")])


def test_first_render_fills_every_view(lab):
    assert lab.out is not None and lab.error == ""
    assert lab.out.stats["nfe"] == 16 == len(lab.out.trace)
    assert set(lab.figures) == {"state", "confidence", "commit_step"}      # no edits: no edits view
    assert len(lab.heatmaps.outputs) == 3
    assert "TPF" in lab.stats.value and "NFE" in lab.stats.value
    assert lab.scrubber.slider.max == 15 and lab.step == 15
    state = _z(lab.figures["state"])
    assert state.dtype == np.int8 and state.shape == (16, 16)
    assert (state[-1] != lk.viz.MASKED).all() and (state[0] == lk.viz.MASKED).sum() == 15


def test_scrubbing_moves_every_view(lab):
    final_grid = lab.grid.value
    lab.scrubber.slider.value = 3
    assert lab.step == 3
    assert lab.grid.value != final_grid and lab.grid.value.count(lk.viz.MASK_GLYPH) == 12
    for kind in ("state", "confidence"):
        marker = lab.figures[kind]["layout"]["shapes"][-1]
        assert (marker["y0"], marker["y1"]) == (2.5, 3.5)
    shown = lab.heatmaps.outputs[0]["data"][widgets._MIME]["layout"]["shapes"][-1]
    assert shown["y0"] == 2.5
    assert "12 masks left" in lab.scrubber.label.value


def test_generate_reads_the_knobs(lab):
    first = lab.out.texts[0]
    lab.sampler.value = "threshold"
    assert lab.steps.disabled and not lab.threshold.disabled and lab.editing_threshold.disabled
    lab.threshold.value = 0.25
    lab.generate_button.click()
    assert "Threshold(threshold=0.25" in lab.out.trace.meta["sampler"]
    lab.sampler.value = "low_confidence"
    lab.gen_length.value, lab.steps.value = 32, 8
    lab.generate_button.click()
    assert lab.out.trace.meta["gen_length"] == 32 and len(lab.out.trace) == 8
    assert lab.scrubber.slider.max == 7 and lab.out.stats["tpf"] == 4.0
    lab.gen_length.value, lab.steps.value = 16, 16
    lab.generate_button.click()
    assert lab.out.texts[0] == first              # same knobs and seed: the same run


def test_presets_set_draft_edit_and_run(lab):
    lab.presets["Q mode"].click()
    assert lab.sampler.value == "draft_edit"
    assert (lab.threshold.value, lab.editing_threshold.value, lab.block_length.value) == (0.7, 0.5, 16)
    assert "DraftEdit(threshold=0.7, editing_threshold=0.5" in lab.out.trace.meta["sampler"]
    lab.presets["S mode"].click()
    assert (lab.threshold.value, lab.editing_threshold.value) == (0.5, 0.0)
    assert "editing_threshold=0.0" in lab.out.trace.meta["sampler"]
    lab.gen_length.value = 64
    lab.presets["S mode"].click()
    assert lab.block_length.value == 32 and lab.out.trace.meta["block_length"] == 32


def test_bad_knobs_show_a_message_and_keep_the_last_run(lab):
    last = lab.out
    lab.block_length.value = 12                   # 16 is not a multiple of 12
    assert lab.run() is None
    assert lab.out is last
    assert "block_length" in lab.error and "block_length" in lab.message.value
    lab.block_length.value = 8
    lab.run()
    assert lab.error == "" and lab.message.value == ""


def test_keyword_box_steers_the_run_and_shows_pins(lab):
    from labkit.control import contains_word
    lab.keywords.value = "crown, night"
    lab.generate_button.click()
    assert lab.error == "" and all(contains_word(lab.out.text, w) for w in ("crown", "night"))
    assert "pinned" in lab.figures["state"]["data"][0]["colorbar"]["ticktext"]
    assert (_z(lab.figures["state"]) == lk.viz.PINNED).any()
    lab.keywords.value = "crown, , night"
    lab.generate_button.click()
    assert "empty keyword" in lab.error and lab.out.trace.meta["controls"]


def test_causal_models_offer_autoregressive_only_where_it_works(toy):
    assert "autoregressive" not in widgets.Lab(toy, run=False).sampler.options
    ar = lk.toy(causal=True)
    lab = widgets.Lab(ar, "ROMEO:\n", sampler="autoregressive", **SMALL)
    assert lab.out.stats["nfe"] == 16 and lab.error == ""


def test_compare_aligns_two_runs_step_by_step(tiny):
    toy = tiny                                     # a trained model: threshold 0.05 commits in parallel
    cmp = widgets.Compare(toy, "ROMEO:\n", left="low_confidence", right="threshold",
                          right_knobs=dict(threshold=0.05), **SMALL)
    n_left, n_right = (len(cmp.outs[s].trace) for s in ("left", "right"))
    assert n_left == 16 and n_right < 16
    assert cmp.scrubber.slider.max == 15
    cmp.scrubber.slider.value = 15                 # the threshold run ended earlier: its last step
    right = cmp.figures["right"]["layout"]["shapes"][-1]
    assert right["y0"] == n_right - 1.5
    assert cmp.panes["right"]["grid"].value == lk.viz.token_grid(cmp.outs["right"].trace, toy)
    cmp.scrubber.slider.value = 0
    assert cmp.panes["left"]["grid"].value.count(lk.viz.MASK_GLYPH) == 15
    assert f"{n_right}" in cmp.scrubber.label.value


def test_make_rule_rejects_unknown_samplers():
    with pytest.raises(ValueError, match="sampler must be one of"):
        widgets.make_rule("beam")


def test_lab_rejects_unknown_views(toy):
    with pytest.raises(ValueError, match="views must be drawn from"):
        widgets.Lab(toy, views=("state", "attention"), run=False)


def test_regenerate_latency_splits_decode_and_render(toy):
    r = widgets.regenerate_latency(toy, repeats=2, **SMALL)
    assert r["steps"] == 16 and r["gen_length"] == 16
    assert 0 < r["decode_median_s"] <= r["generate_median_s"] <= r["generate_max_s"]
    assert r["render_median_s"] >= 0 and r["scrub_median_s"] > 0 and r["figure_bytes"] > 0
