"""Knobs described once (labkit.samplers.knobs): a rule added to the registry with a new knob, in
one place, reaches the panel, the command line, the server and their error messages."""
from dataclasses import dataclass

import pytest

import labkit as lk
from labkit.samplers import knobs, registry
from labkit.samplers.knobs import Knob, KnobError
from labkit.samplers.low_confidence import LowConfidence

GAMMA = Knob("gamma", float, "the fake rule's own knob", low=0.0, high=3.0, slider=(0.0, 3.0, 0.5))


@dataclass(frozen=True)
class Fake(LowConfidence):
    gamma: float = 1.5                 # read by nothing but these tests: the knob's journey is the point


@pytest.fixture
def fake_rule(monkeypatch):
    """The one edit a new rule needs: its registry entry, carrying its knob."""
    monkeypatch.setitem(registry.RULES, "fake", registry.Entry(lambda **k: Fake(**k), (GAMMA,), "a fake rule"))
    return "fake"


def test_the_registry_reads_the_new_knob(fake_rule):
    assert registry.defaults("fake")["gamma"] == 1.5
    assert registry.readers("gamma") == ["fake"] and registry.rule_knobs()["gamma"] is GAMMA
    assert registry.rule("fake", gamma=2.5).gamma == 2.5
    with pytest.raises(KnobError, match=r"gamma must be a number in \[0, 3\], got 4") as e:
        registry.rule("fake", gamma=4)
    assert e.value.param == "gamma"
    with pytest.raises(KnobError, match="gamma: not read by sampler 'threshold'.*gamma is read by fake") as e:
        registry.rule("threshold", gamma=1.0)
    assert e.value.param == "gamma"


def test_the_command_line_offers_the_new_knob(fake_rule, capsys, monkeypatch):
    import labkit.models.load
    from labkit.cli.main import build_parser, main

    generate = build_parser()._subparsers._group_actions[0].choices["generate"]
    flag = next(a for a in generate._actions if "--gamma" in a.option_strings)
    assert "the fake rule's own knob" in flag.help and "read by fake" in flag.help
    assert "fake" in next(a.choices for a in generate._actions if a.dest == "sampler")
    monkeypatch.setattr(labkit.models.load, "_load_tiny", lambda *a: pytest.fail("the model was loaded"))
    assert main(["generate", "--sampler", "fake", "--gamma", "7", "ROMEO:"]) == 2
    assert "gamma must be a number in [0, 3], got 7.0" in capsys.readouterr().err
    assert main(["generate", "--gamma", "1", "ROMEO:"]) == 2
    assert "--gamma: not read by sampler 'low_confidence'" in capsys.readouterr().err


def test_the_server_accepts_the_new_knob_and_names_it_in_its_400(fake_rule, toy):
    from labkit.serve import schemas

    assert "gamma" in schemas.chat_fields() and "gamma" in schemas.text_fields()
    job = schemas.parse_text(toy, {"prompt": "ROMEO:", "sampler": "fake", "gamma": 2.0, "max_tokens": 8}, 4)
    assert job.knobs.rule().gamma == 2.0
    with pytest.raises(schemas.ServeError) as e:
        schemas.parse_text(toy, {"prompt": "ROMEO:", "sampler": "fake", "gamma": 9, "max_tokens": 8}, 4)
    assert (e.value.status, e.value.param) == (400, "gamma") and "gamma must be a number in [0, 3]" in e.value.message
    with pytest.raises(schemas.ServeError) as e:
        schemas.parse_text(toy, {"prompt": "ROMEO:", "gamma": 1.0, "max_tokens": 8}, 4)
    assert e.value.param == "gamma" and "not read by sampler 'low_confidence'" in e.value.message


def test_the_panel_shows_the_new_knob_at_the_rules_own_default(fake_rule, toy):
    from labkit.ui import widgets

    lab = widgets.Lab(toy, sampler="fake", gen_length=16, block_length=16, steps=16, run=False)
    assert lab.gamma.value == 1.5 and (lab.gamma.min, lab.gamma.max) == (0.0, 3.0) and not lab.gamma.disabled
    assert lab.gamma in lab.knob_widgets()
    lab.gamma.value = 2.5
    assert lab.rule() == Fake(gamma=2.5)
    lab.sampler.value = "threshold"
    assert lab.gamma.disabled and not lab.threshold.disabled


def test_panel_defaults_are_each_rules_own(toy):
    from labkit.ui import widgets

    lab = widgets.Lab(toy, sampler="draft_edit", gen_length=16, block_length=16, steps=16, run=False)
    own = registry.defaults("draft_edit")
    assert (lab.threshold.value, lab.editing_threshold.value) == (own["threshold"], own["editing_threshold"])
    assert lab.rule() == lk.DraftEdit()
    lab.sampler.value = "threshold"
    assert lab.threshold.value == registry.defaults("threshold")["threshold"] and lab.rule() == lk.Threshold()
    assert widgets.Lab(toy, sampler="threshold", threshold=0.6, run=False).rule() == lk.Threshold(threshold=0.6)


@pytest.mark.parametrize("knob, value, message", [
    (knobs.THRESHOLD, 1.5, "threshold must be a number in [0, 1], got 1.5"),
    (knobs.TOP_P, 0.0, "top_p must be a number in (0, 1] (or None: off), got 0.0"),
    (knobs.FACTOR, 0, "factor must be a number > 0, got 0"),
    (knobs.STEPS, 2.5, "steps must be a positive integer, got 2.5"),
    (knobs.STEPS, True, "steps must be a positive integer, got True"),
    (knobs.SCORE, "best", "score must be one of probability, margin, neg_entropy, got 'best'"),
    (knobs.ENTROPY_BOUND, float("nan"), "entropy_bound must be a number >= 0, got nan"),
])
def test_a_bad_value_names_its_knob_and_what_it_takes(knob, value, message):
    with pytest.raises(KnobError) as e:
        knob.check(value)
    assert str(e.value) == message and e.value.param == knob.name


def test_parsing_text_values():
    assert knobs.THRESHOLD.parse("0.7") == 0.7 and knobs.STEPS.parse("64") == 64
    assert knobs.TOP_K.parse("none") is None and knobs.SCORE.parse("margin") == "margin"
    with pytest.raises(KnobError, match="steps must be a positive integer, got 'x'"):
        knobs.STEPS.parse("x")


def test_one_description_per_knob_name():
    names = [k.name for k in (*knobs.SAMPLING, *knobs.LOOP, *registry.rule_knobs().values())]
    assert len(names) == len(set(names))
    for name, knob in registry.rule_knobs().items():
        assert registry.readers(name), name                        # every rule knob is read by some rule
        if knob.kind is not str:
            assert knob.slider is not None, name                   # and the panel can show it
