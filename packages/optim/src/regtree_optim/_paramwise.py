"""``paramwise_cfg``: validated against its optimizer (SPEC 3.1), and its built-in rules (3.2).

:func:`resolve_rules` checks both configs and resolves them into :class:`ParamwiseRules`;
:meth:`ParamwiseRules.builtin_decision` is SPEC 3.2's multiplier rules for one kind of parameter.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

import torch

from regtree.naming import closest

from ._composition import COMPOSITION_KEYS, Composition, resolve_composition
from ._optimizer_types import OptimizerInfo
from ._value_checks import (
    check_base,
    check_flag,
    check_multiplier,
    check_option,
    is_multiplier_key,
)
from ._warnings import warn_caller

__all__ = [
    "DEFAULT_PARAMWISE_KEYS",
    "CustomRule",
    "Decision",
    "ParamFacts",
    "ParamwiseRules",
    "check_optimizer_cfg",
    "resolve_rules",
    "rule_label",
    "set_value_factors",
    "settings_key",
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
# Whose weight-decay precedence to reproduce exactly (SPEC 3.2); the first is the default.
DECAY_PRECEDENCES: Final[tuple[str, ...]] = ("mmcv", "mmengine")
DEFAULT_PARAMWISE_KEYS: Final[tuple[str, ...]] = (
    "custom_keys",
    *_MULT_KEYS,
    *_BOOL_KEYS,
    "decay_precedence",
    *COMPOSITION_KEYS,
)
_CUSTOM_MULTS: Final[tuple[str, ...]] = ("lr_mult", "decay_mult")
# Keys a custom_keys entry may not set: the parameter lists are the constructor's to fill.
_CUSTOM_RESERVED: Final[dict[str, str]] = {
    "params": "parameters are chosen by matching the key against parameter names",
    "param_names": "parameter names are filled in by the constructor",
}
# What explain names a parameter that no rule touched.
DEFAULT_RULE: Final = "default"


_SCALARS: Final = frozenset({float, int, bool, str, type(None)})


def factor_of(value: Any, base: Any) -> Any:
    """The factor that takes ``base`` to ``value``: how explain counts a value set, not multiplied.

    A custom key's own ``lr`` (or an ``add_params`` override's group) sets the value; its
    ``lr_mult`` in explain is ``value / base``, so the products stay ``lr / base_lr``. Where the
    base is 0, no factor gives another value: ``inf`` (1 for the same value).
    """
    try:
        return value / base
    except ZeroDivisionError:
        return 1.0 if value == 0 else math.copysign(math.inf, value)


def set_value_factors(
    options: Mapping[str, Any], option: str, baseline: Mapping[str, Any]
) -> tuple[Any, ...]:
    """The factors explain counts for an option that ``options`` sets rather than multiplies.

    ``(factor_of(value, base),)``, the base being what a parameter no rule touches gets (the
    config's value, else the optimizer's default); none where ``options`` does not set it or
    there is no base.
    """
    base = baseline.get(option)
    if option not in options or base is None:
        return ()
    return (factor_of(options[option], base),)


def rule_label(*rules: str) -> str:
    """What decided, as explain names it: each rule that applied, in order, else ``default``."""
    return ", ".join(rule for rule in rules if rule != DEFAULT_RULE) or DEFAULT_RULE


def _hashable(value: object) -> Hashable:
    # Lists and tuples stand for each other (a config file has only lists) and compare by
    # content, as do mappings; anything else unhashable is keyed by identity.
    if type(value) in _SCALARS:
        # Most settings are plain numbers: isinstance against Mapping (an ABC) costs them more
        # than the rest of the key; layer decay keys ~800 settings per 10,000 tensors.
        return value
    if isinstance(value, list | tuple):
        return ("<sequence>", tuple(_hashable(item) for item in value))
    if isinstance(value, Mapping):
        return ("<mapping>", tuple(sorted((repr(k), _hashable(v)) for k, v in value.items())))
    if isinstance(value, torch.Tensor) and value.dim() == 0 and not value.is_meta:
        # A 0-dim tensor lr (torch accepts one): every product is a new tensor, so equal values
        # are told by value, dtype and device, not by identity.
        return ("<tensor>", str(value.dtype), str(value.device), value.item())
    try:
        hash(value)
    except TypeError:
        return ("<unhashable>", id(value))
    return value


def settings_key(settings: Mapping[str, Any], baseline: Mapping[str, Any]) -> Hashable:
    """The merge key of a group's settings: what differs from the optimizer's own values.

    An option set to the value the optimizer would use anyway (its config's, else its
    default) is the same setting as leaving it out.
    """
    key = []
    for name, value in settings.items():
        hashed = _hashable(value)
        if name in baseline and _same(_hashable(baseline[name]), hashed):
            continue
        key.append((name, hashed))
    # Names are unique, so sorting the pairs compares names only (and needs no key function).
    return tuple(sorted(key))


def _same(a: object, b: object) -> bool:
    try:
        return a is b or bool(a == b)
    except (TypeError, ValueError, RuntimeError):  # a tensor of several values, say
        return False


# eq=False: decisions hash by identity, which makes them cheap dict keys while grouping.
@dataclass(frozen=True, slots=True, eq=False)
class Decision:
    """The settings one rule gives a parameter, and the key that merges equal settings.

    Attributes:
        settings: The group options (``lr``, ``weight_decay``, custom options) the rule sets.
        rule: What decided them, as shown by ``explain``.
        key: Hashable form of the effective settings; equal keys share a group when merging.
        lr_factors: The lr multipliers applied, in order (``lr = base_lr * f0 * f1 * ...``; a
            value set rather than multiplied counts as :func:`factor_of` it).
        decay_factors: The weight-decay multipliers applied, in order, likewise.
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
        baseline: Mapping[str, Any],
        *,
        lr_factors: tuple[Any, ...] = (),
        decay_factors: tuple[Any, ...] = (),
        route: str | None = None,
    ) -> Decision:
        """Build a decision; its key leaves out options equal to ``baseline``'s.

        Parameters routed to different sub-optimizers never share a group.
        """
        key = settings_key(settings, baseline)
        if route is not None:
            key = (key, ("<route>", route))
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


class ParamFacts(NamedTuple):
    """What the built-in rules look at in one parameter and its module.

    Attributes:
        is_norm: Its module is a norm layer.
        is_dw: Its module is a depthwise conv.
        in_dcn: Its module is a direct child of a deformable conv.
        offset: Its module is a Conv2d inside a deformable conv with ``conv_offset`` in its name.
        is_bias: The parameter is named ``bias``.
        is_flat: The parameter is 1-D.
    """

    is_norm: bool
    is_dw: bool
    in_dcn: bool
    offset: bool
    is_bias: bool
    is_flat: bool


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
        decay_precedence: ``'mmcv'`` or ``'mmengine'``: whose weight-decay rules to follow.
        baseline: The optimizer's own option values (its config's, else its defaults): an
            option a rule sets to one of these is the same setting as none.
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
    decay_precedence: str
    baseline: Mapping[str, Any]
    composition: Composition | None = None

    def base_settings(self) -> dict[str, Any]:
        """Settings of a parameter no rule touches: the optimizer's own lr and weight_decay."""
        settings: dict[str, Any] = {}
        if self.base_lr is not None:
            settings["lr"] = self.base_lr
        if self.base_wd is not None:
            settings["weight_decay"] = self.base_wd
        return settings

    def decision(
        self,
        settings: dict[str, Any],
        rule: str,
        *,
        lr_factors: tuple[Any, ...] = (),
        decay_factors: tuple[Any, ...] = (),
        route: str | None = None,
    ) -> Decision:
        """A decision for ``settings``, merged with every other of equal effective settings."""
        return Decision.of(
            settings,
            rule,
            self.baseline,
            lr_factors=lr_factors,
            decay_factors=decay_factors,
            route=route,
        )

    def builtin_decision(self, facts: ParamFacts) -> Decision:
        """SPEC 3.2's multiplier rules (not custom_keys, not frozen) for one kind of parameter."""
        settings = self.base_settings()
        applied: list[str] = []
        lr_factors: tuple[Any, ...] = ()
        decay_factors: tuple[Any, ...] = ()
        if self.base_lr is not None:
            if (
                self.bias_lr_mult is not None
                and facts.is_bias
                and not (facts.is_norm or facts.in_dcn)
            ):
                settings["lr"] = self.base_lr * self.bias_lr_mult
                applied.append("bias_lr_mult")
                lr_factors = (self.bias_lr_mult,)
            # Overrides bias_lr_mult, as in mmcv.
            if self.dcn_offset_lr_mult is not None and facts.offset:
                settings["lr"] = self.base_lr * self.dcn_offset_lr_mult
                applied = ["dcn_offset_lr_mult"]
                lr_factors = (self.dcn_offset_lr_mult,)
        if self.base_wd is not None:
            mult_name = self._decay_rule(facts)
            if mult_name is not None:
                mult = getattr(self, mult_name)
                if mult is not None:
                    settings["weight_decay"] = self.base_wd * mult
                    applied.append(mult_name)
                    decay_factors = (mult,)
        return self.decision(
            settings,
            rule_label(*applied),
            lr_factors=lr_factors,
            decay_factors=decay_factors,
        )

    def _decay_rule(self, facts: ParamFacts) -> str | None:
        """The name of the multiplier that decides the weight decay, by ``decay_precedence``."""
        outside_dcn = not facts.in_dcn
        candidates = (
            (facts.is_norm, "norm_decay_mult"),
            (facts.is_dw, "dwconv_decay_mult"),
            (facts.is_bias and outside_dcn, "bias_decay_mult"),
            (facts.is_flat and outside_dcn, "flat_decay_mult"),
        )
        if self.decay_precedence == "mmcv":
            # mmcv 1.x: the first rule that applies decides, its multiplier defaulting to 1 (so
            # a norm layer's bias follows norm_decay_mult even when only bias_decay_mult is set).
            return next((name for applies, name in candidates if applies), None)
        # mmengine 0.x: bias before depthwise; the first rule whose multiplier is given decides.
        norm, dw, bias, flat = candidates
        return next(
            (
                name
                for applies, name in (norm, bias, dw, flat)
                if applies and getattr(self, name) is not None
            ),
            None,
        )


def _check_mapping(value: object, what: str, if_none: str = "") -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(
            f"{what} must be a mapping (a dict), got {value!r} ({type(value).__name__})"
            f"{if_none if value is None else ''}"
        )
    return value


def _check_unknown_keys(
    paramwise_cfg: Mapping[Any, Any],
    declared: Collection[str],
    owner: str,
    strict: bool,
    warned: set[str],
) -> None:
    for key in paramwise_cfg:
        if not isinstance(key, str):
            raise TypeError(f"paramwise_cfg keys must be str, got {key!r} ({type(key).__name__})")
        if key in declared:
            continue
        close = closest(key, declared, count=1)
        if strict:
            hint = f"; did you mean {close[0]!r}?" if close else "."
            raise ValueError(
                f"Unknown paramwise_cfg key {key!r} for {owner}{hint} "
                f"Valid keys: {', '.join(sorted(declared))}."
            )
        if key in warned:
            continue
        warned.add(key)
        typo = f"If it is a typo of {close[0]!r}, correct it; " if close else ""
        warn_caller(
            f"paramwise_cfg key {key!r} is not declared by {owner}; it is passed on for "
            f"{owner}'s own code to read. {typo}if {owner} reads it, declare it to silence "
            "this warning: "
            f"paramwise_keys = (*DefaultOptimizerConstructor.paramwise_keys, {key!r}).",
        )


def _check_bases(paramwise_cfg: Mapping[str, Any], base_lr: Any, base_wd: Any) -> None:
    # Every *_decay_mult and *_lr_mult key (SPEC 3.1), a subclass's undeclared ones included.
    for key, value in paramwise_cfg.items():
        if not is_multiplier_key(key):
            continue
        if key.endswith("_decay_mult"):
            check_base("paramwise_cfg", key, value, "weight_decay", base_wd)
        else:
            check_base("paramwise_cfg", key, value, "lr", base_lr)


def _custom_options(entry: Mapping[Any, Any], where: str, info: OptimizerInfo) -> dict[str, Any]:
    """Check one custom_keys entry's keys; return the optimizer options it sets."""
    options: dict[str, Any] = {}
    for option, value in entry.items():
        if option in _CUSTOM_MULTS:
            if value is not None:
                check_multiplier(where, option, value)
            continue
        if not isinstance(option, str):
            raise TypeError(f"{where} keys must be str, got {option!r}")
        if option in _CUSTOM_RESERVED:
            raise ValueError(
                f"{where} sets {option!r}, which an entry may not set: {_CUSTOM_RESERVED[option]}."
            )
        if info.options is not None and option not in info.options:
            close = closest(option, [*_CUSTOM_MULTS, *sorted(info.options)], count=1)
            hint = f"; did you mean {close[0]!r}?" if close else "."
            raise ValueError(
                f"{where} has unknown key {option!r}{hint} "
                f"An entry holds lr_mult, decay_mult and options {info.name} accepts: "
                f"{', '.join(sorted(info.options))}."
            )
        check_option(info, option, value, where, group=True)
        options[option] = value
    return options


def _entry_factors(
    options: Mapping[str, Any], option: str, mult: Any, baseline: Mapping[str, Any]
) -> tuple[Any, ...]:
    # A custom key's factors for explain. Its own lr (or weight_decay) replaces base * mult, as
    # mmengine copies it over.
    if option in options:
        return set_value_factors(options, option, baseline)
    return () if mult is None else (mult,)


def _resolve_custom(
    custom_keys: object,
    base_lr: Any,
    base_wd: Any,
    info: OptimizerInfo,
    baseline: Mapping[str, Any],
) -> tuple[CustomRule, ...]:
    entries = _check_mapping(
        custom_keys,
        "paramwise_cfg['custom_keys']",
        if_none="; leave custom_keys out, or give {}, for no custom keys",
    )
    for key in entries:
        if not isinstance(key, str) or not key:
            raise TypeError(f"custom_keys keys must be non-empty str, got {key!r}")
    rules: list[CustomRule] = []
    for key in sorted(sorted(entries), key=len, reverse=True):
        where = f"paramwise_cfg['custom_keys'][{key!r}]"
        entry = _check_mapping(entries[key], where)
        options = _custom_options(entry, where, info)
        lr_mult = entry.get("lr_mult")
        decay_mult = entry.get("decay_mult")
        check_base(where, "lr_mult", lr_mult, "lr", base_lr)
        check_base(where, "decay_mult", decay_mult, "weight_decay", base_wd)
        settings: dict[str, Any] = {}
        if base_lr is not None:
            settings["lr"] = base_lr * (1.0 if lr_mult is None else lr_mult)
        if base_wd is not None:
            settings["weight_decay"] = base_wd * (1.0 if decay_mult is None else decay_mult)
        settings.update(options)
        decision = Decision.of(
            settings,
            f"custom_keys[{key!r}]",
            baseline,
            lr_factors=_entry_factors(options, "lr", lr_mult, baseline),
            decay_factors=_entry_factors(options, "weight_decay", decay_mult, baseline),
        )
        rules.append(CustomRule(key=key, decision=decision))
    return tuple(rules)


def check_optimizer_cfg(
    optimizer_cfg: Mapping[str, Any], info: OptimizerInfo, where: str = "optimizer_cfg"
) -> None:
    """Check an optimizer config's options against what the optimizer accepts (SPEC 3.1, 5.4).

    Args:
        optimizer_cfg: The config, ``type`` included.
        info: What the optimizer accepts.
        where: How messages name the config (a RoutedOptimizer's sub-optimizer's is nested).

    Raises:
        TypeError: an lr or weight decay that is not a real number or a 0-dim tensor, or an
            option that does not fit the optimizer's annotation of it.
    """
    for option, value in optimizer_cfg.items():
        if option != "type" and isinstance(option, str):
            check_option(info, option, value, where)


def _check_values(paramwise_cfg: Mapping[str, Any], declared: Collection[str]) -> str:
    """Check the multipliers, flags and ``decay_precedence`` of SPEC 3.2; return the latter.

    Every declared multiplier, a subclass's own ``head_lr_mult`` too, is one as SPEC 3.1 says;
    an undeclared one only needs its base (:func:`_check_bases`), as the subclass's code reads it.
    """
    for key, value in paramwise_cfg.items():
        if value is not None and key in declared and is_multiplier_key(key):
            check_multiplier("paramwise_cfg", key, value)
    for key in _BOOL_KEYS:
        if key in paramwise_cfg:
            check_flag(paramwise_cfg[key], f"paramwise_cfg[{key!r}]")
    precedence = paramwise_cfg.get("decay_precedence", DECAY_PRECEDENCES[0])
    if precedence not in DECAY_PRECEDENCES:
        raise ValueError(
            f"paramwise_cfg['decay_precedence'] must be 'mmcv' or 'mmengine', got "
            f"{precedence!r}: 'mmcv' (the default) reproduces mmcv 1.x's weight-decay rules, "
            "'mmengine' mmengine 0.x's."
        )
    return str(precedence)


def resolve_rules(
    optimizer_cfg: Mapping[str, Any],
    paramwise_cfg: Mapping[str, Any],
    *,
    declared_keys: Collection[str],
    owner: str,
    strict: bool,
    optimizer: OptimizerInfo,
    warned: set[str] | None = None,
    routes: Collection[str] | None = None,
) -> ParamwiseRules:
    """Validate a paramwise_cfg against its optimizer_cfg and resolve it into rules.

    Args:
        optimizer_cfg: The optimizer config (a mapping, already checked).
        paramwise_cfg: The paramwise config (a mapping, already checked).
        declared_keys: The keys the constructor class accepts (its ``paramwise_keys``).
        owner: The constructor class's name, for messages.
        strict: Reject undeclared keys (True) or warn once per key and pass them on (False).
        optimizer: What the optimizer accepts: its options, their defaults and annotations.
        warned: Undeclared keys already warned about; a key warns once per set.
        routes: The sub-optimizers a rule's ``optimizer`` may name (SPEC 3.6): a
            RoutedOptimizer's ``optimizers``, as ``resolve_routed`` passes them; None for any
            other optimizer, whatever keys its config holds.

    Raises:
        TypeError: a value that must be a mapping, number or bool is not one, or an option does
            not fit the optimizer's annotation of it.
        ValueError: an unknown key, or a multiplier with nothing to multiply.
    """
    warned = set() if warned is None else warned
    _check_unknown_keys(paramwise_cfg, declared_keys, owner, strict, warned)
    check_optimizer_cfg(optimizer_cfg, optimizer)
    base_lr = optimizer_cfg.get("lr")
    base_wd = optimizer_cfg.get("weight_decay")
    precedence = _check_values(paramwise_cfg, declared_keys)
    _check_bases(paramwise_cfg, base_lr, base_wd)
    baseline = {
        **optimizer.defaults,
        **{key: value for key, value in optimizer_cfg.items() if key != "type"},
    }
    # Present means checked: custom_keys=None is a TypeError (SPEC 3.1, as mmcv checks it),
    # where a None multiplier, rules=None or layer_decay=None is not given.
    custom = (
        _resolve_custom(paramwise_cfg["custom_keys"], base_lr, base_wd, optimizer, baseline)
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
        decay_precedence=precedence,
        baseline=baseline,
        composition=resolve_composition(
            paramwise_cfg,
            base_lr=base_lr,
            base_wd=base_wd,
            optimizer=optimizer,
            routes=routes,
        ),
    )
