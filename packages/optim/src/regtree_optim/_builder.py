"""``build_optimizer`` and ``build_optimizer_constructor``: configs in, optimizers out."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from torch import nn
from torch.optim import Optimizer

from ._registries import OPTIMIZER_BUILDERS, constructor_from_config, copy_config

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
        TypeError: ``cfg`` is not a mapping; the constructor's (a config value of the wrong
            type, a model that is not an ``nn.Module``) and the optimizer's (a keyword it does
            not take); a value the deep copy cannot copy (a generator, a lock), with a note
            naming its key.
        NotRegisteredError: the optimizer ``type`` or the ``constructor`` is not registered.
        ValueError: the constructor's (an unknown ``paramwise_cfg`` key, a multiplier without
            its base, a model without parameters; see ``DefaultOptimizerConstructor.__call__``)
            and the optimizer's (an invalid value, such as a negative momentum).
        RuntimeError: a tensor the deep copy cannot copy (one computed from others, not a leaf),
            with a note naming its key.
    """
    if not isinstance(cfg, Mapping):
        raise TypeError(f"an optimizer config must be a mapping (a dict), got {cfg!r}")
    try:
        _, constructor = constructor_from_config(cfg)
    except Exception as error:
        _note_uncopyable(error, cfg)
        raise
    return constructor(model)


def _note_uncopyable(error: Exception, cfg: Mapping[str, Any]) -> None:
    # The deep copy's own errors (torch's "Only Tensors created explicitly by the user support
    # the deepcopy protocol", "cannot pickle 'generator' object") name neither the copy nor the
    # key: the part whose copy fails as ``error`` did is found again, on this failure path only.
    found = _uncopyable(dict(cfg), type(error))
    if found is None or not found[0]:  # the copy was not what failed
        return
    path, part = found
    where = "cfg" + "".join(f"[{step!r}]" for step in path)
    error.add_note(
        "regtree_optim: build_optimizer deep-copies its config (the caller's stays as it was), "
        f"and {where} (a {type(part).__name__}) could not be copied; give a value that copies "
        "there (a number, a leaf tensor, a list), or build with "
        "DefaultOptimizerConstructor(optimizer_cfg, paramwise_cfg)(model), which copies nothing"
    )


def _uncopyable(
    value: object, error_type: type[Exception]
) -> tuple[tuple[object, ...], object] | None:
    """The path to the innermost part of ``value`` whose deep copy raises ``error_type``, and it.

    Copied as the build copies it (:func:`copy_config`): a read-only mapping copies as a dict.
    """
    try:
        copy_config(value)
    except Exception as error:
        if type(error) is not error_type:
            return None
    else:
        return None
    parts: Iterable[tuple[object, object]] = ()
    if isinstance(value, Mapping):
        parts = value.items()
    elif isinstance(value, list | tuple):
        parts = enumerate(value)
    for key, item in parts:
        found = _uncopyable(item, error_type)
        if found is not None:
            return (key, *found[0]), found[1]
    return (), value
