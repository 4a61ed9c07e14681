"""Inheritance (SPEC 5.2): ``_base_`` files merged under a file; ``_delete_``; ``{{_base_.x}}``."""

from __future__ import annotations

import os
import re

from ._errors import ConfigError
from ._files import read_tree
from ._tree import Items, Leaf, PathProblem, Table, copy_tree, descend, index_of, missing_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ._tree import Node

__all__ = ["BASE_KEY", "DELETE_KEY", "compose"]

BASE_KEY = "_base_"
DELETE_KEY = "_delete_"
# mmcv's pattern: `{{ _base_.a.b }}`, spaces allowed inside the braces.
_REFERENCE = re.compile(r"\{\{\s*_base_\.([\w.\-]+)\s*\}\}")


def compose(filename: str, read: Callable[[str], Table] = read_tree) -> Table:
    """Read a config file with everything it inherits, merged into one tree.

    Args:
        filename: The config file.
        read: Reads one file into a tree (the format's parser).

    Returns:
        The merged tree: the bases in list order, the file on top, ``_base_`` and every
        ``_delete_`` removed, every ``{{_base_...}}`` replaced by the value it names.

    Raises:
        ConfigError: A file cannot be read or parsed, a ``_base_`` is malformed or missing, two
            bases define the same top-level key, the bases form a cycle, a ``_delete_`` is not a
            bool, or a reference names no value of the bases.
        OSError: ``filename`` itself cannot be opened.
    """
    return _compose(filename, (), (), read)


def _compose(
    filename: str,
    chain: tuple[str, ...],
    real_chain: tuple[str, ...],
    read: Callable[[str], Table],
) -> Table:
    """Compose ``filename``, which ``chain`` (the files above it, and their real paths) inherit."""
    tree = read(filename)
    base_node = tree.pop(BASE_KEY, None)
    if base_node is None:
        _strip_delete(filename, tree)  # and refuse a reference: there is nothing to take it from
        return tree
    merged = Table(tree.origin)
    owners: dict[str, str] = {}
    real_chain = (*real_chain, os.path.realpath(filename))
    for name, origin in _base_names(filename, base_node):
        path = os.path.normpath(os.path.join(os.path.dirname(filename), name))
        if os.path.realpath(path) in real_chain:
            cycle = " -> ".join([*chain, filename, path])
            raise ConfigError(filename, f"the _base_ files form a cycle: {cycle}", _line(origin))
        try:
            base = _compose(path, (*chain, filename), real_chain, read)
        except OSError as exc:
            raise ConfigError(
                filename,
                f"cannot read its base {name!r} ({path}): {exc.strerror or exc}; a _base_ path "
                "is relative to the file that names it",
                _line(origin),
            ) from None
        for key, value in base.items():
            if key in owners:
                raise ConfigError(
                    filename,
                    f"its bases {owners[key]} and {path} both define the top-level key {key!r}; "
                    "a key may come from one base only (set it in this file instead)",
                )
            owners[key] = path
            merged[key] = value
    _substitute(filename, tree, merged)
    return _merge(filename, merged, tree)


def _base_names(filename: str, node: Node) -> list[tuple[str, str]]:
    """Return each base path with the origin of where it is written."""
    entries: list[Node] = list(node) if isinstance(node, Items) else [node]
    names: list[tuple[str, str]] = []
    for entry in entries:
        if not isinstance(entry, Leaf) or not isinstance(entry.value, str) or not entry.value:
            raise ConfigError(
                filename,
                "_base_ must be a path or a list of paths (strings) to the config files this "
                "one inherits, relative to this file",
                _line(entry.origin),
            )
        names.append((entry.value, entry.origin))
    return names


def _merge(filename: str, base: Table, child: Table) -> Table:
    """Merge ``child`` into ``base`` (in place) and return it."""
    if _pop_delete(filename, child):
        _strip_delete(filename, child)
        return child
    for key, value in child.items():
        current = base.get(key)
        if isinstance(value, Table) and isinstance(current, Table):
            base[key] = _merge(filename, current, value)
        else:
            _strip_delete(filename, value)
            base[key] = value
    return base


def _pop_delete(filename: str, table: Table) -> bool:
    flag = table.pop(DELETE_KEY, None)
    if flag is None:
        return False
    if not isinstance(flag, Leaf) or not isinstance(flag.value, bool):
        shown = flag.value if isinstance(flag, Leaf) else "a mapping or list"
        raise ConfigError(
            filename,
            f"_delete_ must be true or false, not {shown!r} (true replaces the base's mapping "
            "instead of merging into it)",
            _line(flag.origin),
        )
    return flag.value


def _strip_delete(filename: str, node: Node) -> None:
    """Remove every ``_delete_`` below ``node`` (nothing is under it) and refuse references."""
    if isinstance(node, Table):
        if DELETE_KEY in node:
            _pop_delete(filename, node)
        for child in node.values():
            _strip_delete(filename, child)
    elif isinstance(node, Items):
        for child in node:
            _strip_delete(filename, child)
    elif isinstance(node.value, str) and "{{" in node.value:
        _check_no_reference(filename, node)


def _substitute(filename: str, node: Table | Items, bases: Table) -> None:
    """Replace every ``{{_base_.a.b}}`` value below ``node`` by a copy of that value."""
    children = node.items() if isinstance(node, Table) else enumerate(node)
    for key, child in list(children):
        if isinstance(child, Table | Items):
            _substitute(filename, child, bases)
        elif isinstance(child, Leaf) and isinstance(child.value, str) and "{{" in child.value:
            found = _REFERENCE.fullmatch(child.value.strip())
            if found is None:
                _check_no_reference(filename, child)
                continue
            value = _lookup(filename, bases, found.group(1), child.origin)
            node[key] = copy_tree(value, child.origin)  # type: ignore[index, call-overload]


def _lookup(filename: str, bases: Table, dotted: str, origin: str) -> Node:
    parts = dotted.split(".")
    try:
        parent = descend(bases, parts[:-1], whole=dotted)
        if isinstance(parent, Items):
            return parent[index_of(parent, parts[-1], ".".join(parts[:-1]))]
        if parts[-1] in parent:
            return parent[parts[-1]]
        problem = missing_key(bases, dotted)
    except PathProblem as exc:
        problem = str(exc)
    raise ConfigError(
        filename, f"{{{{_base_.{dotted}}}}} names no value of its bases: {problem}", _line(origin)
    )


def _check_no_reference(filename: str, node: Node) -> None:
    """Refuse a ``{{_base_...}}`` that cannot be replaced: no bases, or inside a longer string."""
    if isinstance(node, Table | Items):
        for child in node.values() if isinstance(node, Table) else node:
            _check_no_reference(filename, child)
        return
    if isinstance(node.value, str) and _REFERENCE.search(node.value):
        whole = _REFERENCE.fullmatch(node.value.strip()) is not None
        problem = (
            "the file has no _base_ to take it from"
            if whole
            else "a reference must be the whole value (it stands for a value of any type)"
        )
        raise ConfigError(filename, f"cannot replace {node.value!r}: {problem}", _line(node.origin))


def _line(origin: str) -> int | None:
    """The line of an origin ``'file:line'``; None for an origin without one."""
    head, _, tail = origin.rpartition(":")
    return int(tail) if head and tail.isdigit() else None
