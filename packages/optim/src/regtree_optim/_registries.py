"""The two root registries of the optim scope, their filling from ``torch.optim``, and lookup.

``ZeroRedundancyOptimizer`` registers itself in ``_zero``, which builds on this module.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Final

import torch
from torch.optim import Optimizer

from regtree import NotRegisteredError, Registry

from ._names import closest_names

__all__ = [
    "OPTIMIZERS",
    "OPTIMIZER_BUILDERS",
    "register_torch_optimizers",
    "resolve_optimizer_type",
]

OPTIMIZERS: Final[Registry[Optimizer]] = Registry("optimizer", scope="regtree_optim")
OPTIMIZER_BUILDERS: Final[Registry[Any]] = Registry("optimizer builder", scope="regtree_optim")


def _is_concrete_optimizer(candidate: object) -> bool:
    return (
        isinstance(candidate, type)
        and issubclass(candidate, Optimizer)
        and candidate is not Optimizer
        and not inspect.isabstract(candidate)
    )


def register_torch_optimizers(registry: Registry[Optimizer]) -> list[str]:
    """Register every concrete optimizer class of ``torch.optim`` under its class name.

    Returns:
        The names registered, in registration order.
    """
    names: list[str] = []
    for attr in sorted(vars(torch.optim)):
        candidate = getattr(torch.optim, attr)
        if _is_concrete_optimizer(candidate) and candidate.__name__ == attr:
            registry.register_module(name=attr, module=candidate)
            names.append(attr)
    return names


def resolve_optimizer_type(optimizer_type: object, key: str = "type") -> Callable[..., Any]:
    """Return the optimizer class (or factory) a config names, by registered name or as is.

    Args:
        optimizer_type: A name registered in ``OPTIMIZERS`` (scoped or not), or a callable.
        key: The config key that holds it, for messages.

    Raises:
        NotRegisteredError: a name that is not registered in ``OPTIMIZERS``.
        TypeError: neither a str nor a callable.
    """
    if isinstance(optimizer_type, str):
        found = OPTIMIZERS.get(optimizer_type)
        if found is not None:
            return found
        close = closest_names(optimizer_type, OPTIMIZERS, count=3)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise NotRegisteredError(
            f"{key}={optimizer_type!r} is not registered in registry {OPTIMIZERS.name!r} "
            f"(scope {OPTIMIZERS.scope!r}).{hint} Registered: {', '.join(OPTIMIZERS)}."
        )
    if callable(optimizer_type):
        return optimizer_type
    raise TypeError(
        f"{key} must be a registered optimizer name or an optimizer class, got {optimizer_type!r}"
    )


register_torch_optimizers(OPTIMIZERS)
