"""Resolving an optimizer config's ``type`` to a class, and what that class accepts."""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from regtree import NotRegisteredError

from ._registries import OPTIMIZERS
from ._zero import ZeroRedundancyOptimizer

__all__ = ["OptimizerInfo", "describe_optimizer", "resolve_optimizer_type"]

# Optimizers that wrap another one -> the config keys that may name the wrapped optimizer's type.
_WRAPPED_TYPE_KEYS: dict[object, tuple[str, ...]] = {
    ZeroRedundancyOptimizer: ("optimizer_type", "optimizer_class")
}


def resolve_optimizer_type(optimizer_type: object, key: str = "type") -> Callable[..., Any]:
    """Return the optimizer class (or factory) a config names, by registered name or as is.

    Raises:
        NotRegisteredError: a name that is not registered in ``OPTIMIZERS``.
        TypeError: neither a str nor a callable.
    """
    if isinstance(optimizer_type, str):
        found = OPTIMIZERS.get(optimizer_type)
        if found is not None:
            return found
        close = difflib.get_close_matches(optimizer_type, list(OPTIMIZERS), n=3)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise NotRegisteredError(
            f"{key}={optimizer_type!r} is not registered in registry 'optimizer' "
            f"(scope 'regtree_optim').{hint} Registered: {', '.join(OPTIMIZERS)}."
        )
    if callable(optimizer_type):
        return optimizer_type
    raise TypeError(
        f"{key} must be a registered optimizer name or an optimizer class, got {optimizer_type!r}"
    )


def _name_of(optimizer: Callable[..., Any]) -> str:
    return getattr(optimizer, "__name__", repr(optimizer))


@dataclass(frozen=True, slots=True)
class OptimizerInfo:
    """What a constructor needs to know about the optimizer it will build.

    Attributes:
        name: The optimizer's name, for messages.
        options: Keyword options it accepts besides ``params``; None when it takes any.
        defaults: Default values of those options, where its signature gives one.
    """

    name: str
    options: frozenset[str] | None
    defaults: dict[str, Any] = field(default_factory=dict)


def describe_optimizer(optimizer_cfg: Mapping[str, Any]) -> OptimizerInfo:
    """Describe the optimizer ``optimizer_cfg`` names; unknown types accept any option.

    An unresolvable ``type`` is not reported here: building it reports it with the registry's
    suggestions.
    """
    try:
        cls = resolve_optimizer_type(optimizer_cfg.get("type"))
    except (NotRegisteredError, TypeError):
        return OptimizerInfo(name=repr(optimizer_cfg.get("type")), options=None)
    wrapped_keys = _WRAPPED_TYPE_KEYS.get(cls, ())
    if wrapped_keys:
        wrapped_key = next((key for key in wrapped_keys if key in optimizer_cfg), None)
        if wrapped_key is None:
            return OptimizerInfo(name=_name_of(cls), options=None)
        try:
            cls = resolve_optimizer_type(optimizer_cfg.get(wrapped_key), wrapped_key)
        except (NotRegisteredError, TypeError):
            return OptimizerInfo(name=_name_of(cls), options=None)
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        return OptimizerInfo(name=_name_of(cls), options=None)
    options: set[str] = set()
    defaults: dict[str, Any] = {}
    for parameter in signature.parameters.values():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            return OptimizerInfo(name=_name_of(cls), options=None)
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL or parameter.name == "params":
            continue
        options.add(parameter.name)
        if parameter.default is not inspect.Parameter.empty:
            defaults[parameter.name] = parameter.default
    return OptimizerInfo(name=_name_of(cls), options=frozenset(options), defaults=defaults)
