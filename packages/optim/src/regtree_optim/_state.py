"""Optimizer state that follows parameter names: ``load_state_dict_by_name``, ``full_state_dict``.

torch matches a saved state to the optimizer's parameters by position, so a checkpoint cannot be
resumed once the group layout changes (pytorch#1489). Our groups carry ``param_names``; the state
is matched by those, then handed to the optimizer's own ``load_state_dict`` in its current
layout, so the casting, the hooks and the per-parameter result are torch's own.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch
from torch.optim import Optimizer

from ._routed import OPTIMIZER_KEY, RoutedOptimizer, optimizer_and_subs
from ._zero import ZeroRedundancyOptimizer

__all__ = ["StateLoadReport", "full_state_dict", "load_state_dict_by_name"]

_SHOWN_NAMES = 3


@dataclass(frozen=True, slots=True)
class StateLoadReport:
    """What ``load_state_dict_by_name`` did; ``str()`` is a short summary.

    Attributes:
        loaded: Parameters whose saved state, found by name, replaced theirs.
        new: Parameters without saved state, which start fresh: those the state dict does not
            name, those it names without state (a parameter that never took a step, such as a
            frozen one), and those a RoutedOptimizer now routes to another sub-optimizer than
            the one whose state was saved.
        dropped: Names in the state dict that the optimizer does not hold; their state is unused.
        with_state: How many parameters got saved state: ``len(loaded)``.
        shared: The names of ``new`` that have no state of their own because their optimizer
            keeps one state for all its parameters on the first (LBFGS), and that state was
            loaded: they do not start fresh. Empty for every other optimizer.
    """

    loaded: list[str]
    new: list[str]
    dropped: list[str]
    with_state: int
    shared: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        shared = set(self.shared)
        fresh = [name for name in self.new if name not in shared]
        parts = [
            f"optimizer state loaded by name: {len(self.loaded)} parameters",
            _count("new, starting fresh", fresh),
            _count("dropped", self.dropped),
        ]
        if self.shared:
            parts.append(
                _count("sharing the state LBFGS keeps on its first parameter", self.shared)
            )
        return "; ".join(parts)


def _count(label: str, names: Sequence[str]) -> str:
    shown = ", ".join(names[:_SHOWN_NAMES])
    more = f", ... ({len(names) - _SHOWN_NAMES} more)" if len(names) > _SHOWN_NAMES else ""
    return f"{len(names)} {label}" + (f" ({shown}{more})" if names else "")


def _names_by_group(groups: Sequence[Mapping[str, Any]], whose: str) -> list[list[str]]:
    names = []
    for index, group in enumerate(groups):
        group_names = group.get("param_names")
        if group_names is None:
            raise ValueError(
                f"{whose} parameter group {index} has no 'param_names', so its state cannot be "
                "matched by name; save the state of an optimizer built by "
                "regtree_optim.build_optimizer (its groups carry param_names), or load this one "
                "with optimizer.load_state_dict into an optimizer of exactly the same layout"
            )
        params = group["params"]
        count = 1 if isinstance(params, torch.Tensor | int) else len(params)
        if len(group_names) != count:
            raise ValueError(
                f"{whose} parameter group {index} has {count} parameters but "
                f"{len(group_names)} param_names; the state dict is inconsistent"
            )
        names.append(list(group_names))
    return names


@dataclass(frozen=True, slots=True)
class _SavedLayout:
    """A state dict's parameters by name: each one's index and the sub-optimizer it was in."""

    ids: dict[str, Any]
    routes: dict[str, str | None]
    state: Mapping[Any, Any]


def _saved_layout(state_dict: Mapping[str, Any]) -> _SavedLayout:
    if not isinstance(state_dict, Mapping) or not {"state", "param_groups"} <= state_dict.keys():
        found = list(state_dict) if isinstance(state_dict, Mapping) else type(state_dict).__name__
        raise TypeError(
            "load_state_dict_by_name takes an optimizer.state_dict() (a mapping with 'state' and "
            f"'param_groups'), got {found!r}"
        )
    groups = state_dict["param_groups"]
    ids_by_name: dict[str, Any] = {}
    routes: dict[str, str | None] = {}
    for group, names in zip(groups, _names_by_group(groups, "the state dict's"), strict=True):
        for name, param_id in zip(names, group["params"], strict=True):
            if name in ids_by_name:
                raise ValueError(f"the state dict names parameter {name!r} twice")
            ids_by_name[name] = param_id
            routes[name] = group.get(OPTIMIZER_KEY)
    return _SavedLayout(ids_by_name, routes, state_dict["state"])


def _state_holder(optimizer: Optimizer, group: Mapping[str, Any]) -> Optimizer:
    """The optimizer that keeps a group's state: ZeRO's local one, a RoutedOptimizer's sub."""
    if isinstance(optimizer, ZeroRedundancyOptimizer):
        optimizer = optimizer.optim  # type: ignore[attr-defined]  # torch's class
    if isinstance(optimizer, RoutedOptimizer):
        optimizer = optimizer.optimizers[group[OPTIMIZER_KEY]]
    return optimizer


def _keeps_state_in_param_shape(holder: Optimizer) -> bool:
    # Adafactor factors its second moment into a row and a column; LBFGS keeps flat history.
    odd = tuple(
        cls
        for cls in (getattr(torch.optim, "Adafactor", None), torch.optim.LBFGS)
        if isinstance(cls, type)
    )
    return not isinstance(holder, odd)


def _first_param_if_shared(holder: Optimizer) -> torch.Tensor | None:
    # LBFGS keeps one state for all its parameters, on its first one (torch's _params[0]).
    if isinstance(holder, torch.optim.LBFGS):
        first: torch.Tensor = holder.param_groups[0]["params"][0]
        return first
    return None


def _check_entry(name: str, entry: object) -> Mapping[Any, Any]:
    if not isinstance(entry, Mapping):
        raise TypeError(
            f"the saved state of parameter {name!r} must be a mapping from state names to values "
            "(as optimizer.state_dict()['state'] holds for each parameter, such as "
            f"{{'step': ..., 'exp_avg': ...}}), got {type(entry).__name__}"
        )
    return entry


class _FreshScalars:
    """The keys an optimizer keeps as 0-d tensors for a fresh parameter, found once a group."""

    def __init__(self) -> None:
        self._found: dict[tuple[int, int], frozenset[Any] | None] = {}

    def __call__(
        self, holder: Optimizer, group: Mapping[str, Any], param: torch.Tensor
    ) -> frozenset[Any] | None:
        key = (id(group), param.dim())
        if key not in self._found:
            self._found[key] = _fresh_scalar_keys(holder, group, param)
        return self._found[key]


def _fresh_scalar_keys(
    holder: Optimizer, group: Mapping[str, Any], param: torch.Tensor
) -> frozenset[Any] | None:
    """The keys of the state ``holder`` gives a fresh ``param`` that are 0-d (ASGD's ``eta``).

    Torch creates an optimizer's state at its first step, so one step is taken: by a throwaway
    optimizer of the holder's type with the group's options, over a stand-in of the parameter's
    dimensions (one element each way, and at least one dimension: over a 0-d stand-in all its
    state is 0-d, exp_avg as eta) with a zero gradient. None where that cannot be done (an
    optimizer that needs more than its options, SparseAdam's sparse gradients).
    """
    options = {key: value for key, value in group.items() if key not in ("params", "param_names")}
    stand_in = torch.zeros((1,) * max(param.dim(), 1), dtype=param.dtype, device=param.device)
    stand_in.grad = torch.zeros_like(stand_in)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the throwaway's warnings are no one's concern
            build: Callable[..., Optimizer] = type(holder)  # its own options are the group's
            probe = build([{**options, "params": [stand_in]}])
            # The step torch's hooks wrap, not the wrapper: no optimizer hook (a user's global
            # step hook) sees the throwaway's step.
            step = type(probe).step
            getattr(step, "__wrapped__", step)(probe)
    except Exception:  # whatever the optimizer refuses, it cannot tell: the state loads as saved
        return None
    return frozenset(
        key
        for key, value in probe.state[stand_in].items()
        if isinstance(value, torch.Tensor) and value.dim() == 0
    )


def _scalar_state(
    key: Any, current: Mapping[Any, Any], fresh: Callable[[], frozenset[Any] | None]
) -> bool | None:
    """Whether ``key`` is scalar state (``step``), not state in the parameter's shape.

    None where that cannot be told: the parameter holds no such state and the optimizer's own
    fresh state for it cannot be found.
    """
    if key == "step":
        return True
    own = current.get(key)
    if isinstance(own, torch.Tensor):
        return own.dim() == 0
    scalars = fresh()
    return None if scalars is None else key in scalars


def _check_shapes(
    name: str,
    param: torch.Tensor,
    state: Mapping[Any, Any],
    holder: Optimizer,
    fresh: Callable[[], frozenset[Any] | None],
) -> None:
    for key, value in state.items():
        if not isinstance(value, torch.Tensor) or value.shape == param.shape:
            continue
        # A 0-d parameter's own state is all 0-d, whether scalar or in its shape: it cannot tell.
        current = holder.state.get(param, {}) if param.dim() else {}
        scalar = _scalar_state(key, current, fresh)
        if value.dim() == 0:
            if scalar is not False:  # scalar state, or none can tell: it loads as saved
                continue
            why = (
                f"{type(holder).__name__} keeps {key!r} in its parameter's shape (only scalar "
                "state, such as 'step', is 0-d), so this saved state does not fit it (drop the "
                "parameter's entry from the state dict to start it fresh)"
            )
        elif scalar:
            # Not a change of the model: scalar state has no shape of the parameter's to follow.
            raise ValueError(
                f"the saved state {key!r} of parameter {name!r} has shape "
                f"{tuple(value.shape)}, but {type(holder).__name__} keeps {key!r} as a scalar "
                f"(a 0-d tensor), whatever the parameter's shape (now {tuple(param.shape)}): "
                "this state dict was not saved by such an optimizer, or was changed since; "
                f"give {key!r} as a 0-d tensor (torch.tensor(...)), or drop the parameter's "
                "entry from the state dict to "
                "start it fresh"
            )
        else:
            why = (
                "the model changed this parameter, so its saved state does not apply (rename "
                "the parameter, or drop its entry from the state dict, to start it fresh)"
            )
        raise ValueError(
            f"the saved state {key!r} of parameter {name!r} has shape "
            f"{tuple(value.shape)}, but the parameter now has shape {tuple(param.shape)}; {why}"
        )


def _group_lists(optimizer: Optimizer) -> list[tuple[Optimizer, list[Any], list[Any]]]:
    """Each optimizer whose groups torch's load_state_dict replaces: its list and the groups."""
    owners = optimizer_and_subs(optimizer)
    return [(owner, owner.param_groups, list(owner.param_groups)) for owner in owners]


def _keep_groups(lists: list[tuple[Optimizer, list[Any], list[Any]]], *, loaded: bool) -> None:
    """Put the group dicts (and lists) back that torch's load_state_dict replaced by copies.

    A reference to ``optimizer.param_groups[i]`` (a scheduler's, the caller's) stays live. After
    a load the groups hold what torch's load left in its copies (the options are the groups' own,
    packed from them); after a failed one, exactly what they held before.
    """
    for owner, groups, originals in lists:
        if loaded:
            for original, copied in zip(originals, owner.param_groups, strict=True):
                if copied is not original:
                    original.clear()
                    original.update(copied)
        groups[:] = originals
        owner.param_groups = groups


def load_state_dict_by_name(optimizer: Optimizer, state_dict: Mapping[str, Any]) -> StateLoadReport:
    """Load a saved ``optimizer.state_dict()`` by parameter name, whatever its group layout.

    Per-parameter state (momentum buffers, ``exp_avg``, ``step``, ...) is matched by the names in
    the groups' ``param_names`` and loaded through ``optimizer.load_state_dict`` in the
    optimizer's current layout; the group options (lr, weight decay, betas, ...) stay the
    optimizer's. Into the same layout, the per-parameter state is exactly what
    ``optimizer.load_state_dict(state_dict)`` gives.

    Args:
        optimizer: The optimizer to load into; its groups carry ``param_names``.
        state_dict: A saved ``optimizer.state_dict()`` whose groups carry ``param_names``.

    Returns:
        The report: ``loaded``, ``new`` and ``dropped`` names, each sorted.

    The groups stay the very dicts they were, loaded or not: a reference to
    ``optimizer.param_groups[i]`` stays live, where torch's ``load_state_dict`` replaces each by
    a copy.

    Raises:
        TypeError: ``optimizer`` is not a ``torch.optim.Optimizer``, ``state_dict`` is not an
            optimizer state dict, or a parameter's saved state is not a mapping; raised before
            anything changes.
        ValueError: a group without ``param_names`` (the state dict's or the optimizer's), or a
            saved tensor whose shape differs from its parameter's (naming both shapes; a 0-d
            one only fits where the optimizer keeps that state as a scalar, as ``step``),
            raised before anything changes; or saved state the optimizer fails to load (another
            optimizer type's), after which it keeps the state it had.
    """
    given: object = optimizer  # what a caller passes, whatever the annotation says
    if not isinstance(given, Optimizer):
        kind = type(given).__name__
        shown = repr(given)
        # A model's repr runs over many lines (a model is the likely mix-up): its class says it.
        found = f"a {kind}" if "\n" in shown or len(shown) > 80 else f"{shown} ({kind})"
        raise TypeError(
            "load_state_dict_by_name loads into a torch.optim.Optimizer (such as build_optimizer "
            f"returns), got {found}"
        )
    saved = _saved_layout(state_dict)
    groups = optimizer.param_groups
    current_names = _names_by_group(groups, "the optimizer's")
    # The optimizer's own layout, packed as Optimizer.state_dict packs it, with the saved state
    # of each parameter under its index there, and its current state beside it (to put back).
    packed_groups: list[dict[str, Any]] = []
    state: dict[int, Any] = {}
    current: dict[int, Any] = {}
    index_of: dict[int, int] = {}
    loaded, new = [], []
    # The parameters without state of their own, by the parameter that holds their state.
    sharing: dict[int, list[str]] = {}
    fresh_scalars = _FreshScalars()
    for group, names in zip(groups, current_names, strict=True):
        packed = {key: value for key, value in group.items() if key != "params"}
        packed["params"] = []
        route = group.get(OPTIMIZER_KEY)
        holder = _state_holder(optimizer, group)
        check_shapes = _keeps_state_in_param_shape(holder)
        shared_on = _first_param_if_shared(holder)
        for name, param in zip(names, group["params"], strict=True):
            index = index_of.setdefault(id(param), len(index_of))
            packed["params"].append(index)
            if param in optimizer.state:
                current[index] = optimizer.state[param]
            if shared_on is not None and param is not shared_on:
                sharing.setdefault(id(shared_on), []).append(name)
            entry = saved.state.get(saved.ids[name]) if name in saved.ids else None
            # Another sub-optimizer's state (Muon's momentum for AdamW) does not carry over.
            rerouted = route is not None and saved.routes.get(name) not in (None, route)
            if entry is None or rerouted:
                new.append(name)
                continue
            entry = _check_entry(name, entry)
            if check_shapes:
                fresh_keys = partial(fresh_scalars, holder, group, param)
                _check_shapes(name, param, entry, holder, fresh_keys)
            loaded.append(name)
            state[index] = entry
        packed_groups.append(packed)
    dropped = sorted(saved.ids.keys() - {name for names in current_names for name in names})
    group_lists = _group_lists(optimizer)
    try:
        optimizer.load_state_dict({"state": state, "param_groups": packed_groups})
    except (KeyError, TypeError, ValueError, RuntimeError) as error:
        # Torch reads the state as it loads it (Adam's step): state of another optimizer type
        # fails there, half loaded, so the optimizer's own state is put back first.
        optimizer.load_state_dict({"state": current, "param_groups": packed_groups})
        _keep_groups(group_lists, loaded=False)
        keys = sorted({str(key) for entry in state.values() for key in entry})
        raise ValueError(
            f"the saved per-parameter state (entries {', '.join(keys)}) does not fit "
            f"{type(optimizer).__name__}, which failed to load it ({type(error).__name__}: "
            f"{error}); the optimizer is unchanged. Load it into an optimizer of the type that "
            "saved it, or start without it"
        ) from error
    _keep_groups(group_lists, loaded=True)
    with_saved_state = {param_id for param_id, index in index_of.items() if index in state}
    fresh = set(new)
    shared = [
        name
        for holder_id, names in sharing.items()
        if holder_id in with_saved_state
        for name in names
        if name in fresh
    ]
    return StateLoadReport(
        loaded=sorted(loaded),
        new=sorted(new),
        dropped=dropped,
        with_state=len(loaded),
        shared=sorted(shared),
    )


def full_state_dict(optimizer: Optimizer) -> dict[str, Any] | None:
    """Return ``optimizer.state_dict()``, consolidating a ``ZeroRedundancyOptimizer`` first.

    For a ``ZeroRedundancyOptimizer`` this is a collective: every rank of its process group
    calls it; the group's rank 0 gets the full state dict and the other ranks None.

    Args:
        optimizer: Any optimizer.

    Returns:
        The state dict; None on the ranks of a ``ZeroRedundancyOptimizer`` other than 0.
    """
    if isinstance(optimizer, ZeroRedundancyOptimizer):
        optimizer.consolidate_state_dict(to=0)  # type: ignore[attr-defined]  # torch's class
        if optimizer.rank != 0:  # type: ignore[attr-defined]
            return None
    return optimizer.state_dict()
