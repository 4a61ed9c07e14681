"""SPEC 3.3's rules applied on top of 3.2's decision: one plain product per parameter.

``lr = base_lr * m0 * m1 * ... * scale``, left to right: ``m0`` is 3.2's multiplier (with
``compose``, the custom key's and then 3.2's rule's), ``m1...`` the ``rules``' in list order and
``scale`` the layer decay's; weight decay likewise without the scale, then the model's
no-weight-decay hooks. What depends on full names is read over all the names of a walk at once
(:meth:`RuleStage.rule_columns`, :meth:`RuleStage.layer_column`); the rest is decided once per
distinct combination.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch
from torch import nn

from ._composition import Composition
from ._layer_decay import LayerDepths, LayerScale
from ._model_hooks import NoDecayHooks
from ._module_kinds import is_depthwise, module_kind
from ._paramwise import Decision, ParamwiseRules, rule_label
from ._rules import ModuleFacts, ParamRule, RuleSelector
from ._warnings import warn_caller

__all__ = [
    "Decided",
    "PlacedElsewhere",
    "Prepared",
    "RuleStage",
    "compose_decisions",
    "placed_elsewhere_note",
    "product",
]


def product(factors: tuple[Any, ...]) -> Any:
    """The multipliers applied, left to right; 1.0 where there are none (explain's columns)."""
    result: Any = 1.0
    for factor in factors:
        result = result * factor
    return result


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
        rule_label(custom.rule, builtin.rule),
        lr_factors=(*custom.lr_factors, *builtin.lr_factors),
        decay_factors=(*custom.decay_factors, *builtin.decay_factors),
    )


# A decision, and whether the parameter is to be frozen (SPEC 3.3's freeze, freeze_below).
Decided = tuple[Decision, bool]


class PlacedElsewhere(NamedTuple):
    """A parameter of a group the walk did not file (an mmcv-era ``add_params`` override's).

    Attributes:
        name: Its full name, as the walk names it.
        attr: Its attribute name in its module.
        module: The module that holds it.
        param: The parameter.
    """

    name: str
    attr: str
    module: nn.Module
    param: torch.Tensor


def placed_elsewhere_note(names: Sequence[str], appended_by: str | None, others: str) -> str:
    """Why a rule or custom key that selects only parameters of such groups has no effect.

    Args:
        names: The parameters it selects there.
        appended_by: The override that appended their groups (``module:qualname``); None for
            groups that were in ``params`` before ``add_params`` was called.
        others: What else does not apply to them.
    """
    shown = ", ".join(map(repr, names[:3]))
    if len(names) > 3:
        shown += f", ... ({len(names)} in all)"
    if appended_by is None:
        where, fix = "of groups already in params", "leave their module to add_params"
    else:
        where = f"that {appended_by} placed in groups of its own"
        fix = f"have {appended_by} pass their module to super().add_params"
    return (
        f"only parameters {where} ({shown}); their settings are their group's, so it does not "
        f"apply to them (nor do {others}). To apply it, {fix}."
    )


# eq=False: one object per (3.2 decision, rules selected), hashed by identity, so it is a cheap
# part of the key that layer decay and the hooks are applied under.
@dataclass(frozen=True, slots=True, eq=False)
class Prepared:
    """A parameter's decision up to layer decay and the hooks (:meth:`RuleStage.prepare`).

    Attributes:
        final: The whole decision where nothing later applies (a parameter frozen in the model
            or by a ``freeze`` rule), else None.
        settings: 3.2's settings with the selected rules applied.
        lr_factors: The lr multipliers so far, in order.
        decay_factors: The weight-decay multipliers so far, in order.
        labels: What decided so far, as ``explain`` names it (``rule_label`` joins them).
        route: The sub-optimizer, or None.
    """

    final: Decided | None
    settings: dict[str, Any] = field(default_factory=dict)
    lr_factors: tuple[Any, ...] = ()
    decay_factors: tuple[Any, ...] = ()
    labels: tuple[str, ...] = ()
    route: str | None = None


class RuleStage:
    """The ``rules``, layer decay and model hooks of one call, for one model.

    What depends on a parameter's full name is computed for all the names of a walk at once
    (:meth:`rule_columns`, :meth:`layer_column`, the hooks' reasons). A parameter's 3.2
    decision then takes the rules it selects (:meth:`prepare`, once per decision and selection)
    and its layer and hook (:meth:`refine`, once per layer and hook of each).

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
        self.selector = RuleSelector(composition.rules) if composition.rules else None
        self._frozen_decision = frozen
        # Whether prepare() needs the parameter's true ndim (an ndim selector); else any value.
        self.reads_ndim = any(rule.ndim is not None for rule in composition.rules)
        self.depths = (
            LayerDepths(composition.layer_decay, model)
            if composition.layer_decay is not None
            else None
        )
        hooks = NoDecayHooks(model) if composition.model_hooks else None
        self.hooks = hooks if hooks else None
        self._rules = rules
        # (prepared, layer, hook) -> (decision, freezes): keys of the planner that differ only
        # in what no rule reads (an owner, an attribute name) share one Decision, and so one
        # group without a second lookup by settings.
        self._cache: dict[tuple[Prepared, LayerScale | None, str | None], Decided] = {}
        # Whether any rule freezes what it selects (then layer decay must ask which).
        self.freezes = any(rule.freeze for rule in composition.rules)
        self._selections: dict[tuple[ModuleFacts, str, int, tuple[bool, ...]], int] = {}
        # (3.2 decision, rules selected) -> what prepare() gives for them.
        self._prepared: dict[tuple[Decision, int], Prepared] = {}

    def module_facts(self, module_type: type, depthwise: bool) -> ModuleFacts | None:
        """What the rules' ``module`` selectors see in a module (None: no rules)."""
        if self.selector is None:
            return None
        return self.selector.module_facts(module_type, depthwise)

    def rule_columns(self, names: list[str]) -> list[list[bool]]:
        """The rules' name tests over the full names, a column each (see ``RuleSelector``)."""
        return [] if self.selector is None else self.selector.name_columns(names)

    def layer_column(self, names: list[str], decayed: list[bool]) -> Sequence[LayerScale | None]:
        """Each parameter's layer, None where ``decayed`` says layer decay does not read it.

        A frozen parameter gets no layer decay (SPEC 3.3), so its name never reaches the
        depth: not the model's hook, nor the range check.

        Raises:
            ValueError: layer decay puts a parameter it reads outside ``0..num_layers - 1``.
        """
        assert self.depths is not None
        if all(decayed):
            return self.depths.scales(names)
        layers: list[LayerScale | None] = [None] * len(names)
        positions = list(itertools.compress(range(len(names)), decayed))
        for position, layer in zip(
            positions, self.depths.scales([names[i] for i in positions]), strict=True
        ):
            layers[position] = layer
        return layers

    def frozen_by_rules(
        self, facts: ModuleFacts | None, name: str, ndim: int, hits: tuple[bool, ...]
    ) -> bool:
        """Whether a ``freeze: true`` rule selects one parameter (arguments as :meth:`prepare`)."""
        assert self.selector is not None  # only asked where a rule freezes
        selected = self._selection(facts, name, ndim, hits)
        return any(rule.freeze for rule in self.selector.rules_of(selected))

    def _selection(
        self, facts: ModuleFacts | None, name: str, ndim: int, hits: tuple[bool, ...]
    ) -> int:
        # The rules selecting a parameter, as bits; few combinations of these (20 for the 1,010
        # keys of the five-rules row), each marked used once. The planner asks once per key
        # less its layer and hook; frozen_by_rules asks per parameter, so this cache serves it.
        assert self.selector is not None
        assert facts is not None
        found = self._selections.get((facts, name, ndim, hits))
        if found is None:
            found = self.selector.select(facts, name, ndim, hits)
            self._selections[(facts, name, ndim, hits)] = found
            self.selector.mark_used(found)
        return found

    def prepare(
        self,
        decision: Decision,
        facts: ModuleFacts | None,
        name: str,
        ndim: int,
        hits: tuple[bool, ...],
    ) -> Prepared:
        """Apply the selected rules to one parameter's 3.2 decision: all but layer and hook.

        Equal 3.2 decisions with equal rules selected give one object (13 for the 1,010 keys of
        the benchmark's five-rules row), which :meth:`refine` completes once per layer and hook.

        Args:
            decision: What SPEC 3.2 decided.
            facts: Its module's :meth:`module_facts`.
            name: Its attribute name in its module.
            ndim: Its number of dimensions (the original one where sharding changed it); any
                value where :attr:`reads_ndim` is false.
            hits: Its entry in each of :meth:`rule_columns`.
        """
        selector = self.selector
        selected = 0 if selector is None else self._selection(facts, name, ndim, hits)
        key = (decision, selected)
        found = self._prepared.get(key)
        if found is None:
            rules = () if selector is None else selector.rules_of(selected)
            found = self._prepared[key] = self._after_rules(decision, rules)
        return found

    def refine(self, prepared: Prepared, layer: LayerScale | None, hook: str | None) -> Decided:
        """Complete a :meth:`prepare` result with the parameter's layer and hook.

        Args:
            prepared: What :meth:`prepare` gave.
            layer: Its entry of :meth:`layer_column`.
            hook: Its hook's reason for no weight decay (``NoDecayHooks.reasons``).

        Returns:
            The decision, and whether the parameter is to be frozen (``freeze``,
            ``freeze_below``).
        """
        if prepared.final is not None:
            return prepared.final
        key = (prepared, layer, hook)
        found = self._cache.get(key)
        if found is None:
            if layer is not None and layer.frozen:
                assert self.depths is not None
                below = self.depths.config.freeze_below
                why = f"frozen by {layer.label} (scale {layer.scale} < freeze_below {below})"
                found = self._frozen(why), True
            else:
                found = self._combine(prepared, layer, hook), False
            self._cache[key] = found
        return found

    def _frozen(self, why: str) -> Decision:
        return self._rules.decision(self._rules.base_settings(), why)

    def _after_rules(self, decision: Decision, selected: tuple[ParamRule, ...]) -> Prepared:
        # Frozen in the model: no rule, hook or layer decay applies (the rules did select it),
        # and there is nothing to freeze.
        if decision is self._frozen_decision:
            return Prepared(final=(decision, False))
        for rule in selected:
            if rule.freeze:  # frozen by the rule: the constructor sets requires_grad=False
                frozen = self._frozen(f"frozen by {rule.label} (freeze: true)")
                return Prepared(final=(frozen, True))
        settings = dict(decision.settings)
        lr_factors = list(decision.lr_factors)
        decay_factors = list(decision.decay_factors)
        labels = [decision.rule]
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
        return Prepared(
            None, settings, tuple(lr_factors), tuple(decay_factors), tuple(labels), route
        )

    def _combine(self, prepared: Prepared, layer: LayerScale | None, hook: str | None) -> Decision:
        settings = dict(prepared.settings)
        lr_factors = prepared.lr_factors
        decay_factors = prepared.decay_factors
        labels = prepared.labels
        if layer is not None:
            settings["lr"] = settings["lr"] * layer.scale
            lr_factors += (layer.scale,)
            labels += (layer.label,)
        if hook is not None:
            # After every other rule: weight decay 0, even where the config sets none.
            settings["weight_decay"] = settings.get("weight_decay", 0.0) * 0
            decay_factors += (0,)
            labels += (hook,)
        return self._rules.decision(
            settings,
            rule_label(*labels),
            lr_factors=lr_factors,
            decay_factors=decay_factors,
            route=prepared.route,
        )

    def finish(
        self,
        root: nn.Module,
        placed_elsewhere: Callable[[], Sequence[PlacedElsewhere]],
        appended_by: str | None,
    ) -> None:
        """Warn about every rule that selected no parameter.

        Args:
            root: The model walked.
            placed_elsewhere: The parameters of groups the walk did not file; asked only where a
                rule selected nothing, to say so where it selects some of those.
            appended_by: Who appended those groups (see :func:`placed_elsewhere_note`).
        """
        selector = self.selector
        if selector is None:
            return
        unused = [rule for rule in selector.rules if rule.index not in selector.used]
        if not unused:
            return
        elsewhere = self._selected_among(placed_elsewhere())
        for rule in unused:
            where = f"paramwise_cfg['rules'][{rule.index}]"
            names = elsewhere.get(rule.index)
            if names:
                others = "custom_keys, the paramwise_cfg multipliers or layer_decay"
                warn_caller(f"{where} selects {placed_elsewhere_note(names, appended_by, others)}")
            else:
                warn_caller(
                    f"{where} selects no parameter of {type(root).__name__}; it has no effect. "
                    "Check its selectors against the names explain() shows."
                )

    def _selected_among(self, params: Sequence[PlacedElsewhere]) -> dict[int, list[str]]:
        # rule index -> the names it selects among params; read for a warning only, so one
        # selection per parameter, none of it recorded as used.
        selector = self.selector
        assert selector is not None
        columns = selector.name_columns([param.name for param in params])
        rows = zip(*columns, strict=True) if columns else itertools.repeat((), len(params))
        found: dict[int, list[str]] = {}
        for param, hits in zip(params, rows, strict=True):
            module_type = type(param.module)
            depthwise = is_depthwise(param.module, module_kind(module_type).is_conv)
            facts = selector.module_facts(module_type, depthwise)
            selected = selector.select(facts, param.attr, param.param.ndim, tuple(hits))
            for rule in selector.rules_of(selected):
                found.setdefault(rule.index, []).append(param.name)
        return found
