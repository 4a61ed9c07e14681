"""``build_optimizer`` and ``build_optimizer_constructor``: configs in, optimizers out."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from torch import nn
from torch.optim import Optimizer

from ._registries import OPTIMIZER_BUILDERS, constructor_from_config

__all__ = ["build_optimizer", "build_optimizer_constructor"]


def build_optimizer_constructor(cfg: Mapping[str, Any]) -> Callable[[nn.Module], Optimizer]:
    """Build an optimizer constructor from ``OPTIMIZER_BUILDERS``.

    Args:
        cfg: ``dict(type=..., optimizer_cfg=..., paramwise_cfg=...)``.

    Returns:
        The constructor; call it with a model to get the optimizer.
    """
    constructor: Callable[[nn.Module], Optimizer] = OPTIMIZER_BUILDERS.build(cfg)
    return constructor


def build_optimizer(model: nn.Module, cfg: Mapping[str, Any]) -> Optimizer:
    """Build the optimizer an mmcv-style config describes for ``model``.

    ``constructor`` (default ``'DefaultOptimizerConstructor'``) and ``paramwise_cfg`` are popped
    from a deep copy of ``cfg``; the rest is the optimizer config. The caller's ``cfg`` is left
    untouched.

    Args:
        model: The model (wrappers such as DistributedDataParallel are unwrapped).
        cfg: ``dict(type='SGD', lr=0.01, paramwise_cfg=..., constructor=...)``.

    Returns:
        The optimizer.

    Raises:
        TypeError: ``cfg`` is not a mapping.
    """
    if not isinstance(cfg, Mapping):
        raise TypeError(f"an optimizer config must be a mapping (a dict), got {cfg!r}")
    _, constructor = constructor_from_config(cfg)
    return constructor(model)
