"""SCHEDULERS and build_scheduler: every torch scheduler by name, nested configs, phases."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn
from torch.optim import lr_scheduler

from regtree_optim import SCHEDULERS, build_optimizer, build_scheduler

STEPS = 1000


def _optimizer() -> torch.optim.Optimizer:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    cfg = {
        "type": "SGD",
        "lr": 0.1,
        "momentum": 0.9,
        "paramwise_cfg": {"bias_lr_mult": 2.0, "custom_keys": {"0.": {"lr_mult": 0.1}}},
    }
    optimizer = build_optimizer(model, cfg)
    return optimizer


def _lrs_over_steps(optimizer: torch.optim.Optimizer, scheduler: Any, steps: int) -> list[Any]:
    history = [[group["lr"] for group in optimizer.param_groups]]
    for _ in range(steps):
        optimizer.step()  # no gradients: nothing moves, but torch sees the order it expects
        scheduler.step()
        history.append([group["lr"] for group in optimizer.param_groups])
    return history


def _torch_concrete_schedulers() -> dict[str, type]:
    # Found the way a reader of torch's module would: every public class that schedules.
    found = {}
    for name, candidate in vars(lr_scheduler).items():
        if (
            inspect.isclass(candidate)
            and not name.startswith("_")
            and issubclass(candidate, lr_scheduler.LRScheduler | lr_scheduler.ReduceLROnPlateau)
            and candidate is not lr_scheduler.LRScheduler
        ):
            found[name] = candidate
    return found


def test_schedulers_holds_every_concrete_torch_scheduler_by_class_name() -> None:
    expected = _torch_concrete_schedulers()
    assert {"CosineAnnealingLR", "OneCycleLR", "ReduceLROnPlateau", "SequentialLR"} <= set(expected)
    assert set(SCHEDULERS) == set(expected)
    for name, cls in expected.items():
        registered = SCHEDULERS.get(name)
        assert isinstance(registered, type), name
        assert issubclass(registered, cls), name
    assert SCHEDULERS.name == "scheduler"
    assert SCHEDULERS.scope == "regtree_optim"
    assert SCHEDULERS.parent is None


def test_the_base_class_and_its_alias_are_not_registered() -> None:
    assert "LRScheduler" not in SCHEDULERS
    assert "_LRScheduler" not in SCHEDULERS


def test_a_mapping_is_built_with_the_optimizer_as_default_argument() -> None:
    optimizer = _optimizer()
    cfg = {"type": "StepLR", "step_size": 3, "gamma": 0.5}
    scheduler = build_scheduler(optimizer, cfg)
    assert type(scheduler) is lr_scheduler.StepLR
    assert scheduler.optimizer is optimizer
    assert cfg == {"type": "StepLR", "step_size": 3, "gamma": 0.5}


def test_an_unknown_scheduler_names_the_registry_and_the_closest_name() -> None:
    with pytest.raises(KeyError, match=r"scheduler.*CosineAnnealingLR"):
        build_scheduler(_optimizer(), {"type": "CosineAnealingLR", "T_max": 3})


def _same_schedule(
    built: Callable[[torch.optim.Optimizer], Any],
    by_hand: Callable[[torch.optim.Optimizer], Any],
    steps: int = STEPS,
) -> None:
    mine, theirs = _optimizer(), _optimizer()
    assert _lrs_over_steps(mine, built(mine), steps) == _lrs_over_steps(
        theirs, by_hand(theirs), steps
    )


def test_phases_equal_the_sequential_schedule_built_by_hand_at_every_step() -> None:
    phases = [
        {"type": "LinearLR", "start_factor": 0.01, "end": 100},
        {"type": "CosineAnnealingLR", "eta_min": 1e-5, "end": STEPS},
    ]

    def by_hand(optimizer: torch.optim.Optimizer) -> Any:
        warmup = lr_scheduler.LinearLR(optimizer, start_factor=0.01, total_iters=100)
        cosine = lr_scheduler.CosineAnnealingLR(optimizer, T_max=900, eta_min=1e-5)
        return lr_scheduler.SequentialLR(optimizer, [warmup, cosine], milestones=[100])

    # The schedule's steps, 0 to end - 1; from end on torch's SequentialLR goes on, ours holds
    # (see test_from_the_last_end_on_the_lr_holds_the_value_of_step_end_minus_1).
    _same_schedule(lambda optimizer: build_scheduler(optimizer, phases), by_hand, STEPS - 1)


def test_three_phases_with_begins_given_and_lengths_defaulted() -> None:
    phases = [
        {"type": "ConstantLR", "factor": 0.5},
        {"type": "LinearLR", "start_factor": 0.2, "begin": 10},
        {"type": "PolynomialLR", "power": 2.0, "begin": 50, "end": 200},
    ]

    def by_hand(optimizer: torch.optim.Optimizer) -> Any:
        first = lr_scheduler.ConstantLR(optimizer, factor=0.5, total_iters=10)
        second = lr_scheduler.LinearLR(optimizer, start_factor=0.2, total_iters=40)
        third = lr_scheduler.PolynomialLR(optimizer, power=2.0, total_iters=150)
        return lr_scheduler.SequentialLR(optimizer, [first, second, third], milestones=[10, 50])

    _same_schedule(lambda optimizer: build_scheduler(optimizer, phases), by_hand, steps=199)


def _lrs_and_momenta(optimizer: torch.optim.Optimizer, scheduler: Any, steps: int) -> list[Any]:
    history = []
    for step in range(steps + 1):
        if step:
            optimizer.step()
            scheduler.step()
        history.append([(group["lr"], group.get("momentum")) for group in optimizer.param_groups])
    return history


HELD_SCHEDULES = [
    pytest.param(
        [
            {"type": "LinearLR", "start_factor": 0.1, "end": 10},
            {"type": "CosineAnnealingLR", "eta_min_ratio": 0.01, "end": 100},
        ],
        id="cosine",  # torch's cosine climbs back to the initial lr past T_max
    ),
    pytest.param(
        [
            {"type": "ConstantLR", "factor": 0.5, "end": 5},
            {"type": "OneCycleLR", "max_lr": 1.0, "end": 100},
        ],
        id="one-cycle",  # torch's OneCycleLR raises past total_steps; it sets momentum too
    ),
    pytest.param(
        [
            {"type": "ConstantLR", "factor": 0.5, "end": 5},
            {"type": "CyclicLR", "base_lr": 0.01, "max_lr": 0.1, "step_size_up": 7, "end": 100},
        ],
        id="cyclic",
    ),
]


@pytest.mark.parametrize("phases", HELD_SCHEDULES)
def test_from_the_last_end_on_the_lr_holds_the_value_of_step_end_minus_1(phases: Any) -> None:
    # As mmengine's schedulers, which update while begin <= step < end: the lr (and the momentum
    # a cyclic scheduler sets) at step end and after is the one of step end - 1.
    optimizer = _optimizer()
    scheduler = build_scheduler(optimizer, phases)
    assert isinstance(scheduler, lr_scheduler.SequentialLR)
    assert scheduler._milestones == [phases[0]["end"]]
    history = _lrs_and_momenta(optimizer, scheduler, 250)
    assert history[98] != history[99]  # still moving at the last step
    assert all(values == history[99] for values in history[100:])
    assert scheduler.get_last_lr() == [lr for lr, _ in history[99]]


def test_the_held_lr_is_the_sequential_schedule_s_at_step_end_minus_1() -> None:
    phases = HELD_SCHEDULES[1].values[0]

    def by_hand(optimizer: torch.optim.Optimizer) -> Any:
        first = lr_scheduler.ConstantLR(optimizer, factor=0.5, total_iters=5)
        cycle = lr_scheduler.OneCycleLR(optimizer, max_lr=1.0, total_steps=95)
        return lr_scheduler.SequentialLR(optimizer, [first, cycle], milestones=[5])

    ours, theirs = _optimizer(), _optimizer()
    held = _lrs_and_momenta(ours, build_scheduler(ours, phases), 120)
    assert held[:100] == _lrs_and_momenta(theirs, by_hand(theirs), 99)


@pytest.mark.parametrize("stop", [40, 99, 100, 150])
@pytest.mark.parametrize("phases", HELD_SCHEDULES)
def test_a_held_schedule_resumes_from_its_state_dict(phases: Any, stop: int) -> None:
    optimizer = _optimizer()
    whole = _lrs_and_momenta(optimizer, build_scheduler(optimizer, phases), 200)
    first = _optimizer()
    scheduler = build_scheduler(first, phases)
    _lrs_and_momenta(first, scheduler, stop)
    saved = scheduler.state_dict()
    assert saved["end"] == 100
    # As a training job resumes: both built afresh, then both states loaded.
    resumed_optimizer = _optimizer()
    resumed = build_scheduler(resumed_optimizer, phases)
    resumed_optimizer.load_state_dict(first.state_dict())
    resumed.load_state_dict(saved)
    rest = _lrs_and_momenta(resumed_optimizer, resumed, 200 - stop)
    assert rest == whole[stop:]


def test_a_last_phase_without_end_keeps_stepping() -> None:
    # Nothing to hold: the last phase runs on, as torch's SequentialLR.
    phases = [
        {"type": "LinearLR", "start_factor": 0.1, "end": 10},
        {"type": "ExponentialLR", "gamma": 0.9},
    ]

    def by_hand(optimizer: torch.optim.Optimizer) -> Any:
        warmup = lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=10)
        decay = lr_scheduler.ExponentialLR(optimizer, gamma=0.9)
        return lr_scheduler.SequentialLR(optimizer, [warmup, decay], milestones=[10])

    _same_schedule(lambda optimizer: build_scheduler(optimizer, phases), by_hand, steps=200)


def test_one_phase_is_that_scheduler_with_its_length_from_end() -> None:
    scheduler = build_scheduler(_optimizer(), [{"type": "CosineAnnealingLR", "end": 40}])
    assert isinstance(scheduler, lr_scheduler.CosineAnnealingLR)
    assert scheduler.T_max == 40


def test_an_explicit_length_wins_over_the_phase_length() -> None:
    scheduler = build_scheduler(
        _optimizer(),
        [
            {"type": "LinearLR", "total_iters": 5, "end": 20},
            {"type": "ExponentialLR", "gamma": 0.9},
        ],
    )
    assert scheduler._schedulers[0].total_iters == 5
    assert scheduler._milestones == [20]


def test_one_cycle_lr_takes_its_total_steps_from_the_phase() -> None:
    # Our choice beyond SPEC 3.4, as mmengine's OneCycleLR: total_steps defaults to end - begin.
    phases = [
        {"type": "LinearLR", "start_factor": 0.1, "end": 5},
        {"type": "OneCycleLR", "max_lr": 0.5, "end": 25},
    ]

    def by_hand(optimizer: torch.optim.Optimizer) -> Any:
        warmup = lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=5)
        cycle = lr_scheduler.OneCycleLR(optimizer, max_lr=0.5, total_steps=20)
        return lr_scheduler.SequentialLR(optimizer, [warmup, cycle], milestones=[5])

    _same_schedule(lambda optimizer: build_scheduler(optimizer, phases), by_hand, steps=24)


def test_one_cycle_lr_with_epochs_keeps_them() -> None:
    cycle = {"type": "OneCycleLR", "max_lr": 0.5, "epochs": 2, "steps_per_epoch": 4, "end": 100}
    scheduler = build_scheduler(_optimizer(), [cycle])
    assert scheduler.total_steps == 8


@pytest.mark.parametrize(
    ("kind", "length", "alternatives"),
    [
        ("CosineAnnealingLR", "T_max", ""),
        ("OneCycleLR", "total_steps", r" \(or epochs and steps_per_epoch\)"),
    ],
)
@pytest.mark.parametrize("phased", [True, False], ids=["last phase", "mapping"])
def test_a_scheduler_without_end_or_length_is_a_type_error_naming_it_and_what_to_give(
    kind: str, length: str, alternatives: str, phased: bool
) -> None:
    # A TypeError, as torch's own for a missing argument (StepLR without step_size).
    last = {"type": kind, "max_lr": 0.5} if kind == "OneCycleLR" else {"type": kind}
    cfg: Any = [{"type": "ConstantLR", "factor": 0.5, "end": 5}, last] if phased else last
    where = rf"phase 1 \({kind}\)" if phased else rf"the scheduler config \({kind}\)"
    with pytest.raises(
        TypeError,
        match=rf"^{where} has no {length} and no end to take it from; give {length}"
        rf"{alternatives}, or an end \(its {length} defaults to end - begin\)$",
    ):
        build_scheduler(_optimizer(), cfg)


def test_a_mapping_without_a_required_length_is_a_type_error_as_torch_s() -> None:
    with pytest.raises(TypeError, match=r"missing required keyword 'step_size'"):
        build_scheduler(_optimizer(), {"type": "StepLR"})


def test_a_mapping_s_bad_bound_names_the_scheduler_config() -> None:
    with pytest.raises(
        TypeError, match=r"^the scheduler config \(LinearLR\): end must be a step number"
    ):
        build_scheduler(_optimizer(), {"type": "LinearLR", "end": 2.5})


def test_a_last_phase_without_end_keeps_torch_s_default_length() -> None:
    # LinearLR's total_iters defaults to 5 in torch: without an end, that default holds.
    phases = [{"type": "ConstantLR", "factor": 0.5, "end": 5}, {"type": "LinearLR"}]
    assert build_scheduler(_optimizer(), phases)._schedulers[1].total_iters == 5


@pytest.mark.parametrize(
    ("cfg", "match"),
    [
        ([{"end": 10}], r"phase 0 of the schedule has no 'type' \(got keys \['end'\]\); name a"),
        ({"T_max": 10}, r"the scheduler config has no 'type' \(got keys \['T_max'\]\)"),
    ],
)
def test_a_config_without_type_is_a_value_error_saying_so(cfg: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        build_scheduler(_optimizer(), cfg)


def test_torch_s_error_in_a_phase_carries_a_note_naming_the_phase() -> None:
    phases = [
        {"type": "LinearLR", "start_factor": 0.1, "end": 5},
        {"type": "StepLR", "step_size": 2, "bogus": 1},
    ]
    with pytest.raises(TypeError, match=r"bogus") as caught:
        build_scheduler(_optimizer(), phases)
    assert caught.value.__notes__[-1] == (
        "regtree_optim: while building phase 1 (StepLR) of the schedule"
    )


def test_begin_and_end_are_never_passed_and_the_config_is_untouched() -> None:
    phases = [
        {"type": "StepLR", "step_size": 2, "end": 10},
        {"type": "ExponentialLR", "gamma": 0.9},
    ]
    before = [dict(phase) for phase in phases]
    scheduler = build_scheduler(_optimizer(), phases)
    assert phases == before
    assert isinstance(scheduler, lr_scheduler.SequentialLR)


def test_phases_that_are_not_contiguous_are_a_value_error_naming_both() -> None:
    phases = [
        {"type": "LinearLR", "start_factor": 0.1, "end": 100},
        {"type": "CosineAnnealingLR", "begin": 120, "end": 1000},
    ]
    with pytest.raises(
        ValueError,
        match=r"phase 0 \(LinearLR\) ends at step 100 but phase 1 \(CosineAnnealingLR\) begins "
        r"at step 120",
    ):
        build_scheduler(_optimizer(), phases)


def test_a_handover_that_neither_phase_gives_is_a_value_error() -> None:
    phases = [{"type": "ConstantLR"}, {"type": "ExponentialLR", "gamma": 0.9}]
    with pytest.raises(ValueError, match=r"phase 0 \(ConstantLR\) has no end and phase 1"):
        build_scheduler(_optimizer(), phases)


def test_a_phase_that_ends_before_it_begins_is_a_value_error() -> None:
    phases = [{"type": "ConstantLR", "end": 10}, {"type": "LinearLR", "end": 10}]
    with pytest.raises(ValueError, match=r"phase 1 \(LinearLR\) ends at step 10, not after"):
        build_scheduler(_optimizer(), phases)


def test_a_schedule_that_does_not_begin_at_zero_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"begins at step 5, but a schedule starts at step 0"):
        build_scheduler(_optimizer(), [{"type": "LinearLR", "begin": 5, "end": 10}])


@pytest.mark.parametrize(
    ("cfg", "error", "match"),
    [
        ("CosineAnnealingLR", TypeError, "must be a mapping"),
        ([], ValueError, "at least one phase"),
        ([{"type": "LinearLR"}, 3], TypeError, r"phase 1 of the schedule must be a mapping"),
        ([{"type": "LinearLR", "end": "10"}], TypeError, r"end must be a step number"),
        ([{"type": "LinearLR", "end": -3}], ValueError, r"end must be >= 0"),
    ],
)
def test_bad_configs_are_refused_with_what_would_work(
    cfg: Any, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        build_scheduler(_optimizer(), cfg)


@pytest.mark.parametrize(
    ("cfg", "match"),
    [
        (
            [
                {"type": "LinearLR", "start_factor": 0.1, "end": 5},
                {"type": "CosineAnnealingLR", "end": 10, "bogus": 1},
            ],
            r"bogus",
        ),
        (
            [{"type": "LinearLR", "start_factor": 0.1, "end": 5}, {"type": "NoSuchLR"}],
            r"'NoSuchLR' is not registered",
        ),
        (
            {
                "type": "SequentialLR",
                "schedulers": [
                    {"type": "LinearLR", "start_factor": 0.1, "total_iters": 2},
                    {"type": "StepLR"},
                ],
                "milestones": [2],
            },
            r"step_size",
        ),
    ],
    ids=["bad keyword in phase 2", "unknown type in phase 2", "nested scheduler"],
)
def test_a_scheduler_that_fails_to_build_leaves_the_optimizer_as_it_was(
    cfg: Any, match: str
) -> None:
    # The schedulers built before the failing one had set every group's lr and initial_lr.
    optimizer = _optimizer()
    before = [dict(group) for group in optimizer.param_groups]
    with pytest.raises(Exception, match=match):
        build_scheduler(optimizer, cfg)
    assert [dict(group) for group in optimizer.param_groups] == before
    # torch's schedulers wrap the optimizer's step in its instance dict, to warn of the order
    # of the steps; that is given back too.
    assert "step" not in vars(optimizer)
    assert not hasattr(optimizer.step, "_wrapped_by_lr_sched")


def test_a_failed_build_keeps_the_step_an_earlier_scheduler_wrapped() -> None:
    optimizer = _optimizer()
    build_scheduler(optimizer, {"type": "ExponentialLR", "gamma": 0.9})
    wrapped = vars(optimizer)["step"]
    with pytest.raises(Exception, match=r"'NoSuchLR' is not registered"):
        build_scheduler(
            optimizer, [{"type": "LinearLR", "start_factor": 0.1, "end": 5}, {"type": "NoSuchLR"}]
        )
    assert vars(optimizer)["step"] is wrapped


@pytest.mark.parametrize(
    ("cfg", "match"),
    [
        (
            {"type": "ExponentialLR", "gamma": "0.9"},
            r"^the scheduler config \(ExponentialLR\): gamma: expected float, got '0\.9' "
            r"\(str\), as the signature of torch\.optim\.lr_scheduler:ExponentialLR annotates "
            r"'gamma'$",
        ),
        (
            [
                {"type": "ConstantLR", "factor": 0.5, "end": 5},
                {"type": "LinearLR", "start_factor": "0.1", "end": 10},
            ],
            r"^phase 1 \(LinearLR\): start_factor: expected float, got '0\.1' \(str\)",
        ),
        (
            {
                "type": "SequentialLR",
                "schedulers": [
                    {"type": "LinearLR", "start_factor": 0.1, "total_iters": 2},
                    {"type": "StepLR", "step_size": 2, "gamma": "0.5"},
                ],
                "milestones": [2],
            },
            r"^the scheduler config \(SequentialLR\): schedulers\[1\]\.gamma: expected float, "
            r"got '0\.5' \(str\), as the signature of torch\.optim\.lr_scheduler:StepLR",
        ),
        (
            {"type": "ChainedScheduler", "schedulers": [{"type": "ExponentialLR", "gamma": [0.9]}]},
            r"schedulers\[0\]\.gamma: expected float, got \[0\.9\] \(list\)",
        ),
        (
            {
                "type": "SequentialLR",
                "schedulers": [
                    [
                        {"type": "LinearLR", "start_factor": 0.5, "end": 3},
                        {"type": "StepLR", "step_size": 2, "gamma": "0.5", "end": 6},
                    ],
                    {"type": "ConstantLR", "factor": 1.0},
                ],
                "milestones": [6],
            },
            r"^the scheduler config \(SequentialLR\): schedulers\[0\]\[1\]\.gamma: expected "
            r"float, got '0\.5' \(str\), as the signature of torch\.optim\.lr_scheduler:StepLR",
        ),
        (
            {"type": "CosineAnnealingLR", "T_max": 10, "eta_min": "1e-6"},
            r"eta_min: expected float \| None, got '1e-6' \(str\), as the signature of "
            r"regtree_optim\._schedulers:CosineAnnealingLR annotates 'eta_min'",
        ),
        (
            {"type": "OneCycleLR", "max_lr": "0.1", "total_steps": 10},
            r"max_lr: expected float \| list\[float\], got '0\.1' \(str\)",
        ),
    ],
    ids=["mapping", "phase", "sequential-child", "chained-child", "child-phase", "ours", "union"],
)
def test_an_option_of_the_wrong_type_is_a_type_error_before_anything_is_built(
    cfg: Any, match: str
) -> None:
    # As an optimizer's options are checked against its signature (SPEC 5.4); torch's
    # schedulers would take a str and fail at a later step().
    optimizer = _optimizer()
    before = [dict(group) for group in optimizer.param_groups]
    with pytest.raises(TypeError, match=match):
        build_scheduler(optimizer, cfg)
    assert [dict(group) for group in optimizer.param_groups] == before
    assert "step" not in vars(optimizer)


def test_a_tensor_lr_is_given_back_too() -> None:
    # torch's schedulers change a tensor lr in place.
    param = nn.Parameter(torch.ones(2))
    lr = torch.tensor(0.5)
    optimizer = torch.optim.SGD([param], lr=lr)
    with pytest.raises(Exception, match=r"'NoSuchLR' is not registered"):
        build_scheduler(
            optimizer, [{"type": "LinearLR", "start_factor": 0.1, "end": 5}, {"type": "NoSuchLR"}]
        )
    assert optimizer.param_groups[0]["lr"] is lr
    assert lr.item() == 0.5
    assert "initial_lr" not in optimizer.param_groups[0]


def test_sequential_lr_builds_its_scheduler_configs_first() -> None:
    cfg = {
        "type": "SequentialLR",
        "schedulers": [
            {"type": "ConstantLR", "factor": 0.1, "total_iters": 20},
            {"type": "ExponentialLR", "gamma": 0.9},
        ],
        "milestones": [20],
    }

    def by_hand(optimizer: torch.optim.Optimizer) -> Any:
        first = lr_scheduler.ConstantLR(optimizer, factor=0.1, total_iters=20)
        second = lr_scheduler.ExponentialLR(optimizer, gamma=0.9)
        return lr_scheduler.SequentialLR(optimizer, [first, second], milestones=[20])

    _same_schedule(lambda optimizer: build_scheduler(optimizer, cfg), by_hand, steps=60)


def test_chained_scheduler_builds_its_scheduler_configs_first() -> None:
    cfg = {
        "type": "ChainedScheduler",
        "schedulers": [
            {"type": "ConstantLR", "factor": 0.1, "total_iters": 20},
            {"type": "ExponentialLR", "gamma": 0.9},
        ],
    }

    def by_hand(optimizer: torch.optim.Optimizer) -> Any:
        first = lr_scheduler.ConstantLR(optimizer, factor=0.1, total_iters=20)
        second = lr_scheduler.ExponentialLR(optimizer, gamma=0.9)
        return lr_scheduler.ChainedScheduler([first, second], optimizer=optimizer)

    _same_schedule(lambda optimizer: build_scheduler(optimizer, cfg), by_hand, steps=60)


def test_reduce_lr_on_plateau_is_built_from_a_config() -> None:
    optimizer = _optimizer()
    scheduler = build_scheduler(optimizer, {"type": "ReduceLROnPlateau", "patience": 0})
    assert isinstance(scheduler, lr_scheduler.ReduceLROnPlateau)
    before = [group["lr"] for group in optimizer.param_groups]
    optimizer.step()
    scheduler.step(1.0)
    scheduler.step(2.0)
    assert [group["lr"] for group in optimizer.param_groups] == [lr * 0.1 for lr in before]
