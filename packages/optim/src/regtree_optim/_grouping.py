"""Walk a model once and place every parameter into a parameter group by the paramwise rules."""

from __future__ import annotations

import difflib
import itertools
import warnings
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from ._module_kinds import ModuleKind, module_kind
from ._paramwise import CustomRule, Decision, ParamwiseRules

__all__ = ["GroupPlan", "Placement", "plan_groups", "single_group"]

_FROZEN_RULE = "frozen (optimizer defaults)"
_DEFAULT_RULE = "default"


@dataclass(frozen=True, slots=True)
class Placement:
    """Where one parameter went and why (kept only when explaining).

    Attributes:
        name: The parameter's name in the unwrapped model.
        param: The parameter itself.
        rule: What decided its settings.
        group: Index of its group.
    """

    name: str
    param: torch.Tensor
    rule: str
    group: int


@dataclass(slots=True)
class GroupPlan:
    """Parameter groups ready for the optimizer, and optionally each parameter's placement.

    Attributes:
        groups: Dicts with ``params``, ``param_names`` and the group's settings.
        placements: One entry per parameter in model order, or None when not explaining.
    """

    groups: list[dict[str, Any]] = field(default_factory=list)
    placements: list[Placement] | None = None


def single_group(model: nn.Module, explain: bool) -> GroupPlan:
    """Put every parameter of ``model`` in one group, as ``model.parameters()`` orders them."""
    names: list[str] = []
    params: list[torch.Tensor] = []
    for name, param in model.named_parameters():
        names.append(name)
        params.append(param)
    plan = GroupPlan(groups=[{"params": params, "param_names": names}])
    if explain:
        rule = "default (no paramwise_cfg)"
        plan.placements = [Placement(n, p, rule, 0) for n, p in zip(names, params, strict=True)]
    return plan


class _RuleTable:
    """The built-in rules, evaluated once per combination of the facts they depend on."""

    def __init__(self, rules: ParamwiseRules) -> None:
        self._rules = rules
        self._by_module: dict[tuple[bool, bool, bool, bool], tuple[Decision, ...]] = {}
        self.frozen = Decision.of(rules.base_settings(), _FROZEN_RULE)

    def for_module(
        self, is_norm: bool, is_dw: bool, in_dcn: bool, offset: bool
    ) -> tuple[Decision, ...]:
        """The decisions for one module's parameters, indexed by ``is_bias * 2 + is_flat``."""
        facts = (is_norm, is_dw, in_dcn, offset)
        decisions = self._by_module.get(facts)
        if decisions is None:
            decisions = self._by_module[facts] = tuple(
                self._evaluate(*facts, is_bias=is_bias, is_flat=is_flat)
                for is_bias in (False, True)
                for is_flat in (False, True)
            )
        return decisions

    def _evaluate(
        self,
        is_norm: bool,
        is_dw: bool,
        in_dcn: bool,
        offset: bool,
        *,
        is_bias: bool,
        is_flat: bool,
    ) -> Decision:
        rules = self._rules
        settings = rules.base_settings()
        applied: list[str] = []
        if rules.base_lr is not None:
            if rules.bias_lr_mult is not None and is_bias and not (is_norm or in_dcn):
                settings["lr"] = rules.base_lr * rules.bias_lr_mult
                applied.append("bias_lr_mult")
            # Overrides bias_lr_mult, as in mmcv.
            if rules.dcn_offset_lr_mult is not None and offset:
                settings["lr"] = rules.base_lr * rules.dcn_offset_lr_mult
                applied = ["dcn_offset_lr_mult"]
        if rules.base_wd is not None:
            # The first rule whose multiplier is given decides.
            for applies, mult_name, mult in (
                (is_norm, "norm_decay_mult", rules.norm_decay_mult),
                (is_dw, "dwconv_decay_mult", rules.dwconv_decay_mult),
                (is_bias and not in_dcn, "bias_decay_mult", rules.bias_decay_mult),
                (is_flat and not in_dcn, "flat_decay_mult", rules.flat_decay_mult),
            ):
                if applies and mult is not None:
                    settings["weight_decay"] = rules.base_wd * mult
                    applied.append(mult_name)
                    break
        return Decision.of(settings, ", ".join(applied) or _DEFAULT_RULE)


def _module_decisions(
    table: _RuleTable, kind: ModuleKind, module: nn.Module, module_prefix: str, in_dcn: bool
) -> tuple[Decision, ...]:
    is_dw = kind.is_conv and getattr(module, "groups", 0) == getattr(module, "in_channels", 0) > 1
    offset = in_dcn and kind.is_conv2d and "conv_offset" in module_prefix
    return table.for_module(kind.is_norm, is_dw, in_dcn, offset)


def _duplicate(name: str, first: str, rules: ParamwiseRules) -> None:
    if not rules.bypass_duplicate:
        raise ValueError(
            f"Parameter {name!r} is the same tensor as {first!r}: a parameter may belong to one "
            "group only. Set paramwise_cfg bypass_duplicate=True to keep the first occurrence and "
            "skip the later ones."
        )
    warnings.warn(
        f"Parameter {name!r} is the same tensor as {first!r}; it is skipped because "
        "bypass_duplicate=True.",
        UserWarning,
        stacklevel=5,
    )


def _warn_unmatched(
    root: nn.Module,
    custom: tuple[CustomRule, ...],
    decided_keys: set[str],
    names: Iterable[str],
    prefix: str,
) -> None:
    # Only keys that decided nothing need a scan (typos, keys shadowed by longer ones, keys that
    # match frozen parameters or skipped duplicates only), so the walk pays nothing for this.
    remaining = [rule.key for rule in custom if rule.key not in decided_keys]
    if not remaining:
        return
    # Names as the rules match them: f'{prefix}.{name}', so a top-level 'w' is '.w'.
    match_names = [name if prefix or "." in name else f".{name}" for name in names]
    for key in remaining:
        if any(key in match_name for match_name in match_names):
            continue
        hints = difflib.get_close_matches(key, match_names, n=1, cutoff=0.5)
        hint = f" (the closest name is {hints[0].lstrip('.')!r})" if hints else ""
        warnings.warn(
            f"custom_keys key {key!r} matches no parameter of {type(root).__name__}: it is a "
            f"substring of no name f'{{prefix}}.{{name}}'{hint}; it has no effect.",
            UserWarning,
            stacklevel=5,
        )


def plan_groups(
    root: nn.Module,
    rules: ParamwiseRules,
    *,
    explain: bool = False,
    prefix: str = "",
    in_dcn: bool = False,
    merge_groups: bool | None = None,
    taken: Iterable[torch.Tensor] = (),
) -> GroupPlan:
    """Walk ``root`` in model order and group its parameters by the paramwise rules.

    Model order is pre-order: a module's own parameters, then its children's, as
    ``named_parameters()`` yields them, except that a module or parameter reachable twice is
    visited twice (that is how shared parameters are found). Runs in time linear in the number of
    parameters: modules are classified once per type, rules are evaluated once per combination
    of facts, duplicates are found by ``id`` and groups are found by decision.

    Args:
        root: The (unwrapped) model.
        rules: The validated paramwise rules.
        explain: Also record each parameter's placement and rule.
        prefix: Name prefix of ``root`` inside a larger model (mmcv's ``add_params``).
        in_dcn: Whether ``root`` is a direct child of a deformable conv.
        merge_groups: Overrides ``rules.merge_groups`` when given.
        taken: Parameters already placed elsewhere, treated as earlier occurrences.

    Raises:
        ValueError: a shared parameter without ``bypass_duplicate``.
    """
    merge = rules.merge_groups if merge_groups is None else merge_groups
    table = _RuleTable(rules)
    custom = rules.custom
    decided_keys: set[str] = set()
    placements: list[Placement] | None = [] if explain else None
    groups: list[dict[str, Any]] = []
    group_params: list[list[torch.Tensor]] = []
    group_names: list[list[str]] = []
    # Merge lookups go by decision object first (identity hash), then by the settings' key.
    index_by_decision: dict[Decision, int] = {}
    index_by_key: dict[Hashable, int] = {}
    # id(param) -> first name; the parameters stay alive in the model, so ids are stable here.
    seen: dict[int, str] = {id(param): "<a parameter placed earlier>" for param in taken}
    taken_ids = set(seen)
    # Names of skipped duplicates: still parameter names, so custom keys matching them are used.
    duplicate_names: list[str] = []

    # Stack of (prefix, module, is a direct child of a deformable conv); children are pushed in
    # reverse so that they pop in order.
    stack: list[tuple[str, nn.Module, bool]] = [(prefix, root, in_dcn)]
    while stack:
        module_prefix, module, module_in_dcn = stack.pop()
        kind = module_kind(type(module))
        # _parameters and _modules are what named_parameters()/named_children() read; using them
        # directly keeps the walk linear and cheap.
        own = module._parameters
        if own:
            # Looked up at the module's first new parameter: a shared module met again has none.
            decisions: tuple[Decision, ...] | None = None
            for name, param in own.items():
                if param is None:
                    continue
                full_name = f"{module_prefix}.{name}" if module_prefix else name
                param_id = id(param)
                first = seen.get(param_id)
                if first is not None:
                    _duplicate(full_name, first, rules)
                    duplicate_names.append(full_name)
                    continue
                seen[param_id] = full_name

                decision: Decision | None = None
                if not param.requires_grad:
                    decision = table.frozen
                elif custom:
                    match_name = f"{module_prefix}.{name}"
                    for custom_rule in custom:
                        if custom_rule.key in match_name:
                            decision = custom_rule.decision
                            decided_keys.add(custom_rule.key)
                            break
                if decision is None:
                    if decisions is None:
                        decisions = _module_decisions(
                            table, kind, module, module_prefix, module_in_dcn
                        )
                    decision = decisions[(name == "bias") * 2 + (param.ndim == 1)]

                index = None
                if merge:
                    index = index_by_decision.get(decision)
                    if index is None:
                        index = index_by_key.get(decision.key)
                        if index is not None:
                            index_by_decision[decision] = index
                if index is None:
                    index = len(groups)
                    params_list: list[torch.Tensor] = [param]
                    names_list = [full_name]
                    group_params.append(params_list)
                    group_names.append(names_list)
                    groups.append(
                        {"params": params_list, "param_names": names_list, **decision.settings}
                    )
                    if merge:
                        index_by_decision[decision] = index
                        index_by_key[decision.key] = index
                else:
                    group_params[index].append(param)
                    group_names[index].append(full_name)
                if placements is not None:
                    placements.append(Placement(full_name, param, decision.rule, index))

        children = module._modules
        if children:
            for child_name, child in reversed(children.items()):
                if child is not None:
                    child_prefix = f"{module_prefix}.{child_name}" if module_prefix else child_name
                    stack.append((child_prefix, child, kind.is_dcn))

    # Every parameter name counts, skipped duplicates included; read only if a key decided nothing.
    names = (name for param_id, name in seen.items() if param_id not in taken_ids)
    _warn_unmatched(root, custom, decided_keys, itertools.chain(names, duplicate_names), prefix)
    return GroupPlan(groups=groups, placements=placements)
