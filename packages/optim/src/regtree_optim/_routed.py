"""``RoutedOptimizer``: several optimizers, each over its own parameters, stepped as one.

Muon for the 2-D weights of a transformer's blocks and AdamW for the rest is the usual case:
one optimizer object, so one scheduler drives every group and one checkpoint holds every state.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import torch
from torch.optim import Optimizer

from regtree import NotRegisteredError
from regtree.naming import closest, origin

from ._grouping import GroupPlan, Placement
from ._optimizer_types import OptimizerInfo, describe_optimizer
from ._paramwise import ParamwiseRules, check_optimizer_cfg
from ._registries import OPTIMIZERS, resolve_optimizer_type

__all__ = [
    "OPTIMIZER_KEY",
    "RoutedOptimizer",
    "RoutedRules",
    "check_routable",
    "optimizer_and_subs",
    "plan_routed",
    "resolve_routed",
    "routed_type",
    "shape_requirement",
]

# The group option that names a group's sub-optimizer (SPEC 3.6).
OPTIMIZER_KEY: Final = "optimizer"


def shape_requirement(optimizer_type: object) -> tuple[int, str] | None:
    """``(ndim, 'what it takes')`` for optimizers that take parameters of one rank only.

    torch's ``Muon`` orthogonalizes matrices and rejects anything that is not 2-D
    (pytorch#160213); every other optimizer of ``torch.optim`` takes any shape.
    """
    muon = getattr(torch.optim, "Muon", None)
    if (
        isinstance(muon, type)
        and isinstance(optimizer_type, type)
        and issubclass(optimizer_type, muon)
    ):
        return 2, "2-D parameters only"
    return None


def check_routable(
    param_name: str,
    shape: Sequence[int],
    optimizer_name: str,
    optimizer_type: object,
    rule: str,
) -> None:
    """Raise where the sub-optimizer ``rule`` routed a parameter to cannot take its shape.

    Args:
        param_name: The parameter's name in the unwrapped model.
        shape: Its original (unsharded) shape.
        optimizer_name: The sub-optimizer's name in ``optimizers``.
        optimizer_type: The sub-optimizer's class.
        rule: What routed the parameter there, for the message.

    Raises:
        ValueError: the sub-optimizer takes another number of dimensions.
    """
    requirement = shape_requirement(optimizer_type)
    if requirement is None or len(shape) == requirement[0]:
        return
    raise ValueError(
        f"Parameter {param_name!r} (shape {tuple(shape)}, {len(shape)}-D) is routed to optimizer "
        f"{optimizer_name!r} ({origin(optimizer_type)}) by {rule}, but it takes "
        f"{requirement[1]}; route it to another optimizer (narrow that rule, e.g. with "
        f"ndim: {requirement[0]} or exclude)."
    )


def _check_group_options(
    routed: RoutedRules, plan: GroupPlan, position: int, route: str, routed_by: str
) -> None:
    """Raise where a parameter's group sets an option the sub-optimizer it goes to ignores.

    Args:
        routed: The resolved RoutedOptimizer config.
        plan: The plan of ``route``'s rules (with placements, in model order).
        position: The parameter's position in the plan.
        route: The sub-optimizer it goes to.
        routed_by: What routed it there, for the message.
    """
    info = routed.infos[route]
    assert plan.placements is not None  # planned with placements
    placement = plan.placements[position]
    settings = plan.groups[placement.group]
    foreign = [
        key
        for key in settings
        if key not in ("params", "param_names", OPTIMIZER_KEY) and not _takes(info, key)
    ]
    if not foreign:
        return
    option = foreign[0]
    setters = _option_setters(routed.rules[route])
    # The last setter that applied and sets the option decided it (a later rule's value wins).
    where = next(
        (
            setters[label][0]
            for label in reversed(placement.rule.split(", "))
            if label in setters and option in setters[label][1]
        ),
        placement.rule,
    )
    whom = f"parameter {placement.name!r}, which {routed_by} routes to"
    raise _foreign_option(where, option, [route], routed.infos, whom)


def _check_optimizers(optimizers: object, default: object) -> dict[str, Mapping[str, Any]]:
    if not isinstance(optimizers, Mapping) or not optimizers:
        raise TypeError(
            "RoutedOptimizer needs optimizers, a non-empty mapping from a name to an optimizer "
            f"config (e.g. {{'muon': {{'type': 'Muon', 'lr': 0.02}}, 'adamw': {{'type': 'AdamW', "
            f"'lr': 3e-4}}}}), got {optimizers!r}"
        )
    checked: dict[str, Mapping[str, Any]] = {}
    for name, cfg in optimizers.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"RoutedOptimizer optimizers names must be non-empty str, got {name!r}")
        if not isinstance(cfg, Mapping):
            raise TypeError(
                f"RoutedOptimizer optimizers[{name!r}] must be an optimizer config (a mapping "
                f"with 'type'), got {cfg!r} ({type(cfg).__name__})"
            )
        if "type" not in cfg:
            raise ValueError(
                f"RoutedOptimizer optimizers[{name!r}] has no 'type'; name a registered optimizer "
                "such as 'AdamW' or 'Muon'"
            )
        if "params" in cfg:
            raise ValueError(
                f"RoutedOptimizer optimizers[{name!r}] sets 'params'; parameters are routed to "
                f"it by the groups' {OPTIMIZER_KEY!r} key (or the rules), not listed in its config"
            )
        cls = resolve_optimizer_type(cfg["type"], f"optimizers[{name!r}]['type']")
        if isinstance(cls, type) and issubclass(cls, RoutedOptimizer):
            raise ValueError(
                f"RoutedOptimizer optimizers[{name!r}] is a RoutedOptimizer itself; name the "
                "optimizer that steps those parameters, such as 'AdamW'"
            )
        checked[name] = cfg
    if not isinstance(default, str) or default not in checked:
        hint = closest(default, checked, count=1) if isinstance(default, str) else []
        did_you_mean = f" Did you mean {hint[0]!r}?" if hint else ""
        raise ValueError(
            f"RoutedOptimizer default={default!r} is not one of its optimizers "
            f"({', '.join(map(repr, checked))}).{did_you_mean}"
        )
    return checked


def _route_groups(
    params: Iterable[Any], optimizers: Mapping[str, Mapping[str, Any]], default: str
) -> dict[str, list[dict[str, Any]]]:
    """Split the parameter groups by their ``optimizer`` key, checking every parameter."""
    if isinstance(params, torch.Tensor):
        raise TypeError(
            "RoutedOptimizer params must be an iterable of tensors or of parameter groups, got "
            f"a single {torch.typename(params)}"
        )
    groups = list(params)
    if groups and not isinstance(groups[0], Mapping):
        groups = [{"params": groups}]
    routed: dict[str, list[dict[str, Any]]] = {name: [] for name in optimizers}
    owner: dict[int, str] = {}
    for index, group in enumerate(groups):
        if not isinstance(group, Mapping):
            raise TypeError(f"RoutedOptimizer parameter group {index} is not a mapping: {group!r}")
        name = group.get(OPTIMIZER_KEY, default)
        if name not in routed:
            hint = closest(name, routed, count=1) if isinstance(name, str) else []
            did_you_mean = f" Did you mean {hint[0]!r}?" if hint else ""
            raise ValueError(
                f"parameter group {index} has {OPTIMIZER_KEY}={name!r}, which is not one of "
                f"RoutedOptimizer's optimizers ({', '.join(map(repr, routed))}).{did_you_mean}"
            )
        members = group["params"]
        members = [members] if isinstance(members, torch.Tensor) else list(members)
        names = list(group.get("param_names", ()))
        rule = (
            f"group {index}'s {OPTIMIZER_KEY}={name!r}"
            if OPTIMIZER_KEY in group
            else f"default={default!r}"
        )
        cls = resolve_optimizer_type(optimizers[name]["type"])
        for position, param in enumerate(members):
            param_name = (
                names[position] if position < len(names) else f"<group {index}, #{position}>"
            )
            first = owner.get(id(param))
            if first is not None:
                raise ValueError(
                    f"Parameter {param_name!r} is the same tensor as {first!r}: each parameter "
                    "belongs to exactly one sub-optimizer of a RoutedOptimizer, once"
                )
            owner[id(param)] = param_name
            if isinstance(param, torch.Tensor):
                check_routable(param_name, param.shape, name, cls, rule)
        routed[name].append({**group, "params": members, OPTIMIZER_KEY: name})
    return routed


class _RoutedState(MutableMapping[torch.Tensor, Any]):
    """``optimizer.state`` over every sub-optimizer: each parameter's state lives in its own."""

    def __init__(self, owner: RoutedOptimizer) -> None:
        self._owner = owner

    def _states(self) -> Iterator[MutableMapping[torch.Tensor, Any]]:
        return (sub.state for sub in self._owner.optimizers.values())

    def __getitem__(self, param: torch.Tensor) -> Any:
        # A defaultdict like torch's: an owned parameter without state gets an empty dict there.
        return self._owner._optimizer_of(param).state[param]

    def __setitem__(self, param: torch.Tensor, value: Any) -> None:
        self._owner._optimizer_of(param).state[param] = value

    def __delitem__(self, param: torch.Tensor) -> None:
        del self._owner._optimizer_of(param).state[param]

    def __contains__(self, param: object) -> bool:
        return any(param in state for state in self._states())

    def __iter__(self) -> Iterator[torch.Tensor]:
        for state in self._states():
            yield from state

    def __len__(self) -> int:
        return sum(len(state) for state in self._states())


class RoutedOptimizer(Optimizer):
    """Several optimizers, each stepping the parameters routed to it, behaving as one.

    Each parameter group goes to the sub-optimizer its ``optimizer`` key names, or to
    ``default``; ``build_optimizer`` fills that key from the paramwise rules (SPEC 3.6), using
    each sub-optimizer's own ``lr`` and ``weight_decay`` as the bases. ``param_groups`` are the
    sub-optimizers' groups (the same dicts), in the order of ``optimizers``, so a scheduler that
    sets ``group['lr']`` drives every one of them; ``step``, ``zero_grad``, ``state_dict`` and
    ``load_state_dict`` cover them all.

    Args:
        params: Parameters or parameter groups; a group may name its sub-optimizer with
            ``optimizer=NAME``.
        optimizers: Name -> optimizer config (``type`` and its options, such as ``lr``).
        default: The name of the sub-optimizer for groups that name none.

    Raises:
        TypeError: ``optimizers`` is not a non-empty mapping of configs.
        ValueError: ``default`` or a group's ``optimizer`` names no sub-optimizer, a parameter
            is given twice, or a sub-optimizer cannot take a parameter routed to it (``Muon``
            takes 2-D parameters only).

    Attributes:
        optimizers: Name -> the sub-optimizer built, in the order of ``optimizers``; a
            sub-optimizer that receives no parameter is not built.
        default: The default sub-optimizer's name.
    """

    def __init__(self, params: Iterable[Any], optimizers: Mapping[str, Any], default: str) -> None:
        configs = _check_optimizers(optimizers, default)
        routed = _route_groups(params, configs, default)
        built: dict[str, Optimizer] = {}
        for name, groups in routed.items():
            if groups:
                built[name] = _build_sub(name, configs[name], groups)
        if not built:
            raise ValueError("RoutedOptimizer got an empty parameter list")
        self.optimizers: dict[str, Optimizer] = built
        self.default = default
        self._configs = configs
        self._owner_by_id: dict[int, Optimizer] = {}
        # torch's own initialization (hooks, the profiled step) over no parameters; the groups
        # and the state are the sub-optimizers' (add_param_group routes once it is set up).
        self._initialized = False
        super().__init__([{"params": []}], {})
        self._initialized = True
        self._sync_groups()
        self.state = _RoutedState(self)  # type: ignore[assignment]

    def _sync_groups(self) -> None:
        self.param_groups = [g for sub in self.optimizers.values() for g in sub.param_groups]
        self._owner_by_id = {
            id(param): sub
            for sub in self.optimizers.values()
            for group in sub.param_groups
            for param in group["params"]
        }

    def _optimizer_of(self, param: torch.Tensor) -> Optimizer:
        sub = self._owner_by_id.get(id(param))
        if sub is None:
            raise KeyError(
                f"{torch.typename(param)} of shape {tuple(param.shape)} is not "
                "optimized by this RoutedOptimizer"
            )
        return sub

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group to the sub-optimizer its ``optimizer`` key names (else the default)."""
        if not self._initialized:
            super().add_param_group(param_group)
            return
        routed = _route_groups([param_group], self._configs, self.default)
        for name, groups in routed.items():
            for group in groups:
                if self._owner_by_id.keys() & {id(p) for p in group["params"]}:
                    raise ValueError(
                        "some parameters of the new group are already optimized by this "
                        "RoutedOptimizer; each parameter belongs to exactly one sub-optimizer"
                    )
                if name in self.optimizers:
                    self.optimizers[name].add_param_group(group)
                else:
                    self.optimizers[name] = _build_sub(name, self._configs[name], [group])
                    # Keep the order of the configs.
                    self.optimizers = {
                        n: self.optimizers[n] for n in self._configs if n in self.optimizers
                    }
        self._sync_groups()

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        """Step every sub-optimizer; ``closure`` is evaluated once, before the steps."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for sub in self.optimizers.values():
            sub.step()
        return loss

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every sub-optimizer's parameters."""
        for sub in self.optimizers.values():
            sub.zero_grad(set_to_none)

    def state_dict(self) -> dict[str, Any]:
        """Torch's format over all groups: indices run on across the sub-optimizers.

        Each group keeps its ``optimizer`` and ``param_names``, so ``load_state_dict_by_name``
        accepts the result.
        """
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        state: dict[int, Any] = {}
        groups: list[dict[str, Any]] = []
        offset = 0
        for sub in self.optimizers.values():
            saved = sub.state_dict()
            for index, value in saved["state"].items():
                state[index + offset] = value
            for group in saved["param_groups"]:
                groups.append({**group, "params": [index + offset for index in group["params"]]})
            offset += sum(len(group["params"]) for group in sub.param_groups)
        result: dict[str, Any] = {"state": state, "param_groups": groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            hooked = post_hook(self, result)
            if hooked is not None:
                result = hooked
        return result

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a ``state_dict()`` of a RoutedOptimizer with the same layout.

        Checked before anything changes; a different layout (other rules, merged groups) loads
        by parameter name with ``load_state_dict_by_name``.

        Raises:
            ValueError: the saved groups differ in number, size or sub-optimizer; or a
                sub-optimizer fails to load its part (another optimizer type's state), after
                which every sub-optimizer keeps the state it had.
        """
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            hooked = pre_hook(self, state_dict)
            if hooked is not None:
                state_dict = hooked
        saved_groups = list(state_dict["param_groups"])
        saved_state = state_dict["state"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(
                f"the state dict has {len(saved_groups)} parameter groups and this "
                f"RoutedOptimizer {len(self.param_groups)}; load a state dict of the same layout, "
                "or use load_state_dict_by_name, which matches parameters by name"
            )
        for index, (saved, current) in enumerate(zip(saved_groups, self.param_groups, strict=True)):
            saved_name = saved.get(OPTIMIZER_KEY, current[OPTIMIZER_KEY])
            if saved_name != current[OPTIMIZER_KEY] or len(saved["params"]) != len(
                current["params"]
            ):
                raise ValueError(
                    f"saved parameter group {index} ({len(saved['params'])} parameters, optimizer "
                    f"{saved_name!r}) does not match group {index} of this RoutedOptimizer "
                    f"({len(current['params'])} parameters, optimizer {current[OPTIMIZER_KEY]!r}); "
                    "use load_state_dict_by_name, which matches parameters by name"
                )
        per_sub: list[tuple[Optimizer, dict[str, Any]]] = []
        start = 0
        for sub in self.optimizers.values():
            mine = saved_groups[start : start + len(sub.param_groups)]
            start += len(sub.param_groups)
            local: dict[int, int] = {}
            groups = []
            for group in mine:
                indices = []
                for saved_index in group["params"]:
                    local[saved_index] = len(local)
                    indices.append(local[saved_index])
                groups.append({**group, "params": indices})
            state = {local[i]: value for i, value in saved_state.items() if i in local}
            per_sub.append((sub, {"state": state, "param_groups": groups}))
        # A sub-optimizer may fail as it loads (Adam reads each state's step: an SGD's state has
        # none), after the ones before it loaded: every one is given back what it had.
        before = [(sub, sub.state_dict()) for sub in self.optimizers.values()]
        name = ""
        try:
            for sub_name, (sub, sub_state) in zip(self.optimizers, per_sub, strict=True):
                name = sub_name
                sub.load_state_dict(sub_state)
        except (KeyError, TypeError, ValueError, RuntimeError) as error:
            for sub, own in before:
                sub.load_state_dict(own)
            self._sync_groups()
            raise ValueError(
                f"sub-optimizer {name!r} ({type(self.optimizers[name]).__name__}) failed to load "
                f"the saved state of its groups ({type(error).__name__}: {error}), which another "
                "optimizer type saved; the RoutedOptimizer is unchanged. Load a state dict saved "
                "with the same sub-optimizer types, or start without it"
            ) from error
        # torch's load_state_dict replaces the groups with new dicts.
        self._sync_groups()
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={type(sub).__name__}" for name, sub in self.optimizers.items())
        return f"RoutedOptimizer({inner}, default={self.default!r})"


@dataclass(frozen=True, slots=True)
class RoutedRules:
    """A RoutedOptimizer config resolved for the constructor: the rules once per sub-optimizer.

    Attributes:
        default: The default sub-optimizer's name.
        types: Name -> the sub-optimizer's class, in the order of ``optimizers``.
        bases: Name -> its ``lr`` and ``weight_decay`` (the config's, else its own defaults).
        rules: Name -> the paramwise rules resolved with that sub-optimizer's bases.
        infos: Name -> what that sub-optimizer accepts.
    """

    default: str
    types: dict[str, object]
    bases: dict[str, dict[str, Any]]
    rules: dict[str, ParamwiseRules]
    infos: dict[str, OptimizerInfo]


def optimizer_and_subs(optimizer: Optimizer) -> list[Optimizer]:
    """``optimizer``, then a RoutedOptimizer's sub-optimizers: each keeps groups and defaults."""
    if isinstance(optimizer, RoutedOptimizer):
        return [optimizer, *optimizer.optimizers.values()]
    return [optimizer]


def routed_type(optimizer_cfg: Mapping[str, Any]) -> bool:
    """Whether ``optimizer_cfg`` builds a RoutedOptimizer (an unresolvable type does not)."""
    try:
        cls = resolve_optimizer_type(optimizer_cfg.get("type"))
    except (NotRegisteredError, TypeError):
        return False
    return isinstance(cls, type) and issubclass(cls, RoutedOptimizer)


def _build_sub(name: str, cfg: Mapping[str, Any], groups: list[dict[str, Any]]) -> Optimizer:
    # torch's own messages ("Invalid momentum value") name no sub-optimizer: the note does.
    try:
        built: Optimizer = OPTIMIZERS.build({**cfg, "params": groups})
    except Exception as error:
        error.add_note(
            f"regtree_optim: while building sub-optimizer {name!r} of a RoutedOptimizer "
            f"(its config: optimizers[{name!r}])"
        )
        raise
    return built


def resolve_routed(
    optimizer_cfg: Mapping[str, Any],
    resolve: Callable[[Mapping[str, Any], OptimizerInfo, Sequence[str]], ParamwiseRules],
) -> RoutedRules:
    """Check a RoutedOptimizer config and resolve the paramwise rules for each sub-optimizer.

    Args:
        optimizer_cfg: ``dict(type='RoutedOptimizer', optimizers=..., default=...)``.
        resolve: ``resolve(sub_cfg, info, routes)``, the constructor's own validation, called
            once per sub-optimizer with its bases, what it accepts (any sub-optimizer's
            options) and the names a rule may route to.

    Raises:
        TypeError: ``optimizers`` is not a non-empty mapping of configs.
        ValueError: ``default`` names none of them; whatever ``resolve`` raises.
    """
    unknown = sorted(set(optimizer_cfg) - {"type", "optimizers", "default"})
    if unknown:
        raise ValueError(
            f"RoutedOptimizer takes optimizers and default; {', '.join(map(repr, unknown))} "
            "belongs in each sub-optimizer's config under optimizers"
        )
    configs = _check_optimizers(optimizer_cfg.get("optimizers"), optimizer_cfg.get("default"))
    default = str(optimizer_cfg["default"])
    infos = {name: describe_optimizer(cfg) for name, cfg in configs.items()}
    # A custom key or rule may set any option some sub-optimizer accepts.
    accepted: frozenset[str] | None = frozenset()
    for info in infos.values():
        accepted = None if accepted is None or info.options is None else accepted | info.options
    types: dict[str, object] = {}
    bases: dict[str, dict[str, Any]] = {}
    rules: dict[str, ParamwiseRules] = {}
    for name, cfg in configs.items():
        types[name] = resolve_optimizer_type(cfg["type"])
        info = infos[name]
        bases[name] = {
            option: cfg.get(option, info.defaults.get(option))
            for option in ("lr", "weight_decay")
            if option in cfg or option in info.defaults
        }
        # Its own options first, named as where they are written (resolve names them as those
        # of a plain optimizer_cfg).
        check_optimizer_cfg(cfg, info, f"optimizer_cfg['optimizers'][{name!r}]")
        options = dataclasses.replace(info, options=accepted)
        rules[name] = resolve({**cfg, **bases[name]}, options, list(configs))
    _check_option_routes(rules[default], infos, default)
    return RoutedRules(default=default, types=types, bases=bases, rules=rules, infos=infos)


def _option_setters(rules: ParamwiseRules) -> dict[str, tuple[str, Mapping[str, Any], str | None]]:
    """Label -> (where it is written, the group options it sets, its route) of each setter.

    The setters are the custom keys (their settings, lr and weight_decay included) and the
    rules; labels are as explain names them (``"custom_keys['head']"``, ``'rules[2]'``).
    """
    setters: dict[str, tuple[str, Mapping[str, Any], str | None]] = {
        custom.decision.rule: (
            f"paramwise_cfg['custom_keys'][{custom.key!r}]",
            custom.decision.settings,
            None,
        )
        for custom in rules.custom
    }
    composition = rules.composition
    for rule in composition.rules if composition is not None else ():
        setters[rule.label] = (
            f"paramwise_cfg['rules'][{rule.index}]",
            rule.options,
            rule.optimizer,
        )
    return setters


def _takes(info: OptimizerInfo, option: str) -> bool:
    return info.options is None or option in info.options


def _foreign_option(
    where: str, option: str, routes: Sequence[str], infos: Mapping[str, OptimizerInfo], whom: str
) -> ValueError:
    # A sub-optimizer ignores a group option it does not take (Muon steps without betas).
    takers = ", ".join(repr(name) for name, info in infos.items() if _takes(info, option))
    if len(routes) == 1:
        info = infos[routes[0]]
        ignored = (
            f"optimizer {routes[0]!r}, but {info.name} does not take it, so it would be ignored; "
            f"it takes {', '.join(sorted(info.options or ()))}"
        )
    else:
        ignored = (
            f"optimizers {', '.join(map(repr, routes))}, but none of them takes it, so it would "
            "be ignored"
        )
    return ValueError(
        f"{where} sets {option!r} for {whom} {ignored}. Set {option!r} only for parameters "
        f"routed to an optimizer that takes it ({takers}), or drop it there."
    )


def _check_option_routes(
    rules: ParamwiseRules, infos: Mapping[str, OptimizerInfo], default: str
) -> None:
    """Refuse, before any model is seen, an option no sub-optimizer it can reach takes.

    A rule with ``optimizer=NAME`` sets its options for what it routes to NAME (a later rule
    routing some of them elsewhere leaves the rest there); a custom key or a rule without one
    for parameters that go to the default or to a sub-optimizer some rule routes to, which only
    the model decides (:func:`_check_group_options` checks each parameter then).
    """
    setters = _option_setters(rules)
    reachable = list({default: None, **{route: None for _, _, route in setters.values() if route}})
    for where, options, route in setters.values():
        routes = [route] if route is not None else reachable
        for option in options:
            if not any(_takes(infos[name], option) for name in routes):
                whom = "the parameters it routes to" if route else "parameters that go to"
                raise _foreign_option(where, option, routes, infos, whom)


def plan_routed(
    routed: RoutedRules,
    plan: Callable[[ParamwiseRules], GroupPlan],
    shape_of: Callable[[torch.Tensor], Sequence[int]],
) -> GroupPlan:
    """Group a model's parameters for a RoutedOptimizer, each with its sub-optimizer's bases.

    The model is planned once per sub-optimizer with that sub-optimizer's rules (the routes do
    not depend on the bases, so every plan routes alike); each parameter takes its placement
    from the plan of the sub-optimizer its ``optimizer`` setting names (else the default).
    Groups come in the order of ``optimizers``, each in order of first appearance.

    Args:
        routed: The resolved RoutedOptimizer config.
        plan: Plans the model with the given rules, recording placements.
        shape_of: A parameter's original (unsharded) shape.

    Raises:
        ValueError: a route names no sub-optimizer, or a sub-optimizer cannot take a
            parameter routed to it.
    """
    plans = {routed.default: plan(routed.rules[routed.default])}
    # The other plans repeat the default plan's warnings (an unmatched key, a skipped duplicate).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, rules in routed.rules.items():
            if name not in plans:
                plans[name] = plan(rules)
    return _gather(routed, plans, _routes(routed, plans, shape_of))


def _routes(
    routed: RoutedRules,
    plans: Mapping[str, GroupPlan],
    shape_of: Callable[[torch.Tensor], Sequence[int]],
) -> list[str]:
    # The sub-optimizer of each parameter, in model order, as the default plan routes it;
    # checked against RoutedOptimizer's optimizers and what each can take.
    default_plan = plans[routed.default]
    assert default_plan.placements is not None  # planned with placements
    composition = routed.rules[routed.default].composition
    # label -> route of every rule that routes ('rules[2]' -> 'muon').
    routing_labels = {
        rule.label: rule.optimizer
        for rule in (composition.rules if composition is not None else ())
        if rule.optimizer is not None
    }
    routes: list[str] = []
    checked: set[tuple[str, int]] = set()  # (route, group): a group's options, once a group
    for position, placement in enumerate(default_plan.placements):
        settings = default_plan.groups[placement.group]
        route = settings.get(OPTIMIZER_KEY, routed.default)
        rule = (
            _routing_rule(placement.rule, route, routing_labels)
            if OPTIMIZER_KEY in settings
            else f"default={routed.default!r}"
        )
        if route not in routed.rules:
            hint = closest(route, routed.rules, count=1) if isinstance(route, str) else []
            did_you_mean = f" Did you mean {hint[0]!r}?" if hint else ""
            raise ValueError(
                f"Parameter {placement.name!r} is routed by {rule} to optimizer {route!r}, which "
                f"is not one of RoutedOptimizer's optimizers "
                f"({', '.join(map(repr, routed.rules))}).{did_you_mean}"
            )
        check_routable(placement.name, shape_of(placement.param), route, routed.types[route], rule)
        route_placements = plans[route].placements
        assert route_placements is not None  # planned with placements
        group = (route, route_placements[position].group)
        if group not in checked:  # named by its first parameter in model order
            checked.add(group)
            _check_group_options(routed, plans[route], position, route, rule)
        routes.append(route)
    return routes


def _gather(routed: RoutedRules, plans: Mapping[str, GroupPlan], routes: list[str]) -> GroupPlan:
    # Each parameter takes its placement (its rule and products) and its freeze from its
    # route's plan; the groups come in the order of optimizers, each completed with its
    # sub-optimizer's bases and name. What is frozen is listed in model order, as a plain plan
    # lists it.
    groups: list[dict[str, Any]] = []
    placements: list[Placement | None] = [None] * len(routes)
    freezes: list[torch.Tensor | None] = [None] * len(routes)
    for name in routed.rules:
        sub_placements = plans[name].placements
        assert sub_placements is not None  # planned with placements
        frozen = {id(param) for param in plans[name].to_freeze}
        index_of: dict[int, int] = {}
        for position, route in enumerate(routes):
            if route != name:
                continue
            placement = sub_placements[position]
            index = index_of.get(placement.group)
            if index is None:
                index = index_of[placement.group] = len(groups)
                source = plans[name].groups[placement.group]
                settings = {k: v for k, v in source.items() if k not in ("params", "param_names")}
                groups.append(
                    {
                        "params": [],
                        "param_names": [],
                        **routed.bases[name],
                        **settings,
                        OPTIMIZER_KEY: name,
                    }
                )
            groups[index]["params"].append(placement.param)
            groups[index]["param_names"].append(placement.name)
            placements[position] = dataclasses.replace(placement, group=index)
            if id(placement.param) in frozen:
                freezes[position] = placement.param
    return GroupPlan(
        groups=groups,
        placements=[p for p in placements if p is not None],
        to_freeze=[param for param in freezes if param is not None],
    )


def _routing_rule(applied: str, route: str, routing_labels: Mapping[str, str]) -> str:
    # The last rule that set this route decided it (a later rule's optimizer wins).
    for label in reversed(applied.split(", ")):
        if routing_labels.get(label) == route:
            return label
    return applied


OPTIMIZERS.register_module(name="RoutedOptimizer", module=RoutedOptimizer)
