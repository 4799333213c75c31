"""The package's shape: the core depends on nothing around it, functions stay short, every rule
in the registry decodes on the embedded models it is offered for."""
import ast
from pathlib import Path

import pytest

import labkit as lk
from labkit.samplers import registry

PKG = Path(lk.__file__).parent
CORE = ["__init__.py", "accel.py", "decode.py", "trace.py", "profile.py", "defaults.py", "threads.py", "continuous.py",
        "samplers", "controls", "models"]
WINGS = ("bench", "eval", "training", "ui", "cli", "serve")
MAX_FUNCTION_LINES = 60


def _modules(entries):
    for entry in entries:
        path = PKG / entry
        yield from sorted(path.rglob("*.py")) if path.is_dir() else [path]


def _imports(path: Path, source: str | None = None) -> set[str]:
    """Every labkit module `path` imports (static imports, relative ones resolved)."""
    package = ["labkit", *path.relative_to(PKG).parent.parts]
    found = set()
    for node in ast.walk(ast.parse(path.read_text() if source is None else source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("labkit")}
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            found |= {f"{mod}.{a.name}" for a in node.names} if not node.module else {mod}
    return {m for m in found if m.startswith("labkit")}


def test_the_core_imports_nothing_from_the_wings():
    bad = {}
    for path in _modules(CORE):
        wings = sorted(m for m in _imports(path) if m.split(".")[1] in WINGS)
        if wings:
            bad[str(path.relative_to(PKG))] = wings
    assert not bad, f"core modules import from {WINGS}: {bad}"


def test_the_boundary_check_sees_a_wing_import():
    """The check above is not vacuous: relative and absolute imports of a wing are caught."""
    assert _imports(PKG / "ui" / "widgets.py") >= {"labkit.decode", "labkit.samplers"}
    probe = "from ..ui import viz\nfrom ..bench.speed import PROMPT\nimport labkit.training.loop\n"
    assert {m.split(".")[1] for m in _imports(PKG / "samplers" / "probe.py", probe)} == {"ui", "bench", "training"}


def test_no_function_is_longer_than_a_screen():
    long = []
    for path in sorted(PKG.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(PKG)}:{node.lineno} {node.name} ({n} lines)")
    assert not long, long


def test_handles_declare_the_denoiser_interface(toy):
    from labkit.models.handle import Denoiser
    from labkit.models.kv_cache import CausalCache, DualCache, PrefixCache

    assert isinstance(toy, Denoiser) and toy.begin_block is None
    for wrap, model in ((PrefixCache, toy), (DualCache, toy), (CausalCache, lk.toy(causal=True))):
        cached = wrap(model)
        assert isinstance(cached, Denoiser)
        assert (cached.mask_id, cached.stop_ids, cached.kind) == (model.mask_id, model.stop_ids, model.kind)
    assert callable(DualCache(toy).begin_block) and CausalCache(lk.toy(causal=True)).begin_block is None


def test_rules_declare_their_capabilities():
    from labkit.samplers.base import Rule, Sampler

    for name in registry.NAMES:
        rule = registry.rule(name)
        assert isinstance(rule, Rule) and isinstance(rule, Sampler), name
        assert rule.uses_step_budget == registry.budgeted(name)
        assert registry.names_for("causal" if rule.decodes_causal else "masked").count(name) == 1


@pytest.fixture(scope="module")
def embedded():
    return {"masked": lk.load("tiny"), "causal": lk.load("tiny-ar")}


@pytest.mark.parametrize("name", registry.NAMES)
def test_every_registry_rule_decodes_on_the_embedded_models_it_is_offered_for(embedded, name):
    for kind in registry.RULES[name].kinds:
        out = lk.generate(embedded[kind], "ROMEO:\n", name, gen_length=16, block_length=8, steps=16)
        assert out.stats["gen_tokens"] == 16 and out.texts[0].strip(), (name, kind)
        assert out.trace.meta["sampler"] == repr(registry.rule(name))


def test_the_panel_and_the_cli_offer_the_registry():
    from labkit.cli.main import build_parser
    from labkit.ui import widgets

    generate = build_parser()._subparsers._group_actions[0].choices["generate"]
    choices = next(a.choices for a in generate._actions if a.dest == "sampler")
    assert tuple(choices) == registry.NAMES
    assert set(widgets.SAMPLERS) | set(registry.PRESETS) == set(registry.NAMES)
    assert widgets.preset_knobs("speed") == {"threshold": lk.DraftEdit.speed().threshold,
                                             "editing_threshold": lk.DraftEdit.speed().editing_threshold}


def test_a_default_top_p_is_named_in_the_registry_and_shown_in_the_panel(toy):
    from labkit.ui import widgets

    assert registry.sampling(0.8) == {"temperature": 0.8, "top_p": registry.DEFAULT_TOP_P}
    assert registry.sampling(0.0, 0.5) == {"temperature": 0.0, "top_p": None}
    lab = widgets.Lab(toy, temperature=0.8, gen_length=16, block_length=16, steps=16, run=False)
    assert lab.top_p.value == registry.DEFAULT_TOP_P and not lab.top_p.disabled
    assert lab.rule().top_p == registry.DEFAULT_TOP_P
    lab.top_p.value = 0.5
    assert lab.rule().top_p == 0.5
    lab.temperature.value = 0.0
    assert lab.top_p.disabled and lab.rule().top_p is None
