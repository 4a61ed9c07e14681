"""Inheritance (SPEC 5.2): ``_base_`` files merged under a file; ``_delete_``; ``{{_base_.x}}``."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ._errors import ConfigError
from ._files import read_file, read_tree, why_unreadable
from ._scalars import BASE_REFERENCE, NOT_A_REFERENCE, REFERENCE_LIKE
from ._tree import (
    PathProblem,
    Table,
    copy_tree,
    descend,
    format_dotted,
    index_of,
    leaf_value,
    line_of,
    missing_key,
    origin_of,
    shallow_copy,
    split_dotted,
)

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, NoReturn, TypeAlias

    # The files a composed tree was made of, with their content.
    Fingerprint: TypeAlias = tuple[tuple[str, bytes], ...]

__all__ = ["BASE_KEY", "DELETE_KEY", "MAX_LEVELS", "compose", "delete_flag_problem"]

BASE_KEY = "_base_"
DELETE_KEY = "_delete_"


# A file's composed tree, by the file's name as given and the form (plain data or not): (the
# content of the file and of each base it was composed from, the tree, the longest chain of
# bases under the file, so that a hit still counts its levels). The bases of a config
# tree are shared by many configs: loading mmdetection's 666 configs one after the other composes
# their bases 3,668 times, and ast.parse alone then takes about as long as the whole pass should.
# A hit is checked against the content of every file involved, so an edited file is composed
# again. Composed trees share their bases' nodes and are never changed: a merge copies the
# mappings it merges into.
_COMPOSED: dict[tuple[str, bool], tuple[Fingerprint, Any, tuple[str, ...]]] = {}
_COMPOSED_MAX = 1024
# The most levels of _base_ under the file loaded, cached or not. Real configs use a handful.
# Each level is two nested calls, and the file at the bottom still parses and merges nested
# data: 100 levels keep a load well inside Python's recursion limit (1000). The bound also ends
# a chain that paths never show to be a cycle (a folder linked into itself: ever longer paths).
MAX_LEVELS = 100
_MISSING = object()


def compose(filename: str, *, plain: bool = False) -> Any:
    """Read a config file with everything it inherits, merged into one tree.

    Args:
        filename: The config file.
        plain: Compose plain data (dicts, lists, values), which keeps no origins, instead of a
            tree. A problem is still reported with its line: it is looked for again in a tree.

    Returns:
        The merged tree (a `Table`, or a dict of plain data): the bases in list order, the file
        on top, ``_base_`` and every ``_delete_`` removed, every ``{{_base_...}}`` replaced by
        the value it names. It may share nodes with other loads: copy it before changing it.

    Raises:
        ConfigError: A file cannot be opened, read or parsed, a ``_base_`` is malformed or
            missing, two bases define the same top-level key, the bases form a cycle, a
            ``_delete_`` is not a bool, or a reference names no value of the bases.
    """
    try:
        tree, _, _ = _compose(filename, (), plain)
    except OSError as exc:  # the file itself: a base's is reported by the file naming it
        raise ConfigError(filename, f"cannot read the config file: {why_unreadable(exc)}") from None
    except ConfigError as exc:
        if not plain or exc.line is not None:
            raise
        problem = exc
    else:
        return tree
    # Plain data has no lines to name: the tree's composition raises the same problem, with the
    # line where it has one. Outside the handler, so that the problem is not shown twice.
    _compose(filename, (), False)
    raise problem


def _compose(
    filename: str, chain: tuple[str, ...], plain: bool
) -> tuple[Any, Fingerprint, tuple[str, ...]]:
    """Compose ``filename``, which the files of ``chain`` inherit.

    Returns:
        The tree, the files it was made of with their content, and the longest chain of bases
        under ``filename`` (its base first; empty for a file without one).
    """
    kind, data = read_file(filename)
    cached = _COMPOSED.get((filename, plain))
    if cached is not None and cached[0][0][1] == data and _unchanged(cached[0][1:]):
        return cached[1], cached[0], cached[2]
    tree, fingerprint, below = _compose_anew(filename, kind, data, chain, plain)
    if len(_COMPOSED) >= _COMPOSED_MAX:
        del _COMPOSED[next(iter(_COMPOSED))]  # the oldest
    _COMPOSED[filename, plain] = fingerprint, tree, below
    return tree, fingerprint, below


def _unchanged(fingerprint: Fingerprint) -> bool:
    for path, data in fingerprint:
        try:
            if read_file(path)[1] != data:
                return False
        except (OSError, ConfigError):
            return False
    return True


def _compose_anew(
    filename: str, kind: str, data: bytes, chain: tuple[str, ...], plain: bool
) -> tuple[Any, Fingerprint, tuple[str, ...]]:
    tree = read_tree(filename, kind, data, plain=plain)
    fingerprint: Fingerprint = ((filename, data),)
    deepest: tuple[str, ...] = ()
    base_node = tree.pop(BASE_KEY, _MISSING)
    replacing: set[int] = set()
    prepare = _may_hold_markers(kind, data)
    if base_node is _MISSING:
        if prepare:
            _prepare(filename, tree, None, replacing)  # a reference is refused: no bases
        return tree, fingerprint, deepest
    merged = {} if plain else Table(tree.origin)
    owners: dict[str, str] = {}
    chain = (*chain, filename)  # a base of this file is at level len(chain) of the load
    above = {os.path.abspath(name) for name in chain}
    for name, origin in _base_names(filename, base_node):
        path = os.path.normpath(os.path.join(os.path.dirname(filename), name))
        if os.path.abspath(path) in above:
            cycle = _chain_text([*chain, path])
            raise ConfigError(filename, f"the _base_ files form a cycle: {cycle}", line_of(origin))
        if len(chain) > MAX_LEVELS:  # before reading it: a chain of links never ends
            _too_many_levels((*chain, path))
        try:
            base, used, below = _compose(path, chain, plain)
        except OSError as exc:
            raise ConfigError(
                filename,
                f"cannot read its base {name!r} ({path}): {why_unreadable(exc)}; a _base_ path "
                "is relative to the file that names it",
                line_of(origin),
            ) from None
        if len(chain) + len(below) > MAX_LEVELS:  # a composed base kept from an earlier load
            _too_many_levels((*chain, path, *below))
        if len(below) >= len(deepest):
            deepest = (path, *below)
        fingerprint += used
        for key, value in base.items():
            if key in owners:
                raise ConfigError(
                    filename,
                    f"its bases {owners[key]} and {path} both define the top-level key {key!r}; "
                    "a key may come from one base only (set it in this file instead)",
                )
            owners[key] = path
            merged[key] = value
    if prepare:
        _prepare(filename, tree, merged, replacing)
    return _merge(merged, tree, replacing), fingerprint, deepest


def _too_many_levels(chain: tuple[str, ...]) -> NoReturn:
    """Refuse a chain of bases deeper than `MAX_LEVELS`, naming the file loaded (``chain[0]``).

    The message names the chain from that file to the first base past the bound, whatever part
    of it an earlier load kept composed: it does not depend on what the process loaded before.
    """
    chain = chain[: MAX_LEVELS + 2]
    raise ConfigError(
        chain[0],
        f"more than {MAX_LEVELS} levels of _base_: {_chain_text(chain)}; a config inherits "
        f"through {MAX_LEVELS} at most (merge some of these files, or unlink a folder linked "
        "into itself)",
    )


def _chain_text(paths: list[str] | tuple[str, ...]) -> str:
    """Files that inherit each other, joined by arrows; a long chain keeps its two ends."""
    if len(paths) > 12:
        paths = [*paths[:5], f"... {len(paths) - 10} more ...", *paths[-5:]]
    return " -> ".join(paths)


def _may_hold_markers(kind: str, data: bytes) -> bool:
    """Whether a file's tree may hold a ``_delete_`` key or a ``{{`` string, for `_prepare`.

    In JSON, TOML and YAML neither can be written without its characters appearing in the
    file, or a backslash (an escape). A Python config is always prepared: it computes strings.
    Measured, the config benchmark's four YAML files are composed in 512 us instead of 528 us
    without walking trees that hold neither (TOML: 854 us instead of 871 us).
    """
    return b"_delete_" in data or b"{{" in data or b"\\" in data or kind == "Python"


def _base_names(filename: str, node: object) -> list[tuple[str, str | None]]:
    """Return each base path with the origin of where it is written (None in plain data)."""
    entries = list(node) if isinstance(node, list) else [node]
    names: list[tuple[str, str | None]] = []
    for entry in entries:
        value = leaf_value(entry)
        if not isinstance(value, str) or not value:
            raise ConfigError(
                filename,
                "_base_ must be a path or a list of paths (strings) to the config files this "
                "one inherits, relative to this file",
                line_of(origin_of(entry)),
            )
        names.append((value, origin_of(entry)))
    return names


def _merge(base: dict[str, Any], child: dict[str, Any], replacing: set[int]) -> Any:
    """Merge ``child`` into ``base`` (in place) and return it; mappings of either form.

    A mapping of ``replacing`` (by id: one that said ``_delete_: true``) replaces the base's.
    """
    if id(child) in replacing:
        return child
    for key, value in child.items():
        current = base.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            # A base's mapping is shared: merge into a copy.
            base[key] = _merge(shallow_copy(current), value, replacing)
        else:
            base[key] = value
    return base


def _prepare(filename: str, node: Any, bases: dict[str, Any] | None, replacing: set[int]) -> None:
    """Make a file's tree (or plain data) ready to merge, in one pass (each node is visited once).

    Every ``_delete_`` below ``node`` is removed, the ids of the mappings where it was true
    added to ``replacing``; every ``{{_base_.a.b}}`` is replaced by a copy of that value of
    ``bases``, or refused where there are no bases (None) or it is part of a longer string.
    The first problem in the order of the tree is the one raised.
    """
    # One pass, not a walk for references and another for `_delete_`: measured, composing the
    # config benchmark's four files (already read) takes 65 us instead of 100 us.
    if isinstance(node, dict):
        if DELETE_KEY in node and _pop_delete(filename, node):
            replacing.add(id(node))
        children: Iterable[tuple[Any, Any]] = node.items()
    else:
        children = enumerate(node)
    for key, child in children:  # replacing a value in place keeps the iteration valid
        if isinstance(child, dict | list):
            _prepare(filename, child, bases, replacing)
            continue
        value = leaf_value(child)
        if isinstance(value, str) and "{{" in value:
            found = BASE_REFERENCE.fullmatch(value.strip())
            if found is None or bases is None:
                _check_no_reference(filename, value, origin_of(child))
                continue
            origin = origin_of(child)
            node[key] = copy_tree(_lookup(filename, bases, found.group(1), origin), origin)


def _pop_delete(filename: str, table: dict[str, Any]) -> bool:
    flag = table.pop(DELETE_KEY, _MISSING)
    if flag is _MISSING:
        return False
    problem = delete_flag_problem(flag)
    if problem is not None:
        raise ConfigError(filename, problem, line_of(origin_of(flag)))
    return bool(leaf_value(flag))


def delete_flag_problem(flag: object) -> str | None:
    """Say why a ``_delete_`` value (a node or plain data) is not a bool; None where it is."""
    value = leaf_value(flag)
    if not isinstance(flag, dict | list) and isinstance(value, bool):
        return None
    shown = "a mapping or list" if isinstance(flag, dict | list) else value
    return (
        f"_delete_ must be true or false, not {shown!r} (true replaces the base's mapping "
        "instead of merging into it)"
    )


def _lookup(filename: str, bases: dict[str, Any], dotted: str, origin: str | None) -> object:
    parts = split_dotted(dotted)
    try:
        parent = descend(bases, parts[:-1], whole=dotted)
        if isinstance(parent, list):
            return parent[index_of(parent, parts[-1], format_dotted(tuple(parts[:-1])))]
        if parts[-1] in parent:
            return parent[parts[-1]]
        problem = missing_key(bases, dotted, parent, parts[:-1])
    except PathProblem as exc:
        problem = str(exc)
    raise ConfigError(
        filename, f"{{{{_base_.{dotted}}}}} names no value of its bases: {problem}", line_of(origin)
    )


def _check_no_reference(filename: str, value: str, origin: str | None) -> None:
    """Refuse a ``{{_base_...}}`` that cannot be replaced: no bases, inside a string, malformed."""
    if BASE_REFERENCE.search(value):
        whole = BASE_REFERENCE.fullmatch(value.strip()) is not None
        problem = (
            "the file has no _base_ to take it from"
            if whole
            else "a reference must be the whole value (it stands for a value of any type)"
        )
        raise ConfigError(filename, f"cannot replace {value!r}: {problem}", line_of(origin))
    if REFERENCE_LIKE.search(value):
        raise ConfigError(filename, f"{value!r} {NOT_A_REFERENCE}", line_of(origin))
