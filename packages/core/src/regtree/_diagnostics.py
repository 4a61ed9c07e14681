"""Text of errors and notes: closest names, loaded scopes, accepted parameters, provenance.

Only error paths import this module, so its own imports (difflib, inspect) cost nothing until
something has gone wrong.
"""

from __future__ import annotations

import difflib
import inspect

from . import _plugins
from ._registry import Registry, registry_label

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any

__all__ = [
    "accepted_parameters",
    "closest",
    "describe_duplicate",
    "describe_keyword_mismatch",
    "describe_miss",
    "origin",
]

# How many registered names a message lists when nothing comes close to the key.
_LISTED_NAMES = 10


def origin(obj: object) -> str:
    """Return where ``obj`` is defined as ``module:qualname`` (a partial names its function)."""
    func = getattr(obj, "func", None)
    if func is not None and callable(func) and type(obj).__name__ == "partial":
        return f"functools.partial({origin(func)})"
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if isinstance(module, str) and isinstance(qualname, str):
        return f"{module}:{qualname}"
    return repr(obj)


def closest(word: str, candidates: Iterable[str], count: int = 3) -> list[str]:
    """Return up to ``count`` candidates close to ``word``, best first, ignoring case."""
    by_folded: dict[str, list[str]] = {}
    for candidate in candidates:
        by_folded.setdefault(candidate.casefold(), []).append(candidate)
    matches = difflib.get_close_matches(word.casefold(), list(by_folded), n=count, cutoff=0.6)
    return [name for folded in matches for name in by_folded[folded]][:count]


def describe_duplicate(registry: Registry[Any], name: str, existing: object, new: object) -> str:
    """Return the message of an AlreadyRegisteredError."""
    return (
        f"{name!r} is already registered in {registry_label(registry)} as {origin(existing)}; "
        f"cannot bind it to {origin(new)}. Pass force=True to replace the entry, or register "
        "under another name."
    )


def _reachable_names(registry: Registry[Any]) -> dict[str, str]:
    """Map every key that reaches an entry of ``registry``'s tree from ``registry`` to itself.

    Unscoped keys (own entries and the ancestors') come first; a scoped key is left out where
    the unscoped one already reaches the same object.
    """
    keys: dict[str, str] = {}
    unscoped: dict[str, object] = {}
    node: Registry[Any] | None = registry
    while node is not None:
        for name, obj in node.module_dict.items():
            if name not in unscoped:
                unscoped[name] = obj
                keys[name] = name
        node = node.parent
    for node in registry.root._walk():
        for name, obj in node.module_dict.items():
            if unscoped.get(name) is not obj:
                key = f"{node.scope}.{name}"
                keys.setdefault(key, key)
    return keys


def _suggest(name: str, registry: Registry[Any]) -> str:
    by_bare: dict[str, list[str]] = {}
    for key in _reachable_names(registry):
        by_bare.setdefault(key.rpartition(".")[2], []).append(key)
    near = closest(name, by_bare, count=3)
    if near:
        keys = [key for short in near for key in by_bare[short]][:5]
        return " Did you mean " + ", ".join(repr(key) for key in keys) + "?"
    own = list(registry.module_dict)
    if not own:
        return f" {registry_label(registry)} has no entries."
    shown = ", ".join(repr(key) for key in own[:_LISTED_NAMES])
    more = f" and {len(own) - _LISTED_NAMES} more" if len(own) > _LISTED_NAMES else ""
    return f" Registered there: {shown}{more}."


def describe_miss(registry: Registry[Any], key: str, active_scope: str | None = None) -> str:
    """Return the message of a NotRegisteredError for ``key`` looked up in ``registry``.

    Args:
        registry: The registry the key was looked up in.
        key: The key that found nothing.
        active_scope: The default scope of the build, if one was active.

    Returns:
        Sentences naming the key, the registry, and what would have worked.
    """
    head = f"{key!r} is not registered in {registry_label(registry)}"
    if active_scope is not None:
        scoped = registry._registry_for_scope(active_scope)
        if scoped is not None and scoped is not registry:
            head += f" nor in {registry_label(scoped)}, the default scope"
    # Follow the scopes of the key as get() does, down to the last registry and name.
    node, rest = registry, key
    while "." in rest:
        scope, _, rest = rest.partition(".")
        found = node._registry_for_scope(scope)
        if found is None:
            return head + "." + _describe_missing_scope(node, scope)
        node = found
    if node is registry:
        where = " or its ancestors" if registry.parent is not None else ""
        return f"{head}{where}.{_suggest(rest, registry)}"
    # Suggest keys as the caller would write them from ``registry`` ('demo_det.Net', not 'Net').
    return f"{head}: {registry_label(node)} has no {rest!r}.{_suggest(rest, registry)}"


def _describe_missing_scope(registry: Registry[Any], scope: str) -> str:
    loaded = sorted({node.scope for node in registry.root._walk()})
    text = f" No registry in its tree has scope {scope!r} (loaded scopes: {', '.join(loaded)})."
    catalog = _plugins.catalog
    providers = catalog.providers(scope)
    if providers:
        text += (
            f" Distribution {', '.join(map(repr, providers))} advertises scope {scope!r} in "
            f"entry point group {catalog.group!r}, but importing it added no registry with that "
            "scope to this tree."
        )
    else:
        text += (
            f" No installed package provides scope {scope!r}: no distribution advertises it "
            f"in entry point group {catalog.group!r}; install the package that defines it."
        )
        near = closest(scope, sorted({*loaded, *catalog.scopes()}), count=3)
        if near:
            text += " Did you mean scope " + ", ".join(map(repr, near)) + "?"
    return text


_KEYWORD_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def accepted_parameters(target: Callable[..., Any]) -> Mapping[str, inspect.Parameter] | None:
    """Return the parameters ``target`` accepts by keyword, or None if it takes any keyword.

    Returns None too where the signature cannot be read (some builtins).
    """
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    params = signature.parameters
    if any(param.kind is inspect.Parameter.VAR_KEYWORD for param in params.values()):
        return None
    return {name: param for name, param in params.items() if param.kind in _KEYWORD_KINDS}


def describe_keyword_mismatch(target: Callable[..., Any], kwargs: Mapping[Any, Any]) -> str | None:
    """Describe the keywords in ``kwargs`` that ``target`` rejects or lacks; None if none."""
    accepted = accepted_parameters(target)
    if accepted is None:
        return None
    problems: list[str] = []
    for name in kwargs:
        if not isinstance(name, str):
            problems.append(f"config key {name!r} is not a str, so it cannot be a keyword")
        elif name not in accepted:
            near = closest(name, accepted, count=1)
            hint = f" (closest match: {near[0]!r})" if near else ""
            problems.append(f"unexpected keyword {name!r}{hint}")
    for name, param in accepted.items():
        if param.default is inspect.Parameter.empty and name not in kwargs:
            problems.append(f"missing required keyword {name!r}")
    if not problems:
        return None
    listed = ", ".join(_describe_parameter(param) for param in accepted.values()) or "none"
    return "; ".join(problems) + f"; accepted parameters: {listed}"


def _describe_parameter(param: inspect.Parameter) -> str:
    if param.default is inspect.Parameter.empty:
        return param.name
    return f"{param.name}={param.default!r}"
