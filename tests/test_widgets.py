"""labkit.ui.widgets, headless: set slider values and click buttons, then read the panel's state."""
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


def press(lab, button=None):
    """Click as the mouse does (the run goes to the background) and wait for it."""
    (button or lab.generate_button).click()
    lab.wait()


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
    press(lab)
    assert "Threshold(threshold=0.25" in lab.out.trace.meta["sampler"]
    lab.sampler.value = "low_confidence"
    lab.gen_length.value, lab.steps.value = 32, 8
    press(lab)
    assert lab.out.trace.meta["gen_length"] == 32 and len(lab.out.trace) == 8
    assert lab.scrubber.slider.max == 7 and lab.out.stats["tpf"] == 4.0
    lab.gen_length.value, lab.steps.value = 16, 16
    press(lab)
    assert lab.out.texts[0] == first              # same knobs and seed: the same run


def test_presets_set_draft_edit_and_run(lab):
    press(lab, lab.presets["Q mode"])
    assert lab.sampler.value == "draft_edit"
    assert (lab.threshold.value, lab.editing_threshold.value, lab.block_length.value) == (0.7, 0.5, 16)
    assert "DraftEdit(threshold=0.7, editing_threshold=0.5" in lab.out.trace.meta["sampler"]
    press(lab, lab.presets["S mode"])
    assert (lab.threshold.value, lab.editing_threshold.value) == (0.5, 0.0)
    assert "editing_threshold=0.0" in lab.out.trace.meta["sampler"]
    lab.gen_length.value = 64
    press(lab, lab.presets["S mode"])
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
    from labkit.controls import contains_word
    lab.keywords.value = "crown, night"
    press(lab)
    assert lab.error == "" and all(contains_word(lab.out.text, w) for w in ("crown", "night"))
    assert "pinned" in lab.figures["state"]["data"][0]["colorbar"]["ticktext"]
    assert (_z(lab.figures["state"]) == lk.viz.PINNED).any()
    lab.keywords.value = "crown, , night"
    press(lab)
    assert "empty keyword" in lab.error and lab.out.trace.meta["controls"]


DIFFUSION_RULES = ("low_confidence", "random", "left_to_right", "right_to_left", "threshold", "factor", "entropy_bound",
                   "draft_edit")


def test_causal_models_offer_autoregressive_only_where_it_works(toy):
    masked = widgets.Lab(toy, run=False)
    assert toy.kind == "masked" and tuple(masked.sampler.options) == DIFFUSION_RULES   # S / Q are buttons
    assert masked.sampler.value == "low_confidence"
    ar = lk.toy(causal=True)
    assert ar.kind == "causal"
    lab = widgets.Lab(ar, "ROMEO:\n", **SMALL)                     # no sampler given: the causal model's rule
    assert tuple(lab.sampler.options) == ("autoregressive",) and lab.sampler.value == "autoregressive"
    assert lab.error == "" and lab.out.stats["nfe"] == 16
    P = lab.out.trace.prompt_len
    assert lab.out.trace.commit_step()[0, P:].tolist() == list(range(16))   # one token per step, left to right
    assert "Autoregressive(" in lab.out.trace.meta["sampler"]
    for name in DIFFUSION_RULES:                                   # every other rule fails on it ...
        with pytest.raises(ValueError, match="needs a masked diffusion model"):
            lk.generate(ar, "ROMEO:\n", widgets.make_rule(name), **SMALL)
        with pytest.raises(ValueError, match="sampler must be one of autoregressive for model"):   # ... and is refused
            widgets.Lab(ar, sampler=name, run=False)


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
    from labkit.bench.panel import regenerate_latency
    r = regenerate_latency(toy, repeats=2, **SMALL)
    assert r["steps"] == 16 and r["gen_length"] == 16 and r["first_press_s"] > 0
    assert 0 < r["decode_median_s"] <= r["generate_median_s"] <= r["generate_max_s"]
    assert r["render_median_s"] >= 0 and r["scrub_median_s"] > 0 and r["figure_bytes"] > 0


def test_every_scrubber_move_sends_the_heatmaps_again(lab):
    """A widget sends only a value that compares unequal to its last one: a marker moved by
    editing the shown dicts in place reaches the browser never (issue 15)."""
    sent = []
    lab.heatmaps.observe(lambda ch: sent.append([widgets.marker_step(o["data"][widgets._MIME]) for o in ch["new"]]),
                         names="outputs")
    for step in (3, 7, 0):
        lab.scrubber.slider.value = step
    assert sent == [[3, 3, None], [7, 7, None], [0, 0, None]]     # commit_step has no marker


def test_compare_scrubber_sends_both_panes(toy):
    cmp = widgets.Compare(toy, "ROMEO:\n", left="low_confidence", right="threshold", **SMALL)
    sent = {side: [] for side in ("left", "right")}
    for side in sent:
        cmp.panes[side]["heatmap"].observe(lambda ch, side=side: sent[side].append(
            widgets.marker_step(ch["new"][0]["data"][widgets._MIME])), names="outputs")
    cmp.scrubber.slider.value = 2
    cmp.scrubber.slider.value = 5
    assert sent["left"] == [2, 5] and sent["right"] == [min(2, len(cmp.outs["right"].trace) - 1),
                                                      min(5, len(cmp.outs["right"].trace) - 1)]


def test_the_panel_decodes_live_and_generate_becomes_stop(toy):
    lab = widgets.Lab(toy, "ROMEO:\n", run=False, live_every=0.0, **SMALL)
    progress, labels, grids = [], [], []
    lab.progress.observe(lambda ch: progress.append(ch["new"]), names="value")
    lab.generate_button.observe(lambda ch: labels.append(ch["new"]), names="description")
    lab.grid.observe(lambda ch: grids.append(ch["new"]), names="value")
    press(lab)
    assert lab.out is not None and lab.redraws == 16
    assert progress[0] == "decoding: step 1 of 16 · block 1" and progress[-1] == ""
    assert labels == ["Stop", "Generate"]
    masks = [g.count(lk.viz.MASK_GLYPH) for g in grids]
    assert masks[0] == 15 and masks == sorted(masks, reverse=True)   # the canvas fills as it decodes
    assert lab.scrubber.slider.max == 15 and not lab.scrubber.slider.disabled


def test_stop_keeps_the_steps_decoded_so_far(toy):
    lab = widgets.Lab(toy, "ROMEO:\n", run=False, gen_length=64, block_length=64, steps=64)
    lab.start()
    lab.generate_button.click()                 # the same button, now Stop
    lab.wait()
    assert lab.out is None and 1 <= len(lab.trace) < 64
    assert "stopped after" in lab.notice and lab.generate_button.description == "Generate"
    assert lab.scrubber.slider.max == len(lab.trace) - 1
    press(lab)                                  # Generate again: a full run
    assert len(lab.out.trace) == 64 and lab.notice == ""


def test_seed_box_is_disabled_when_the_seed_changes_nothing(toy):
    lab = widgets.Lab(toy, run=False)
    assert lab.seed.disabled and "greedy" in lab.seed.description_tooltip
    lab.temperature.value = 0.8
    assert not lab.seed.disabled
    lab.temperature.value = 0.0
    lab.sampler.value = "random"                # random remasking draws positions: the seed matters
    assert not lab.seed.disabled


def test_unknown_sampler_is_a_clear_error(toy):
    with pytest.raises(ValueError, match="sampler must be one of low_confidence, random, left_to_right, right_to_left, "
                                         "threshold"):
        widgets.Lab(toy, sampler="nope", run=False)


def test_a_model_without_max_length_opens(toy):
    import dataclasses
    lab = widgets.Lab(dataclasses.replace(toy, max_length=None), run=False)
    assert lab.gen_length.max == 256


def test_presets_run_on_the_parallel_model_unless_one_was_chosen(tiny):
    lab = widgets.Lab(tiny, "ROMEO:\n", run=False)
    assert lab.model.value == "tiny" and "tiny-cap" in lab.model.options
    lab.apply_preset("S mode")
    assert lab.lm.name == lab.model.value == "tiny-cap" and lab.out.stats["tpf"] > 2
    assert "S mode runs on tiny-cap" in lab.notice and "S mode runs on tiny-cap" in lab.note.value
    lab.select_model("tiny")                    # the user's choice stands
    lab.apply_preset("S mode")
    assert lab.lm.name == "tiny" and lab.out.stats["tpf"] < 1.2
    assert "not confident enough" in lab.notice
    assert lk.defaults.parallel_note("tiny-cap", "speed", 5.0) is None
    assert lk.defaults.parallel_note("tiny", "low_confidence", 1.0) is None      # not a parallel rule


def test_causal_model_in_the_menu_offers_autoregressive(tiny):
    lab = widgets.Lab(tiny, "ROMEO:\n", run=False, **SMALL)
    lab.select_model("tiny-ar")
    assert tuple(lab.sampler.options) == ("autoregressive",)
    lab.run()
    assert lab.error == "" and lab.out.stats["nfe"] == 16
    lab.select_model("tiny")
    assert "threshold" in lab.sampler.options


def test_make_rule_uses_the_registry_and_its_presets():
    assert widgets.preset_knobs("speed") == dict(threshold=lk.DraftEdit.speed().threshold,
                                                 editing_threshold=lk.DraftEdit.speed().editing_threshold)
    assert widgets.make_rule("threshold", threshold=0.3) == lk.Threshold(threshold=0.3)
    assert widgets.make_rule("low_confidence", temperature=1.0).top_p == lk.defaults.TOP_P
    with pytest.raises(ValueError, match="threshold must be a number in"):
        widgets.make_rule("threshold", threshold=1.5)


def test_a_second_run_waits_its_turn(toy):
    import threading
    lab = widgets.Lab(toy, "ROMEO:\n", run=False, **SMALL)
    go = threading.Event()
    lab.start(lambda: (go.wait(10), lab.run()))     # a button run, held before it decodes
    assert lab.generate_button.description == "Stop" and lab.model.disabled and lab.sampler.disabled
    assert lab.run() is None and "still decoding" in lab.error
    lab.start()                                      # a second press starts nothing new
    go.set()
    lab.wait()
    assert lab.out is not None and len(lab.out.trace) == 16 and lab.error == ""
    assert lab.generate_button.description == "Generate" and not lab.model.disabled
    assert lab.steps.disabled is False and lab.threshold.disabled is True     # back to the rule's knobs


def test_a_late_stop_does_not_stop_the_next_run(toy):
    lab = widgets.Lab(toy, "ROMEO:\n", run=False, **SMALL)
    lab.stop()                                       # pressed when nothing was running
    assert len(lab.run().trace) == 16 and lab.notice == ""


def test_a_causal_model_opens_on_its_rule_and_refuses_presets(toy):
    ar = lk.toy(causal=True)
    lab = widgets.Lab(ar, "ROMEO:\n", **SMALL)
    assert lab.sampler.value == "autoregressive" and lab.out.stats["nfe"] == 16
    assert lab.apply_preset("S mode") is None
    assert "needs a masked diffusion model" in lab.error and lab.sampler.value == "autoregressive"


def test_a_model_that_fails_to_load_leaves_the_menu_on_the_model_in_use(toy, monkeypatch):
    def broken(name, device=None):
        raise FileNotFoundError(f"the embedded model {name!r} is missing")
    monkeypatch.setattr("labkit.ui.panel.load", broken)     # the panel's model menu loads with it
    lab = widgets.Lab(toy, "ROMEO:\n", run=False, **SMALL)
    lab.select_model("tiny-ar")
    assert lab.model.value == "toy" and lab.lm is toy and "is missing" in lab.error


def test_compare_samples_within_the_labs_nucleus(toy):
    cmp = widgets.Compare(toy, "ROMEO:\n", left_knobs={"temperature": 1.0}, run=False, **SMALL)
    assert cmp._rule("left").top_p == lk.defaults.TOP_P and cmp._rule("right").top_p is None
