"""Overrides in Hydra's grammar (SPEC 5.2): ``a.b=1``, ``+a.c=2``, ``++a.d=3``, ``~a.b``.

A path is keys joined by dots; where the value reached so far is a list, a part is an index
(``model.heads.1.num_classes=3``; ``-1`` is the last item). The value is a YAML 1.2 flow value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._bounds import MAX_DEPTH, not_unicode, too_deep
from ._flow import FlowError, parse_flow_value
from ._inherit import BASE_KEY, DELETE_KEY, delete_flag_problem
from ._tree import (
    PathProblem,
    Table,
    descend,
    format_dotted,
    from_plain,
    index_of,
    missing_key,
    split_dotted,
    to_plain,
)

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

__all__ = ["OverrideProblem", "apply_override", "apply_overrides", "override_origin"]

_GRAMMAR = "an override is PATH=VALUE, +PATH=VALUE (add), ++PATH=VALUE (add or replace) or ~PATH"
_MISSING = object()


class OverrideProblem(Exception):
    """An override that cannot be applied; the message starts with the override itself."""


def override_origin(text: str) -> str:
    """The origin of a value an override set: ``override 'lr=0.1'``."""
    return f"override {text!r}"


def apply_overrides(
    tree: Table | dict[str, Any],
    overrides: Iterable[str],
    fresh: set[int] | None = None,
    *,
    plain: bool = False,
) -> None:
    """Apply overrides to a config's tree, in order.

    Args:
        tree: The merged config; changed in place.
        overrides: Override texts, such as ``'optimizer.lr=1e-3'``.
        fresh: The ids of the containers that belong to ``tree`` alone (its root among them);
            any other container an override changes is copied first. None: all of them do.
        plain: ``tree`` is plain data (as `to_plain` gives it): values are set as they are,
            without origins. Otherwise it is a tree, and each value set knows its override.

    Raises:
        TypeError: An override is not a str.
        OverrideProblem: An override is malformed or does not fit the config.
    """
    for text in overrides:
        if not isinstance(text, str):
            raise TypeError(f"an override is a str such as 'optimizer.lr=0.1', got {text!r}")
        problem = not_unicode(text)  # a command line's bytes that are not UTF-8, say
        if problem is not None:
            raise OverrideProblem(f"override {text!r}: the text {problem}")
        try:
            apply_override(tree, text, fresh, plain=plain)
        except (PathProblem, FlowError) as exc:
            raise OverrideProblem(f"override {text!r}: {exc}") from None


def apply_override(
    tree: Table | dict[str, Any],
    text: str,
    fresh: set[int] | None = None,
    *,
    plain: bool = False,
) -> None:
    """Apply one override to a config's tree (or plain data, as `apply_overrides` says).

    Raises:
        PathProblem: The path does not fit the config, or the override's form does not fit
            what is there.
        FlowError: The value is not a YAML flow value.
    """
    operator, dotted, parts, value = _parse(text)
    create = None
    if operator in ("+", "++"):
        create = _new_mapping if plain else _new_table
    add = f"; '+{dotted}=...' would add it" if operator == "" else ""
    parent = descend(tree, parts[:-1], create=create, whole=dotted, fresh=fresh, adds=add)
    last = parts[-1]
    index = -1
    current: Any
    if isinstance(parent, list):
        where = format_dotted(tuple(parts[:-1]))
        index = index_of(parent, last, where, allow_end=operator in ("+", "++"))
        exists = index < len(parent)
        current = parent[index] if exists else None
    else:
        exists = last in parent
        current = parent.get(last)
    if operator == "+" and exists:
        shown = to_plain(current)
        raise PathProblem(
            f"{dotted!r} already exists (it is {shown!r}); '+' adds a new key only: use "
            f"'{dotted}=...' to replace it, or '++{dotted}=...' to add or replace"
        )
    if operator in ("", "~") and not exists:
        raise PathProblem(missing_key(tree, dotted, parent, parts[:-1], add))
    if operator == "~":
        present = to_plain(current)
        if value is not _MISSING and not _same_value(present, value):
            raise PathProblem(f"{dotted!r} is {present!r}, not {value!r}, so it is not deleted")
        if isinstance(parent, list):
            del parent[index]
        else:
            del parent[last]
        return
    node = value if plain else from_plain(value, override_origin(text))
    if isinstance(parent, list):
        if index == len(parent):
            parent.append(node)
        else:
            parent[index] = node
    else:
        parent[last] = node


def _same_value(present: object, given: object) -> bool:
    """Whether ``~path=value``'s value is the one the config holds, kind for kind.

    A bool is not a number (``true`` is not ``1``, as it is to Python's ``==``); two numbers are
    the same when equal (``1.0`` is ``1``: YAML and TOML tell them apart only by the dot), NaN
    included; lists and mappings compare item by item.
    """
    if isinstance(present, bool) or isinstance(given, bool):
        return present is given
    if isinstance(present, int | float) and isinstance(given, int | float):
        return present == given or (present != present and given != given)  # both NaN
    if isinstance(present, list) and isinstance(given, list):
        return len(present) == len(given) and all(map(_same_value, present, given))
    if isinstance(present, dict) and isinstance(given, dict):
        return present.keys() == given.keys() and all(
            _same_value(item, given[key]) for key, item in present.items()
        )
    return type(present) is type(given) and present == given


def _new_table(parent: Table) -> Table:
    return Table(parent.origin)


def _new_mapping(parent: dict[str, Any]) -> dict[str, Any]:
    return {}


def _parse(text: str) -> tuple[str, str, list[str], object]:
    """Split an override into operator (``''``, ``'+'``, ``'++'``, ``'~'``), path, parts, value."""
    operator = ""
    body = text
    if text[:1] in ("+", "~"):  # one test for the usual override, which has no prefix
        operator = "++" if text.startswith("++") else text[0]
        body = text[len(operator) :]
    path, equals, value_text = body.partition("=")
    if not equals and operator != "~":
        raise PathProblem(f"no '=' in it; {_GRAMMAR}")
    path = path.strip()
    if not path:
        raise PathProblem(f"the path {path!r} has an empty key; {_GRAMMAR}")
    try:
        parts = split_dotted(path)
    except PathProblem as problem:
        raise PathProblem(f"{problem}; {_GRAMMAR}") from None
    if len(parts) > MAX_DEPTH:
        raise PathProblem(too_deep("the path"))
    _check_no_marker(parts)
    value = _without_delete(parse_flow_value(value_text)) if equals else _MISSING
    return operator, path, parts, value


def _check_no_marker(parts: list[str]) -> None:
    """Refuse a path to ``_base_`` or through ``_delete_``: markers of files, never config data."""
    if parts[0] == BASE_KEY:
        raise PathProblem(
            "_base_ is not part of the merged config: bases are set in the config file "
            "(_base_: [base.yaml, ...]), and an override changes the config they give"
        )
    if DELETE_KEY in parts:
        raise PathProblem(
            "'_delete_' marks a mapping in a file that replaces its base's, and is never part "
            "of the config; an override replaces anyway (path={...} replaces the mapping whole)"
        )


def _without_delete(value: object) -> object:
    """An override's value without ``_delete_`` keys: an override replaces whatever it sets.

    Raises:
        PathProblem: a ``_delete_`` that is not a bool, which a file would refuse too.
    """
    if isinstance(value, dict):
        if DELETE_KEY in value:
            problem = delete_flag_problem(value.pop(DELETE_KEY))
            if problem is not None:
                raise PathProblem(problem)
        for item in value.values():
            _without_delete(item)
    elif isinstance(value, list):
        for item in value:
            _without_delete(item)
    return value
