"""SPEC 3.3's paramwise_cfg keys, validated together: compose, rules, model_hooks, layer_decay.

Each key's own checks live with it (``_rules``, ``_layer_decay``); this module says which of them
a config uses and holds the result, :class:`Composition`, for ``_paramwise`` to carry and
``_compose`` to apply.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final

from ._layer_decay import LayerDecay, resolve_layer_decay
from ._optimizer_types import OptimizerInfo
from ._rules import ParamRule, resolve_param_rules
from ._value_checks import check_flag

__all__ = ["COMPOSITION_KEYS", "Composition", "resolve_composition"]

# The paramwise_cfg keys of SPEC 3.3 (decay_precedence, also new there, belongs to 3.2's rules).
COMPOSITION_KEYS: Final[tuple[str, ...]] = ("compose", "rules", "model_hooks", "layer_decay")


@dataclass(frozen=True, slots=True)
class Composition:
    """The keys of SPEC 3.3, validated: ``compose``, ``rules``, ``model_hooks``, ``layer_decay``.

    Attributes:
        compose: A matching custom key's multipliers come first and 3.2's rules multiply on top.
        rules: The ``rules`` list, in order.
        model_hooks: Read the model's ``no_weight_decay()`` and ``no_weight_decay_keywords()``.
        layer_decay: The layer-wise lr decay, or None.
    """

    compose: bool = False
    rules: tuple[ParamRule, ...] = ()
    model_hooks: bool = False
    layer_decay: LayerDecay | None = None

    @property
    def after_builtin(self) -> bool:
        """Whether anything applies after SPEC 3.2 has decided (``compose`` works within it)."""
        return bool(self.rules) or self.model_hooks or self.layer_decay is not None


def resolve_composition(
    paramwise_cfg: Mapping[str, Any],
    *,
    base_lr: Any,
    base_wd: Any,
    optimizer: OptimizerInfo,
    routes: Collection[str] | None = None,
) -> Composition | None:
    """Validate SPEC 3.3's keys of ``paramwise_cfg``; None when it uses none of them.

    Raises:
        TypeError: a flag is not a bool, or a value has the wrong type.
        ValueError: as :func:`resolve_param_rules` and :func:`resolve_layer_decay` say.
    """
    if not any(key in paramwise_cfg for key in COMPOSITION_KEYS):
        return None
    for flag in ("compose", "model_hooks"):
        if flag in paramwise_cfg:
            check_flag(paramwise_cfg[flag], f"paramwise_cfg[{flag!r}]")
    rules = paramwise_cfg.get("rules")
    layer_decay = paramwise_cfg.get("layer_decay")
    return Composition(
        compose=paramwise_cfg.get("compose", False),
        rules=(
            ()
            if rules is None
            else resolve_param_rules(
                rules,
                base_lr=base_lr,
                base_wd=base_wd,
                optimizer=optimizer,
                routes=routes,
            )
        ),
        model_hooks=paramwise_cfg.get("model_hooks", False),
        layer_decay=None
        if layer_decay is None
        else resolve_layer_decay(layer_decay, base_lr=base_lr),
    )
