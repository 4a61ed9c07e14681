"""The two root registries of the optim scope and their filling from ``torch.optim``."""

from __future__ import annotations

import inspect
from typing import Any, Final

import torch
from torch.optim import Optimizer

from regtree import Registry

__all__ = ["OPTIMIZERS", "OPTIMIZER_BUILDERS", "register_torch_optimizers"]

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

    ``ZeroRedundancyOptimizer`` is added too where ``torch.distributed`` is available.

    Returns:
        The names registered, in registration order.
    """
    names: list[str] = []
    for attr in sorted(vars(torch.optim)):
        candidate = getattr(torch.optim, attr)
        if _is_concrete_optimizer(candidate) and candidate.__name__ == attr:
            registry.register_module(name=attr, module=candidate)
            names.append(attr)
    if torch.distributed.is_available():
        from ._zero import ZeroRedundancyOptimizer

        registry.register_module(name="ZeroRedundancyOptimizer", module=ZeroRedundancyOptimizer)
        names.append("ZeroRedundancyOptimizer")
    return names


register_torch_optimizers(OPTIMIZERS)
