"""The folder tree is the architecture (DESIGN.md, "Layers"): this test holds it.

Every module under ``src/weft`` is parsed with ``ast`` (never imported) and every import of a
weft module is collected wherever it stands: at module level, inside functions and methods,
under ``if TYPE_CHECKING:``, relative (``from .x import y``) or absolute, and calls of
``importlib.import_module("weft....")`` with a literal name. Two rules are checked:

(a) a module imports only from its own layer and the layers above it in DESIGN.md's list;
    ``weft._sync`` and ``weft.errors`` (layer 0) may be imported by every layer and import
    nothing but each other; the package ``weft`` itself sits on top (it re-exports from any
    layer, so only the top layer may import it);
(b) the module import graph has no cycle.

What one import statement counts as importing, precisely:

- ``import weft.a.b`` and ``from weft.a.b import name`` import ``weft.a.b``;
  ``from weft.a import b`` imports ``weft.a.b`` when ``b`` is a submodule, else ``weft.a``;
  ``from weft.a import *`` imports ``weft.a``. Relative imports are resolved against the
  importing module's package first.
- Python runs every enclosing package's ``__init__`` before a submodule, so importing
  ``weft.a.b`` also imports the packages around it (``weft.a``), **except the packages that
  enclose the importer itself**. Those are already being initialised when any of their
  modules runs (a submodule is only ever loaded after its package's ``__init__`` has
  started), so reaching them adds no new dependency. That is why a package ``__init__`` that
  re-exports its own submodules is not a cycle with them, while a module that imports a
  sibling package (``weft.memory.recall`` importing ``weft.memory.backends.base`` runs
  ``weft.memory.backends``) depends on that sibling's ``__init__`` and everything it loads.
- An *explicit* import of one's own package (``from weft.store import Store`` inside
  ``weft.store.records``) does count: it reads names from an ``__init__`` that may not have
  bound them yet, which is exactly the circular import this test exists to prevent.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src" / "weft"

# DESIGN.md "Layers", by number: a module imports only from layers with a number <= its own.
LAYERS: Mapping[str, int] = {
    "_sync": 0,
    "errors": 0,
    "store": 1,
    "refs": 2,
    "graph": 3,
    "persist": 4,
    "calls": 5,
    "memory": 6,
    "llm": 7,
    "agent": 8,
    "plan": 9,
    "runtime": 10,
    "telemetry": 11,
    "integrations": 11,
    "mcp": 11,
    "inspect": 11,
    "distributed": 11,
    "cli": 11,
}


@dataclass(frozen=True, slots=True)
class Import:
    """``importer``'s line ``line`` imports the module ``imported``."""

    importer: str
    line: int
    imported: str


def find_modules(root: Path) -> dict[str, Path]:
    """Every module of the package in ``root``, by dotted name (a package by its own name)."""
    modules: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def enclosing(name: str) -> Iterator[str]:
    """The packages around ``name``, innermost first (``a.b.c`` -> ``a.b``, ``a``)."""
    parts = name.split(".")
    for end in range(len(parts) - 1, 0, -1):
        yield ".".join(parts[:end])


def find_imports(module: str, path: Path, modules: Mapping[str, Path]) -> list[Import]:
    """Every import of a module of this package that ``module``'s source makes, anywhere."""
    top = module.split(".")[0]
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    own = {module, *enclosing(module)} if is_package else set(enclosing(module))
    named: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            named.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                prefix = ".".join([*base, node.module] if node.module else base)
            else:
                prefix = node.module or ""
            for alias in node.names:
                submodule = f"{prefix}.{alias.name}"
                named.append((node.lineno, submodule if submodule in modules else prefix))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
            == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            named.append((node.lineno, node.args[0].value))
    found: list[Import] = []
    for line, name in named:
        if name != top and not name.startswith(top + "."):
            continue
        found.append(Import(module, line, name))
        found.extend(Import(module, line, p) for p in enclosing(name) if p not in own)
    return found


def layer_of(module: str, layers: Mapping[str, int]) -> int | None:
    parts = module.split(".")
    return max(layers.values()) if len(parts) == 1 else layers.get(parts[1])


def layer_name(module: str, layers: Mapping[str, int]) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return f"layer {layer_of(module, layers)}, the package itself"
    return f"layer {layers[parts[1]]} {parts[1]}"


def layer_violations(
    imports: list[Import], modules: Mapping[str, Path], layers: Mapping[str, int]
) -> list[str]:
    """Rule (a), plus what would make it meaningless: modules in no layer, imports of nothing."""
    problems: list[str] = []
    for module in modules:
        if layer_of(module, layers) is None:
            problems.append(
                f'{module} is in no layer: add its folder to DESIGN.md "Layers" and to '
                f"LAYERS in tests/test_layers.py, or move it into an existing layer"
            )
    for each in imports:
        if each.imported not in modules:
            problems.append(
                f"{each.importer}, line {each.line}, imports {each.imported}, which is no "
                f"module of the package: fix the name"
            )
            continue
        here, there = layer_of(each.importer, layers), layer_of(each.imported, layers)
        if here is not None and there is not None and there > here:
            problems.append(
                f"{each.importer} ({layer_name(each.importer, layers)}), line {each.line}, "
                f"imports {each.imported} ({layer_name(each.imported, layers)}), a layer "
                f"below its own: a layer imports only from the layers above it (DESIGN.md "
                f'"Layers"); move what it needs up, or have the caller pass it in'
            )
    return problems


def tangles(imports: list[Import]) -> list[list[str]]:
    """The groups of modules that import one another in a cycle (strongly connected
    components of the import graph with more than one module, or a module importing itself)."""
    edges: dict[str, list[str]] = {}
    for each in imports:
        edges.setdefault(each.importer, []).append(each.imported)
    # Tarjan's algorithm, iterative so that a deep import chain cannot hit the recursion limit.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(sorted(set(edges.get(start, ())))))]
        while work:
            module, targets = work[-1]
            target = next(targets, None)
            if target is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[module])
                if low[module] == index[module]:
                    group: list[str] = []
                    while not group or group[-1] != module:
                        group.append(stack.pop())
                        on_stack.discard(group[-1])
                    if len(group) > 1 or module in edges.get(module, ()):
                        groups.append(sorted(group))
            elif target not in index:
                index[target] = low[target] = len(index)
                stack.append(target)
                on_stack.add(target)
                work.append((target, iter(sorted(set(edges.get(target, ()))))))
            elif target in on_stack:
                low[module] = min(low[module], index[target])
    return sorted(groups)


def shortest_cycle(group: list[str], imports: list[Import]) -> list[Import]:
    """The shortest way round from the group's first module back to it, as imports."""
    members = set(group)
    inside = sorted(
        (each for each in imports if each.importer in members and each.imported in members),
        key=lambda each: (each.imported, each.line),
    )
    first = group[0]
    came_from: dict[str, Import] = {}
    frontier = [first]
    while first not in came_from:
        following: list[str] = []
        for module in frontier:
            for each in inside:
                if each.importer == module and each.imported not in came_from:
                    came_from[each.imported] = each
                    following.append(each.imported)
        frontier = following
    chain = [came_from[first]]
    while chain[0].importer != first:
        chain.insert(0, came_from[chain[0].importer])
    return chain


def cycle_problems(imports: list[Import]) -> list[str]:
    """Rule (b): each tangle, with one of its cycles in import order and lines."""
    problems: list[str] = []
    for group in tangles(imports):
        chain = shortest_cycle(group, imports)
        steps = " -> ".join(f"{each.importer} (line {each.line})" for each in chain)
        message = f"import cycle: {steps} -> {chain[0].importer}"
        if len(group) > len(chain):
            message += f"; all {len(group)} modules of this tangle: {', '.join(group)}"
        problems.append(message)
    return problems


def messages(root: Path, layers: Mapping[str, int] = LAYERS) -> list[str]:
    """Every breach of both rules in the package at ``root``, one message each."""
    modules = find_modules(root)
    imports = [
        each for module, path in modules.items() for each in find_imports(module, path, modules)
    ]
    known = [each for each in imports if each.imported in modules]
    return layer_violations(imports, modules, layers) + cycle_problems(known)


def test_src_weft_keeps_the_layer_order_and_has_no_import_cycle() -> None:
    problems = messages(SOURCE)
    assert not problems, "\n".join(["", *problems])


def test_the_checker_sees_the_real_tree() -> None:
    modules = find_modules(SOURCE)
    imports = find_imports("weft.graph.engine", modules["weft.graph.engine"], modules)
    assert {"weft", "weft.store", "weft.graph"} <= set(modules)
    assert any(each.imported.startswith("weft.store") for each in imports)


# A fake package in a temporary folder, checked against the real layer table.


def make_tree(root: Path, files: dict[str, str]) -> Path:
    package = root / "weft"
    for name, text in {"__init__.py": "", **files}.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.relative_to(package).parents:
            (package / parent / "__init__.py").touch()
        path.write_text(textwrap.dedent(text))
    return package


def test_a_function_level_import_of_a_lower_layer_is_caught(tmp_path: Path) -> None:
    package = make_tree(
        tmp_path,
        {
            "store/store.py": """
                def later():
                    from weft.graph.engine import run
                    return run
            """,
            "graph/engine.py": "def run(): ...\n",
        },
    )
    assert messages(package) == [
        "weft.store.store (layer 1 store), line 3, imports weft.graph.engine (layer 3 graph), "
        "a layer below its own: a layer imports only from the layers above it (DESIGN.md "
        '"Layers"); move what it needs up, or have the caller pass it in',
        "weft.store.store (layer 1 store), line 3, imports weft.graph (layer 3 graph), "
        "a layer below its own: a layer imports only from the layers above it (DESIGN.md "
        '"Layers"); move what it needs up, or have the caller pass it in',
    ]


def test_a_type_checking_import_of_a_lower_layer_is_caught(tmp_path: Path) -> None:
    package = make_tree(
        tmp_path,
        {
            "refs/resolve.py": """
                from typing import TYPE_CHECKING
                if TYPE_CHECKING:
                    from weft.calls import Plan
            """,
            "calls/__init__.py": "Plan = object\n",
        },
    )
    (problem,) = messages(package)
    assert problem.startswith(
        "weft.refs.resolve (layer 2 refs), line 4, imports weft.calls (layer 5 calls)"
    )


def test_a_relative_import_of_a_lower_layer_is_caught(tmp_path: Path) -> None:
    package = make_tree(
        tmp_path,
        {"refs/resolve.py": "from ..graph import node\n", "graph/node.py": ""},
    )
    problems = messages(package)
    assert [p.split(", a layer")[0] for p in problems] == [
        "weft.refs.resolve (layer 2 refs), line 1, imports weft.graph.node (layer 3 graph)",
        "weft.refs.resolve (layer 2 refs), line 1, imports weft.graph (layer 3 graph)",
    ]


def test_errors_and_sync_may_be_imported_by_every_layer_but_import_no_layer(
    tmp_path: Path,
) -> None:
    package = make_tree(
        tmp_path,
        {
            "store/store.py": "from weft.errors import StoreError\nfrom weft import _sync\n",
            "errors.py": "from weft._sync import run\n",
            "_sync.py": "def run(): from weft.store import Store\n",
        },
    )
    problems = messages(package)
    assert [p.split(", a layer")[0] for p in problems] == [
        "weft._sync (layer 0 _sync), line 1, imports weft.store (layer 1 store)",
    ]


def test_a_three_module_cycle_is_reported_in_order(tmp_path: Path) -> None:
    package = make_tree(
        tmp_path,
        {
            "calls/plan.py": "from weft.calls.runner import run\n",
            "calls/runner.py": "\n\ndef run():\n    from weft.calls.tools import Tool\n",
            "calls/tools.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from weft.calls.plan import Plan\n",
        },
    )
    assert messages(package) == [
        "import cycle: weft.calls.plan (line 1) -> weft.calls.runner (line 4) -> "
        "weft.calls.tools (line 3) -> weft.calls.plan"
    ]


def test_a_package_reexporting_its_submodules_is_no_cycle(tmp_path: Path) -> None:
    package = make_tree(
        tmp_path,
        {
            "store/__init__.py": "from weft.store import reducers\n"
            "from weft.store.store import Store\nfrom .events import Event\n",
            "store/reducers.py": "",
            "store/store.py": "from weft.store.events import Event\nfrom . import reducers\n",
            "store/events.py": "",
        },
    )
    assert messages(package) == []


def test_a_submodule_importing_its_own_package_is_a_cycle(tmp_path: Path) -> None:
    package = make_tree(
        tmp_path,
        {
            "store/__init__.py": "from weft.store.records import Note\n",
            "store/records.py": "from weft.store import Store\n",
        },
    )
    assert messages(package) == [
        "import cycle: weft.store (line 1) -> weft.store.records (line 1) -> weft.store"
    ]


def test_importing_a_submodule_of_another_package_runs_that_package_first(
    tmp_path: Path,
) -> None:
    # recall -> backends.base also runs backends/__init__, which loads sqlite, which needs recall
    package = make_tree(
        tmp_path,
        {
            "memory/recall.py": "from weft.memory.backends.base import Backend\n",
            "memory/backends/__init__.py": "from .sqlite import SQLiteBackend\n",
            "memory/backends/base.py": "",
            "memory/backends/sqlite.py": "from weft.memory.recall import rank\n",
        },
    )
    assert messages(package) == [
        "import cycle: weft.memory.backends (line 1) -> weft.memory.backends.sqlite (line 1) "
        "-> weft.memory.recall (line 1) -> weft.memory.backends"
    ]


def test_from_a_package_import_a_submodule_counts_as_that_submodule(tmp_path: Path) -> None:
    package = make_tree(
        tmp_path,
        {
            "graph/a.py": "from weft.graph import b\n",
            "graph/b.py": "from weft.graph.a import x\n",
        },
    )
    assert messages(package) == [
        "import cycle: weft.graph.a (line 1) -> weft.graph.b (line 1) -> weft.graph.a"
    ]


def test_a_module_outside_every_layer_and_an_import_of_nothing_are_reported(
    tmp_path: Path,
) -> None:
    package = make_tree(
        tmp_path,
        {
            "helpers.py": "",
            "store/store.py": "import importlib\nimportlib.import_module('weft.stroe')\n",
        },
    )
    problems = messages(package)
    assert problems[0].startswith("weft.helpers is in no layer")
    assert problems[1].startswith(
        "weft.store.store, line 2, imports weft.stroe, which is no module"
    )


@pytest.mark.parametrize("importer", ["store/store.py", "cli/main.py"])
def test_only_the_top_layer_may_import_the_package_itself(tmp_path: Path, importer: str) -> None:
    package = make_tree(tmp_path, {importer: "from weft import __version__\n"})
    problems = messages(package)
    assert len(problems) == (1 if importer.startswith("store") else 0)
