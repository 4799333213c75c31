"""The package's shape: the layers of docs/architecture.md hold (no module imports from a layer
above its own, models/ never imports a loop, the core nothing from a wing), functions stay short,
every rule in the registry decodes on the embedded models it is offered for."""
import ast
import re
from pathlib import Path

import pytest

import labkit as lk
from labkit.samplers import registry

PKG = Path(lk.__file__).parent
DOC = PKG.parent / "docs" / "architecture.md"
# everything else in labkit is core; `python -m labkit` (__main__.py) is the command's entry, a wing
WINGS = ("bench", "eval", "training", "ui", "cli", "serve", "tasks", "__main__")
LOOPS = ("decode", "continuous", "recorded")        # the decoding loops, which models/ never imports
# the one upward reference: the front door's lk.viz / lk.widgets import ui/ on first use
FRONT_DOOR_LAZY = {"__init__.py": {"labkit.ui.viz", "labkit.ui.widgets"}}
MAX_FUNCTION_LINES = 60


def _top(module: str) -> str:
    """labkit.models.kv_cache → "models"; labkit (the package itself) → "__init__"."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _entry(path: Path) -> str:
    """The top-level part a file belongs to: "models" for models/kv_cache.py, "decode" for decode.py."""
    first = path.relative_to(PKG).parts[0]
    return first[:-3] if first.endswith(".py") else first


def layers() -> dict[str, int]:
    """Top-level part → its layer, from the table in docs/architecture.md ("| 3 | `models/` | ...")."""
    section = DOC.read_text().split("## The layers", 1)[1].split("\n## ", 1)[0]
    found = {}
    for n, cell in re.findall(r"^\| (\d+) \| ([^|]+) \|", section, re.M):
        for name in re.findall(r"`([\w.]+?)(?:/|\.py)?`", cell):
            found[name] = int(n)
    return found


def _existing(module: str) -> str:
    """The deepest labkit module or package `module` names (a name imported from a module is dropped)."""
    parts = module.split(".")
    while len(parts) > 1:
        path = PKG.joinpath(*parts[1:])
        if path.with_suffix(".py").is_file() or (path / "__init__.py").is_file():
            break
        parts.pop()
    return ".".join(parts)


def _lazy_tables(tree: ast.Module) -> dict[str, set[str]]:
    """Module-level names bound to a dict / tuple / list of "labkit..." strings (lk's lazy attributes)."""
    tables = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Dict, ast.Tuple, ast.List)):
            items = node.value.values if isinstance(node.value, ast.Dict) else node.value.elts
            names = {i.value for i in items if isinstance(i, ast.Constant) and str(i.value).startswith("labkit")}
            for target in node.targets:
                if isinstance(target, ast.Name) and names:
                    tables[target.id] = names
    return tables


def _dynamic(node: ast.Call, tables: dict[str, set[str]]) -> set[str]:
    """importlib.import_module("labkit.x") / __import__("labkit.x"), or of an entry of a lazy table."""
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
    if name not in ("import_module", "__import__") or not node.args:
        return set()
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return {arg.value}
    if isinstance(arg, ast.Subscript) and isinstance(arg.value, ast.Name):
        return tables.get(arg.value.id, set())
    return tables.get(arg.id, set()) if isinstance(arg, ast.Name) else set()


def _imports(path: Path, source: str | None = None) -> set[str]:
    """Every labkit module `path` imports: at the top or inside a function, relative or absolute,
    `from labkit import x`, and importlib.import_module("labkit....")."""
    package = ["labkit", *path.relative_to(PKG).parent.parts]
    tree = ast.parse(path.read_text() if source is None else source)
    tables, found = _lazy_tables(tree), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else [])
                            if node.level else [node.module])
            found |= {f"{base}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Call):
            found |= _dynamic(node, tables)
    return {_existing(m) for m in found if m == "labkit" or m.startswith("labkit.")}


def violations(path: Path, source: str | None = None, order: dict[str, int] | None = None) -> list[str]:
    """What `path` (or `source` as if it were at `path`) imports against the documented layers."""
    order = layers() if order is None else order
    me, rel = _entry(path), str(path.relative_to(PKG))
    bad = []
    for module in sorted(_imports(path, source)):
        top = _top(module)
        if module in FRONT_DOOR_LAZY.get(rel, ()):
            continue
        if me not in WINGS and top in WINGS:
            bad.append(f"{rel} imports the wing module {module}")
        elif me == "models" and top in LOOPS:
            bad.append(f"{rel} imports the loop {module}")
        elif order.get(top, 0) > order.get(me, 0):
            bad.append(f"{rel} (layer {order.get(me)}) imports {module} (layer {order.get(top)})")
    return bad


def _package_files():
    return sorted(p for p in PKG.rglob("*.py") if "weights" not in p.relative_to(PKG).parts)


def test_every_module_sits_in_a_documented_layer():
    order = layers()
    assert {w for w in WINGS} <= set(order) and len({order[w] for w in WINGS}) == 1, "the wings: one top layer"
    assert max(order.values()) == order["bench"], "the wings are the top layer"
    entries = {_entry(p) for p in _package_files()}
    missing = sorted(entries - set(order))
    assert not missing, f"place these in the layer table of docs/architecture.md: {missing}"
    assert not sorted(set(order) - entries), f"docs/architecture.md names modules that do not exist: {set(order) - entries}"


def test_no_module_imports_from_a_higher_layer_or_a_wing():
    order = layers()
    bad = [v for path in _package_files() for v in violations(path, order=order)]
    assert not bad, bad


def test_the_front_door_reaches_the_wings_only_for_its_lazy_views():
    found = _imports(PKG / "__init__.py")
    assert {m for m in found if _top(m) in WINGS} == FRONT_DOOR_LAZY["__init__.py"]


PLANTED = {                                   # kind → (where it is planted, source, the module it reaches)
    "relative": ("samplers/probe.py", "from ..ui import viz\n", "labkit.ui.viz"),
    "absolute": ("trace.py", "import labkit.training.loop\n", "labkit.training.loop"),
    "from labkit import a wing": ("decode.py", "from labkit import ui\n", "labkit.ui"),
    "importlib string": ("controls/probe.py", "import importlib\nm = importlib.import_module('labkit.bench.speed')\n",
                         "labkit.bench.speed"),
    "lazy, inside a function": ("accel.py", "def f():\n    from .eval import metrics\n    return metrics\n",
                                "labkit.eval.metrics"),
    "models imports the loop": ("models/families/probe.py", "def f():\n    from ...decode import Output\n",
                                "labkit.decode"),
    "a lower layer imports a higher one": ("trace.py", "from .models.handle import Denoiser\n",
                                           "labkit.models.handle"),
}


@pytest.mark.parametrize("kind", PLANTED)
def test_the_check_fails_on_a_planted_import(kind):
    """The layer check is not vacuous: each kind of bad import, planted in a core module, fails it."""
    where, source, reached = PLANTED[kind]
    assert reached in _imports(PKG / where, source)
    bad = violations(PKG / where, source)
    assert len(bad) == 1 and reached in bad[0], bad
    if kind == "models imports the loop":
        assert "imports the loop" in bad[0]


def test_the_check_passes_a_wing_importing_the_core_and_the_core_importing_downward():
    assert not violations(PKG / "ui" / "probe.py", "import labkit as lk\nfrom ..decode import generate\n"
                                                  "from labkit import bench\n")
    assert not violations(PKG / "recorded.py", "from .models.families.diffusion_gemma import DiffusionGemma\n")


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
