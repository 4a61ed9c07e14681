"""``SCHEDULERS`` and ``build_scheduler``: lr schedules from configs, in phases, per-group floors.

torch's cosine schedulers take one absolute ``eta_min`` for every group, which breaks the lr
ratios the paramwise rules set (mmengine#1612, mmdetection3d#3059). The two classes registered
here under torch's names are torch's classes with one more keyword, ``eta_min_ratio``: each
group's floor is its own ``initial_lr * eta_min_ratio``, and each group's lr is its initial lr
times one curve, computed in closed form, so the ratios between groups are exact at every step
(torch's recursive form rounds each group on its own, and drifts past 1e-12 over long
schedules).
"""

from __future__ import annotations

import copy
import inspect
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import torch
from torch.optim import Optimizer
from torch.optim import lr_scheduler as torch_schedulers
from torch.optim.lr_scheduler import LRScheduler, ReduceLROnPlateau

from regtree import Registry
from regtree.config import ConfigProblem, validate_config
from regtree.naming import origin

__all__ = [
    "SCHEDULERS",
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "PhasedLR",
    "Schedule",
    "SchedulerRegistry",
    "build_scheduler",
    "lr_at_by_name",
    "plan_schedule",
    "register_torch_schedulers",
    "resolve_steps",
]


class SchedulerRegistry(Registry[Any]):
    """The registry of lr schedulers; :meth:`validate` reads configs as ``build_scheduler`` does."""

    def validate(self, cfg: Mapping[str, Any] | list[Any]) -> list[Any]:
        """Return every problem ``build_scheduler`` would refuse in a config, building nothing.

        The config (a mapping, or a list of phases) is read by :func:`plan_schedule`, as
        ``build_scheduler`` reads it: ``begin`` and ``end`` are popped, lengths (``T_max``,
        ``total_iters``) default to ``end - begin``, and no config gives ``optimizer``. A
        problem of that reading (phases that are not contiguous, a length that neither the
        phase nor an ``end`` gives, mmengine's ``by_epoch``) is the one problem reported, as
        the build stops there too; otherwise each phase is checked as any config
        (``regtree.config``), and each config a ``SequentialLR`` or ``ChainedScheduler`` nests
        is read on its own, as the build builds it. The cosine classes' ``eta_min_ratio``
        (given with ``eta_min``, or outside [0, 1]) is checked by their own check.

        Args:
            cfg: ``dict(type='CosineAnnealingLR', T_max=...)``, or a list of phases.

        Returns:
            The problems, as ``regtree.config.ConfigProblem`` objects; empty when sound.
        """
        given: object = cfg  # what a caller passes, whatever the annotation says
        if not isinstance(given, Mapping | list | tuple):
            return super().validate(cfg)  # not a config at all: the registry's own TypeError
        return _schedule_problems(self, cfg, ())


SCHEDULERS: Final[Registry[Any]] = SchedulerRegistry("scheduler", scope="regtree_optim")

# Schedulers whose length a phase gives when the config leaves it out (SPEC 3.4; OneCycleLR's
# total_steps is our addition, as mmengine's OneCycleLR defaults it to end - begin).
_LENGTH_KEYS: Final[dict[str, str]] = {
    "CosineAnnealingLR": "T_max",
    "LinearLR": "total_iters",
    "ConstantLR": "total_iters",
    "PolynomialLR": "total_iters",
    "OneCycleLR": "total_steps",
}
# Other keys that give a scheduler its length, so that none is defaulted beside them.
_OTHER_LENGTH_KEYS: Final[dict[str, tuple[str, ...]]] = {
    "OneCycleLR": ("epochs", "steps_per_epoch"),
}
# Schedulers built from a list of other schedulers' configs.
_NESTING: Final[frozenset[str]] = frozenset({"SequentialLR", "ChainedScheduler"})
# An optimizer whose step is its class's: none in the instance's dict (before torch wraps it).
_NO_STEP: Final = object()


# Two lrs of one group are taken for the same point of a curve within this relative tolerance.
# What separates them is rounding: each lr is an initial lr times the curve, perhaps times a
# chained scheduler's factor, and is divided by its initial lr to compare, each step rounding by
# at most 2**-53; 1e-14 (about 90 such roundings) takes them all in, while any change a
# scheduler or a person makes on purpose is far larger, and SPEC 3.4's ratios hold to 1e-12.
_SAME_POINT: Final = 1e-14


def _close(value: Any, expected: Any) -> bool:
    return bool(abs(value - expected) <= _SAME_POINT * abs(expected))


def _curve(ratio: float, cosine: float) -> float:
    # floor + (base - floor) * cosine in real numbers, for an initial lr of 1.
    return ratio + (1 - ratio) * cosine


def _scaled(base_lrs: Sequence[float | torch.Tensor], curve: Any) -> list[Any]:
    # Every group's lr is its initial lr times one value, so the ratios between groups are those
    # of the initial lrs, rounded once (SPEC 3.4).
    return [base_lr * curve for base_lr in base_lrs]


def _one_curve(lrs: Sequence[Any], base_lrs: Sequence[Any]) -> Any | None:
    """The one value each group's lr is of its initial lr, or None where the groups differ.

    Groups differ where something changed them apart (a scheduler with one factor per group, a
    hand-set lr), or where none has an initial lr other than 0 to tell the value by.
    """
    curve = None
    for lr, base_lr in zip(lrs, base_lrs, strict=True):
        if bool(base_lr == 0):
            if bool(lr != 0):
                return None
            continue
        point = lr / base_lr
        if curve is None:
            curve = point
        elif not _close(point, curve):
            return None
    return curve


def _check_floor_options(
    name: str, eta_min: float | None, eta_min_ratio: float | None
) -> tuple[float, float | None]:
    if eta_min is not None and eta_min_ratio is not None:
        raise ValueError(
            f"{name} got both eta_min={eta_min!r} and eta_min_ratio={eta_min_ratio!r}; give one: "
            "eta_min is one absolute floor for every group, eta_min_ratio gives each group the "
            "floor initial_lr * eta_min_ratio (which keeps the ratios between groups)"
        )
    if eta_min_ratio is not None:
        what = (
            f"{name} eta_min_ratio must be a number in [0, 1] (the floor as a fraction of each "
            f"group's initial lr), got {eta_min_ratio!r}"
        )
        if isinstance(eta_min_ratio, bool) or not isinstance(eta_min_ratio, int | float):
            raise TypeError(f"{what} ({type(eta_min_ratio).__name__})")
        if not 0 <= eta_min_ratio <= 1:
            raise ValueError(what)
    return (0.0 if eta_min is None else eta_min), eta_min_ratio


class CosineAnnealingLR(torch_schedulers.CosineAnnealingLR):
    """torch's ``CosineAnnealingLR``, with ``eta_min_ratio`` for a floor per group.

    Without ``eta_min_ratio`` it is torch's class, value for value. With it, group ``i`` anneals
    from its initial lr ``b_i`` to ``b_i * eta_min_ratio``, its lr ``b_i`` times one curve in
    closed form, so the ratios between groups hold at every step, however long the schedule.
    Where something else changed the lr since the last step (another scheduler of a
    ``ChainedScheduler``, or a hand-set lr), it takes torch's recursive form, which composes
    with that change, each group with its own floor: computed once for every group where the
    change left each group's lr the same multiple of its initial lr (a warm-up does), so the
    ratios still hold, else group by group. Once the lr is on the closed form's curve again (as a
    warm-up ends where there is no floor; at the floor where there is), it takes the closed form.

    Args:
        optimizer: The optimizer.
        T_max: Steps of half a cosine period.
        eta_min: One absolute floor for every group (torch's keyword); default 0.
        last_epoch: torch's resume index.
        eta_min_ratio: Each group's floor as a fraction of its initial lr, instead of
            ``eta_min``.

    Raises:
        TypeError: ``eta_min_ratio`` is not a number.
        ValueError: both ``eta_min`` and ``eta_min_ratio`` are given, or the ratio is not in
            [0, 1].
    """

    def __init__(
        self,
        optimizer: Optimizer,
        T_max: int,  # torch's keyword
        eta_min: float | None = None,
        last_epoch: int = -1,
        eta_min_ratio: float | None = None,
    ) -> None:
        floor, ratio = _check_floor_options("CosineAnnealingLR", eta_min, eta_min_ratio)
        self.eta_min_ratio = ratio
        super().__init__(optimizer, T_max, floor, last_epoch)

    def get_lr(self) -> list[float | torch.Tensor]:
        """Return each group's initial lr times the curve, or torch's recursive form (see above)."""
        if self.eta_min_ratio is None:
            return super().get_lr()
        torch_schedulers._warn_get_lr_called_within_step(self)
        lrs = [group["lr"] for group in self.optimizer.param_groups]
        # Newer torch marks the initial step with _is_initial; older releases knew it by epoch 0.
        if getattr(self, "_is_initial", self.last_epoch == 0):
            return lrs
        if self._step_count == 1 and self.last_epoch > 0:
            return self._get_closed_form_lr()  # resumed at last_epoch: torch's closed form
        curve = _one_curve(lrs, self.base_lrs)
        if curve is None:
            return self._recursive(lrs, self.base_lrs)
        if _close(curve, self._curve_at(self.last_epoch - 1)):
            return self._get_closed_form_lr()
        # Each group's lr is one multiple of its initial lr: one recursive step for them all.
        return _scaled(self.base_lrs, self._recursive([curve], [1.0])[0])

    def _recursive(self, lrs: Sequence[Any], base_lrs: Sequence[Any]) -> list[Any]:
        """One step of torch's recursive form from ``lrs``, each floor ``base_lr * ratio``."""
        assert self.eta_min_ratio is not None  # only the eta_min_ratio path asks
        floors = [base_lr * self.eta_min_ratio for base_lr in base_lrs]
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            rise = (1 - math.cos(math.pi / self.T_max)) / 2
            return [
                lr + (base_lr - floor) * rise
                for lr, base_lr, floor in zip(lrs, base_lrs, floors, strict=True)
            ]
        factor = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / (
            1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max)
        )
        return [factor * (lr - floor) + floor for lr, floor in zip(lrs, floors, strict=True)]

    def _get_closed_form_lr(self) -> list[float | torch.Tensor]:
        if self.eta_min_ratio is None:
            return super()._get_closed_form_lr()
        return self._lrs_at(self.last_epoch)

    def _curve_at(self, step: int) -> float:
        assert self.eta_min_ratio is not None  # only the eta_min_ratio path asks
        return _curve(self.eta_min_ratio, (1 + math.cos(math.pi * step / self.T_max)) / 2)

    def _lrs_at(self, step: int) -> list[Any]:
        return _scaled(self.base_lrs, self._curve_at(step))


class CosineAnnealingWarmRestarts(torch_schedulers.CosineAnnealingWarmRestarts):
    """torch's ``CosineAnnealingWarmRestarts``, with ``eta_min_ratio`` for a floor per group.

    Args:
        optimizer: The optimizer.
        T_0: Steps until the first restart.
        T_mult: Factor by which the period grows after each restart.
        eta_min: One absolute floor for every group (torch's keyword); default 0.
        last_epoch: torch's resume index.
        eta_min_ratio: Each group's floor as a fraction of its initial lr, instead of
            ``eta_min``.

    Raises:
        TypeError: ``eta_min_ratio`` is not a number.
        ValueError: both ``eta_min`` and ``eta_min_ratio`` are given, or the ratio is not in
            [0, 1].
    """

    def __init__(
        self,
        optimizer: Optimizer,
        T_0: int,  # torch's keyword
        T_mult: int = 1,  # torch's keyword
        eta_min: float | None = None,
        last_epoch: int = -1,
        eta_min_ratio: float | None = None,
    ) -> None:
        floor, ratio = _check_floor_options("CosineAnnealingWarmRestarts", eta_min, eta_min_ratio)
        self.eta_min_ratio = ratio
        super().__init__(optimizer, T_0, T_mult, floor, last_epoch)

    def get_lr(self) -> list[float | torch.Tensor]:
        """Return torch's closed form, with each group's floor in place of the one ``eta_min``."""
        if self.eta_min_ratio is None:
            return super().get_lr()
        torch_schedulers._warn_get_lr_called_within_step(self)
        cosine = (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
        return _scaled(self.base_lrs, _curve(self.eta_min_ratio, cosine))


_OURS: Final[dict[str, type]] = {
    "CosineAnnealingLR": CosineAnnealingLR,
    "CosineAnnealingWarmRestarts": CosineAnnealingWarmRestarts,
}


def _is_concrete_scheduler(name: str, candidate: object) -> bool:
    # Public classes only (torch keeps `_LRScheduler` as an alias of the base), and only those
    # that compute something: the base class implements neither get_lr nor its own step.
    return (
        isinstance(candidate, type)
        and not name.startswith("_")
        and candidate.__name__ == name
        and issubclass(candidate, LRScheduler | ReduceLROnPlateau)
        and candidate is not LRScheduler
        and (candidate.get_lr is not LRScheduler.get_lr or candidate.step is not LRScheduler.step)
    )


def register_torch_schedulers(registry: Registry[Any]) -> list[str]:
    """Register every concrete scheduler class of ``torch.optim.lr_scheduler`` by class name.

    ``CosineAnnealingLR`` and ``CosineAnnealingWarmRestarts`` are registered as this module's
    subclasses, which add ``eta_min_ratio``.

    Returns:
        The names registered, in registration order.
    """
    names: list[str] = []
    for attr in sorted(vars(torch_schedulers)):
        candidate = getattr(torch_schedulers, attr)
        if _is_concrete_scheduler(attr, candidate):
            registry.register_module(name=attr, module=_OURS.get(attr, candidate))
            names.append(attr)
    return names


register_torch_schedulers(SCHEDULERS)


class PhasedLR(torch_schedulers.SequentialLR):
    """torch's ``SequentialLR`` that stops updating at the step where the last phase ends.

    ``build_scheduler`` builds a list of phases into one. As mmengine's ``_ParamScheduler``
    updates only while ``begin <= step < end``, a phase sets the lr at its steps ``begin`` to
    ``end - 1``; after the last phase's ``end - 1`` it sets nothing more, so the lr (and the
    momentum a cyclic scheduler sets) hold what step ``end - 1`` gave them, where torch's
    scheduler would go on (a cosine back up to the initial lr; ``OneCycleLR`` raises past its
    ``total_steps``). Its milestones are the phases' begins, as a ``SequentialLR``'s; ``end``
    is kept in its ``state_dict``.

    Args:
        optimizer: The optimizer.
        schedulers: One scheduler per phase.
        milestones: The step at which each phase after the first begins.
        last_epoch: torch's resume index.
        end: The step from which nothing is updated; None: every step updates, as torch's.

    Raises:
        TypeError: ``end`` is not an int.
        ValueError: ``end`` is not after the last milestone (the last phase would not run).
    """

    def __init__(
        self,
        optimizer: Optimizer,
        schedulers: list[LRScheduler],
        milestones: list[int],
        last_epoch: int = -1,
        *,
        end: int | None = None,
    ) -> None:
        if end is not None:
            if isinstance(end, bool) or not isinstance(end, int):
                raise TypeError(f"PhasedLR end must be a step number (an int), got {end!r}")
            last_begin = milestones[-1] if milestones else 0
            if end <= last_begin:
                raise ValueError(
                    f"PhasedLR end must be after the last phase's begin ({last_begin}), got {end}"
                )
        self.end = end
        super().__init__(optimizer, schedulers, milestones, last_epoch)

    def step(self) -> None:  # type: ignore[override]  # torch's SequentialLR.step takes no epoch
        """Step the phase of the next step; from ``end`` on, only count the step."""
        if self.end is not None and self.last_epoch + 1 >= self.end:
            self.last_epoch += 1
            return
        super().step()


# -- configs -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Schedule:
    """A scheduler config read into phases.

    Attributes:
        phases: One config per phase, ``begin``/``end`` removed and lengths filled in.
        begins: Each phase's first step.
        end: The step where the last phase ends, or None where it has no ``end``.
    """

    phases: tuple[dict[str, Any], ...]
    begins: tuple[int, ...]
    end: int | None


def _type_name(cfg: Mapping[str, Any]) -> str:
    """The scheduler's bare name (``'LinearLR'``), which keys the tables of lengths and nesting."""
    kind = cfg.get("type")
    if isinstance(kind, str):
        return kind.rsplit(".", 1)[-1]
    return getattr(kind, "__name__", repr(kind))


def _shown_type(cfg: Mapping[str, Any]) -> str:
    """The scheduler as messages name it: its bare name, or a class as ``module:qualname``."""
    kind = cfg.get("type")
    return _type_name(cfg) if isinstance(kind, str) else origin(kind)


def _describe(index: int, cfg: Mapping[str, Any]) -> str:
    return f"phase {index} ({_shown_type(cfg)})"


def _phase_names(cfg: object, items: Sequence[Mapping[str, Any]]) -> list[str]:
    # Messages name a phase by its index; a mapping is no list of phases, but the config.
    if isinstance(cfg, Mapping):
        return [f"the scheduler config ({_shown_type(cfg)})"]
    return [_describe(index, item) for index, item in enumerate(items)]


def _phase_paths(cfg: object, count: int) -> list[tuple[int, ...]]:
    # Where each phase is in the config, for SCHEDULERS.validate: a mapping is the config itself.
    return [()] if isinstance(cfg, Mapping) else [(index,) for index in range(count)]


# The problem SCHEDULERS.validate reports for an error of plan_schedule, kept on the error: where
# in the config it is and its kind, so that the config is read in one place, for both.
_PROBLEM: Final = "_regtree_schedule_problem"


def _refusal(
    error: type[TypeError | ValueError], message: str, path: tuple[str | int, ...], kind: str
) -> TypeError | ValueError:
    """An error of plan_schedule, carrying the path and kind of the problem validate reports."""
    refused = error(message)
    setattr(refused, _PROBLEM, (path, kind))
    return refused


def _bound(where: str, at: tuple[int, ...], cfg: Mapping[str, Any], key: str) -> int | None:
    value = cfg.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _refusal(
            TypeError,
            f"{where}: {key} must be a step number (an int), got {value!r}",
            (*at, key),
            "wrong-type",
        )
    if value < 0:
        raise _refusal(
            ValueError, f"{where}: {key} must be >= 0, got {value}", (*at, key), "invalid-value"
        )
    return value


def plan_schedule(cfg: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> Schedule:
    """Read a scheduler config (one mapping or a list of phases) without building anything.

    Each phase may give ``begin`` (default: the previous phase's ``end``; 0 for the first) and
    ``end`` (default: the next phase's ``begin``; the last may omit it). ``T_max`` and
    ``total_iters`` default to ``end - begin`` where the scheduler takes them. ``build_scheduler``
    and ``SCHEDULERS.validate`` read a config this way.

    Raises:
        TypeError: the config is neither a mapping nor a list of mappings, a bound is not an
            int, a scheduler that needs a length (``T_max``) has neither it nor an ``end``, or
            a phase gives one of mmengine's keys that its scheduler does not take
            (``by_epoch``, ``convert_to_iter_based``, ``verbose``).
        ValueError: an empty list, phases that are not contiguous (naming both), a phase that
            ends where it begins or earlier, or a schedule that does not begin at step 0.
    """
    items = _phase_list(cfg)
    names = _phase_names(cfg, items)
    paths = _phase_paths(cfg, len(items))
    # First: an epoch-based mmengine phase explains what its begin and end would seem to get wrong.
    for name, at, item in zip(names, paths, items, strict=True):
        _check_mmengine_keys(name, at, item)
    given = [
        (_bound(name, at, item, "begin"), _bound(name, at, item, "end"))
        for name, at, item in zip(names, paths, items, strict=True)
    ]
    _check_handovers(items, given)
    begins: list[int] = []
    ends: list[int | None] = []
    for index, (begin, end) in enumerate(given):
        if begin is None:
            begin = 0 if index == 0 else ends[index - 1]
        assert begin is not None  # _check_handovers: the previous phase has an end or this a begin
        # Where the phase's end is written: its own end, else the next phase's begin.
        end_at: tuple[str | int, ...] = (*paths[index], "end")
        if end is None and index + 1 < len(given):
            end, end_at = given[index + 1][0], (index + 1, "begin")
        if index == 0 and begin != 0:
            raise _refusal(
                ValueError,
                f"{names[0]} begins at step {begin}, but a schedule starts at "
                "step 0; begin it at 0, or put a ConstantLR phase with factor=1.0 before it to "
                "hold the lr until then",
                (*paths[0], "begin"),
                "invalid-value",
            )
        if end is not None and end <= begin:
            raise _refusal(
                ValueError,
                f"{names[index]} ends at step {end}, not after its begin "
                f"{begin}; a phase must last at least one step",
                end_at,
                "invalid-value",
            )
        begins.append(begin)
        ends.append(end)
    phases = []
    for name, at, item, begin, end in zip(names, paths, items, begins, ends, strict=True):
        phase = {key: value for key, value in item.items() if key not in ("begin", "end")}
        _default_length(name, at, phase, begin, end)
        phases.append(phase)
    return Schedule(phases=tuple(phases), begins=tuple(begins), end=ends[-1])


def _default_length(
    where: str, at: tuple[int, ...], phase: dict[str, Any], begin: int, end: int | None
) -> None:
    """Give a phase's scheduler its length, ``end - begin``, where the config leaves it out."""
    name = _type_name(phase)
    length_key = _LENGTH_KEYS.get(name)
    others = _OTHER_LENGTH_KEYS.get(name, ())
    if length_key is None or length_key in phase or any(key in phase for key in others):
        return
    if end is not None:
        phase[length_key] = end - begin
        return
    found = _scheduler_class(phase)
    parameter = inspect.signature(found).parameters.get(length_key) if found else None
    if parameter is None or parameter.default not in (inspect.Parameter.empty, None):
        return  # torch's own default length (LinearLR's total_iters=5), or not ours to judge
    alternatives = f" (or {' and '.join(others)})" if others else ""
    # A TypeError, as torch's own for a missing argument (StepLR without step_size).
    raise _refusal(
        TypeError,
        f"{where} has no {length_key} and no end to take it from; give {length_key}"
        f"{alternatives}, or an end (its {length_key} defaults to end - begin)",
        (*at, length_key),
        "missing-keyword",
    )


# Keys of mmengine's param_scheduler configs that torch's schedulers do not take, and what they
# are: the closest keyword torch's take would be a wrong hint (by_epoch is not last_epoch, which
# is torch's resume index).
_MMENGINE_KEYS: Final[dict[str, str]] = {
    "by_epoch": (
        "mmengine's choice of counting begin and end in epochs (True, its default) or in "
        "iterations; here phases count steps (calls of scheduler.step()), so drop by_epoch and "
        "give begin and end in steps (for epochs: times the iterations per epoch, with "
        "scheduler.step() called every iteration)"
    ),
    "convert_to_iter_based": (
        "mmengine's conversion of an epoch-based phase to iterations (its begin, end and length "
        "times the iterations per epoch); here phases count steps already, so drop it and give "
        "begin, end and lengths in steps"
    ),
    "verbose": (
        "mmengine's (and older torch's) switch to print every update, which this scheduler does "
        "not take; drop it"
    ),
}


def _check_mmengine_keys(where: str, at: tuple[int, ...], phase: Mapping[str, Any]) -> None:
    """Refuse an mmengine key (``by_epoch``) the phase's scheduler does not take, saying why."""
    found = _scheduler_class(phase)
    if found is None:
        return  # an unknown type: the build says so
    try:
        parameters = inspect.signature(found).parameters
    except (TypeError, ValueError):  # a class without a signature to read: torch's call decides
        return
    if any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters.values()):
        return
    for key, what in _MMENGINE_KEYS.items():
        if key in phase and key not in parameters:
            # A TypeError, as torch's own for a keyword it does not take.
            raise _refusal(
                TypeError,
                f"{where}: {key}={phase[key]!r} is {what}",
                (*at, key),
                "unknown-keyword",
            )


def _phase_list(cfg: object) -> list[Mapping[str, Any]]:
    """Return the phases of a scheduler config: one mapping, or a non-empty list of them."""
    if isinstance(cfg, Mapping):
        items: list[Any] = [cfg]
        if "type" not in cfg:
            raise _refusal(
                ValueError,
                f"the scheduler config has no 'type' (got keys {list(cfg)!r}); name a scheduler "
                "of SCHEDULERS, such as type='CosineAnnealingLR'",
                ("type",),
                "missing-type",
            )
    elif isinstance(cfg, Sequence) and not isinstance(cfg, str | bytes):
        items = list(cfg)
        if not items:
            raise _refusal(
                ValueError,
                "a phased schedule needs at least one phase; the list is empty",
                (),
                "invalid-value",
            )
        for index, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise _refusal(
                    TypeError,
                    f"phase {index} of the schedule must be a mapping (a scheduler config), "
                    f"got {item!r}",
                    (index,),
                    "invalid-type",
                )
            if "type" not in item:
                raise _refusal(
                    ValueError,
                    f"phase {index} of the schedule has no 'type' (got keys {list(item)!r}); "
                    "name a scheduler of SCHEDULERS, such as type='LinearLR'",
                    (index, "type"),
                    "missing-type",
                )
    else:
        raise _refusal(
            TypeError,
            "a scheduler config must be a mapping (dict(type='CosineAnnealingLR', ...)) or a "
            f"list of them (phases), got {cfg!r}",
            (),
            "invalid-type",
        )
    return items


def _check_handovers(
    items: list[Mapping[str, Any]], given: list[tuple[int | None, int | None]]
) -> None:
    """Raise where one phase's end and the next one's begin disagree, or are both missing."""
    for index in range(1, len(items)):
        previous_end, begin = given[index - 1][1], given[index][0]
        if previous_end is not None and begin is not None and previous_end != begin:
            first, second = _describe(index - 1, items[index - 1]), _describe(index, items[index])
            raise _refusal(
                ValueError,
                f"the phases of the schedule must be contiguous: {first} ends at step "
                f"{previous_end} but {second} begins at "
                f"step {begin}; make the second begin where the first ends",
                (index, "begin"),
                "invalid-value",
            )
        if previous_end is None and begin is None:
            raise _refusal(
                ValueError,
                f"{_describe(index - 1, items[index - 1])} has no end and "
                f"{_describe(index, items[index])} no begin, so where one phase hands over to "
                "the next is unknown; give either",
                (index, "begin"),
                "missing-keyword",
            )


def _check_option_types(
    where: str, phase: Mapping[str, Any], prefix: tuple[str | int, ...] = ()
) -> None:
    """Check a phase's options against its scheduler's annotations, as an optimizer's are.

    The check is ``regtree.config``'s (SPEC 5.4), which also reaches the scheduler configs a
    ``SequentialLR`` or ``ChainedScheduler`` nests; torch's schedulers would take a str and
    fail at a later ``step()``. What else the check finds, the build reports in its own words.
    Nested configs are checked each on its own (:func:`_own_keywords`), a list of phases phase
    by phase; one whose form is wrong the build refuses in its own words.

    Raises:
        TypeError: an option that does not fit; nested ``schedulers`` that are not a list.
    """
    own, nested = _own_keywords(phase)
    for problem in validate_config(SCHEDULERS, own):
        if problem.kind != "wrong-type":
            continue
        *path, key = problem.parts
        owner: Any = own
        for part in path:
            owner = owner[part]
        found = _scheduler_class(owner)
        annotated = f", as the signature of {origin(found)} annotates {key!r}" if found else ""
        shown = ConfigProblem((*prefix, *problem.parts), problem.kind, problem.message).path
        raise TypeError(
            f"{where}: {shown}: {problem.message} ({type(owner[key]).__name__}){annotated}"
        )
    for index, item in nested:
        at = (*prefix, "schedulers", index)
        if isinstance(item, Mapping):
            _check_option_types(where, item, at)
            continue
        try:
            inner = plan_schedule(item).phases
        except (TypeError, ValueError):
            continue  # the build refuses it, naming the phase
        for number, inner_phase in enumerate(inner):
            _check_option_types(where, inner_phase, (*at, number))


def _is_config(item: object) -> bool:
    # A scheduler config: a mapping, or a list of phases.
    return isinstance(item, Mapping) or (
        isinstance(item, Sequence) and not isinstance(item, str | bytes)
    )


def _own_keywords(phase: Mapping[str, Any]) -> tuple[dict[str, Any], list[tuple[int, Any]]]:
    """A config with its nested scheduler configs stood in for, and those configs by index.

    The ``schedulers`` of a ``SequentialLR`` or ``ChainedScheduler`` are configs (a mapping, or
    a list of phases), each read on its own, as the build builds each; in the check of the
    config's own keywords an empty config stands for each, so torch's annotation
    (``list[LRScheduler]``) is never held against them. A built scheduler, or anything else,
    stays for the check to take or refuse.

    Raises:
        TypeError: ``schedulers`` is not a list (:func:`_nested_configs`).
    """
    own = dict(phase)
    nested = _nested_configs(phase) or []
    configs = [(index, item) for index, item in enumerate(nested) if _is_config(item)]
    if configs:
        own["schedulers"] = [{} if _is_config(item) else item for item in nested]
    return own, configs


def _nested_configs(cfg: Mapping[str, Any]) -> list[Any] | None:
    """The ``schedulers`` of a ``SequentialLR`` or ``ChainedScheduler`` config; None elsewhere.

    Each is a scheduler config (or an already built scheduler), built for the same optimizer.

    Raises:
        TypeError: ``schedulers`` is not a list.
    """
    if _type_name(cfg) not in _NESTING or "schedulers" not in cfg:
        return None
    nested = cfg["schedulers"]
    if not isinstance(nested, Sequence) or isinstance(nested, str | bytes):
        raise TypeError(
            f"{_shown_type(cfg)} schedulers must be a list of scheduler configs, got {nested!r}"
        )
    return list(nested)


def _build_one(optimizer: Optimizer, cfg: Mapping[str, Any]) -> Any:
    cfg = dict(cfg)
    nested = _nested_configs(cfg)
    if nested is not None:
        cfg["schedulers"] = [
            item if isinstance(item, LRScheduler) else build_scheduler(optimizer, item)
            for item in nested
        ]
    return SCHEDULERS.build(cfg, default_args={"optimizer": optimizer})


def _schedule_problems(
    registry: Registry[Any], cfg: object, prefix: tuple[str | int, ...]
) -> list[ConfigProblem]:
    """What ``build_scheduler`` would refuse in ``cfg``, found as it reads the config."""
    try:
        schedule = plan_schedule(cfg)  # type: ignore[arg-type]  # whatever a config holds
    except (TypeError, ValueError) as error:
        fallback = "wrong-type" if isinstance(error, TypeError) else "invalid-value"
        path, kind = getattr(error, _PROBLEM, ((), fallback))
        return [ConfigProblem((*prefix, *path), kind, str(error))]
    problems: list[ConfigProblem] = []
    for at, phase in zip(_phase_paths(cfg, len(schedule.phases)), schedule.phases, strict=True):
        where = (*prefix, *at)
        try:
            checked, nested = _own_keywords(phase)
        except TypeError as error:
            problems.append(ConfigProblem((*where, "schedulers"), "wrong-type", str(error)))
            # Said once: not again by the check below.
            checked, nested = {**phase, "schedulers": []}, []
        own = [
            problem
            for problem in validate_config(registry, checked)
            # build_scheduler gives the optimizer
            if not (problem.kind == "missing-keyword" and problem.parts == ("optimizer",))
        ]
        problems.extend(
            ConfigProblem(
                (*where, *problem.parts), problem.kind, problem.message, problem.suggestions
            )
            for problem in own
        )
        if not any(problem.parts[:1] in (("eta_min",), ("eta_min_ratio",)) for problem in own):
            problems.extend(_floor_problems(phase, where))
        for index, item in nested:  # anything else the check above refused, as the build
            problems.extend(_schedule_problems(registry, item, (*where, "schedulers", index)))
    return problems


def _floor_problems(phase: Mapping[str, Any], where: tuple[str | int, ...]) -> list[ConfigProblem]:
    """What the cosine classes' own floor check refuses in ``phase``, as they refuse it."""
    found = _scheduler_class(phase)
    if found is None or not issubclass(found, CosineAnnealingLR | CosineAnnealingWarmRestarts):
        return []
    try:
        _check_floor_options(found.__name__, phase.get("eta_min"), phase.get("eta_min_ratio"))
    except (TypeError, ValueError) as error:
        kind = "wrong-type" if isinstance(error, TypeError) else "invalid-value"
        return [ConfigProblem((*where, "eta_min_ratio"), kind, str(error))]
    return []


def _build_phase(
    optimizer: Optimizer, index: int, phase: Mapping[str, Any], *, phased: bool
) -> Any:
    # torch's own messages ("unexpected keyword argument") name no phase: the note does.
    try:
        return _build_one(optimizer, phase)
    except Exception as error:
        if phased and isinstance(getattr(error, "__notes__", []), list):
            error.add_note(
                f"regtree_optim: while building {_describe(index, phase)} of the schedule"
            )
        raise


def build_scheduler(
    optimizer: Optimizer, cfg: Mapping[str, Any] | Sequence[Mapping[str, Any]]
) -> Any:
    """Build an lr scheduler for ``optimizer`` from a config in ``SCHEDULERS``.

    A mapping is built as ``SCHEDULERS.build(cfg, default_args=dict(optimizer=optimizer))``; the
    ``schedulers`` of a ``SequentialLR`` or ``ChainedScheduler`` are configs built for the same
    optimizer first. A list of mappings is a schedule in phases (mmengine's ``param_scheduler``
    style), built as a ``SequentialLR`` whose milestones are the phases' begins (one phase: that
    scheduler itself); ``begin`` and ``end`` are never passed to a scheduler. Where the last phase
    has an ``end``, the ``SequentialLR`` is a :class:`PhasedLR`, which updates nothing from that
    step on, as mmengine's schedulers stop at ``end``: the lr holds the value of step
    ``end - 1``. The caller's config is not changed.

    The config's form, its bounds, lengths and option types are checked before anything is
    built; the other errors (the registry's, torch's, such as an unknown keyword, and the cosine
    classes' ``eta_min_ratio`` checks) come as a phase is built (a note names it), after which
    the optimizer is given back its lr, ``initial_lr``, momentum and ``step`` as they were.

    Args:
        optimizer: The optimizer whose lr the scheduler sets.
        cfg: ``dict(type='CosineAnnealingLR', T_max=..., eta_min_ratio=...)``, or a list such as
            ``[dict(type='LinearLR', start_factor=0.1, end=100), dict(type='CosineAnnealingLR',
            end=1000)]``.

    Returns:
        The scheduler.

    Raises:
        TypeError: a config that is not a mapping or a list of mappings (a phase, or the
            ``schedulers`` of a ``SequentialLR`` or ``ChainedScheduler``, that is not one); a
            ``begin`` or ``end`` that is not an int; an option that does not fit its
            scheduler's annotation (``gamma='0.9'``; naming the key, the value and its type),
            nested schedulers' included; an ``eta_min_ratio`` that is not a number; a
            scheduler without a length it needs (``T_max``; torch's own for ``step_size``); or
            one of mmengine's keys that the scheduler does not take (``by_epoch``,
            ``convert_to_iter_based``, ``verbose``), saying what it is and what to give instead.
        ValueError: an empty list; a config or phase without ``type``; a negative ``begin`` or
            ``end``; phases that are not contiguous, or whose handover neither gives; a phase
            that ends where it begins or earlier; a schedule that does not begin at step 0;
            ``eta_min`` and ``eta_min_ratio`` together, or a ratio outside [0, 1].
        regtree.NotRegisteredError: a ``type`` that ``SCHEDULERS`` does not hold.
    """
    schedule = plan_schedule(cfg)
    phases = [copy.copy(phase) for phase in schedule.phases]
    for where, phase in zip(_phase_names(cfg, phases), phases, strict=True):
        _check_option_types(where, phase)
    # Each scheduler sets the groups' lr (and initial_lr, a cyclic one momentum) as it is built,
    # a tensor lr in place, and the first wraps the optimizer's step in the instance's dict (to
    # warn when a scheduler steps first): where a later one fails, all of it is given back, so a
    # bad config leaves the optimizer as it was.
    before = [dict(group) for group in optimizer.param_groups]
    tensors = [(value, value.clone()) for group in before for _, value in _tensor_options(group)]
    step = vars(optimizer).get("step", _NO_STEP)
    try:
        schedulers = [
            _build_phase(optimizer, index, phase, phased=not isinstance(cfg, Mapping))
            for index, phase in enumerate(phases)
        ]
        if len(schedulers) == 1:
            return schedulers[0]
        return PhasedLR(optimizer, schedulers, list(schedule.begins[1:]), end=schedule.end)
    except Exception:
        for group, settings in zip(optimizer.param_groups, before, strict=True):
            group.clear()
            group.update(settings)
        with torch.no_grad():
            for tensor, value in tensors:
                tensor.copy_(value)
        if step is _NO_STEP:
            vars(optimizer).pop("step", None)
        else:
            vars(optimizer)["step"] = step
        raise


def _tensor_options(group: Mapping[str, Any]) -> list[tuple[str, torch.Tensor]]:
    # A group's tensor-valued options (a tensor lr), which schedulers change in place.
    return [
        (key, value)
        for key, value in group.items()
        if key != "params" and isinstance(value, torch.Tensor)
    ]


# -- explain's lr columns ----------------------------------------------------------------------


def resolve_steps(
    cfg: Mapping[str, Any] | Sequence[Mapping[str, Any]], at: Sequence[int]
) -> dict[int, int]:
    """Map each step of ``at`` (as given) to a step count; negative ones count from the end.

    Raises:
        TypeError: ``at`` is not a sequence of ints.
        ValueError: a negative step where the schedule has no end (only a phased schedule whose
            last phase gives ``end`` has one), or one before the schedule's start; a step
            after 0 of a scheduler stepped with a metric (``ReduceLROnPlateau``).
    """
    steps: object = at
    if isinstance(steps, str | bytes) or not isinstance(steps, Sequence):
        raise TypeError(f"at must be a list of step numbers (ints), got {at!r}")
    schedule = plan_schedule(cfg)
    resolved: dict[int, int] = {}
    for step in at:
        if isinstance(step, bool) or not isinstance(step, int):
            raise TypeError(f"at must hold step numbers (ints), got {step!r} in {list(at)!r}")
        if step >= 0:
            resolved[step] = step
            continue
        if schedule.end is None or not isinstance(cfg, Sequence):
            raise ValueError(
                f"step {step} counts back from the end of the schedule, but this schedule has "
                "no end: only a list of phases whose last phase gives 'end' has one; ask for "
                "a step number >= 0"
            )
        if schedule.end + step < 0:
            raise ValueError(
                f"step {step} is before the schedule's start (it ends at step {schedule.end}, "
                f"so the earliest step counted back is {-schedule.end})"
            )
        resolved[step] = schedule.end + step
    stepped = [given for given, step in resolved.items() if step > 0]
    # In phases torch's SequentialLR refuses such a scheduler itself, as it is built.
    if stepped and len(schedule.phases) == 1 and _needs_metric(schedule.phases[0]):
        raise ValueError(
            f"{_shown_type(schedule.phases[0])} sets the lr from a metric (its step() takes "
            "the validation loss), so explain cannot step it without training: step "
            f"{stepped[0]} has no lr to show; ask for at=[0], the lr it starts with"
        )
    return resolved


def _scheduler_class(cfg: Mapping[str, Any]) -> type | None:
    """The class a scheduler config names, or None where it names none (the build says why)."""
    kind = cfg.get("type")
    found = SCHEDULERS.get(kind) if isinstance(kind, str) else kind
    return found if isinstance(found, type) else None


def _needs_metric(cfg: Mapping[str, Any]) -> bool:
    """Whether the scheduler a config names is stepped with a metric (``ReduceLROnPlateau``)."""
    found = _scheduler_class(cfg)
    return found is not None and issubclass(found, ReduceLROnPlateau)


def lr_at_by_name(
    optimizer: Optimizer,
    cfg: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    at: Sequence[int],
) -> dict[str, dict[int, Any]]:
    """Step a scheduler built from ``cfg`` and record each parameter's lr at the steps ``at``.

    The lr at step ``s`` is the one ``optimizer`` holds after ``s`` calls of
    ``scheduler.step()``. Only the optimizer's lrs change (its groups carry ``param_names``);
    nothing is trained.

    Returns:
        For each parameter name, a dict from each step of ``at`` (as given) to its lr.
    """
    resolved = resolve_steps(cfg, at)
    wanted: dict[int, list[int]] = {}
    for given, step in resolved.items():
        wanted.setdefault(step, []).append(given)
    names = [group.get("param_names") for group in optimizer.param_groups]
    if any(group_names is None for group_names in names):
        raise ValueError(
            "the optimizer's parameter groups carry no 'param_names', so the lrs cannot be told "
            "by parameter; build the optimizer with regtree_optim.build_optimizer"
        )
    # A tensor lr may be the config's own object (torch keeps what it is given), which stepping
    # changes in place: the steps run on copies, so that only this optimizer's lrs change.
    for group in optimizer.param_groups:
        for key, value in _tensor_options(group):
            group[key] = value.clone()
    lrs: dict[int, list[Any]] = {}
    with warnings.catch_warnings():
        # Stepping the scheduler alone is the point here: no optimizer.step() comes first.
        warnings.filterwarnings("ignore", message=r"Detected call of `lr_scheduler\.step\(\)`")
        scheduler = build_scheduler(optimizer, cfg)
        last = max(wanted, default=0)
        for step in range(last + 1):
            if step:
                scheduler.step()
            if step in wanted:  # a tensor lr changes in place at the next step: its value now
                lrs[step] = [
                    lr.clone() if isinstance(lr := group["lr"], torch.Tensor) else lr
                    for group in optimizer.param_groups
                ]
    result: dict[str, dict[int, Any]] = {}
    for index, group_names in enumerate(names):
        assert group_names is not None
        for name in group_names:
            result[name] = {given: lrs[step][index] for given, step in resolved.items()}
    return result
