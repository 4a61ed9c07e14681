"""Text of errors and notes: suggested keys, loaded scopes, accepted parameters, provenance.

Only error paths import this module, so its own imports (inspect) cost nothing until something
has gone wrong. Close names come from :func:`regtree.naming.closest`.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from . import _plugins
from ._miss import LookupMiss, RegistryNode
from ._signatures import fit_keywords, signature_of
from .naming import closest, registry_label

__all__ = [
    "describe_keyword_mismatch",
    "describe_miss",
    "describe_unswitched_scope",
    "suggest_keys",
]

# How many registered names a message lists when nothing comes close to the key.
_LISTED_NAMES = 10


def suggest_keys(miss: LookupMiss, limit: int = 5) -> tuple[str, ...]:
    """Return registered keys close to what ``miss`` lacked, each written to resolve from there.

    Candidates are the names the key's own scopes reach (``'toycls.Body'`` for ``'toycls.Bdy'``;
    plain names for an unscoped key), then every entry of the tree as ``'scope.Name'``, less
    those of a scope whose plugin failed to import; they are compared by name, ignoring case.
    A ``'scope.Name'`` is offered only where its scope names, from the registry looked in, the
    registry holding that entry: two branches may hold one scope, and a child may share its
    parent's. Nothing is looked up or imported again; registries are read from snapshots, so
    registrations in other threads meanwhile are harmless.

    Args:
        miss: What a lookup found missing.
        limit: The most suggestions.

    Returns:
        The suggestions, closest first.
    """
    by_name: dict[str, list[str]] = {}
    offered: set[tuple[str, int]] = set()

    def offer(candidate: str, name: str, obj: object) -> None:
        # One key per object and name: the first offered is the shortest that resolves.
        if (name, id(obj)) not in offered:
            offered.add((name, id(obj)))
            by_name.setdefault(name, []).append(candidate)

    if miss.missing_scope is None:
        for candidate, name, obj in _reachable(miss):
            offer(candidate, name, obj)
    failed = _plugins.catalog.failed
    for member in miss.registry.root.walk():
        if member.scope in failed:  # its plugin failed: a key into it raises that ImportError
            continue
        if miss.registry._scoped(member.scope) is not member:  # its scope names another
            continue
        for name, obj in member.module_dict.copy().items():
            offer(f"{member.scope}.{name}", name, obj)
    near = closest(miss.name.rpartition(".")[2], by_name, count=3)
    return tuple([candidate for name in near for candidate in by_name[name]][:limit])


def _reachable(miss: LookupMiss) -> Iterator[tuple[str, str, object]]:
    """Yield ``(key, name, entry)`` for each entry the missed key's scopes reach, nearest first.

    The key is written as from the registry looked in (``'demo_det.Net'``, not ``'Net'``); a
    nearer registry's entry shadows an ancestor's of the same name, as the lookup's fallback
    to the ancestors does.
    """
    prefix = miss.key[: len(miss.key) - len(miss.name)]
    node: RegistryNode | None = miss.reached
    seen: set[str] = set()
    while node is not None:
        for name, obj in node.module_dict.copy().items():
            if name not in seen:
                seen.add(name)
                yield prefix + name, name, obj
        node = node.parent


def describe_miss(miss: LookupMiss) -> str:
    """Return the message of a NotRegisteredError: the key, the registry, what would have worked.

    Args:
        miss: What the lookup found missing; nothing is looked up again.

    Returns:
        Sentences naming the key, the registry, and what would have worked.
    """
    registry = miss.registry
    head = f"{miss.key!r} is not registered in {registry_label(registry)}"
    if miss.default_registry is not None:
        head += f" nor in {registry_label(miss.default_registry)}, the default scope"
    if miss.missing_scope is not None:
        text = head + "." + _describe_missing_scope(miss, miss.missing_scope)
    elif miss.reached is registry:
        where = " or its ancestors" if registry.parent is not None else ""
        text = f"{head}{where}.{_suggest(miss)}"
    else:
        # Keys as the caller would write them from ``registry`` ('demo_det.Net', not 'Net').
        text = f"{head}: {registry_label(miss.reached)} has no {miss.name!r}.{_suggest(miss)}"
    if miss.unknown_default_scope is not None:
        text += _describe_unknown_default_scope(miss, miss.unknown_default_scope)
    return text


def _describe_unknown_default_scope(miss: LookupMiss, scope: str) -> str:
    loaded = _loaded_scopes(miss.registry)
    text = (
        f" The default scope {scope!r} (from '_scope_' or default_scope) names no registry in "
        f"this tree, so it was not searched (loaded scopes: {', '.join(loaded)})."
    )
    return text + _near_scopes(scope, loaded)


def _suggest(miss: LookupMiss) -> str:
    near = suggest_keys(miss)
    if near:
        return " Did you mean " + ", ".join(repr(key) for key in near) + "?"
    # Nothing close: what the key's scopes do reach, written as the caller would.
    keys = [key for key, _, _ in _reachable(miss)]
    if not keys:
        return f" {registry_label(miss.reached)} has no entries."
    shown = ", ".join(repr(key) for key in keys[:_LISTED_NAMES])
    more = f" and {len(keys) - _LISTED_NAMES} more" if len(keys) > _LISTED_NAMES else ""
    return f" Registered there: {shown}{more}."


def _describe_missing_scope(miss: LookupMiss, scope: str) -> str:
    loaded = _loaded_scopes(miss.reached)
    text = f" No registry in its tree has scope {scope!r} (loaded scopes: {', '.join(loaded)})."
    catalog = _plugins.catalog
    if miss.providers:
        text += (
            f" Distribution {', '.join(map(repr, miss.providers))} advertises scope {scope!r} in "
            f"entry point group {catalog.group!r}, but no registry with that scope is in this "
            "tree: importing it added none (or an import cycle between threads interrupted it, "
            "and the next lookup imports it again)."
        )
    else:
        text += (
            f" No installed package provides scope {scope!r}: no distribution advertises it "
            f"in entry point group {catalog.group!r}; install the package that defines it."
        )
        text += _near_scopes(scope, loaded)
    return text


def describe_unswitched_scope(registry: RegistryNode, scope: str) -> str:
    """Say that ``switch_scope_and_registry(scope)`` found no registry of ``scope`` to yield."""
    loaded = _loaded_scopes(registry)
    return (
        f"switch_scope_and_registry({scope!r}): no registry in the tree of "
        f"{registry_label(registry)} has scope {scope!r} (loaded scopes: {', '.join(loaded)}), "
        f"and no installed package provides it; the block runs under default scope {scope!r} "
        f"and gets {registry_label(registry)} itself.{_near_scopes(scope, loaded)}"
    )


def _loaded_scopes(registry: RegistryNode) -> list[str]:
    return sorted({node.scope for node in registry.root.walk()})


def _near_scopes(scope: str, loaded: list[str]) -> str:
    # The loaded and the advertised scopes closest to one that names no registry.
    near = closest(scope, sorted({*loaded, *_plugins.catalog.scopes()}), count=3)
    return " Did you mean scope " + ", ".join(map(repr, near)) + "?" if near else ""


# What CPython says when a call's arguments do not bind to the callee's parameters.
_BINDING_ERROR = re.compile(
    r"unexpected keyword argument|missing \d+ required|takes \d+ positional argument"
    r"|multiple values for|positional-only arguments passed as keyword|takes no keyword argument"
    r"|takes no arguments"
)


def describe_keyword_mismatch(
    target: Callable[..., Any], kwargs: Mapping[Any, Any], error: BaseException | None = None
) -> str | None:
    """Describe the keywords in ``kwargs`` that ``target`` rejects or lacks; None if none.

    Args:
        target: What was called with ``kwargs``.
        kwargs: The keywords it was called with.
        error: The TypeError the call raised. Where it was raised inside ``target``'s own code
            and does not read as a binding error, it is the code's own complaint, and the
            signature (which ``functools.wraps`` may have borrowed) is not compared: None.
    """
    if error is not None and not _raised_binding(error):
        return None
    signature = signature_of(target)
    if signature is None:  # some builtins have no signature to read
        return None
    fit = fit_keywords(signature, kwargs)
    problems = [
        f"config key {key!r} is not a str, so it cannot be a keyword" for key in fit.not_str
    ]
    problems += [
        f"{key!r} is a positional-only parameter, which a config cannot set (a build passes "
        "keywords only)"
        for key in fit.positional_only
    ]
    problems += [
        f"unexpected keyword {key!r}" + (f" (closest match: {near!r})" if near else "")
        for key, near in fit.unknown
    ]
    told = {key for key, _ in fit.unknown}  # misspellings named above with their match
    problems += [
        f"missing required keyword {name!r}"
        + (f" (closest match: {near!r})" if near and near not in told else "")
        for name, near in fit.missing
    ]
    problems += [
        f"required positional-only parameter {name!r} cannot be given by a config"
        for name in fit.missing_positional_only
        if name not in fit.positional_only  # given, and named above
    ]
    if not problems:
        return None
    listed = [_describe_parameter(parameter) for parameter in fit.accepted]
    if fit.var_keyword is not None:
        listed.append(f"**{fit.var_keyword}")
    return "; ".join(problems) + f"; accepted parameters: {', '.join(listed) or 'none'}"


def _raised_binding(error: BaseException) -> bool:
    # Raised by the call itself (binding happens before the callee's frame exists, so the
    # traceback ends at the caller's), or by a binding further down, as a wrapper passing its
    # keywords on meets; anything else is the callee's own complaint.
    trace = error.__traceback__
    return trace is None or trace.tb_next is None or bool(_BINDING_ERROR.search(str(error)))


def _describe_parameter(param: inspect.Parameter) -> str:
    if param.default is inspect.Parameter.empty:
        return param.name
    return f"{param.name}={param.default!r}"
