"""Validation of ``optimizer_cfg`` and ``paramwise_cfg``, resolved once into ``ParamwiseRules``."""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Collection, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from ._names import closest_names
from ._rules import COMPOSITION_KEYS, Composition, resolve_composition

__all__ = [
    "DEFAULT_PARAMWISE_KEYS",
    "CustomRule",
    "ParamwiseRules",
    "resolve_rules",
]

_MULT_KEYS: Final[tuple[str, ...]] = (
    "bias_lr_mult",
    "bias_decay_mult",
    "norm_decay_mult",
    "dwconv_decay_mult",
    "flat_decay_mult",
    "dcn_offset_lr_mult",
)
_BOOL_KEYS: Final[tuple[str, ...]] = ("bypass_duplicate", "merge_groups")
DEFAULT_PARAMWISE_KEYS: Final[tuple[str, ...]] = (
    "custom_keys",
    *_MULT_KEYS,
    *_BOOL_KEYS,
    *COMPOSITION_KEYS,
)
_CUSTOM_MULTS: Final[tuple[str, ...]] = ("lr_mult", "decay_mult")
# Keys a custom_keys entry may not set: the parameter lists are the constructor's to fill.
_CUSTOM_RESERVED: Final[dict[str, str]] = {
    "params": "parameters are chosen by matching the key against parameter names",
    "param_names": "parameter names are filled in by the constructor",
}


def _hashable(value: object) -> Hashable:
    # Group keys need hashable values; an unhashable option (a list of betas) is keyed by identity,
    # which still merges every parameter that one custom_keys entry decides.
    try:
        hash(value)
    except TypeError:
        return ("<unhashable>", id(value))
    return value


# eq=False: decisions hash by identity, which makes them cheap dict keys while grouping.
@dataclass(frozen=True, slots=True, eq=False)
class Decision:
    """The settings one rule gives a parameter, and the key that merges equal settings.

    Attributes:
        settings: The group options (``lr``, ``weight_decay``, custom options) the rule sets.
        rule: What decided them, as shown by ``explain``.
        key: Hashable form of ``settings``; equal keys share a group when merging.
        lr_factors: The lr multipliers applied, in order (``lr = base_lr * f0 * f1 * ...``).
        decay_factors: The weight-decay multipliers applied, in order.
        route: The sub-optimizer a ``rules`` entry routed the parameter to (SPEC 3.6), or None.
    """

    settings: dict[str, Any]
    rule: str
    key: Hashable
    lr_factors: tuple[Any, ...] = ()
    decay_factors: tuple[Any, ...] = ()
    route: str | None = None

    @classmethod
    def of(
        cls,
        settings: dict[str, Any],
        rule: str,
        *,
        lr_factors: tuple[Any, ...] = (),
        decay_factors: tuple[Any, ...] = (),
        route: str | None = None,
    ) -> Decision:
        """Build a decision, deriving its merge key from ``settings`` (and ``route``)."""
        key: Hashable = tuple(sorted((name, _hashable(value)) for name, value in settings.items()))
        if route is not None:
            key = (key, route)
        return cls(settings, rule, key, lr_factors, decay_factors, route)


@dataclass(frozen=True, slots=True)
class CustomRule:
    """One ``custom_keys`` entry, with its results computed once.

    Attributes:
        key: The substring matched against ``f'{prefix}.{name}'``.
        decision: The settings given to every parameter the key decides.
    """

    key: str
    decision: Decision


@dataclass(frozen=True, slots=True)
class ParamwiseRules:
    """``paramwise_cfg`` after validation; multipliers that were not given are None.

    Attributes:
        base_lr: ``optimizer_cfg['lr']`` or None.
        base_wd: ``optimizer_cfg['weight_decay']`` or None.
        custom: The custom_keys entries, longest key first, ties alphabetically.
        bias_lr_mult: Multiplier for the lr of ``bias`` parameters.
        bias_decay_mult: Multiplier for the weight decay of ``bias`` parameters.
        norm_decay_mult: Multiplier for the weight decay of norm layers' parameters.
        dwconv_decay_mult: Multiplier for the weight decay of depthwise convs' parameters.
        flat_decay_mult: Multiplier for the weight decay of 1-D parameters.
        dcn_offset_lr_mult: Multiplier for the lr of a deformable conv's offset conv.
        bypass_duplicate: Skip shared parameters after their first occurrence.
        merge_groups: Put parameters with equal settings in one group.
        composition: SPEC 3.3's ``compose``, ``rules``, ``model_hooks`` and ``layer_decay``, or
            None when the config uses none of them.
    """

    base_lr: Any
    base_wd: Any
    custom: tuple[CustomRule, ...]
    bias_lr_mult: Any
    bias_decay_mult: Any
    norm_decay_mult: Any
    dwconv_decay_mult: Any
    flat_decay_mult: Any
    dcn_offset_lr_mult: Any
    bypass_duplicate: bool
    merge_groups: bool
    composition: Composition | None = None

    def base_settings(self) -> dict[str, Any]:
        """Settings of a parameter no rule touches: the optimizer's own lr and weight_decay."""
        settings: dict[str, Any] = {}
        if self.base_lr is not None:
            settings["lr"] = self.base_lr
        if self.base_wd is not None:
            settings["weight_decay"] = self.base_wd
        return settings


def _check_mapping(value: object, what: str) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(
            f"{what} must be a mapping (a dict), got {value!r} ({type(value).__name__})"
        )
    return value


def _check_mult(value: object, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a number, got {value!r} ({type(value).__name__})")


def _check_unknown_keys(
    paramwise_cfg: Mapping[Any, Any],
    declared: Collection[str],
    owner: str,
    strict: bool,
) -> None:
    for key in paramwise_cfg:
        if not isinstance(key, str):
            raise TypeError(f"paramwise_cfg keys must be str, got {key!r} ({type(key).__name__})")
        if key in declared:
            continue
        close = closest_names(key, declared)
        if strict:
            hint = f"; did you mean {close[0]!r}?" if close else "."
            raise ValueError(
                f"Unknown paramwise_cfg key {key!r} for {owner}{hint} "
                f"Valid keys: {', '.join(sorted(declared))}."
            )
        typo = f"If it is a typo of {close[0]!r}, correct it; " if close else ""
        warnings.warn(
            f"paramwise_cfg key {key!r} is not declared by {owner}; it is passed on for "
            f"{owner}'s own code to read. {typo}if {owner} reads it, declare it to silence "
            "this warning: "
            f"paramwise_keys = (*DefaultOptimizerConstructor.paramwise_keys, {key!r}).",
            UserWarning,
            stacklevel=5,
        )


def _check_bases(paramwise_cfg: Mapping[str, Any], base_lr: Any, base_wd: Any) -> None:
    for key, value in paramwise_cfg.items():
        if value is None:
            continue
        if key.endswith("_decay_mult") and base_wd is None:
            raise ValueError(
                f"paramwise_cfg sets {key}={value!r} but optimizer_cfg has no weight_decay, so "
                f"there is nothing to multiply; add weight_decay to the optimizer config or drop "
                f"{key}."
            )
        if key.endswith("_lr_mult") and base_lr is None:
            raise ValueError(
                f"paramwise_cfg sets {key}={value!r} but optimizer_cfg has no lr, so there is "
                f"nothing to multiply; add lr to the optimizer config or drop {key}."
            )


def _resolve_custom(
    custom_keys: object,
    base_lr: Any,
    base_wd: Any,
    accepted_options: Collection[str] | None,
    optimizer_name: str,
) -> tuple[CustomRule, ...]:
    entries = _check_mapping(custom_keys, "paramwise_cfg['custom_keys']")
    for key in entries:
        if not isinstance(key, str) or not key:
            raise TypeError(f"custom_keys keys must be non-empty str, got {key!r}")
    rules: list[CustomRule] = []
    for key in sorted(sorted(entries), key=len, reverse=True):
        where = f"paramwise_cfg['custom_keys'][{key!r}]"
        entry = _check_mapping(entries[key], where)
        options: dict[str, Any] = {}
        for option, value in entry.items():
            if option in _CUSTOM_MULTS:
                if value is not None:
                    _check_mult(value, f"{where}[{option!r}]")
                continue
            if not isinstance(option, str):
                raise TypeError(f"{where} keys must be str, got {option!r}")
            if option in _CUSTOM_RESERVED:
                raise ValueError(
                    f"{where} sets {option!r}, which an entry may not set: "
                    f"{_CUSTOM_RESERVED[option]}."
                )
            if accepted_options is not None and option not in accepted_options:
                close = closest_names(option, [*_CUSTOM_MULTS, *sorted(accepted_options)])
                hint = f"; did you mean {close[0]!r}?" if close else "."
                raise ValueError(
                    f"{where} has unknown key {option!r}{hint} "
                    f"An entry holds lr_mult, decay_mult and options {optimizer_name} accepts: "
                    f"{', '.join(sorted(accepted_options))}."
                )
            options[option] = value
        lr_mult = entry.get("lr_mult")
        decay_mult = entry.get("decay_mult")
        if lr_mult is not None and base_lr is None:
            raise ValueError(
                f"{where} sets lr_mult={lr_mult!r} but optimizer_cfg has no lr; add lr to the "
                "optimizer config or drop lr_mult."
            )
        if decay_mult is not None and base_wd is None:
            raise ValueError(
                f"{where} sets decay_mult={decay_mult!r} but optimizer_cfg has no weight_decay; "
                "add weight_decay to the optimizer config or drop decay_mult."
            )
        settings: dict[str, Any] = {}
        if base_lr is not None:
            settings["lr"] = base_lr * (1.0 if lr_mult is None else lr_mult)
        if base_wd is not None:
            settings["weight_decay"] = base_wd * (1.0 if decay_mult is None else decay_mult)
        settings.update(options)
        decision = Decision.of(
            settings,
            f"custom_keys[{key!r}]",
            lr_factors=() if lr_mult is None else (lr_mult,),
            decay_factors=() if decay_mult is None else (decay_mult,),
        )
        rules.append(CustomRule(key=key, decision=decision))
    return tuple(rules)


def resolve_rules(
    optimizer_cfg: Mapping[str, Any],
    paramwise_cfg: Mapping[str, Any],
    *,
    declared_keys: Collection[str],
    owner: str,
    strict: bool,
    accepted_options: Collection[str] | None,
    optimizer_name: str,
) -> ParamwiseRules:
    """Validate a paramwise_cfg against its optimizer_cfg and resolve it into rules.

    Args:
        optimizer_cfg: The optimizer config (a mapping, already checked).
        paramwise_cfg: The paramwise config (a mapping, already checked).
        declared_keys: The keys the constructor class accepts (its ``paramwise_keys``).
        owner: The constructor class's name, for messages.
        strict: Reject undeclared keys (True) or warn once per key and pass them on (False).
        accepted_options: Options the optimizer accepts, or None when any is accepted.
        optimizer_name: The optimizer's name, for messages.

    Raises:
        TypeError: a value that must be a mapping, number or bool is not one.
        ValueError: an unknown key, or a multiplier with nothing to multiply.
    """
    _check_unknown_keys(paramwise_cfg, declared_keys, owner, strict)
    base_lr = optimizer_cfg.get("lr")
    base_wd = optimizer_cfg.get("weight_decay")
    for key in _MULT_KEYS:
        if paramwise_cfg.get(key) is not None:
            _check_mult(paramwise_cfg[key], f"paramwise_cfg[{key!r}]")
    for key in _BOOL_KEYS:
        if key in paramwise_cfg and not isinstance(paramwise_cfg[key], bool):
            raise TypeError(
                f"paramwise_cfg[{key!r}] must be True or False, got {paramwise_cfg[key]!r}"
            )
    _check_bases(paramwise_cfg, base_lr, base_wd)
    # Present means checked: custom_keys=None is a TypeError, as in mmcv.
    custom = (
        _resolve_custom(
            paramwise_cfg["custom_keys"], base_lr, base_wd, accepted_options, optimizer_name
        )
        if "custom_keys" in paramwise_cfg
        else ()
    )
    return ParamwiseRules(
        base_lr=base_lr,
        base_wd=base_wd,
        custom=custom,
        bias_lr_mult=paramwise_cfg.get("bias_lr_mult"),
        bias_decay_mult=paramwise_cfg.get("bias_decay_mult"),
        norm_decay_mult=paramwise_cfg.get("norm_decay_mult"),
        dwconv_decay_mult=paramwise_cfg.get("dwconv_decay_mult"),
        flat_decay_mult=paramwise_cfg.get("flat_decay_mult"),
        dcn_offset_lr_mult=paramwise_cfg.get("dcn_offset_lr_mult"),
        bypass_duplicate=paramwise_cfg.get("bypass_duplicate", False),
        merge_groups=paramwise_cfg.get("merge_groups", True),
        composition=resolve_composition(
            paramwise_cfg,
            base_lr=base_lr,
            base_wd=base_wd,
            accepted_options=accepted_options,
            optimizer_name=optimizer_name,
            # RoutedOptimizer's sub-optimizers (SPEC 3.6), what a rule's optimizer= may name.
            routes=(
                list(optimizer_cfg["optimizers"])
                if isinstance(optimizer_cfg.get("optimizers"), Mapping)
                else None
            ),
        ),
    )
