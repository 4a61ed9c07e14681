"""What the optimizer an optimizer config names accepts: its options and their defaults."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from regtree import NotRegisteredError
from regtree.config import describe_annotation, type_mismatch
from regtree.naming import origin

from ._registries import resolve_optimizer_type
from ._zero import ZeroRedundancyOptimizer

__all__ = ["OptimizerInfo", "describe_optimizer"]

# Optimizers that wrap another one -> the config keys that may name the wrapped optimizer's type.
_WRAPPED_TYPE_KEYS: dict[object, tuple[str, ...]] = {
    ZeroRedundancyOptimizer: ("optimizer_type", "optimizer_class")
}


@dataclass(frozen=True, slots=True)
class OptimizerInfo:
    """What a constructor needs to know about the optimizer it will build.

    Attributes:
        name: The optimizer's name (``module:qualname``), for messages.
        options: Keyword options it accepts besides ``params``; None when it takes any.
        defaults: Default values of the options its signature names, where it gives one.
        annotations: Annotations of the options its signature names, where it gives one.
    """

    name: str
    options: frozenset[str] | None
    defaults: dict[str, Any] = field(default_factory=dict)
    annotations: dict[str, Any] = field(default_factory=dict)

    def expected_type(self, option: str, value: object) -> str | None:
        """The type ``option`` expects as text when ``value`` does not fit it, else None.

        Checked as SPEC 5.4 checks config values; an option without annotation takes anything.
        The text leaves out the ``Tensor`` that torch's annotations allow beside numbers (a
        tensor still fits): a config writes ``betas`` as ``tuple[float, float]``.
        """
        annotation = self.annotations.get(option, inspect.Parameter.empty)
        if annotation is inspect.Parameter.empty or type_mismatch(value, annotation) is None:
            return None
        return describe_annotation(annotation, hide=(torch.Tensor,))


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
            return OptimizerInfo(name=origin(cls), options=None)
        try:
            cls = resolve_optimizer_type(optimizer_cfg.get(wrapped_key), wrapped_key)
        except (NotRegisteredError, TypeError):
            return OptimizerInfo(name=origin(cls), options=None)
    signature = _signature(cls)
    if signature is None:
        return OptimizerInfo(name=origin(cls), options=None)
    options: set[str] = set()
    takes_any = False
    defaults: dict[str, Any] = {}
    annotations: dict[str, Any] = {}
    for parameter in signature.parameters.values():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            takes_any = True
            continue
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL or parameter.name == "params":
            continue
        options.add(parameter.name)
        if parameter.default is not inspect.Parameter.empty:
            defaults[parameter.name] = parameter.default
        if parameter.annotation is not inspect.Parameter.empty:
            annotations[parameter.name] = parameter.annotation
    return OptimizerInfo(
        name=origin(cls),
        options=None if takes_any else frozenset(options),
        defaults=defaults,
        annotations=annotations,
    )


def _signature(cls: Callable[..., Any]) -> inspect.Signature | None:
    # eval_str: an optimizer defined under `from __future__ import annotations` has str ones.
    for eval_str in (True, False):
        try:
            return inspect.signature(cls, eval_str=eval_str)
        except (NameError, SyntaxError):  # an annotation that does not evaluate: keep it as str
            continue
        except (TypeError, ValueError):
            return None
    return None
