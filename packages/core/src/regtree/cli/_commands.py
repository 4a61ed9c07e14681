"""The ``regtree`` subcommands: tree, list, show, validate and build, and how they print.

Each ``run_*`` function takes the parsed options and the root registries, prints its result and
returns the exit status; ``main`` in ``regtree.cli._main`` picks the one the command line names.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from .._registry import Registry
from ..config import format_path
from ..naming import closest, origin, registry_label
from ._roots import iter_tree
from ._support import UsageError, did_you_mean, print_exception

__all__ = [
    "DEFAULT_SECTION",
    "PROG",
    "run_build",
    "run_list",
    "run_show",
    "run_tree",
    "run_validate",
    "select_registry",
]

PROG = "regtree"
# The part of a config file that validate and build act on, when the file has it.
DEFAULT_SECTION = "model"


def select_registry(roots: Sequence[Registry[Any]], name: str, scope: str | None) -> Registry[Any]:
    """Return the root named ``name`` among ``roots``, or the registry of ``scope`` in its tree.

    Raises:
        UsageError: No tree has that name, or the tree has no registry of that scope; the message
            names the closest and lists the choices.
    """
    by_name: dict[str, Registry[Any]] = {}
    for candidate in roots:
        by_name.setdefault(candidate.name, candidate)
    root = by_name.get(name)
    if root is None:
        raise UsageError(
            f"no registry tree named {name!r}{did_you_mean(name, by_name)} "
            f"(trees: {', '.join(repr(n) for n in by_name) or 'none'})"
        )
    if scope is None:
        return root
    scopes = [member.scope for member in iter_tree(root)]
    for member in iter_tree(root):
        if member.scope == scope:
            return member
    raise UsageError(
        f"the {name!r} tree has no registry with scope {scope!r}"
        f"{did_you_mean(scope, scopes)} (scopes: {', '.join(scopes)})"
    )


# --- tree -------------------------------------------------------------------------------------


def run_tree(options: argparse.Namespace, roots: Sequence[Registry[Any]]) -> int:
    """Print every registry tree (or the one ``--registry`` names): name, scope, entry count.

    Args:
        options: The parsed ``tree`` options.
        roots: The root registries to show.

    Returns:
        The exit status: 0.

    Raises:
        UsageError: ``--registry`` names no tree.
    """
    chosen = list(roots)
    if options.registry is not None:
        chosen = [select_registry(roots, options.registry, None)]
    if options.json:
        print(json.dumps([_tree_as_dict(root) for root in chosen], indent=2))
        return 0
    for root in chosen:
        print(_tree_label(root))
        _print_children(root, "")
    return 0


def _tree_label(registry: Registry[Any]) -> str:
    count = len(registry)
    return (
        f"{registry.name} [scope {registry.scope}, {count} {'entry' if count == 1 else 'entries'}]"
    )


def _print_children(registry: Registry[Any], indent: str) -> None:
    children = [registry.children[scope] for scope in sorted(registry.children)]
    for position, child in enumerate(children):
        last = position == len(children) - 1
        print(f"{indent}{'`-- ' if last else '|-- '}{_tree_label(child)}")
        _print_children(child, indent + ("    " if last else "|   "))


def _tree_as_dict(registry: Registry[Any]) -> dict[str, object]:
    return {
        "name": registry.name,
        "scope": registry.scope,
        "entries": len(registry),
        "children": [_tree_as_dict(registry.children[s]) for s in sorted(registry.children)],
    }


# --- list -------------------------------------------------------------------------------------


def run_list(options: argparse.Namespace, roots: Sequence[Registry[Any]]) -> int:
    """Print the registered names matching a glob, each with where it is defined.

    Args:
        options: The parsed ``list`` options.
        roots: The root registries to choose from.

    Returns:
        The exit status: 0, or 1 when a pattern matches no name.

    Raises:
        UsageError: ``--registry`` or ``--scope`` names no registry.
    """
    from fnmatch import fnmatchcase

    selected = select_registry(roots, options.registry, options.scope)
    members = [selected] if options.scope is not None else list(iter_tree(selected))
    pattern = (options.pattern or "*").lower()
    rows: list[dict[str, object]] = []
    for member in members:
        for name, obj in member.module_dict.items():
            key = f"{member.scope}.{name}"
            if fnmatchcase(key.lower(), pattern) or fnmatchcase(name.lower(), pattern):
                rows.append(
                    {
                        "key": key,
                        "name": name,
                        "registry": member.name,
                        "scope": member.scope,
                        "defined_in": _defined_in(obj),
                    }
                )
    if options.json:
        print(json.dumps(rows, indent=2))
    else:
        width = max((len(str(row["key"])) for row in rows), default=0)
        for row in rows:
            print(f"{row['key']!s:<{width}}  {row['defined_in']}")
    if not rows and options.pattern is None:
        print(f"{PROG}: {_describe(selected)} has no entries", file=sys.stderr)
    elif not rows:
        names = [f"{m.scope}.{n}" for m in members for n in m.module_dict]
        print(
            f"{PROG}: no name in {_describe(selected)} matches {options.pattern!r}"
            f"{did_you_mean(options.pattern, names)}",
            file=sys.stderr,
        )
        return 1
    return 0


def _defined_in(obj: object) -> str:
    return origin(obj)


def _describe(registry: Registry[Any]) -> str:
    return registry_label(registry)


# --- show -------------------------------------------------------------------------------------


def run_show(options: argparse.Namespace, roots: Sequence[Registry[Any]]) -> int:
    """Print where a registered key is defined (file and line), its signature and summary.

    Args:
        options: The parsed ``show`` options.
        roots: The root registries to choose from.

    Returns:
        The exit status: 0.

    Raises:
        UsageError: The key is not registered, is ambiguous, or the registry is unknown.
    """
    selected = select_registry(roots, options.registry, options.scope)
    key: str = options.key
    owner, name, obj = _find_entry(selected, key)
    details = _entry_details(owner, name, obj)
    if options.json:
        print(json.dumps(details, indent=2))
        return 0
    print(f"{details['key']}  (registry {owner.name!r}, scope {owner.scope!r})")
    location = "unknown" if details["file"] is None else str(details["file"])
    if details["line"] is not None:
        location += f", line {details['line']}"
    fields = [
        ("defined in", details["defined_in"]),
        ("file", location),
        ("signature", details["signature"] or "unknown"),
        ("summary", details["summary"] or "(no docstring)"),
    ]
    aliases = details["aliases"]
    if isinstance(aliases, list) and aliases:
        fields.append(("also as", ", ".join(str(alias) for alias in aliases)))
    for label, value in fields:
        print(f"  {label:<10}  {value}")
    return 0


def _find_entry(selected: Registry[Any], key: str) -> tuple[Registry[Any], str, object]:
    """Resolve ``key`` from ``selected``; an unscoped miss is looked for across the tree."""
    obj = selected.get(key)
    name = selected.split_scope_key(key)[1].rpartition(".")[2]
    tree = list(iter_tree(selected.root))
    if obj is not None:
        owners = [m for m in tree if m.module_dict.get(name) is obj]
        owners += [m for m in tree if m not in owners and obj in m.module_dict.values()]
        if owners:
            owner = owners[0]
            if owner.module_dict.get(name) is not obj:
                name = next(n for n, o in owner.module_dict.items() if o is obj)
            return owner, name, obj
        return selected, name, obj
    if "." not in key:
        holders = [m for m in tree if key in m.module_dict]
        if len(holders) == 1:
            return holders[0], key, holders[0].module_dict[key]
        if holders:
            keys = ", ".join(f"{m.scope}.{key}" for m in holders)
            raise UsageError(f"{key!r} is registered in several scopes; give one of: {keys}")
    names = [f"{m.scope}.{n}" for m in tree for n in m.module_dict]
    bare = {n.rpartition(".")[2]: n for n in names}
    hint = did_you_mean(key, names)
    if not hint and "." not in key:  # close only to a bare name: suggest it with its scope
        close = closest(key, bare, count=1)
        hint = f"; did you mean {bare[close[0]]!r}?" if close else ""
    raise UsageError(f"{key!r} is not registered in {_describe(selected)} or its tree{hint}")


def _entry_details(owner: Registry[Any], name: str, obj: object) -> dict[str, object]:
    import inspect
    from functools import partial

    source = obj.func if isinstance(obj, partial) else obj
    file: str | None
    line: int | None
    try:
        file = inspect.getsourcefile(source)  # type: ignore[arg-type]
    except TypeError:
        file = None
    try:
        line = inspect.getsourcelines(source)[1]  # type: ignore[arg-type]
    except (OSError, TypeError):
        line = None
    signature: str | None
    try:
        try:
            signature = str(inspect.signature(obj, eval_str=True))  # type: ignore[arg-type]
        except (NameError, SyntaxError, AttributeError, TypeError):
            # An annotation that only the type checker can resolve: show it as written.
            signature = str(inspect.signature(obj))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        signature = None
    doc = getattr(obj, "__doc__", None)
    summary = None
    if isinstance(doc, str) and doc.strip():
        summary = inspect.cleandoc(doc).splitlines()[0]
    aliases = [
        f"{owner.scope}.{other}"
        for other, candidate in owner.module_dict.items()
        if candidate is obj and other != name
    ]
    return {
        "key": f"{owner.scope}.{name}",
        "name": name,
        "registry": owner.name,
        "scope": owner.scope,
        "defined_in": _defined_in(obj),
        "file": file,
        "line": line,
        "signature": signature,
        "summary": summary,
        "aliases": aliases,
    }


# --- validate and build -----------------------------------------------------------------------


def run_validate(options: argparse.Namespace, roots: Sequence[Registry[Any]]) -> int:
    """Print every problem a build of the config would meet, without building anything.

    Args:
        options: The parsed ``validate`` options, with the loaded config section.
        roots: The root registries to choose from.

    Returns:
        The exit status: 0 when the config has no problems, 1 otherwise.

    Raises:
        UsageError: ``--registry`` or ``--scope`` names no registry.
    """
    registry = select_registry(roots, options.registry, options.scope)
    cfg, section = options.cfg, options.section
    problems = registry.validate(cfg)
    if options.json:
        report = {
            "config": options.config,
            "section": section or None,
            "registry": registry.name,
            "scope": registry.scope,
            "problems": [
                {**problem.as_dict(), "path": format_path(problem.parts, section)}
                for problem in problems
            ],
        }
        print(json.dumps(report, indent=2))
    else:
        for problem in problems:
            print(f"{format_path(problem.parts, section) or '<config>'}: {problem.message}")
        where = f"{options.config}" + (f" [{section}]" if section else "")
        if problems:
            count = len(problems)
            print(f"{where}: {count} {'problem' if count == 1 else 'problems'}")
        else:
            print(f"{where}: no problems (checked with {_describe(registry)})")
    return 1 if problems else 0


def run_build(options: argparse.Namespace, roots: Sequence[Registry[Any]]) -> int:
    """Build the config and print the object's ``repr``.

    Args:
        options: The parsed ``build`` options, with the loaded config section.
        roots: The root registries to choose from.

    Returns:
        The exit status: 0 after a build, 1 when the build raised (printed without a traceback).

    Raises:
        UsageError: ``--registry`` or ``--scope`` names no registry.
    """
    registry = select_registry(roots, options.registry, options.scope)
    cfg, section = options.cfg, options.section
    try:
        built = registry.build(cfg)
    except Exception as exc:
        where = f"{options.config}" + (f" [{section}]" if section else "")
        print_exception(f"{PROG}: building {where} failed:", exc)
        return 1
    print(repr(built))
    return 0
