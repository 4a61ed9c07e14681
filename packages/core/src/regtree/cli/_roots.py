"""Find the registry trees the ``regtree`` command shows, walk them, and fill them before use."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any

from .._registry import Registry

__all__ = ["find_root_registries", "import_locations", "iter_tree"]


def find_root_registries(scopes: Iterable[str]) -> list[Registry[Any]]:
    """Return the roots of the registries defined in ``regtree`` and in the given scopes' modules.

    Registries live in module globals (``regtree.MODELS``, ``demo_cls.MODELS``), so the modules
    of ``regtree`` and of each loaded plugin scope are scanned, and each registry found gives its
    tree's root. Nothing is imported.

    Args:
        scopes: Top-level package names to scan besides ``regtree`` (the loaded plugin scopes).

    Returns:
        Each root once: those of ``regtree`` first, then the others by scope and name.
    """
    own = _roots_in_package("regtree", {})
    others = _roots_in_package(set(scopes) - {"regtree"}, own)
    return [*own.values(), *sorted(others.values(), key=lambda root: (root.scope, root.name))]


def _roots_in_package(
    packages: str | Iterable[str], seen: dict[int, Registry[Any]]
) -> dict[int, Registry[Any]]:
    wanted = {packages} if isinstance(packages, str) else set(packages)
    roots: dict[int, Registry[Any]] = {}
    for module_name, module in sorted(sys.modules.items(), key=lambda item: item[0]):
        if module_name.partition(".")[0] not in wanted:
            continue
        for value in list(getattr(module, "__dict__", {}).values()):
            if isinstance(value, Registry) and id(value.root) not in seen:
                roots.setdefault(id(value.root), value.root)
    return roots


def import_locations(root: Registry[Any]) -> None:
    """Fill every registry of the tree that is filled lazily, so counts and listings are whole.

    Args:
        root: The root of the tree to fill.
    """
    for member in iter_tree(root):
        if getattr(member, "locations", ()):
            member.get("")  # a registry imports its locations on its first lookup


def iter_tree(root: Registry[Any]) -> Iterator[Registry[Any]]:
    """Yield ``root`` and every registry below it, depth first, children in scope order.

    The order in which the command prints a tree; the registries are those of ``root.walk()``.
    """

    def scopes_from_root(registry: Registry[Any]) -> list[str]:
        path: list[str] = []
        node: Registry[Any] | None = registry
        while node is not None and node is not root:
            path.append(node.scope)
            node = node.parent
        return path[::-1]

    yield from sorted(root.walk(), key=scopes_from_root)
