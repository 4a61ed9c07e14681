"""``DefaultOptimizerConstructor``: mmcv's paramwise rules, validated early, in few groups."""

from __future__ import annotations

import copy
import functools
import types
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
from torch import nn
from torch.optim import Optimizer

from regtree import NotRegisteredError
from regtree.config import validate_config
from regtree.naming import origin

from ._compose import product
from ._explain import Explanation, ParamRow
from ._grouping import GroupPlan, GroupPlanner, Placement, plan_groups, single_group
from ._module_kinds import unwrap_model
from ._optimizer_types import OptimizerInfo, describe_optimizer
from ._paramwise import (
    DEFAULT_PARAMWISE_KEYS,
    ParamwiseRules,
    resolve_rules,
    rule_label,
    set_value_factors,
    settings_key,
)
from ._registries import OPTIMIZER_BUILDERS, OPTIMIZERS, resolve_optimizer_type
from ._routed import (
    RoutedRules,
    optimizer_and_subs,
    plan_routed,
    resolve_routed,
    routed_type,
)
from ._schedulers import lr_at_by_name, resolve_steps
from ._sharding import OriginalShapes
from ._walk import child_step, walk_parameters
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

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A subclass's own __call__ (mmcv 1.x's walks add_params, then builds) may fail after the
        # walk chose what to freeze: its freezes wait for it to return (_freeze).
        call = cls.__dict__.get("__call__")
        if isinstance(call, types.FunctionType):
            setattr(cls, "__call__", _freezing_on_return(call))  # noqa: B010 (mypy refuses a method assigned)

    def __init__(
        self, optimizer_cfg: Mapping[str, Any], paramwise_cfg: Mapping[str, Any] | None = None
    ) -> None:
        self.optimizer_cfg: Mapping[str, Any] = optimizer_cfg
        self.paramwise_cfg: Mapping[str, Any] = {} if paramwise_cfg is None else paramwise_cfg
        self.base_lr: Any = None
        self.base_wd: Any = None
        self._warned_keys: set[str] = set()
        self._resolved: _Resolved | None = None
        self._current_rules()

    # -- validation --------------------------------------------------------------------------

    def _current_rules(self) -> _Resolved:
        """The rules of the configs as they are now, validated again whenever they changed.

        mmcv-era subclasses edit ``paramwise_cfg`` in place or assign a new one after
        ``super().__init__()``; either is honoured at the next call.
        """
        optimizer_cfg, paramwise_cfg = self.optimizer_cfg, self.paramwise_cfg
        resolved = self._resolved
        if resolved is not None and resolved.describes(optimizer_cfg, paramwise_cfg):
            return resolved
        _check_configs(optimizer_cfg, paramwise_cfg)
        cls = type(self)
        info = describe_optimizer(optimizer_cfg)

        def resolve(
            cfg: Mapping[str, Any],
            optimizer: OptimizerInfo,
            routes: Sequence[str] | None = None,
        ) -> ParamwiseRules:
            return resolve_rules(
                cfg,
                paramwise_cfg or {},
                declared_keys=frozenset(cls.paramwise_keys),
                owner=origin(cls),
                # Only the base class knows every key it reads: a subclass may read keys in code
                # we cannot see (constructors written for mmcv do), so its undeclared keys warn.
                strict=cls is DefaultOptimizerConstructor,
                optimizer=optimizer,
                warned=self._warned_keys,
                routes=routes,
            )

        # A RoutedOptimizer's rules are resolved once per sub-optimizer, with its bases.
        routed = resolve_routed(optimizer_cfg, resolve) if routed_type(optimizer_cfg) else None
        rules = resolve(optimizer_cfg, info) if routed is None else routed.rules[routed.default]
        self._resolved = _Resolved.of(optimizer_cfg, paramwise_cfg, info, rules, routed)
        self.base_lr, self.base_wd = rules.base_lr, rules.base_wd
        return self._resolved

    # -- grouping ----------------------------------------------------------------------------

    def _uses_legacy_add_params(self) -> bool:
        return type(self).add_params is not DefaultOptimizerConstructor.add_params

    def _plan(
        self,
        model: nn.Module,
        rules: ParamwiseRules,
        explain: bool,
        merge: bool | None = None,
        routed: RoutedRules | None = None,
        shapes: OriginalShapes | None = None,
    ) -> GroupPlan:
        if self._uses_legacy_add_params():
            return self._legacy_plan(model, rules, explain, shapes)
        if routed is not None:
            # One lookup for every sub-optimizer's plan and the shape check: FSDP1's records
            # are read once, and only where a parameter carries FSDP1's mark.
            known = OriginalShapes(model) if shapes is None else shapes
            return plan_routed(
                routed,
                lambda sub_rules: self._plan(model, sub_rules, True, merge, shapes=known),
                known.shape,
            )
        if not self.paramwise_cfg:
            return single_group(model, explain)
        return plan_groups(model, rules, explain=explain, merge_groups=merge, shapes=shapes)

    def add_params(
        self,
        params: list[dict[str, Any]],
        module: nn.Module,
        prefix: str = "",
        is_dcn_module: bool | float | None = None,
    ) -> None:
        """Append one group per parameter of ``module`` to ``params`` (mmcv's layout and hook).

        As in mmcv, the module's own parameters are added, then each child's through
        ``self.add_params``, so an override is called for every module of the walk. Kept for
        constructors written for mmcv; :meth:`__call__` walks the model without it unless a
        subclass overrides it. Parameters already in ``params`` count as earlier occurrences
        for ``bypass_duplicate``.

        Args:
            params: The list of parameter groups to extend.
            module: The module whose parameters (recursively) are added.
            prefix: The module's name in the whole model.
            is_dcn_module: Whether ``module`` is a direct child of a deformable conv.
        """
        walk = _ACTIVE_WALK.get()
        if walk is not None and walk.constructor is self and walk.params is params:
            self._add_params_of(walk, module, prefix, is_dcn_module)
            return
        # Called from outside a walk (as mmcv-era code may): a walk from this module down.
        walk = self._start_walk(params, module)
        token = _ACTIVE_WALK.set(walk)
        try:
            self._add_params_of(walk, module, prefix, is_dcn_module)
        finally:
            _ACTIVE_WALK.reset(token)
        _freeze(walk.planner.finish(module))

    def _start_walk(
        self,
        params: list[dict[str, Any]],
        root: nn.Module,
        explain: bool = False,
        shapes: OriginalShapes | None = None,
    ) -> _LegacyWalk:
        planner = GroupPlanner(
            self._current_rules().rules,
            merge=False,
            explain=explain,
            groups=params,
            root=root,
            shapes=shapes,
            appended_by=(origin(type(self).add_params) if self._uses_legacy_add_params() else None),
        )
        return _LegacyWalk(constructor=self, params=params, planner=planner)

    def _add_params_of(
        self, walk: _LegacyWalk, module: nn.Module, prefix: str, is_dcn_module: object
    ) -> None:
        walk.planner.place_module(module, prefix, bool(is_dcn_module))
        if not module._modules:
            return
        # The walk's step (walk_modules takes the same one), with this module on the path.
        walk.path.add(id(module))
        try:
            for child_prefix, child, is_dcn, _ in child_step(module, prefix, walk.path):
                self.add_params(walk.params, child, prefix=child_prefix, is_dcn_module=is_dcn)
        finally:
            walk.path.discard(id(module))

    def _legacy_plan(
        self,
        model: nn.Module,
        rules: ParamwiseRules,
        explain: bool,
        shapes: OriginalShapes | None = None,
    ) -> GroupPlan:
        groups: list[dict[str, Any]] = []
        walk = self._start_walk(groups, model, explain, shapes)
        token = _ACTIVE_WALK.set(walk)
        try:
            self.add_params(groups, model)
        finally:
            _ACTIVE_WALK.reset(token)
        walked = walk.planner.finish(model)
        # The walk's own groups, one parameter each (it never merges here), by index.
        planned = {placement.group: placement for placement in walked.placements or ()}
        first_names: dict[int, str] | None = None  # only for groups an override left unnamed
        placements: list[Placement] | None = [] if explain else None
        override = origin(type(self).add_params)
        for index, group in enumerate(groups):
            group["params"] = _group_params(group)
            if "param_names" not in group:
                if first_names is None:
                    # The walk's names: no wrapper inside the model shows in them.
                    first_names = {id(param): name for name, _, _, param in walk_parameters(model)}
                group["param_names"] = [
                    first_names.get(id(param), f"<unnamed {index}>") for param in group["params"]
                ]
            if placements is not None:
                placements.extend(
                    _legacy_placements(index, group, planned.get(index), override, rules.baseline)
                )
        return GroupPlan(groups=groups, placements=placements, to_freeze=walked.to_freeze)

    # -- public ------------------------------------------------------------------------------

    def __call__(self, model: nn.Module) -> Optimizer:
        """Build the optimizer for ``model`` (wrappers such as DDP are unwrapped first).

        Raises:
            TypeError: ``model`` is not an ``nn.Module``; a config changed since it was checked
                holds a value of the wrong type (checked again, as at creation); an mmcv-style
                whole config (``paramwise_cfg`` or ``constructor`` in ``optimizer_cfg``); a
                model hook (``no_weight_decay``) returns something other than str; the
                optimizer's own (a keyword it does not take).
            NotRegisteredError: the optimizer ``type`` is not registered in ``OPTIMIZERS``.
            ValueError: the model has no parameters, or a shared parameter without
                ``bypass_duplicate``; a config changed since it was checked has an unknown key
                or a multiplier without its base; ``layer_decay`` on a model without the depth
                hook it needs, or a layer id out of range; a parameter routed to a
                sub-optimizer that cannot take its shape (``Muon`` takes 2-D ones only); FSDP1
                flat parameters whose parameters get different settings; the optimizer's own
                (torch's for an invalid value, such as a negative momentum).
        """
        given = _check_model(model)
        model = unwrap_model(given)
        shapes = OriginalShapes(model, given)
        if any(key in self.optimizer_cfg for key in _WHOLE_CONFIG_KEYS):
            _check_buildable(self.optimizer_cfg)  # explain's message, not the build's 'params' hint
        resolved = self._current_rules()
        per_parameter = (
            bool(self.paramwise_cfg)
            and not self._uses_legacy_add_params()
            and not resolved.rules.merge_groups
        )
        # One group per parameter is planned merged, with placements, and split afterwards.
        plan = self._plan(
            model,
            resolved.rules,
            explain=per_parameter,
            merge=True if per_parameter else None,
            routed=resolved.routed,
            shapes=shapes,
        )
        _check_has_parameters(model, plan, resolved.info)
        if per_parameter:
            optimizer = self._build_one_group_per_parameter(plan)
        else:
            optimizer = self._build(plan.groups)
        if resolved.holds_tensors:
            _own_tensors(optimizer)
        # Once the optimizer is built, so that an error above leaves the model as it was.
        _freeze(plan)
        return optimizer

    def _build(self, groups: list[dict[str, Any]]) -> Optimizer:
        optimizer_cfg = dict(self.optimizer_cfg)
        if len(groups) > 1 and _splits_safely(optimizer_cfg.get("type")):
            return _build_then_regroup(optimizer_cfg, groups)
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

    def explain(
        self,
        model: nn.Module,
        *,
        scheduler: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        at: Sequence[int] | None = None,
    ) -> Explanation:
        """Return one row per parameter: its name, shape, lr, weight decay, rule and group.

        The rows agree with the groups :meth:`__call__` builds for the same model; ``print`` the
        result for a table. Without ``scheduler`` nothing is built. With it, the optimizer is
        built and the scheduler (a ``build_scheduler`` config) stepped, and each row's ``lr_at``
        maps each step of ``at`` to the lr after that many ``scheduler.step()`` calls (negative
        steps count back from the end of a phased schedule); nothing is trained.

        Raises:
            TypeError: ``model`` is not an ``nn.Module``; a keyword the optimizer does not take,
                or an mmcv-style whole config (``paramwise_cfg`` in ``optimizer_cfg``), refused
                as building would refuse them; a config changed since it was checked holds a
                value of the wrong type; ``at`` is not a list of ints.
            NotRegisteredError: the optimizer ``type`` is not registered in ``OPTIMIZERS``.
            ValueError: a shared parameter without ``bypass_duplicate``; a config changed since
                it was checked has an unknown key or a multiplier without its base; the
                planning errors of :meth:`__call__` (layer decay, a routed shape, FSDP1 flat
                parameters); ``at`` without ``scheduler`` or the other way round; a negative
                step where the schedule has no end.
        """
        if (scheduler is None) != (at is None):
            raise ValueError(
                "explain needs scheduler= and at= together (the schedule, and the steps whose lr "
                f"to show), got scheduler={scheduler!r}, at={at!r}"
            )
        _check_buildable(self.optimizer_cfg)
        if scheduler is not None and at is not None:
            resolve_steps(scheduler, at)  # a bad step fails before anything is planned
        given = _check_model(model)
        model = unwrap_model(given)
        shapes = OriginalShapes(model, given)
        resolved = self._current_rules()
        plan = self._plan(
            model, resolved.rules, explain=True, routed=resolved.routed, shapes=shapes
        )
        assert plan.placements is not None  # explain=True always records placements
        info: OptimizerInfo = resolved.info
        lr_at: dict[str, dict[int, Any]] = {}
        if scheduler is not None and at is not None:
            if type(self).__call__ is DefaultOptimizerConstructor.__call__:
                # The optimizer whose schedule is stepped is built from this plan's groups,
                # which are the ones __call__ builds: the rules run (and warn) once, and nothing
                # is frozen. Copies, since torch fills in a group's defaults, which the rows
                # below must not show as set.
                _check_has_parameters(model, plan, info)
                built = self._build([dict(group) for group in plan.groups])
            else:
                # An overridden __call__ may return another optimizer than these groups
                # describe (SPEC 3.4: the lr the real optimizer has), so it builds this one.
                built = self._built_unfrozen(given)
            lr_at = lr_at_by_name(built, scheduler, at)
        cfg = self.optimizer_cfg
        rows = []
        for placement in plan.placements:
            group = plan.groups[placement.group]
            rows.append(
                ParamRow(
                    name=placement.name,
                    shape=tuple(shapes.shape(placement.param)),
                    lr=_effective(group, cfg, info, "lr"),
                    weight_decay=_effective(group, cfg, info, "weight_decay"),
                    rule=placement.rule,
                    group=placement.group,
                    lr_mult=placement.lr_mult,
                    decay_mult=placement.decay_mult,
                    lr_at=lr_at.get(placement.name, {}),
                    optimizer=group.get("optimizer") if resolved.routed is not None else None,
                )
            )
        return Explanation(rows)

    def _built_unfrozen(self, model: nn.Module) -> Optimizer:
        """``self(model)``, with the ``requires_grad`` flags building changed given back."""
        trained = [(param, param.requires_grad) for param in model.parameters()]
        try:
            return self(model)
        finally:
            for param, requires_grad in trained:
                param.requires_grad_(requires_grad)


def _check_has_parameters(model: nn.Module, plan: GroupPlan, info: OptimizerInfo) -> None:
    if not any(group["params"] for group in plan.groups):
        raise ValueError(
            f"{type(model).__name__} has no parameters, so {info.name} would have nothing to "
            "optimize; build the optimizer for a model with parameters (after its layers are "
            "created)"
        )


# What build_optimizer takes out of an mmcv-style whole config before the optimizer sees it.
_WHOLE_CONFIG_KEYS = ("paramwise_cfg", "constructor")


def _check_buildable(optimizer_cfg: Mapping[str, Any]) -> None:
    # explain builds nothing without a schedule, so what building would refuse in the
    # optimizer's own config (an unknown type, a keyword it does not take) is refused here, as
    # the build would refuse it (its other values are checked at every call, SPEC 3.1).
    # __call__ comes here only for a whole config.
    for problem in validate_config(OPTIMIZERS, optimizer_cfg):
        where = "optimizer_cfg" + "".join(f"[{part!r}]" for part in problem.parts)
        if problem.kind == "unknown-type":
            raise NotRegisteredError(f"{where}: {problem.message}")
        if problem.kind != "unknown-keyword":
            continue
        if len(problem.parts) == 1 and problem.parts[0] in _WHOLE_CONFIG_KEYS:
            # An mmcv-style whole config: the closest keyword ('params') would mislead.
            raise TypeError(
                f"optimizer_cfg holds {problem.parts[0]!r}, which build_optimizer takes out of "
                "an optimizer config before it builds; pass the whole config to build_optimizer, "
                "or the paramwise_cfg to DefaultOptimizerConstructor as its second argument"
            )
        raise TypeError(f"{where}: {problem.message}")


def _build_then_regroup(optimizer_cfg: dict[str, Any], groups: list[dict[str, Any]]) -> Optimizer:
    # torch checks each new group against every earlier one, which is quadratic in the number of
    # groups: layer decay gives a few groups per layer, and the 654 groups of the benchmark's
    # five-rules row (10,000 tensors) take about 0.4 s to add against 4 ms for one group holding
    # them all (torch 2.13 on CPU). Where the optimizer keeps no per-group state of
    # its own (_splits_safely), it is built on one group holding every parameter (so torch checks
    # them all) and then given the groups, each completed with the optimizer's defaults as
    # add_param_group completes it. That group is replaced, so it goes without param_names.
    optimizer_cfg["params"] = [{"params": [param for group in groups for param in group["params"]]}]
    optimizer: Optimizer = OPTIMIZERS.build(optimizer_cfg)
    defaults = optimizer.defaults
    for group in groups:
        for option, default in defaults.items():
            group.setdefault(option, default)
    optimizer.param_groups = groups
    return optimizer


def _own_tensors(optimizer: Optimizer) -> None:
    # torch keeps a tensor lr (weight decay, option) as it is given, shared by every group that
    # got it from the config or from one merged group, and its schedulers change it in place
    # (fill_): each group, and the defaults a group added later starts from, gets its own copy,
    # so that training changes neither the configs nor another group. Floats never come here.
    # A tensor that requires grad (a learned lr, with differentiable=True) is the user's own on
    # purpose: a copy would cut it off from its graph, so it stays as given.
    owners = optimizer_and_subs(optimizer)
    for settings in [*optimizer.param_groups, *(owner.defaults for owner in owners)]:
        for key, value in list(settings.items()):
            if key != "params" and isinstance(value, torch.Tensor) and not value.requires_grad:
                settings[key] = value.clone()


def _freeze(plan: GroupPlan) -> None:
    # SPEC 3.3's freeze and freeze_below: requires_grad=False, on purpose, at construction; inside
    # a subclass's own __call__, once it returns (an error before that leaves the model as it was).
    pending = _PENDING_FREEZES.get()
    if pending is not None:
        pending.extend(plan.to_freeze)
        return
    for param in plan.to_freeze:
        param.requires_grad_(False)


# The parameters the running subclass __call__ (the outermost) freezes once it returns.
_PENDING_FREEZES: ContextVar[list[torch.Tensor] | None] = ContextVar(
    "regtree_optim_pending_freezes", default=None
)


def _freezing_on_return(call: Callable[..., Optimizer]) -> Callable[..., Optimizer]:
    """``call``, a subclass's ``__call__``, with the freezes it plans applied once it returns."""

    @functools.wraps(call)
    def build_then_freeze(self: Any, *args: Any, **kwargs: Any) -> Optimizer:
        if _PENDING_FREEZES.get() is not None:  # inside another's: the outermost one applies them
            return call(self, *args, **kwargs)
        pending: list[torch.Tensor] = []
        token = _PENDING_FREEZES.set(pending)
        try:
            optimizer = call(self, *args, **kwargs)
        finally:
            _PENDING_FREEZES.reset(token)
        for param in pending:
            param.requires_grad_(False)
        return optimizer

    return build_then_freeze


def _check_configs(optimizer_cfg: object, paramwise_cfg: object) -> None:
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


def _snapshot(*cfgs: object) -> tuple[Any, ...] | None:
    try:
        return tuple(copy.deepcopy(cfg) for cfg in cfgs)
    except Exception:  # an object that cannot be copied: resolve again at every call
        return None


@dataclass(frozen=True, slots=True)
class _Resolved:
    """The configs' rules, with what they were resolved from to see when they change."""

    optimizer_cfg: object
    paramwise_cfg: object
    snapshot: tuple[Any, ...] | None
    info: OptimizerInfo
    rules: ParamwiseRules
    routed: RoutedRules | None
    holds_tensors: bool  # a tensor value anywhere in the configs (a tensor lr): _own_tensors

    @classmethod
    def of(
        cls,
        optimizer_cfg: object,
        paramwise_cfg: object,
        info: OptimizerInfo,
        rules: ParamwiseRules,
        routed: RoutedRules | None = None,
    ) -> _Resolved:
        snapshot = _snapshot(optimizer_cfg, paramwise_cfg)
        holds_tensors = _holds_tensor((optimizer_cfg, paramwise_cfg))
        return cls(optimizer_cfg, paramwise_cfg, snapshot, info, rules, routed, holds_tensors)

    def describes(self, optimizer_cfg: object, paramwise_cfg: object) -> bool:
        """Whether the configs are the same objects, with the same contents, as resolved."""
        if optimizer_cfg is not self.optimizer_cfg or paramwise_cfg is not self.paramwise_cfg:
            return False
        if self.snapshot is None:
            return False
        try:
            return _same_config(self.snapshot, (optimizer_cfg, paramwise_cfg))
        except Exception:  # a value whose == does not give a bool (a tensor of several values)
            return False


def _holds_tensor(value: object) -> bool:
    if isinstance(value, torch.Tensor):
        return True
    if isinstance(value, Mapping):
        return any(_holds_tensor(item) for item in value.values())
    if isinstance(value, list | tuple):
        return any(_holds_tensor(item) for item in value)
    return False


def _same_config(saved: object, current: object) -> bool:
    # Equal and of the same types all the way down: 1 == True == 1.0, but a bool lr is refused
    # where an int is not, so a change from one to the other is validated again.
    if type(saved) is not type(current):
        return False
    if isinstance(saved, Mapping):
        assert isinstance(current, Mapping)
        return saved.keys() == current.keys() and all(
            _same_config(value, current[key]) for key, value in saved.items()
        )
    if isinstance(saved, list | tuple):
        assert isinstance(current, list | tuple)
        return len(saved) == len(current) and all(
            _same_config(a, b) for a, b in zip(saved, current, strict=True)
        )
    return bool(saved == current)


@dataclass(slots=True)
class _LegacyWalk:
    """One walk through ``add_params``: its groups and the modules on the path from the root."""

    constructor: DefaultOptimizerConstructor
    params: list[dict[str, Any]]
    planner: GroupPlanner
    path: set[int] = field(default_factory=set)


# The add_params walk running in this thread or task, shared by its recursive calls.
_ACTIVE_WALK: ContextVar[_LegacyWalk | None] = ContextVar(
    "regtree_optim_add_params_walk", default=None
)


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


def _legacy_placements(
    index: int,
    group: Mapping[str, Any],
    planned: Placement | None,
    override: str,
    baseline: Mapping[str, Any],
) -> list[Placement]:
    """The placements explain shows for one group of an ``add_params`` walk, as built.

    A group the walk filed keeps what decided it (every rule that applied, their products, why
    it is frozen). A group the override appended itself, or changed after the walk filed it, is
    the override's: its lr and weight decay were set, not multiplied (``set_value_factors``).
    """
    params = group["params"]
    options = {key: value for key, value in group.items() if key not in ("params", "param_names")}
    if (
        planned is not None
        and planned.settings is not None
        and len(params) == 1
        and params[0] is planned.param
        and settings_key(options, {}) == settings_key(planned.settings, {})
    ):
        return [planned]
    rule = override if planned is None else rule_label(planned.rule, override)
    lr_mult, decay_mult = (
        product(set_value_factors(options, option, baseline)) for option in ("lr", "weight_decay")
    )
    return [
        Placement(name, param, rule, index, lr_mult, decay_mult)
        for name, param in zip(group["param_names"], params, strict=True)
    ]


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
