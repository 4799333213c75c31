"""The package's shape: the layers of docs/architecture.md hold (no module imports from a layer
above its own, models/ never imports a loop, the core nothing from a wing, a wing nothing from a
wing above it), the import graph has no circle, functions and modules stay short, every rule in
the registry decodes on the embedded models it is offered for."""
import ast
import re
import tokenize
from pathlib import Path

import pytest

import labkit as lk
from labkit.samplers import registry

PKG = Path(lk.__file__).parent
DOC = PKG.parent / "docs" / "architecture.md"
# everything else in labkit is core; `python -m labkit` (__main__.py) is the command's entry, a wing
WINGS = ("bench", "eval", "training", "ui", "cli", "serve", "tasks", "course", "__main__")
LOOPS = ("decode", "continuous", "recorded")        # the decoding loops, which models/ never imports
# the one upward reference: the front door's lk.viz / lk.widgets import ui/ on first use (attribute
# access, never run by `import labkit`): no edge of the import graph
FRONT_DOOR_LAZY = {"labkit": {"labkit.ui.viz", "labkit.ui.widgets"}}
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 450


def _top(module: str) -> str:
    """labkit.models.kv_cache → "models"; labkit (the package itself) → "__init__"."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def module_name(path: Path) -> str:
    """labkit/models/kv_cache.py → labkit.models.kv_cache; labkit/models/__init__.py → labkit.models."""
    parts = list(path.relative_to(PKG).with_suffix("").parts)
    return ".".join(["labkit", *(parts[:-1] if parts[-1] == "__init__" else parts)])


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


def _problem(importer: str, module: str, order: dict[str, int]) -> str | None:
    """What is wrong with labkit module `importer` importing `module`, against the documented layers."""
    me, top = _top(importer), _top(module)
    if module in FRONT_DOOR_LAZY.get(importer, ()):
        return None
    if me not in WINGS and top in WINGS:
        return f"{importer} imports the wing module {module}"
    if me == "models" and top in LOOPS:
        return f"{importer} imports the loop {module}"
    if order.get(top, 0) > order.get(me, 0):
        return f"{importer} (layer {order.get(me)}) imports {module} (layer {order.get(top)})"
    return None


def violations(path: Path, source: str | None = None, order: dict[str, int] | None = None) -> list[str]:
    """What `path` (or `source` as if it were at `path`) imports against the documented layers."""
    order = layers() if order is None else order
    found = (_problem(module_name(path), m, order) for m in sorted(_imports(path, source)))
    return [p for p in found if p]


def _package_files():
    return sorted(p for p in PKG.rglob("*.py") if "weights" not in p.relative_to(PKG).parts)


def import_graph(planted: dict[Path, str] | None = None) -> dict[str, set[str]]:
    """labkit module → the labkit modules it imports (at the top or inside a function, relative or
    absolute, importlib strings; the front door's lazy views left out). `planted` maps a path to a
    source read as if it were that file (a path that does not exist adds a module)."""
    planted = planted or {}
    graph = {}
    for path in sorted({*_package_files(), *planted}):
        me = module_name(path)
        graph[me] = {m for m in _imports(path, planted.get(path))
                     if m != me and m not in FRONT_DOOR_LAZY.get(me, ())}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Import circles as [a, b, ..., a], one for each edge that closes a circle in a depth-first walk
    (none exactly when the graph has no circle)."""
    found, state = [], {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path)
        path.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return found


def upward_edges(graph: dict[str, set[str]], order: dict[str, int] | None = None) -> list[str]:
    """The graph's edges that run against the layers, each as what is wrong with it."""
    order = layers() if order is None else order
    found = (_problem(a, b, order) for a in sorted(graph) for b in sorted(graph[a]))
    return [p for p in found if p]


def test_every_module_sits_in_a_documented_layer():
    order = layers()
    core = {name: n for name, n in order.items() if name not in WINGS}
    assert set(WINGS) <= set(order), "every wing has a layer"
    assert min(order[w] for w in WINGS) > max(core.values()), "the wings sit above the core"
    assert max(order.values()) == order["cli"] == order["__main__"], "the command is the top layer"
    entries = {_entry(p) for p in _package_files()}
    missing = sorted(entries - set(order))
    assert not missing, f"place these in the layer table of docs/architecture.md: {missing}"
    assert not sorted(set(order) - entries), f"docs/architecture.md names modules that do not exist: {set(order) - entries}"


def test_no_module_imports_from_a_higher_layer_or_a_wing():
    order = layers()
    bad = [v for path in _package_files() for v in violations(path, order=order)]
    assert not bad, bad


def test_the_import_graph_has_no_circle_and_no_edge_from_a_lower_layer_to_a_higher_one():
    graph = import_graph()
    edges = sum(map(len, graph.values()))
    assert len(graph) > 80 and edges > 200, f"the graph is not vacuous ({len(graph)} modules, {edges} edges)"
    circles, upward = cycles(graph), upward_edges(graph)
    print(f"import graph: {len(graph)} modules, {edges} edges, {len(circles)} circles, {len(upward)} upward edges")
    assert not circles, "import circles: " + "; ".join(" → ".join(c) for c in circles)
    assert not upward, "imports from a lower layer to a higher one: " + "; ".join(upward)


def test_the_graph_check_fails_on_a_planted_circle_and_a_planted_upward_edge():
    recorded = PKG / "recorded.py"
    circles = cycles(import_graph({recorded: recorded.read_text() + "from .decode import generate\n"}))
    assert [c for c in circles if set(c) == {"labkit.decode", "labkit.recorded"}], circles
    base = PKG / "samplers" / "base.py"                 # output → trace → samplers.base → output
    longer = cycles(import_graph({base: base.read_text() + "def f():\n    from ..output import Output\n"}))
    assert any(set(c) == {"labkit.output", "labkit.trace", "labkit.samplers.base"} for c in longer), longer
    planted = {PKG / "training" / "probe.py": "from ..bench.tasks import PAIRS\n"}
    upward = upward_edges(import_graph(planted))
    assert upward == ["labkit.training.probe (layer 8) imports labkit.bench.tasks (layer 10)"], upward


def test_the_front_door_reaches_the_wings_only_for_its_lazy_views():
    found = _imports(PKG / "__init__.py")
    assert {m for m in found if _top(m) in WINGS} == FRONT_DOOR_LAZY["labkit"]


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
    "a wing imports a wing above it": ("training/task_card.py", "from ..bench.tasks import PAIRS\n",
                                       "labkit.bench.tasks"),
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
                                                  "from labkit import tasks\n")
    assert not violations(PKG / "bench" / "probe.py", "from ..eval import metrics\nfrom labkit import ui\n")
    assert not violations(PKG / "recorded.py", "from .models.families.diffusion_gemma import DiffusionGemma\n")


def test_no_module_is_longer_than_450_lines():
    long = [f"{p.relative_to(PKG)} ({n} lines)" for p in sorted(PKG.rglob("*.py"))
            if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES]
    assert not long, f"split these where their code's seams are: {long}"


def _defined(tree: ast.Module) -> tuple[set[str], set[str]]:
    """A module's public top-level names it defines (def, class, assignment), and every name it binds."""
    public, bound = set(), set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, ast.Assign):
            targets = [e for t in node.targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names = [node.target.id]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
            continue
        else:
            continue
        bound |= set(names)
        public |= {n for n in names if not n.startswith("_")}
    return public, bound


def test_every_all_names_each_public_name_its_module_defines_and_nothing_it_lacks():
    """A module that declares __all__ lists there every public function, class and constant it
    defines (re-exports may be added), and nothing it does not bind."""
    wrong = []
    for path in sorted(PKG.rglob("*.py")):
        tree = ast.parse(path.read_text())
        decl = next((n for n in tree.body if isinstance(n, ast.Assign)
                     and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)), None)
        if decl is None:
            continue
        listed = {e.value for e in decl.value.elts}
        public, bound = _defined(tree)
        if missing := public - listed - {"__all__"}:
            wrong.append(f"{path.relative_to(PKG)}: not in __all__: {sorted(missing)}")
        if (unknown := listed - bound) and "__getattr__" not in bound:    # a module __getattr__ binds on first use
            wrong.append(f"{path.relative_to(PKG)}: __all__ names what it lacks: {sorted(unknown)}")
    assert not wrong, wrong


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


def test_every_import_inside_a_function_says_why():
    """docs/architecture.md: a module imports at its top; an import left inside a function (an
    optional extra, an import cycle, a heavy module kept off `import labkit` or a command's start)
    says why in a comment on its line or the line above it. The check is tried on a planted source."""
    def unexplained(source: str) -> list[int]:
        lines = iter(source.splitlines(keepends=True))
        comments = {t.start[0] for t in tokenize.generate_tokens(lambda: next(lines, "")) if t.type == tokenize.COMMENT}
        return sorted({node.lineno for fn in ast.walk(ast.parse(source))
                       if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                       for node in ast.walk(fn) if isinstance(node, (ast.Import, ast.ImportFrom))
                       and not comments & set(range(node.lineno - 1, node.end_lineno + 1))})

    planted = ('def f():\n    import json\n    x = "# in a string"\n    import os\n    import re  # why\n    # why\n'
               "    from . import (a,\n                   b)\n\nclass C:\n    def m(self):\n        def g():\n"
               "            import sys\n")
    assert unexplained(planted) == [2, 4, 13]
    bad = [f"{p.relative_to(PKG)}:{n}" for p in _package_files() for n in unexplained(p.read_text())]
    assert not bad, f"move these imports to their module's top, or say why they stay on or above their line: {bad}"
