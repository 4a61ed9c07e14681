"""The two root registries of the optim scope, their filling from ``torch.optim``, and lookup.

``ZeroRedundancyOptimizer`` registers itself in ``_zero``, which builds on this module. An
optimizer config is split and its constructor built here (:func:`constructor_from_config`), as
``build_optimizer`` reads it, for building and for :meth:`OptimizerRegistry.validate`.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Mapping
from typing import Any, Final

import torch
from torch import nn
from torch.optim import Optimizer

from regtree import NotRegisteredError, Registry
from regtree.config import ConfigProblem, validate_config
from regtree.naming import closest

__all__ = [
    "OPTIMIZERS",
    "OPTIMIZER_BUILDERS",
    "constructor_from_config",
    "copy_config",
    "resolve_optimizer_type",
]

DEFAULT_CONSTRUCTOR = "DefaultOptimizerConstructor"


# mmengine's optim_wrapper types: a config of one holds the optimizer config under 'optimizer'.
_OPTIM_WRAPPERS: Final[tuple[str, ...]] = ("OptimWrapper", "AmpOptimWrapper")


def copy_config(value: Any) -> Any:
    """A deep copy of a config in which every mapping is a dict, as ``build_optimizer`` takes it.

    deepcopy cannot copy a read-only mapping (``types.MappingProxyType`` does not pickle), and
    SPEC 3.1 takes any mapping. Lists and tuples are walked for the mappings they hold; any
    other value is deepcopy's, with one memo for the whole config, so a value given twice stays
    one object in the copy.

    Raises:
        Exception: whatever deepcopy raises for a value it cannot copy.
    """
    return _copy_config(value, {})


def _copy_config(value: Any, memo: dict[int, Any]) -> Any:
    if isinstance(value, Mapping):
        return {copy.deepcopy(key, memo): _copy_config(item, memo) for key, item in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_copy_config(item, memo) for item in value)
    return copy.deepcopy(value, memo)


def _optim_wrapper_problem(cfg: Mapping[str, Any]) -> str | None:
    """What to pass instead where ``cfg`` is an mmengine ``optim_wrapper`` config, else None.

    One is ``type='OptimWrapper'`` or ``'AmpOptimWrapper'`` (a name, scoped or not, or the
    class), or no optimizer ``type`` at all beside an ``optimizer`` mapping (mmengine's type
    then defaults to ``OptimWrapper``). An optimizer registered here that takes an
    ``optimizer`` mapping of its own is not one, and neither is any other ``type``: a name not
    registered (``'Lookahead'``, a typo) stays the registry's "not registered" error.
    """
    kind = cfg.get("type")
    name = kind.rpartition(".")[2] if isinstance(kind, str) else getattr(kind, "__name__", None)
    inner = cfg.get("optimizer")
    if name not in _OPTIM_WRAPPERS and (kind is not None or not isinstance(inner, Mapping)):
        return None
    beside = [key for key in ("paramwise_cfg", "constructor") if key in cfg]
    instead = (
        "{**cfg['optimizer']" + "".join(f", {key!r}: cfg[{key!r}]" for key in beside) + "}"
        if beside
        else "cfg['optimizer']"
    )
    wrapper_keys = [
        repr(key) for key in cfg if key not in ("type", "optimizer", "paramwise_cfg", "constructor")
    ]
    left = (
        f" {' and '.join(wrapper_keys)} {'is' if len(wrapper_keys) == 1 else 'are'} the "
        "wrapper's, for the training loop to do."
        if wrapper_keys
        else ""
    )
    what = f"type={kind!r}" if kind is not None else "no type, so mmengine's OptimWrapper"
    return (
        f"cfg is an mmengine optim_wrapper config ({what}), not an optimizer config: regtree "
        "builds the optimizer itself, with no wrapper around it. Pass the optimizer config, "
        "cfg['optimizer'], with paramwise_cfg (and constructor, if any) beside its type and lr: "
        f"build_optimizer(model, {instead}).{left}"
    )


def _split_optimizer_config(cfg: Mapping[str, Any]) -> tuple[Any, dict[str, Any], Any]:
    """Split an mmcv-style optimizer config as ``build_optimizer`` reads it.

    Returns:
        The constructor's ``type`` (default ``'DefaultOptimizerConstructor'``), the optimizer
        config (a deep copy of ``cfg``, every mapping in it a dict, without ``constructor`` and
        ``paramwise_cfg``) and the ``paramwise_cfg`` (None where not given).

    Raises:
        TypeError: ``cfg`` is an mmengine ``optim_wrapper`` config (:func:`_optim_wrapper_problem`).
    """
    problem = _optim_wrapper_problem(cfg)
    if problem is not None:
        raise TypeError(problem)
    optimizer_cfg: dict[str, Any] = copy_config(cfg)
    constructor_type = optimizer_cfg.pop("constructor", DEFAULT_CONSTRUCTOR)
    paramwise_cfg = optimizer_cfg.pop("paramwise_cfg", None)
    return constructor_type, optimizer_cfg, paramwise_cfg


def constructor_from_config(cfg: Mapping[str, Any]) -> tuple[Any, Callable[[nn.Module], Optimizer]]:
    """Split an mmcv-style optimizer config and build its constructor, as ``build_optimizer`` does.

    ``constructor`` (default ``'DefaultOptimizerConstructor'``) and ``paramwise_cfg`` are popped
    from a deep copy of ``cfg``; the rest is the optimizer config.

    Returns:
        The constructor's ``type`` and the constructor (from ``OPTIMIZER_BUILDERS``).
    """
    constructor_type, optimizer_cfg, paramwise_cfg = _split_optimizer_config(cfg)
    return constructor_type, _constructor_of(constructor_type, optimizer_cfg, paramwise_cfg)


def _constructor_of(
    constructor_type: Any, optimizer_cfg: dict[str, Any], paramwise_cfg: Any
) -> Callable[[nn.Module], Optimizer]:
    # The constructor a split config describes, from OPTIMIZER_BUILDERS.
    constructor: Callable[[nn.Module], Optimizer] = OPTIMIZER_BUILDERS.build(
        {"type": constructor_type, "optimizer_cfg": optimizer_cfg, "paramwise_cfg": paramwise_cfg}
    )
    return constructor


class OptimizerRegistry(Registry[Optimizer]):
    """The registry of optimizers; :meth:`validate` reads a config as ``build_optimizer`` does."""

    def validate(self, cfg: Mapping[str, Any] | list[Any]) -> list[Any]:
        """Return every problem in an optimizer config, without building an optimizer.

        ``constructor`` and ``paramwise_cfg`` are not the optimizer's keywords, and no config
        gives ``params``: the model's parameters reach the optimizer, and a sub-optimizer's (a
        RoutedOptimizer's ``optimizers``) come from the optimizer around it. The rest is checked
        as any config (``regtree.config``); then the constructor is created from the whole
        config, which checks ``paramwise_cfg`` as a build would (SPEC 3.1). Nothing is built for
        a model.

        Args:
            cfg: An optimizer config such as ``dict(type='SGD', lr=0.1, paramwise_cfg=...)``.

        Returns:
            The problems, as ``regtree.config.ConfigProblem`` objects; empty when sound.
        """
        if not isinstance(cfg, Mapping):
            return super().validate(cfg)
        wrapper = _optim_wrapper_problem(cfg)
        if wrapper is not None:
            return [ConfigProblem((), "wrong-type", wrapper)]
        constructor_type, optimizer_cfg, paramwise_cfg = _split_optimizer_config(cfg)
        problems: list[Any] = [
            problem
            for problem in validate_config(self, optimizer_cfg)
            if not (problem.kind == "missing-keyword" and problem.parts[-1:] == ("params",))
        ]
        if problems:
            return problems
        where: tuple[str, ...] = () if paramwise_cfg is None else ("paramwise_cfg",)
        try:
            # As build_optimizer builds it, from the split above (validate_config changed none).
            _constructor_of(constructor_type, optimizer_cfg, paramwise_cfg)
        except NotRegisteredError as error:
            problems.append(ConfigProblem(("constructor",), "unknown-type", str(error)))
        except TypeError as error:
            problems.append(ConfigProblem(where, "wrong-type", str(error)))
        except ValueError as error:
            problems.append(ConfigProblem(where, "invalid-value", str(error)))
        return problems


OPTIMIZERS: Final[Registry[Optimizer]] = OptimizerRegistry("optimizer", scope="regtree_optim")
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
        close = closest(optimizer_type, OPTIMIZERS, count=3)
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
