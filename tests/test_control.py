"""labkit.controls: pins hold under every rule, keywords land, templates and kept text survive
byte for byte, bans hold, and bad input gets a clear error."""
import pytest
import torch

import labkit as lk
from labkit import controls as ctl
from labkit.controls import Ban, Infill, Keywords, Pin, ReNoise, contains_word
from labkit.samplers import Autoregressive, DraftEdit, EntropyBound, LowConfidence, Threshold

PROMPT = "MACBETH:\nWhat news, my lord?\n"
KNOBS = dict(gen_length=32, block_length=16, steps=32)
RULES = {
    "low_confidence": LowConfidence(temperature=1.0, top_p=0.9),
    "random": LowConfidence(remasking="random"),
    "threshold": Threshold(threshold=0.5),
    "entropy_bound": EntropyBound(),
    "left_to_right": Autoregressive(),
    "speed": DraftEdit.speed(),
    "quality_mbe": DraftEdit.quality(mbe_blocks=1, mbe_threshold=0.0),
}


def _answer(out, row=0):
    return out.ids[row, out.trace.prompt_len:]


@pytest.mark.parametrize("rule", RULES, ids=list(RULES))
def test_pins_never_change_under_any_rule(tiny, rule):
    pins = [Pin(2, " the crown"), Pin(20, " sword")]
    out = lk.generate(tiny, [PROMPT, "HAMLET:\nO!\n"], RULES[rule], controls=pins, seed=1, **KNOBS)
    P = out.trace.prompt_len
    tokens = out.trace.tokens()                                        # (S, B, L)
    for pin in pins:
        ids = tiny.encode(pin.text)
        span = slice(P + pin.position, P + pin.position + len(ids))
        assert (tokens[:, :, span] == torch.tensor(ids, dtype=tokens.dtype)).all(), rule
        assert not out.trace.edits()[:, :, span].any()
    pinned = out.trace.pinned()
    assert pinned is not None and pinned[:, :, P + 2].all() and not pinned[:, :, :P].any()
    assert all("crown" in t and "sword" in t for t in out.texts)


@pytest.mark.parametrize("method", ["boost", "place"])
@pytest.mark.parametrize("rule", ["low_confidence", "threshold", "speed"])
def test_keywords_all_appear_when_feasible(tiny, method, rule):
    words = ("crown", "night", "island")              # island takes two tokens
    out = lk.generate(tiny, [PROMPT] * 3, RULES[rule], controls=[Keywords(words, method=method)],
                      seed=0, gen_length=64, block_length=32, steps=64)
    for text in out.texts:
        assert all(contains_word(text, w) for w in words), (method, rule, text)
    assert not (_answer(out) == tiny.mask_id).any()


def test_keyword_tokens_are_never_edited(tiny):
    out = lk.generate(tiny, PROMPT, DraftEdit.speed(), controls=[Keywords(("crown", "sword"))],
                      seed=0, gen_length=32, block_length=32, steps=32)
    pinned = out.trace.pinned()[:, 0]                                 # (S, L)
    edits = out.trace.edits()[:, 0]
    assert out.trace.edits().any(), "S mode should edit something for this check to mean anything"
    for s in range(1, len(out.trace)):
        assert not (edits[s] & pinned[s - 1]).any()


def test_keywords_rows_do_not_depend_on_the_batch(tiny):
    prompts = [PROMPT, "PROSPERO:\nCome away, servant.\n"]
    kw = dict(controls=[Keywords(("night", "sea"))], gen_length=32, block_length=16, steps=32)
    both = lk.generate(tiny, prompts, LowConfidence(), **kw)
    for i, p in enumerate(prompts):
        assert lk.generate(tiny, p, LowConfidence(), **kw).texts[0] == both.texts[i]


@pytest.mark.parametrize("rule", ["low_confidence", "threshold", "speed", "left_to_right"])
def test_infill_keeps_the_template_byte_identical(tiny, rule):
    template = "My lord, ___ is dead, and ___{5} tonight."
    out = lk.generate(tiny, [PROMPT, PROMPT], RULES[rule], controls=[Infill(template)], seed=3, **KNOBS)
    for text in out.texts:
        assert text.startswith("My lord, ") and text.endswith(" tonight.")
        middle = text[len("My lord, "):-len(" tonight.")]
        assert " is dead, and " in middle and middle.index(" is dead, and ") > 0, text
    assert ctl.parse_template("a ___ b ___{2}", gap_tokens=3) == ["a ", 3, " b ", 2]


def test_renoise_rewrites_only_the_span(tiny):
    text = "My lord, the king is dead, and we must go tonight."
    edit = ReNoise(text, spans=["the king is dead"])
    ids, noise = edit.noised(tiny)
    out = lk.generate(tiny, PROMPT, LowConfidence(temperature=1.0), controls=[edit], seed=0,
                      gen_length=32, block_length=32, steps=32)
    answer = _answer(out)
    for i, (t, n) in enumerate(zip(ids, noise)):
        assert n or int(answer[i]) == t
    assert any(noise) and not all(noise)
    assert out.text.startswith("My lord,") and out.text.endswith(", and we must go tonight.")
    assert edit.kept_text(tiny)[0] == "My lord,"
    by_ratio = ReNoise(text, ratio=0.5, seed=1)
    assert sum(by_ratio.noised(tiny)[1]) == round(0.5 * len(ids))


def test_ban_keeps_words_and_eos_out(tiny):
    out = lk.generate(tiny, [PROMPT] * 4, LowConfidence(temperature=1.0),
                      controls=[Ban(["lord", "the", "thunder"], eos=True)], seed=0, **KNOBS)
    assert not any(contains_word(t, w) for t in out.texts for w in ("lord", "the", "thunder"))
    assert not torch.isin(_answer(out), torch.tensor(tiny.stop_ids)).any()


def test_ban_repairs_a_word_finished_in_one_parallel_step(tiny):
    seq = tiny.encode(" thunder")                                      # three tokens
    assert len(seq) == 3
    canvas = ctl.Canvas(lm=tiny, prompt_len=2, gen_length=6)
    x = torch.full((1, 8), tiny.mask_id)
    x[0, :2] = torch.tensor(tiny.encode("O,"))
    frozen = torch.zeros(1, 8, dtype=torch.bool)
    frozen[0, :2] = True
    V = tiny.net.config.vocab_size
    logits = torch.zeros(1, 8, V)
    logits[0, torch.arange(3, 6), torch.tensor(seq)] = 20.0            # the model wants " thunder"
    ban = [Ban(["thunder"])]
    x2, frozen2 = ctl.apply(ban, logits, x, frozen, torch.ones(1, dtype=torch.bool), canvas)
    state = lk.samplers.base.DecodeState(x=x2, frozen=frozen2, block_start=2, block_end=8, block=0, step=0,
                                         steps=6, global_step=0, mask_id=tiny.mask_id)
    rec = Threshold(threshold=0.0).step(logits, state)                # commits every mask at once
    tokens = ctl.fix(ban, rec.tokens, logits, x2, canvas)
    assert tokens[0, 3:6].tolist() != seq and (tokens[0, 2:] != tiny.mask_id).all()
    assert tokens[0, 3:5].tolist() == seq[:2]                          # only the last token moved


def test_no_end_of_text_before_a_pin(tiny):
    out = lk.generate(tiny, [PROMPT] * 4, LowConfidence(temperature=1.0), controls=[Pin(28, " sword.")],
                      seed=0, **KNOBS)
    for text in out.texts:                    # an end of text before offset 28 would cut the pin off
        assert " sword." in text


def test_viz_shows_pinned_positions(tiny):
    out = lk.generate(tiny, PROMPT, controls=[Pin(4, " crown")], **KNOBS)
    fig = lk.viz.heatmap(out.trace, tiny, "state")
    assert "pinned" in list(fig.data[0].colorbar.ticktext)
    z = fig.data[0].z
    assert (z[:, 4] == lk.viz.PINNED).all()


@pytest.mark.parametrize("make, message", [
    (lambda: Keywords(["crown", ""]), "empty keyword"),
    (lambda: Keywords([]), "at least one word"),
    (lambda: Keywords(["crown"], method="magic"), "method must be one of"),
    (lambda: Pin(-1, "x"), "position must be an integer >= 0"),
    (lambda: Infill("no gap here"), "has no gap"),
    (lambda: ReNoise("some text"), "exactly one of"),
    (lambda: ReNoise("some text", spans=["absent"]), "does not occur"),
    (lambda: ReNoise("some text", ratio=1.5), r"ratio must be in \(0, 1\]"),
])
def test_bad_control_arguments(make, message):
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.parametrize("controls, message", [
    ([Keywords([" thunder monster island"])], "longer than the canvas"),
    ([Pin(0, " the king is dead, and we"), Keywords(["crown", "night", "island"])],
     "need 4 tokens but only 0 answer positions are free"),
    ([Pin(2, " the crown"), Pin(3, " sword")], "overlaps another pinned position"),
    ([Pin(6, " the crown")], "reaches past gen_length 7"),
    ([Infill("My lord, ___{9} is dead")], "needs 15 tokens but gen_length is 7"),
    (["crown"], "controls must be labkit.controls objects"),
])
def test_bad_control_combinations(tiny, controls, message):
    with pytest.raises(ValueError, match=message):
        lk.generate(tiny, PROMPT, controls=controls, gen_length=7, block_length=7, steps=7)


def test_a_saved_trace_keeps_its_pinned_positions(toy, tmp_path):
    """A reloaded controlled run must show pinned text as pinned, not as ordinary text."""
    out = lk.generate(toy, "ROMEO:\n", gen_length=16, block_length=16, steps=16, controls=[lk.Pin(3, " crown")])
    back = lk.Trace.load(out.trace.save(tmp_path / "run.npz"))
    assert back.has_pins and torch.equal(back.pinned(), out.trace.pinned())
    assert (lk.viz._state(back, 0) == lk.viz.PINNED).any()
    plain = lk.Trace.load(lk.generate(toy, "ROMEO:\n", gen_length=16, block_length=16, steps=16).trace.save(
        tmp_path / "plain.npz"))
    assert not plain.has_pins and plain.pinned() is None


def test_topic_tips_the_words_in_without_forcing_them(toy):
    import labkit as lk

    kw = dict(gen_length=16, block_length=16, steps=16)
    plain = lk.generate(toy, "ROMEO:\n", **kw)
    assert torch.equal(lk.generate(toy, "ROMEO:\n", controls=[lk.Topic(["crown"], strength=0.0)], **kw).ids, plain.ids)
    steered = lk.generate(toy, "ROMEO:\n", controls=[lk.Topic(["crown"], strength=50.0)], **kw)
    assert "crown" in steered.text.lower() and "crown" not in plain.text.lower()
    with pytest.raises(ValueError, match="Topic strength must be a number >= 0"):
        lk.Topic(["crown"], strength=-1)
    with pytest.raises(ValueError, match="Topic needs at least one word"):
        lk.Topic([])
