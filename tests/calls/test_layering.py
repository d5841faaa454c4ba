"""weft.calls sits between the engine and the layers that use it: the reference language
below it never loads it, it never loads the layers above it, and its modules import one
another without a cycle (at module level, inside functions and under TYPE_CHECKING)."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import weft.calls

SOURCE = pathlib.Path(weft.calls.__file__).parent
ALLOWED = ("weft._sync", "weft.errors", "weft.store", "weft.refs", "weft.graph", "weft.persist")


def loaded_after(statement: str, modules: tuple[str, ...]) -> list[str]:
    """Which of ``modules`` a fresh interpreter has loaded after running ``statement``."""
    code = f"import sys; {statement}; print(','.join(m for m in {modules!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return [name for name in out.stdout.strip().split(",") if name]


def imports_of(path: pathlib.Path) -> list[str]:
    """Every weft module ``path`` imports, wherever the import statement stands."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
    return [name for name in found if name == "weft" or name.startswith("weft.")]


def test_importing_weft_refs_loads_neither_the_calls_nor_the_engine_nor_jsonschema() -> None:
    assert loaded_after("import weft.refs", ("weft.calls", "weft.graph", "jsonschema")) == []


def test_importing_weft_calls_loads_no_layer_above_it() -> None:
    above = ("weft.memory", "weft.llm", "weft.agent", "weft.plan", "weft.runtime", "weft.cli")
    assert loaded_after("import weft.calls", above) == []


def test_calls_modules_import_only_the_layers_above_them() -> None:
    for path in SOURCE.glob("*.py"):
        for name in imports_of(path):
            assert name.startswith((*ALLOWED, "weft.calls")), (path.name, name)


def test_calls_modules_import_one_another_without_a_cycle() -> None:
    graph: dict[str, set[str]] = {}
    for path in SOURCE.glob("*.py"):
        module = "weft.calls" if path.stem == "__init__" else f"weft.calls.{path.stem}"
        graph[module] = {name for name in imports_of(path) if name.startswith("weft.calls")}
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, " -> ".join((*path, module))
        if module in done:
            return
        for imported in sorted(graph.get(module, ())):
            visit(imported, (*path, module))
        done.add(module)

    for module in sorted(graph):
        visit(module, ())
    assert graph.get("weft.calls.plan")
