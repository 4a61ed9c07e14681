"""``SCHEDULERS.validate`` (and ``regtree validate``): configs read as ``build_scheduler`` does."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from regtree.cli import main
from regtree_optim import SCHEDULERS, build_optimizer, build_scheduler

PHASES: list[dict[str, Any]] = [
    {"type": "LinearLR", "start_factor": 0.1, "end": 10},
    {"type": "CosineAnnealingLR", "eta_min_ratio": 0.01, "end": 100},
]


def _optimizer() -> torch.optim.Optimizer:
    return build_optimizer(nn.Linear(2, 2), {"type": "SGD", "lr": 0.1, "momentum": 0.9})


def _build_error(cfg: Any) -> Exception | None:
    try:
        build_scheduler(_optimizer(), cfg)
    except Exception as error:
        return error
    return None


SOUND = [
    pytest.param({"type": "CosineAnnealingLR", "T_max": 10}, id="mapping"),
    pytest.param({"type": "CosineAnnealingLR", "eta_min_ratio": 0.1, "end": 100}, id="with-end"),
    pytest.param(PHASES, id="phases"),
    pytest.param(
        [
            {"type": "ConstantLR", "factor": 0.5, "end": 5},
            {"type": "OneCycleLR", "max_lr": 1.0, "end": 50},
        ],
        id="one-cycle-length-from-end",
    ),
    pytest.param(
        [{"type": "ConstantLR", "factor": 0.5, "end": 5}, {"type": "LinearLR"}],
        id="torch-s-default-length",
    ),
    pytest.param(
        {
            "type": "SequentialLR",
            "schedulers": [
                {"type": "LinearLR", "start_factor": 0.1, "total_iters": 5},
                {"type": "CosineAnnealingLR", "eta_min_ratio": 0.01, "end": 95},
            ],
            "milestones": [5],
        },
        id="sequential-children",
    ),
    pytest.param(
        {
            "type": "ChainedScheduler",
            "schedulers": [
                {"type": "ConstantLR", "factor": 0.5, "total_iters": 5},
                {"type": "ExponentialLR", "gamma": 0.9},
            ],
        },
        id="chained-children",
    ),
    pytest.param(
        {
            "type": "SequentialLR",
            "schedulers": [
                [
                    {"type": "LinearLR", "start_factor": 0.5, "end": 3},
                    {"type": "StepLR", "step_size": 2, "end": 6},
                ],
                {"type": "ConstantLR", "factor": 1.0},
            ],
            "milestones": [6],
        },
        id="sequential-child-in-phases",
        # torch's SequentialLR steps the phased child as it is built: torch's warning, not ours.
        marks=pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step"),
    ),
    pytest.param(
        {
            "type": "ChainedScheduler",
            "schedulers": [[{"type": "LinearLR", "start_factor": 0.5, "end": 3}]],
        },
        id="chained-child-in-phases",
    ),
]


@pytest.mark.parametrize("cfg", SOUND)
def test_a_config_build_scheduler_accepts_has_no_problem(cfg: Any) -> None:
    # optimizer comes from build_scheduler, begin/end are popped and T_max comes from end.
    assert _build_error(cfg) is None
    assert SCHEDULERS.validate(cfg) == []


BAD = [
    pytest.param({"type": "CosineAnnealingLR"}, "T_max", "missing-keyword", id="no-length"),
    pytest.param(
        [PHASES[0], {"type": "OneCycleLR", "max_lr": 1.0}],
        "[1].total_steps",
        "missing-keyword",
        id="last-phase-no-length",
    ),
    pytest.param([PHASES[0], {**PHASES[1], "begin": 20}], "[1].begin", "invalid-value", id="gap"),
    pytest.param(
        [{"type": "ConstantLR"}, {"type": "ExponentialLR", "gamma": 0.9}],
        "[1].begin",
        "missing-keyword",
        id="unknown-handover",
    ),
    pytest.param([{**PHASES[0], "begin": 3}], "[0].begin", "invalid-value", id="not-at-0"),
    pytest.param(
        [PHASES[0], {**PHASES[1], "end": 10}], "[1].end", "invalid-value", id="empty-phase"
    ),
    pytest.param(
        [{**PHASES[0], "end": None}, {**PHASES[1], "begin": 0}],
        "[1].begin",
        "invalid-value",
        id="empty-phase-by-next-begin",
    ),
    pytest.param([{**PHASES[0], "end": "10"}], "[0].end", "wrong-type", id="end-str"),
    pytest.param([{**PHASES[0], "end": -1}], "[0].end", "invalid-value", id="end-negative"),
    pytest.param([], "", "invalid-value", id="empty-list"),
    pytest.param([PHASES[0], 3], "[1]", "invalid-type", id="phase-not-mapping"),
    pytest.param([PHASES[0], {"end": 100}], "[1].type", "missing-type", id="phase-no-type"),
    pytest.param({"T_max": 10}, "type", "missing-type", id="mapping-no-type"),
    pytest.param(
        [PHASES[0], {**PHASES[1], "bogus": 1}], "[1].bogus", "unknown-keyword", id="bad-keyword"
    ),
    pytest.param(
        [PHASES[0], {**PHASES[1], "type": "CosineAnealingLR"}],
        "[1].type",
        "unknown-type",
        id="unknown-type",
    ),
    pytest.param(
        [{**PHASES[0], "start_factor": "0.1"}, PHASES[1]],
        "[0].start_factor",
        "wrong-type",
        id="wrong-type",
    ),
    pytest.param(
        {
            "type": "SequentialLR",
            "schedulers": [
                {"type": "LinearLR", "start_factor": 0.1, "total_iters": 5},
                {"type": "StepLR"},
            ],
            "milestones": [5],
        },
        "schedulers[1].step_size",
        "missing-keyword",
        id="child-missing-keyword",
    ),
    pytest.param(
        {"type": "ChainedScheduler", "schedulers": [{"type": "CosineAnnealingLR"}]},
        "schedulers[0].T_max",
        "missing-keyword",
        id="child-no-length",
    ),
    pytest.param(
        {"type": "SequentialLR", "schedulers": "LinearLR", "milestones": []},
        "schedulers",
        "wrong-type",
        id="children-not-a-list",
    ),
    pytest.param(
        {
            "type": "SequentialLR",
            "schedulers": [
                [{"type": "LinearLR", "end": 3}, {"type": "StepLR", "end": 6}],
                {"type": "ConstantLR"},
            ],
            "milestones": [6],
        },
        "schedulers[0][1].step_size",
        "missing-keyword",
        id="child-phase-missing-keyword",
    ),
]


@pytest.mark.parametrize(("cfg", "path", "kind"), BAD)
def test_a_config_build_scheduler_refuses_has_the_problem_it_refuses_it_for(
    cfg: Any, path: str, kind: str
) -> None:
    error = _build_error(cfg)
    assert error is not None
    problems = SCHEDULERS.validate(cfg)
    assert [(problem.path, problem.kind) for problem in problems][:1] == [(path, kind)]


@pytest.mark.parametrize(
    "cfg",
    [
        {"type": "CosineAnnealingLR"},
        [PHASES[0], {**PHASES[1], "begin": 20}],
        [{**PHASES[0], "by_epoch": False}, PHASES[1]],
        [{"type": "ConstantLR"}, {"type": "ExponentialLR", "gamma": 0.9}],
    ],
    ids=["no-length", "gap", "by_epoch", "unknown-handover"],
)
def test_a_problem_of_reading_the_config_is_the_build_s_own_error(cfg: Any) -> None:
    # One reading of a config, for both: validate reports what build_scheduler raises.
    error = _build_error(cfg)
    [problem] = SCHEDULERS.validate(cfg)
    assert problem.message == str(error)


@pytest.mark.parametrize(
    ("cfg", "path"),
    [
        ({"type": "CosineAnnealingLR", "T_max": 10, "eta_min": 0.1, "eta_min_ratio": 0.1}, ""),
        ({"type": "CosineAnnealingLR", "T_max": 10, "eta_min_ratio": 2.0}, ""),
        ({"type": "CosineAnnealingWarmRestarts", "T_0": 10, "eta_min_ratio": -0.5}, ""),
        ([PHASES[0], {**PHASES[1], "eta_min_ratio": 1.5}], "[1]."),
    ],
    ids=["both-floors", "ratio-above-1", "restarts-ratio-below-0", "phase"],
)
def test_a_floor_the_cosine_classes_refuse_is_their_own_error(cfg: Any, path: str) -> None:
    # validate used to find no problem in these, which build_scheduler refuses as it builds.
    error = _build_error(cfg)
    assert isinstance(error, ValueError)
    assert [(p.path, p.kind, p.message) for p in SCHEDULERS.validate(cfg)] == [
        (f"{path}eta_min_ratio", "invalid-value", str(error))
    ]


def test_the_caller_s_config_is_untouched() -> None:
    cfg = [dict(phase) for phase in PHASES]
    SCHEDULERS.validate(cfg)
    assert cfg == PHASES


def test_a_value_that_is_no_config_is_the_registry_s_type_error() -> None:
    with pytest.raises(TypeError, match=r"a config is a mapping"):
        SCHEDULERS.validate("CosineAnnealingLR")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        (
            "by_epoch",
            True,
            r"phases count steps \(calls of scheduler\.step\(\)\), so drop by_epoch",
        ),
        ("by_epoch", False, r"give begin and end in steps"),
        ("convert_to_iter_based", True, r"phases count steps already, so drop it"),
        ("verbose", False, r"switch to print every update, which this scheduler does not take"),
    ],
)
@pytest.mark.parametrize("phased", [True, False], ids=["phase", "mapping"])
def test_mmengine_s_keys_say_what_they_are_and_what_to_do(
    key: str, value: bool, says: str, phased: bool
) -> None:
    # torch's closest keyword to by_epoch is last_epoch, its resume index: a wrong hint.
    phase = {**PHASES[1], key: value}
    cfg: Any = [PHASES[0], phase] if phased else phase
    where = r"phase 1 \(CosineAnnealingLR\)" if phased else r"the scheduler config"
    optimizer = _optimizer()
    before = [dict(group) for group in optimizer.param_groups]
    with pytest.raises(TypeError, match=rf"^{where}.*: {key}={value!r} is mmengine's") as caught:
        build_scheduler(optimizer, cfg)
    assert [dict(group) for group in optimizer.param_groups] == before
    assert "last_epoch" not in str(caught.value)
    [problem] = SCHEDULERS.validate(cfg)
    assert (problem.path, problem.kind) == (f"[1].{key}" if phased else key, "unknown-keyword")
    assert problem.message == str(caught.value)
    assert problem.suggestions == ()
    assert re.search(says, problem.message)


def test_by_epoch_is_reported_before_the_epoch_counted_bounds_it_explains() -> None:
    # mmdetection's 1x schedule: the warm-up counts iterations, the decay epochs; read as steps
    # the phases overlap, which by_epoch explains.
    cfg = [
        {"type": "LinearLR", "start_factor": 0.001, "by_epoch": False, "begin": 0, "end": 500},
        {"type": "MultiStepLR", "by_epoch": True, "begin": 0, "end": 12, "milestones": [8, 11]},
    ]
    with pytest.raises(TypeError, match=r"^phase 0 \(LinearLR\): by_epoch=False is mmengine's"):
        build_scheduler(_optimizer(), cfg)
    [problem] = SCHEDULERS.validate(cfg)
    assert problem.path == "[0].by_epoch"


def test_an_mmengine_key_a_scheduler_takes_is_its_own() -> None:
    # Only where torch's scheduler lacks the keyword: a scheduler that takes verbose gets it.
    class Verbose(torch.optim.lr_scheduler.ExponentialLR):
        def __init__(self, optimizer: Any, gamma: float, verbose: bool = False) -> None:
            self.verbose = verbose
            super().__init__(optimizer, gamma)

    cfg = [PHASES[0], {"type": Verbose, "gamma": 0.9, "verbose": True}]
    assert SCHEDULERS.validate(cfg) == []
    assert build_scheduler(_optimizer(), cfg)._schedulers[1].verbose is True


def test_regtree_validate_reads_a_scheduler_section(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "train.toml"
    config.write_text(
        '[[scheduler]]\ntype = "LinearLR"\nstart_factor = 0.1\nend = 10\n\n'
        '[[scheduler]]\ntype = "CosineAnnealingLR"\neta_min_ratio = 0.01\nend = 100\n'
    )
    argv = ["validate", str(config), "--registry", "scheduler", "--section", "scheduler"]
    assert main(argv) == 0
    assert "[scheduler]: no problems" in capsys.readouterr().out
    assert main([*argv, "--set", "+scheduler[1].begin=20"]) == 1
    out = capsys.readouterr().out
    assert "scheduler[1].begin: the phases of the schedule must be contiguous" in out
    assert "[scheduler]: 1 problem" in out
    assert main([*argv, "--set", "+scheduler[0].by_epoch=false"]) == 1
    out = capsys.readouterr().out
    assert "scheduler[0].by_epoch: phase 0 (LinearLR): by_epoch=False is mmengine's" in out
    assert "[scheduler]: 1 problem" in out
