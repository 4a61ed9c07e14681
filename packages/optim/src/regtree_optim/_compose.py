"""SPEC 3.3's rules applied on top of 3.2's decision: one plain product per parameter.

``lr = base_lr * m0 * m1 * ... * scale``, left to right: ``m0`` is 3.2's multiplier (with
``compose``, the custom key's and then 3.2's rule's), ``m1...`` the ``rules``' in list order and
``scale`` the layer decay's; weight decay likewise without the scale, then the model's
no-weight-decay hooks. Decisions are cached by what they depend on, so the per-parameter cost
is a few lookups and only the name selectors run per name.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Final, NamedTuple

import torch
from torch import nn

from ._layer_decay import LayerDepths, LayerScale
from ._model_hooks import NoDecayHooks
from ._paramwise import Decision, ParamwiseRules
from ._rules import Composition, ParamRule, RuleSelector, SelectionTable
from ._warnings import warn_caller

__all__ = ["RuleStage", "compose_decisions", "product"]

_DEFAULT_RULE: Final[str] = "default"


def product(factors: tuple[Any, ...]) -> Any:
    """The multipliers applied, left to right; 1.0 where there are none (explain's columns)."""
    result: Any = 1.0
    for factor in factors:
        result = result * factor
    return result


def _labels(*rules: str) -> list[str]:
    return [rule for rule in rules if rule != _DEFAULT_RULE]


def _multiplied(settings: dict[str, Any], option: str, factors: tuple[Any, ...]) -> None:
    if option in settings:
        value = settings[option]
        for factor in factors:
            value = value * factor
        settings[option] = value


def compose_decisions(custom: Decision, builtin: Decision, rules: ParamwiseRules) -> Decision:
    """``compose=True``: a custom key's settings, with 3.2's rule multiplied on top.

    ``base * custom * rule``: the custom key's lr and weight decay (already ``base * custom``)
    times the multipliers 3.2's rules give the parameter.
    """
    settings = dict(custom.settings)
    _multiplied(settings, "lr", builtin.lr_factors)
    _multiplied(settings, "weight_decay", builtin.decay_factors)
    return rules.decision(
        settings,
        ", ".join(_labels(custom.rule, builtin.rule)) or _DEFAULT_RULE,
        lr_factors=(*custom.lr_factors, *builtin.lr_factors),
        decay_factors=(*custom.decay_factors, *builtin.decay_factors),
    )


class _Partial(NamedTuple):
    """A 3.2 decision with the selected rules applied, before layer decay and hooks."""

    settings: dict[str, Any]
    lr_factors: tuple[Any, ...]
    decay_factors: tuple[Any, ...]
    labels: tuple[str, ...]
    route: str | None


def _no_table(module: nn.Module) -> None:
    # RuleStage.module_table without rules: no module selector to look at.
    return None


class RuleStage:
    """The ``rules``, layer decay and model hooks of one call, for one model.

    Args:
        composition: The validated SPEC 3.3 keys.
        model: The unwrapped model (its hooks are read here).
        rules: The validated paramwise rules (for the frozen settings and merge keys).
        frozen: The decision SPEC 3.2 gives every frozen parameter, and no other.

    Raises:
        ValueError: the model lacks the layer-depth hook that ``layer_decay`` needs.
        TypeError: a no-weight-decay hook returns something other than str.
    """

    def __init__(
        self,
        composition: Composition,
        model: nn.Module,
        rules: ParamwiseRules,
        frozen: Decision,
    ) -> None:
        self.composition = composition
        self.selector = RuleSelector(composition.rules) if composition.rules else None
        # The selector's own method, or one giving None: a call less per module (0.3 ms of the
        # benchmark's five-rules row, 5,000 modules).
        self.module_table: Callable[[nn.Module], SelectionTable | None] = (
            _no_table if self.selector is None else self.selector.module_table
        )
        self._frozen_decision = frozen
        # Whether refine() needs the parameter's true ndim (an ndim selector); else any value.
        self.reads_ndim = any(rule.ndim is not None for rule in composition.rules)
        self.depths = (
            LayerDepths(composition.layer_decay, model)
            if composition.layer_decay is not None
            else None
        )
        hooks = NoDecayHooks(model) if composition.model_hooks else None
        self.hooks = hooks if hooks else None
        self.to_freeze: list[torch.Tensor] = []
        self._rules = rules
        # (3.2 decision, rules selected, layer, hook) -> (decision, freezes)
        self._cache: dict[Hashable, tuple[Decision, bool]] = {}
        self._partials: dict[tuple[Decision, tuple[ParamRule, ...]], _Partial] = {}

    def refine(
        self,
        decision: Decision,
        table: SelectionTable | None,
        name: str,
        param: torch.Tensor,
        full_name: str,
        ndim: int,
    ) -> Decision:
        """Apply the rules, the layer decay and the hooks to one parameter's 3.2 decision.

        Args:
            decision: What SPEC 3.2 decided.
            table: Its module's :attr:`module_table`.
            name: Its attribute name in its module.
            param: The parameter.
            full_name: Its name in the unwrapped model.
            ndim: Its number of dimensions (the original one where sharding changed it); any
                value where :attr:`reads_ndim` is false.

        Raises:
            ValueError: layer decay puts it outside ``0..num_layers - 1``.
        """
        selector = self.selector
        selected = 0
        if selector is not None:
            assert table is not None
            selected = selector.select(table, name, ndim, full_name)
        # Frozen in the model: no rule, hook or layer decay applies (the rules did select it).
        # Told by 3.2's decision, not by reading requires_grad again: 0.9 ms of the five-rules
        # row's 10,000 tensors.
        if decision is self._frozen_decision:
            if selector is not None:
                selector.mark_used(selected)
            return decision
        layer = self.depths.scale(full_name) if self.depths is not None else None
        hook = self.hooks.reason(full_name) if self.hooks is not None else None
        # id(layer): one object per layer, kept alive by LayerDepths, and cheaper to hash; the
        # selection an int (10,000 tensors: 805 distinct keys).
        key = (decision, selected, id(layer), hook)
        found = self._cache.get(key)
        if found is None:
            # Every distinct selection passes here first, so rules are marked used once each.
            rules: tuple[ParamRule, ...] = ()
            if selector is not None:
                selector.mark_used(selected)
                rules = selector.rules_of(selected)
            found = self._cache[key] = self._resolve(decision, rules, layer, hook)
        result, freezes = found
        if freezes:
            self.to_freeze.append(param)
        return result

    def _resolve(
        self,
        decision: Decision,
        selected: tuple[ParamRule, ...],
        layer: LayerScale | None,
        hook: str | None,
    ) -> tuple[Decision, bool]:
        # The decision, and whether it freezes the parameter.
        for rule in selected:
            if rule.freeze:
                return self._frozen(f"frozen by {rule.label} (freeze: true)"), True
        scale: Any = None
        layer_label = ""
        if layer is not None:
            _, _, scale, frozen, layer_label = layer
            if frozen:
                assert self.depths is not None
                below = self.depths.config.freeze_below
                why = f"frozen by {layer_label} (scale {scale} < freeze_below {below})"
                return self._frozen(why), True
        return self._combine(decision, selected, scale, layer_label, hook), False

    def _frozen(self, why: str) -> Decision:
        return self._rules.decision(self._rules.base_settings(), why)

    def _after_rules(self, decision: Decision, selected: tuple[ParamRule, ...]) -> _Partial:
        # The rules' part of a combination, shared by every layer it meets: 805 combinations
        # of 10,000 tensors come from 8 of these.
        key = (decision, selected)
        found = self._partials.get(key)
        if found is not None:
            return found
        settings = dict(decision.settings)
        lr_factors = list(decision.lr_factors)
        decay_factors = list(decision.decay_factors)
        labels = _labels(decision.rule)
        route = decision.route
        for rule in selected:
            if rule.lr_mult is not None:
                settings["lr"] = settings["lr"] * rule.lr_mult
                lr_factors.append(rule.lr_mult)
            if rule.decay_mult is not None:
                settings["weight_decay"] = settings["weight_decay"] * rule.decay_mult
                decay_factors.append(rule.decay_mult)
            # Options are set, not multiplied: a later rule's value wins.
            settings.update(rule.options)
            if rule.optimizer is not None:
                route = rule.optimizer
            labels.append(rule.label)
        found = self._partials[key] = _Partial(
            settings, tuple(lr_factors), tuple(decay_factors), tuple(labels), route
        )
        return found

    def _combine(
        self,
        decision: Decision,
        selected: tuple[ParamRule, ...],
        scale: Any,
        layer_label: str,
        hook: str | None,
    ) -> Decision:
        partial = self._after_rules(decision, selected)
        settings = dict(partial.settings)
        lr_factors = partial.lr_factors
        decay_factors = partial.decay_factors
        labels = partial.labels
        if layer_label:
            settings["lr"] = settings["lr"] * scale
            lr_factors += (scale,)
            labels += (layer_label,)
        if hook is not None:
            # After every other rule: weight decay 0, even where the config sets none.
            settings["weight_decay"] = settings.get("weight_decay", 0.0) * 0
            decay_factors += (0,)
            labels += (hook,)
        return self._rules.decision(
            settings,
            ", ".join(labels) or _DEFAULT_RULE,
            lr_factors=lr_factors,
            decay_factors=decay_factors,
            route=partial.route,
        )

    def finish(self, root: nn.Module) -> None:
        """Warn about every rule that selected no parameter."""
        if self.selector is None:
            return
        for rule in self.selector.rules:
            if rule.index not in self.selector.used:
                warn_caller(
                    f"paramwise_cfg['rules'][{rule.index}] selects no parameter of "
                    f"{type(root).__name__}; it has no effect. Check its selectors against "
                    "the names explain() shows."
                )
