"""No import cycles in any package (issue 10): every module's imports, read with ``ast``.

All four packages under ``packages/*/src`` are read as text, never imported. Every import
counts: lazy ones inside functions, and those under ``if TYPE_CHECKING:`` too (a type that
needs the module above is a dependency on it all the same). An import names the module it
loads: ``from regtree.config import load_config`` is an edge to ``regtree.config``, and
``from . import _plugins`` to ``regtree._plugins``; the parent packages that the import system
loads on the way are not edges (every submodule would otherwise "import" its own package).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for source in sorted(REPO_ROOT.glob("packages/*/src")):
        for path in sorted(source.rglob("*.py")):
            parts = list(path.relative_to(source).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _import_nodes(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for child in ast.walk(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child


def _imported(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Return the modules of ``modules`` that ``module`` imports."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    targets: set[str] = set()
    for node in _import_nodes(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, *([base] if base else [])])
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            targets.add(submodule if submodule in modules else base)
    return {target for target in targets if target in modules and target != module}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imported(name, path, modules) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Return the strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def test_the_graph_covers_every_package_and_sees_lazy_imports() -> None:
    graph = _graph()
    assert {name.partition(".")[0] for name in graph} == {
        "regtree",
        "regtree_optim",
        "demo_cls",
        "demo_det",
    }
    # A lazy import (inside a function) counts: the build imports its error texts on failure.
    assert "regtree._diagnostics" in graph["regtree._build"]
    # So does one the type checker alone sees: regtree.config names its lazy writer in hints.
    assert "regtree.config._dump" in graph["regtree.config"]
    # Registry.validate, the registry layer's one call into the tools (SPEC 1), is an edge too:
    # the tools see registries through regtree._miss's RegistryNode, never the registry module.
    assert "regtree.config" in graph["regtree._registry"]
    assert "regtree._registry" not in graph["regtree.config._validate"]


def test_no_package_has_an_import_cycle() -> None:
    cycles = _cycles(_graph())
    assert cycles == [], "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)
