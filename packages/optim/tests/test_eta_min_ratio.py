"""``eta_min_ratio``: a cosine floor per group, so the ratios the paramwise rules set hold."""

from __future__ import annotations

import math
import warnings
from typing import Any

import pytest
import torch
from torch import nn
from torch.optim import lr_scheduler

from regtree_optim import SCHEDULERS, build_optimizer, build_scheduler

STEPS = 1000
BACKBONE_RATIO = 0.1
TOLERANCE = 1e-12


class Detector(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.backbone = nn.Linear(4, 4)
        self.head = nn.Linear(4, 2)


def _optimizer() -> torch.optim.Optimizer:
    torch.manual_seed(0)
    cfg = {
        "type": "SGD",
        "lr": 0.02,
        "momentum": 0.9,
        "paramwise_cfg": {"custom_keys": {"backbone": {"lr_mult": BACKBONE_RATIO}}},
    }
    optimizer = build_optimizer(Detector(), cfg)
    return optimizer


def _backbone_ratios(optimizer: torch.optim.Optimizer, scheduler: Any) -> list[float]:
    # The ratio of the backbone's lr to the head's, after 0, 1, ..., STEPS steps.
    backbone, head = (
        next(g for g in optimizer.param_groups if g["param_names"][0].startswith(part))
        for part in ("backbone", "head")
    )
    ratios = []
    for step in range(STEPS + 1):
        if step:
            optimizer.step()  # no gradients: nothing moves, but torch sees the order it expects
            scheduler.step()
        ratios.append(backbone["lr"] / head["lr"])
    return ratios


def _worst(ratios: list[float]) -> float:
    return max(abs(ratio / BACKBONE_RATIO - 1) for ratio in ratios)


@pytest.mark.parametrize(
    "schedule",
    [
        {"type": "CosineAnnealingLR", "T_max": STEPS, "eta_min_ratio": 0.01},
        # Beyond T_max torch's cosine rises again: the recursion passes through the floor.
        {"type": "CosineAnnealingLR", "T_max": 300, "eta_min_ratio": 0.05},
        [
            {"type": "LinearLR", "start_factor": 0.001, "end": 100},
            {"type": "CosineAnnealingLR", "eta_min_ratio": 0.01, "end": STEPS},
        ],
        {"type": "CosineAnnealingWarmRestarts", "T_0": 150, "T_mult": 2, "eta_min_ratio": 0.02},
    ],
    ids=["cosine", "cosine-periodic", "warmup-then-cosine", "warm-restarts"],
)
def test_the_ratio_holds_within_1e_12_at_every_one_of_1000_steps(schedule: Any) -> None:
    optimizer = _optimizer()
    ratios = _backbone_ratios(optimizer, build_scheduler(optimizer, schedule))
    assert len(ratios) == STEPS + 1
    assert _worst(ratios) <= TOLERANCE


def _two_groups(ratio: float, lr: float = 0.1) -> torch.optim.Optimizer:
    # No model: two parameters, the first group's lr `ratio` times the second's.
    params = [nn.Parameter(torch.zeros(1)) for _ in range(2)]
    return torch.optim.SGD([{"params": [params[0]], "lr": lr * ratio}, {"params": [params[1]]}], lr)


def _lrs(optimizer: torch.optim.Optimizer, scheduler: Any, steps: int) -> list[list[float]]:
    history = [[group["lr"] for group in optimizer.param_groups]]
    with warnings.catch_warnings():
        # Only the lrs are of interest: no optimizer.step() comes first.
        warnings.filterwarnings("ignore", message=r"Detected call of `lr_scheduler\.step\(\)`")
        for _ in range(steps):
            scheduler.step()
            history.append([group["lr"] for group in optimizer.param_groups])
    return history


LONG_SCHEDULES = [
    # Ten periods: torch's recursion passes through the floor again and again.
    pytest.param(
        {"type": "CosineAnnealingLR", "T_max": 1000, "eta_min_ratio": 0.1},
        1e-3,
        10_000,
        id="cosine-10-periods",
    ),
    # torch's recursion, each group rounded on its own, drifted to 1.28e-12 here (1.5e-12 over
    # 300k steps with eta_min_ratio=0.01, which drifts slower).
    pytest.param(
        [
            {"type": "LinearLR", "start_factor": 0.001, "end": 1000},
            {"type": "CosineAnnealingLR", "eta_min_ratio": 0.1, "end": 41_000},
        ],
        0.1,
        41_000,
        id="warmup-then-40k-cosine",
    ),
]


@pytest.mark.parametrize(("schedule", "ratio", "steps"), LONG_SCHEDULES)
def test_the_ratio_holds_within_1e_12_over_a_long_schedule(
    schedule: Any, ratio: float, steps: int
) -> None:
    optimizer = _two_groups(ratio)
    history = _lrs(optimizer, build_scheduler(optimizer, schedule), steps)
    assert max(abs(first / second / ratio - 1) for first, second in history) <= TOLERANCE


@pytest.mark.parametrize(("schedule", "ratio", "steps"), LONG_SCHEDULES)
def test_the_lrs_are_torch_s_with_each_group_s_floor_given_as_eta_min(
    schedule: Any, ratio: float, steps: int
) -> None:
    # torch's own classes, one optimizer per group, each with that group's floor as eta_min.
    steps = min(steps, 5000)
    ours = _two_groups(ratio)
    history = _lrs(ours, build_scheduler(ours, schedule), steps)
    phases = schedule if isinstance(schedule, list) else [schedule]
    floor_ratio = phases[-1]["eta_min_ratio"]
    for index, group in enumerate(ours.param_groups):
        theirs = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=group["initial_lr"])
        eta_min = group["initial_lr"] * floor_ratio
        as_torch = [
            {key: value for key, value in phase.items() if key != "eta_min_ratio"}
            | ({"eta_min": eta_min} if "eta_min_ratio" in phase else {})
            for phase in phases
        ]
        torch_lrs = _lrs(theirs, build_scheduler(theirs, as_torch), steps)
        for step, (mine, their) in enumerate(zip(history, torch_lrs, strict=True)):
            assert math.isclose(mine[index], their[0], rel_tol=1e-9), (index, step)


def _chained(warmup: str, t_max: int, floor: str, value: float) -> dict[str, Any]:
    # A warm-up of 5 steps beside the cosine, both stepped at every step.
    first = {"factor": 0.1} if warmup == "ConstantLR" else {"start_factor": 0.1}
    return {
        "type": "ChainedScheduler",
        "schedulers": [
            {"type": warmup, **first, "total_iters": 5},
            {"type": "CosineAnnealingLR", "T_max": t_max, floor: value},
        ],
    }


@pytest.mark.parametrize("warmup", ["ConstantLR", "LinearLR"])
@pytest.mark.parametrize(
    ("floor_ratio", "closed_from"),
    [
        # Without a floor the recursion is one product per step: when the warm-up ends (its
        # last step is 5), the lr is back on the curve, within rounding, and snaps to the
        # closed form.
        (0.0, 5),
        # With one, the recursion keeps the warm-up's mark until the floor at T_max (20).
        (0.05, 20),
    ],
    ids=["no-floor", "floor"],
)
def test_in_a_chained_scheduler_it_composes_as_torch_s_recursive_form(
    warmup: str, floor_ratio: float, closed_from: int
) -> None:
    # The warm-up changes the lr the cosine sees: the cosine then takes torch's recursive form,
    # each group with its own floor, as torch's class with that floor as eta_min does.
    steps = 50
    ours = _two_groups(0.1)
    scheduler = build_scheduler(ours, _chained(warmup, 20, "eta_min_ratio", floor_ratio))
    history = _lrs(ours, scheduler, steps)
    for index, group in enumerate(ours.param_groups):
        theirs = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=group["initial_lr"])
        eta_min = group["initial_lr"] * floor_ratio
        torch_lrs = _lrs(
            theirs, build_scheduler(theirs, _chained(warmup, 20, "eta_min", eta_min)), steps
        )
        for step, (mine, their) in enumerate(zip(history, torch_lrs, strict=True)):
            assert math.isclose(mine[index], their[0], rel_tol=1e-12), (index, step)
    cosine = scheduler._schedulers[1]
    closed_form = [cosine._lrs_at(step) for step in range(steps + 1)]
    assert history[closed_from - 1] != closed_form[closed_from - 1]
    assert history[closed_from:] == closed_form[closed_from:]


def test_where_a_chained_scheduler_changes_the_groups_apart_each_takes_torch_s_form() -> None:
    # One factor per group: the groups are no longer one curve, so each recurses on its own,
    # as torch's class with its floor as eta_min does for that group alone.
    factors = [lambda step: 0.9 if step < 6 else 1.0, lambda step: 0.8 if step < 10 else 1.0]

    def chained(lambdas: list[Any], floor: str, value: float) -> dict[str, Any]:
        return {
            "type": "ChainedScheduler",
            "schedulers": [
                {"type": "MultiplicativeLR", "lr_lambda": lambdas},
                {"type": "CosineAnnealingLR", "T_max": 30, floor: value},
            ],
        }

    ours = _two_groups(0.1)
    history = _lrs(ours, build_scheduler(ours, chained(factors, "eta_min_ratio", 0.05)), 60)
    for index, group in enumerate(ours.param_groups):
        theirs = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=group["initial_lr"])
        schedule = chained([factors[index]], "eta_min", group["initial_lr"] * 0.05)
        torch_lrs = _lrs(theirs, build_scheduler(theirs, schedule), 60)
        for step, (mine, their) in enumerate(zip(history, torch_lrs, strict=True)):
            assert math.isclose(mine[index], their[0], rel_tol=1e-12), (index, step)


def test_a_group_with_lr_0_stays_at_0_in_a_chained_scheduler() -> None:
    optimizer = _two_groups(0.0)
    schedule = _chained("ConstantLR", 30, "eta_min_ratio", 0.1)
    history = _lrs(optimizer, build_scheduler(optimizer, schedule), 40)
    assert all(first == 0.0 and second > 0 for first, second in history)


# The shortest chained schedule found whose ratios drifted past 1e-12 with each group rounded on
# its own (1.3e-12, from step ~12,000 on; eta_min_ratio=0.1 drifts fastest of those tried).
CHAINED_STEPS = 40_000


@pytest.mark.parametrize("warmup", ["ConstantLR", "LinearLR"])
def test_in_a_chained_scheduler_the_ratio_holds_within_1e_12_over_a_long_schedule(
    warmup: str,
) -> None:
    optimizer = _two_groups(0.3)
    schedule = _chained(warmup, CHAINED_STEPS, "eta_min_ratio", 0.1)
    history = _lrs(optimizer, build_scheduler(optimizer, schedule), CHAINED_STEPS)
    assert max(abs(first / second / 0.3 - 1) for first, second in history) <= TOLERANCE


@pytest.mark.parametrize(
    "schedule",
    [
        {"type": "CosineAnnealingLR", "T_max": STEPS, "eta_min": 2e-4},
        {"type": "CosineAnnealingWarmRestarts", "T_0": 150, "T_mult": 2, "eta_min": 4e-4},
    ],
    ids=["cosine", "warm-restarts"],
)
def test_torch_s_absolute_eta_min_breaks_the_ratio(schedule: Any) -> None:
    optimizer = _optimizer()
    ratios = _backbone_ratios(optimizer, build_scheduler(optimizer, schedule))
    assert _worst(ratios) > 0.5  # near the floor both groups sit at eta_min: a ratio near 1


def test_each_group_ends_at_its_own_floor() -> None:
    optimizer = _optimizer()
    initial = [group["lr"] for group in optimizer.param_groups]
    scheduler = build_scheduler(
        optimizer, {"type": "CosineAnnealingLR", "T_max": 10, "eta_min_ratio": 0.25}
    )
    for _ in range(10):
        optimizer.step()
        scheduler.step()
    for lr, start in zip((g["lr"] for g in optimizer.param_groups), initial, strict=True):
        assert math.isclose(lr, start * 0.25, rel_tol=1e-15)


def test_without_eta_min_ratio_the_schedulers_are_torch_s_value_for_value() -> None:
    for ours_cfg, theirs in [
        (
            {"type": "CosineAnnealingLR", "T_max": 70, "eta_min": 1e-4},
            lambda o: lr_scheduler.CosineAnnealingLR(o, T_max=70, eta_min=1e-4),
        ),
        (
            {"type": "CosineAnnealingWarmRestarts", "T_0": 30, "T_mult": 2},
            lambda o: lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=30, T_mult=2),
        ),
    ]:
        mine, other = _optimizer(), _optimizer()
        built, by_hand = build_scheduler(mine, ours_cfg), theirs(other)
        for _ in range(200):
            mine.step()
            other.step()
            built.step()
            by_hand.step()
            assert [g["lr"] for g in mine.param_groups] == [g["lr"] for g in other.param_groups]


def test_the_floor_survives_a_scheduler_state_dict_round_trip() -> None:
    cfg = {"type": "CosineAnnealingLR", "T_max": 50, "eta_min_ratio": 0.1}
    optimizer = _optimizer()
    scheduler = build_scheduler(optimizer, cfg)
    for _ in range(20):
        optimizer.step()
        scheduler.step()
    state = scheduler.state_dict()
    resumed_optimizer = _optimizer()
    resumed = build_scheduler(resumed_optimizer, cfg)
    resumed.load_state_dict(state)
    resumed_optimizer.load_state_dict(optimizer.state_dict())
    for _ in range(30):
        optimizer.step()
        resumed_optimizer.step()
        scheduler.step()
        resumed.step()
    assert [g["lr"] for g in optimizer.param_groups] == [
        g["lr"] for g in resumed_optimizer.param_groups
    ]


@pytest.mark.parametrize("kind", ["CosineAnnealingLR", "CosineAnnealingWarmRestarts"])
def test_eta_min_and_eta_min_ratio_together_are_a_value_error(kind: str) -> None:
    optimizer = _optimizer()
    lrs = [group["lr"] for group in optimizer.param_groups]
    length = {"T_max": 10} if kind == "CosineAnnealingLR" else {"T_0": 10}
    with pytest.raises(ValueError, match=r"both eta_min=0\.001 and eta_min_ratio=0\.1; give one"):
        build_scheduler(optimizer, {"type": kind, **length, "eta_min": 1e-3, "eta_min_ratio": 0.1})
    # Nothing changed: no initial_lr was set, no lr moved.
    assert [group["lr"] for group in optimizer.param_groups] == lrs
    assert all("initial_lr" not in group for group in optimizer.param_groups)


@pytest.mark.parametrize("ratio", [-0.1, 1.5, float("nan")])
def test_a_ratio_outside_0_1_is_a_value_error(ratio: object) -> None:
    with pytest.raises(ValueError, match=r"eta_min_ratio must be a number in \[0, 1\]"):
        build_scheduler(
            _optimizer(), {"type": "CosineAnnealingLR", "T_max": 10, "eta_min_ratio": ratio}
        )


@pytest.mark.parametrize(
    ("ratio", "shown"),
    [("0.1", r"'0\.1' \(str\)"), (True, r"True \(bool\)")],
    ids=["str", "bool"],
)
@pytest.mark.parametrize("name", ["CosineAnnealingLR", "CosineAnnealingWarmRestarts"])
def test_a_ratio_that_is_not_a_number_is_a_type_error(name: str, ratio: object, shown: str) -> None:
    # A wrong type is a TypeError, as everywhere else; built from a config or called directly.
    length = {"T_max": 10} if name == "CosineAnnealingLR" else {"T_0": 10}
    with pytest.raises(TypeError, match=rf"eta_min_ratio.*, got {shown}"):
        build_scheduler(_optimizer(), {"type": name, **length, "eta_min_ratio": ratio})
    with pytest.raises(
        TypeError, match=rf"{name} eta_min_ratio must be a number in \[0, 1\] .*, got {shown}$"
    ):
        SCHEDULERS.get(name)(_optimizer(), **length, eta_min_ratio=ratio)
