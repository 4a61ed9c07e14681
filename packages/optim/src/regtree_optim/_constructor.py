"""``DefaultOptimizerConstructor``: mmcv's paramwise rules, validated early, in few groups."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import torch
from torch import nn
from torch.optim import Optimizer

from regtree import NotRegisteredError

from ._explain import Explanation, ParamRow
from ._grouping import GroupPlan, Placement, plan_groups, single_group
from ._module_kinds import unwrap_model
from ._names import callable_name
from ._optimizer_types import OptimizerInfo, describe_optimizer
from ._paramwise import DEFAULT_PARAMWISE_KEYS, ParamwiseRules, resolve_rules
from ._registries import OPTIMIZER_BUILDERS, OPTIMIZERS, resolve_optimizer_type
from ._routed import plan_routed, resolve_routed, routed_type
from ._sharding import original_shapes
from ._zero import ZeroRedundancyOptimizer

__all__ = ["DefaultOptimizerConstructor"]


def _check_model(model: object) -> nn.Module:
    if not isinstance(model, nn.Module):
        raise TypeError(
            f"an optimizer is built for a torch.nn.Module, got {model!r} ({type(model).__name__})"
        )
    return model


@OPTIMIZER_BUILDERS.register_module()
class DefaultOptimizerConstructor:
    """Build an optimizer whose parameter groups follow mmcv's ``paramwise_cfg`` rules.

    The configs are validated when the constructor is created: a typo in ``paramwise_cfg`` fails
    here (naming the closest valid key), as does a multiplier with nothing to multiply.
    Calling the constructor on a model builds the optimizer from ``OPTIMIZERS``; :meth:`explain`
    shows which rule gave each parameter its settings.

    Parameters with identical settings share one group (``merge_groups=True``, the default),
    which keeps construction linear and ``step()`` as fast as with one group;
    ``merge_groups=False`` gives mmcv's one group per parameter.

    Subclasses that accept their own ``paramwise_cfg`` keys declare them by extending
    :attr:`paramwise_keys`; a key a subclass has not declared (constructors written for mmcv read
    such keys) is passed on with one warning per key, naming the closest declared key.

    Args:
        optimizer_cfg: The optimizer config (``type``, ``lr``, ``weight_decay``, ...).
        paramwise_cfg: Per-parameter rules; None or ``{}`` gives one group.

    Raises:
        TypeError: a config (or a custom_keys entry) is not a mapping, or a value has the wrong
            type.
        ValueError: an unknown key, or a multiplier without the base it multiplies.

    Attributes:
        optimizer_cfg: The optimizer config, as given.
        paramwise_cfg: The paramwise config (``{}`` when None was given).
        base_lr: ``optimizer_cfg['lr']``, or None.
        base_wd: ``optimizer_cfg['weight_decay']``, or None.
    """

    paramwise_keys: ClassVar[tuple[str, ...]] = DEFAULT_PARAMWISE_KEYS

    def __init__(
        self, optimizer_cfg: Mapping[str, Any], paramwise_cfg: Mapping[str, Any] | None = None
    ) -> None:
        if not isinstance(optimizer_cfg, Mapping):
            raise TypeError(
                f"optimizer_cfg must be a mapping (a dict), got {optimizer_cfg!r} "
                f"({type(optimizer_cfg).__name__})"
            )
        if paramwise_cfg is not None and not isinstance(paramwise_cfg, Mapping):
            raise TypeError(
                f"paramwise_cfg must be a mapping (a dict) or None, got {paramwise_cfg!r} "
                f"({type(paramwise_cfg).__name__})"
            )
        self.optimizer_cfg: Mapping[str, Any] = optimizer_cfg
        self.paramwise_cfg: Mapping[str, Any] = {} if paramwise_cfg is None else paramwise_cfg
        self.base_lr: Any = optimizer_cfg.get("lr", None)
        self.base_wd: Any = optimizer_cfg.get("weight_decay", None)
        self._optimizer_info = describe_optimizer(optimizer_cfg)
        self._rules = self._resolve()
        self._resolved_from = (self.optimizer_cfg, self.paramwise_cfg)

    # -- validation --------------------------------------------------------------------------

    def _resolve(self) -> ParamwiseRules:
        cls = type(self)

        def resolve(
            optimizer_cfg: Mapping[str, Any], accepted: frozenset[str] | None, name: str
        ) -> ParamwiseRules:
            return resolve_rules(
                optimizer_cfg,
                self.paramwise_cfg,
                declared_keys=frozenset(cls.paramwise_keys),
                owner=callable_name(cls),
                # Only the base class knows every key it reads: a subclass may read keys in code
                # we cannot see (constructors written for mmcv do), so its undeclared keys warn.
                strict=cls is DefaultOptimizerConstructor,
                accepted_options=accepted,
                optimizer_name=name,
            )

        # A RoutedOptimizer's rules are resolved once per sub-optimizer, with its bases.
        self._routed = (
            resolve_routed(self.optimizer_cfg, resolve) if routed_type(self.optimizer_cfg) else None
        )
        if self._routed is not None:
            return self._routed.rules[self._routed.default]
        info = self._optimizer_info
        return resolve(self.optimizer_cfg, info.options, info.name)

    def _current_rules(self) -> ParamwiseRules:
        # mmcv-era subclasses sometimes assign a new paramwise_cfg after super().__init__().
        resolved_optimizer_cfg, resolved_paramwise_cfg = self._resolved_from
        if (
            resolved_optimizer_cfg is not self.optimizer_cfg
            or resolved_paramwise_cfg is not self.paramwise_cfg
        ):
            self._optimizer_info = describe_optimizer(self.optimizer_cfg)
            self._rules = self._resolve()
            self._resolved_from = (self.optimizer_cfg, self.paramwise_cfg)
        return self._rules

    # -- grouping ----------------------------------------------------------------------------

    def _uses_legacy_add_params(self) -> bool:
        return type(self).add_params is not DefaultOptimizerConstructor.add_params

    def _plan(self, model: nn.Module, explain: bool, merge_groups: bool | None = None) -> GroupPlan:
        if self._uses_legacy_add_params():
            return self._legacy_plan(model, explain)
        self._current_rules()
        if self._routed is not None:
            shapes = original_shapes(model)
            return plan_routed(
                self._routed,
                lambda rules: self._plan_with(model, rules, True, merge_groups),
                lambda param: shapes.get(id(param), param.shape),
            )
        return self._plan_with(model, self._current_rules(), explain, merge_groups)

    def _plan_with(
        self, model: nn.Module, rules: ParamwiseRules, explain: bool, merge_groups: bool | None
    ) -> GroupPlan:
        if not self.paramwise_cfg:
            return single_group(model, explain)
        return plan_groups(model, rules, explain=explain, merge_groups=merge_groups)

    def add_params(
        self,
        params: list[dict[str, Any]],
        module: nn.Module,
        prefix: str = "",
        is_dcn_module: bool | float | None = None,
    ) -> None:
        """Append one group per parameter of ``module`` to ``params`` (mmcv's layout and hook).

        Kept for constructors written for mmcv that override it and call it on parts of a
        model; :meth:`__call__` does not use it unless a subclass overrides it. Parameters
        already in ``params`` count as earlier occurrences for ``bypass_duplicate``.

        Args:
            params: The list of parameter groups to extend.
            module: The module whose parameters (recursively) are added.
            prefix: The module's name in the whole model.
            is_dcn_module: Whether ``module`` is a direct child of a deformable conv.
        """
        taken = [param for group in params for param in _group_params(group)]
        plan = plan_groups(
            module,
            self._current_rules(),
            prefix=prefix,
            in_dcn=bool(is_dcn_module),
            merge_groups=False,
            taken=taken,
        )
        params.extend(plan.groups)

    def _legacy_plan(self, model: nn.Module, explain: bool) -> GroupPlan:
        groups: list[dict[str, Any]] = []
        self.add_params(groups, model)
        first_names: dict[int, str] | None = None  # only for groups an override left unnamed
        placements: list[Placement] | None = [] if explain else None
        rule = callable_name(type(self).add_params)
        for index, group in enumerate(groups):
            group["params"] = _group_params(group)
            if "param_names" not in group:
                if first_names is None:
                    first_names = {}
                    for name, param in model.named_parameters(remove_duplicate=False):
                        first_names.setdefault(id(param), name)
                group["param_names"] = [
                    first_names.get(id(param), f"<unnamed {index}>") for param in group["params"]
                ]
            if placements is not None:
                placements.extend(
                    Placement(name, param, rule, index)
                    for name, param in zip(group["param_names"], group["params"], strict=True)
                )
        return GroupPlan(groups=groups, placements=placements)

    # -- public ------------------------------------------------------------------------------

    def __call__(self, model: nn.Module) -> Optimizer:
        """Build the optimizer for ``model`` (wrappers such as DDP are unwrapped first).

        Raises:
            TypeError: ``model`` is not an ``nn.Module``.
            ValueError: the model has no parameters, or a shared parameter without
                ``bypass_duplicate``.
        """
        model = unwrap_model(_check_model(model))
        per_parameter = (
            bool(self.paramwise_cfg)
            and not self._uses_legacy_add_params()
            and not self._current_rules().merge_groups
        )
        # One group per parameter is planned merged, with placements, and split afterwards.
        plan = self._plan(
            model, explain=per_parameter, merge_groups=True if per_parameter else None
        )
        if not any(group["params"] for group in plan.groups):
            raise ValueError(
                f"{type(model).__name__} has no parameters, so {self._optimizer_info.name} would "
                "have nothing to optimize; build the optimizer for a model with parameters "
                "(after its layers are created)"
            )
        if per_parameter:
            return self._build_one_group_per_parameter(plan)
        return self._build(plan.groups)

    def _build(self, groups: list[dict[str, Any]]) -> Optimizer:
        optimizer_cfg = dict(self.optimizer_cfg)
        optimizer_cfg["params"] = groups
        return OPTIMIZERS.build(optimizer_cfg)

    def _build_one_group_per_parameter(self, plan: GroupPlan) -> Optimizer:
        # mmcv's layout. torch checks each new group against every earlier one, which is
        # quadratic in the number of groups (seconds for 10,000 tensors), so where the optimizer
        # keeps no per-group state of its own the merged groups are built and then split, in
        # model order, into groups equal to the ones add_param_group would have made.
        assert plan.placements is not None  # planned with explain=True
        if not _splits_safely(self.optimizer_cfg.get("type")):
            settings = [
                {key: value for key, value in group.items() if key not in ("params", "param_names")}
                for group in plan.groups
            ]
            return self._build(
                [
                    {"params": [p.param], "param_names": [p.name], **settings[p.group]}
                    for p in plan.placements
                ]
            )
        optimizer = self._build(plan.groups)
        merged = optimizer.param_groups
        optimizer.param_groups = [
            {**merged[p.group], "params": [p.param], "param_names": [p.name]}
            for p in plan.placements
        ]
        return optimizer

    def explain(self, model: nn.Module) -> Explanation:
        """Return one row per parameter: its name, shape, lr, weight decay, rule and group.

        The rows agree with the groups :meth:`__call__` builds for the same model; ``print`` the
        result for a table. Nothing is built.

        Raises:
            TypeError: ``model`` is not an ``nn.Module``.
            ValueError: a shared parameter without ``bypass_duplicate``.
        """
        model = unwrap_model(_check_model(model))
        plan = self._plan(model, explain=True)
        assert plan.placements is not None  # explain=True always records placements
        info: OptimizerInfo = self._optimizer_info
        cfg = self.optimizer_cfg
        rows = []
        shapes = original_shapes(model)  # FSDP1 flattens its parameters; rows show them whole
        for placement in plan.placements:
            group = plan.groups[placement.group]
            rows.append(
                ParamRow(
                    name=placement.name,
                    shape=tuple(shapes.get(id(placement.param), placement.param.shape)),
                    lr=_effective(group, cfg, info, "lr"),
                    weight_decay=_effective(group, cfg, info, "weight_decay"),
                    rule=placement.rule,
                    group=placement.group,
                )
            )
        return Explanation(rows)


def _splits_safely(optimizer_type: object) -> bool:
    try:
        cls = resolve_optimizer_type(optimizer_type)
    except (NotRegisteredError, TypeError):
        return False
    # LBFGS caches its single group's parameter list; an overridden add_param_group keeps state
    # derived from the groups, as ZeroRedundancyOptimizer's does (its registered stand-in
    # inherits Optimizer's, so it is named here).
    return (
        isinstance(cls, type)
        and issubclass(cls, Optimizer)
        and cls.add_param_group is Optimizer.add_param_group
        and not issubclass(cls, (torch.optim.LBFGS, ZeroRedundancyOptimizer))
    )


def _group_params(group: Mapping[str, Any]) -> list[torch.Tensor]:
    params = group["params"]
    return [params] if isinstance(params, torch.Tensor) else list(params)


def _effective(
    group: Mapping[str, Any], cfg: Mapping[str, Any], info: OptimizerInfo, option: str
) -> Any:
    # The value torch will hold for the group: set by a rule, else the config's, else the
    # optimizer's own default (None when the optimizer has no such option).
    if option in group:
        return group[option]
    if option in cfg:
        return cfg[option]
    return info.defaults.get(option)
