"""``explain(model, scheduler=..., at=...)``: the lr each parameter has after some steps."""

from __future__ import annotations

import re
from typing import Any

import pytest
import torch
from torch import nn

from regtree_optim import DefaultOptimizerConstructor, build_optimizer, build_scheduler

OPTIMIZER_CFG: dict[str, Any] = {"type": "SGD", "lr": 0.1, "momentum": 0.9, "weight_decay": 1e-4}
PARAMWISE_CFG: dict[str, Any] = {
    "bias_lr_mult": 2.0,
    "norm_decay_mult": 0.0,
    "custom_keys": {"0.": {"lr_mult": 0.1}},
}
SCHEDULE: list[dict[str, Any]] = [
    {"type": "LinearLR", "start_factor": 0.01, "end": 50},
    {"type": "CosineAnnealingLR", "eta_min_ratio": 0.01, "end": 600},
]


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Conv2d(4, 2, 1))


def _constructor(**paramwise: Any) -> DefaultOptimizerConstructor:
    return DefaultOptimizerConstructor(OPTIMIZER_CFG, {**PARAMWISE_CFG, **paramwise})


def _real_lrs_after(model: nn.Module, steps: int, **paramwise: Any) -> dict[str, Any]:
    optimizer = build_optimizer(
        model, {**OPTIMIZER_CFG, "paramwise_cfg": {**PARAMWISE_CFG, **paramwise}}
    )
    scheduler = build_scheduler(optimizer, SCHEDULE)
    for _ in range(steps):
        optimizer.step()  # no gradients: nothing moves
        scheduler.step()
    return {name: g["lr"] for g in optimizer.param_groups for name in g["param_names"]}


@pytest.mark.parametrize("merge_groups", [True, False])
def test_lr_columns_equal_the_real_optimizer_s_lr_after_that_many_steps(
    merge_groups: bool,
) -> None:
    model = _model()
    at = [0, 1, 49, 50, 300, 599, 600]
    rows = _constructor(merge_groups=merge_groups).explain(model, scheduler=SCHEDULE, at=at)
    for step in at:
        expected = _real_lrs_after(_model(), step, merge_groups=merge_groups)
        assert {row.name: row.lr_at[step] for row in rows} == expected, step
    assert all(list(row.lr_at) == at for row in rows)


def test_negative_steps_count_back_from_the_schedule_s_end() -> None:
    rows = _constructor().explain(_model(), scheduler=SCHEDULE, at=[-1, -600, 599, 0])
    for row in rows:
        assert row.lr_at[-1] == row.lr_at[599]
        assert row.lr_at[-600] == row.lr_at[0]
    assert list(rows[0].lr_at) == [-1, -600, 599, 0]  # as given


def test_steps_past_the_end_show_the_lr_held_from_step_end_minus_1() -> None:
    # The schedule stops updating at its end (as mmengine's); explain steps the real scheduler,
    # so its columns and the real optimizer agree there too, and -1 is the lr that holds.
    model = _model()
    at = [-1, 599, 600, 601, 1000]
    rows = _constructor().explain(model, scheduler=SCHEDULE, at=at)
    for step in at[1:]:
        expected = _real_lrs_after(_model(), step)
        assert {row.name: row.lr_at[step] for row in rows} == expected, step
    for row in rows:
        assert row.lr_at[1000] == row.lr_at[600] == row.lr_at[599] == row.lr_at[-1]


def test_explain_trains_nothing() -> None:
    model = _model()
    before = {name: param.detach().clone() for name, param in model.named_parameters()}
    buffers = {name: buffer.clone() for name, buffer in model.named_buffers()}
    _constructor().explain(model, scheduler=SCHEDULE, at=[0, 300, -1])
    for name, param in model.named_parameters():
        assert torch.equal(param, before[name]), name
        assert param.grad is None, name
    for name, buffer in model.named_buffers():
        assert torch.equal(buffer, buffers[name]), name


@pytest.mark.parametrize(
    "freezing",
    [
        {"rules": [{"match": "0.*", "freeze": True}]},
        {
            "layer_decay": {
                "rate": 0.5,
                "depth": [[r"(\d)\.", 0]],
                "num_layers": 3,
                "freeze_below": 0.3,
            }
        },
    ],
    ids=["freeze rule", "freeze_below"],
)
def test_explain_freezes_nothing_and_gives_the_unscheduled_rows(freezing: dict[str, Any]) -> None:
    # Building the optimizer to step its schedule must not leave the model frozen, nor change
    # the rows (a parameter the build froze would read as frozen in the model).
    model = _model()
    plain = _constructor(**freezing).explain(model)
    rows = _constructor(**freezing).explain(model, scheduler=SCHEDULE, at=[0, 300])
    assert all(param.requires_grad for param in model.parameters())
    assert [(row.name, row.rule, row.lr) for row in rows] == [
        (row.name, row.rule, row.lr) for row in plain
    ]
    assert any("frozen by" in row.rule for row in rows)


class _HalvesTheLr(DefaultOptimizerConstructor):
    # Overrides __call__: the optimizer it returns is not the one its groups describe.
    def __call__(self, model: nn.Module) -> torch.optim.Optimizer:
        optimizer = super().__call__(model)
        for group in optimizer.param_groups:
            group["lr"] = group["lr"] * 0.5
        return optimizer


class _OwnConvGroups(DefaultOptimizerConstructor):
    # An mmcv-era add_params override that places the last conv in a group of its own.
    def add_params(
        self,
        params: list[dict[str, Any]],
        module: nn.Module,
        prefix: str = "",
        is_dcn_module: bool | float | None = None,
    ) -> None:
        if prefix == "2":
            assert self.base_lr is not None
            params.append({"params": list(module.parameters()), "lr": self.base_lr * 5})
            return
        super().add_params(params, module, prefix, is_dcn_module)


_ROUTED_CFG: dict[str, Any] = {
    "type": "RoutedOptimizer",
    "optimizers": {"a": {"type": "AdamW", "lr": 0.01}, "b": {"type": "SGD", "lr": 0.1}},
    "default": "a",
}


@pytest.mark.parametrize(
    "constructor",
    [
        _HalvesTheLr(OPTIMIZER_CFG, PARAMWISE_CFG),
        _OwnConvGroups(OPTIMIZER_CFG, PARAMWISE_CFG),
        DefaultOptimizerConstructor(
            _ROUTED_CFG, {"rules": [{"match": "2.*", "optimizer": "b", "lr_mult": 3.0}]}
        ),
    ],
    ids=["__call__ override", "add_params override", "RoutedOptimizer"],
)
def test_lr_columns_equal_the_lr_of_the_optimizer_the_constructor_returns(
    constructor: DefaultOptimizerConstructor,
) -> None:
    at = [0, 1, 50, 599]
    rows = constructor.explain(_model(), scheduler=SCHEDULE, at=at)
    optimizer = constructor(_model())
    scheduler = build_scheduler(optimizer, SCHEDULE)
    for step in range(max(at) + 1):
        if step:
            optimizer.step()  # no gradients: nothing moves
            scheduler.step()
        if step in at:
            real = {name: g["lr"] for g in optimizer.param_groups for name in g["param_names"]}
            assert {row.name: row.lr_at[step] for row in rows} == real, step


def test_an_overridden_call_leaves_the_model_as_it_found_it() -> None:
    # Its optimizer is built with __call__, which freezes what the rules freeze: given back.
    model = _model()
    constructor = _HalvesTheLr(OPTIMIZER_CFG, {"rules": [{"match": "0.*", "freeze": True}]})
    rows = constructor.explain(model, scheduler=SCHEDULE, at=[0, 300])
    assert all(param.requires_grad for param in model.parameters())
    assert [(row.name, row.rule) for row in rows] == [
        (row.name, row.rule) for row in constructor.explain(model)
    ]
    assert any("frozen by" in row.rule for row in rows)


class _Shared(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        shared = nn.Linear(2, 2)
        self.p, self.q, self.c = nn.Sequential(shared), nn.Sequential(shared), nn.Linear(2, 2)


@pytest.mark.parametrize(
    ("model", "paramwise", "match"),
    [
        (
            _model,
            {"custom_keys": {"nomatch": {"lr_mult": 0.1}}, "rules": [{"match": "zz*"}]},
            r"(matches|selects) no parameter",
        ),
        (_Shared, {"bypass_duplicate": True, "bias_lr_mult": 2.0}, r"is the same tensor as"),
    ],
    ids=["unused custom key and rule", "shared parameters skipped"],
)
def test_each_warning_appears_once_as_without_a_schedule(
    model: type[nn.Module], paramwise: dict[str, Any], match: str
) -> None:
    constructor = DefaultOptimizerConstructor({"type": "SGD", "lr": 0.1}, paramwise)
    with pytest.warns(UserWarning, match=match) as plain:
        constructor.explain(model())
    with pytest.warns(UserWarning, match=match) as scheduled:
        constructor.explain(model(), scheduler=SCHEDULE, at=[0, 300])
    assert len(plain) >= 2
    assert [str(w.message) for w in scheduled] == [str(w.message) for w in plain]


def test_a_model_without_parameters_is_a_value_error_with_a_schedule_too() -> None:
    with pytest.raises(
        ValueError, match=r"Identity has no parameters, so torch\.optim\.sgd:SGD would have"
    ):
        DefaultOptimizerConstructor(OPTIMIZER_CFG).explain(
            nn.Identity(), scheduler=SCHEDULE, at=[0]
        )


def test_a_schedule_that_fails_to_build_leaves_the_model_unfrozen() -> None:
    model = _model()
    constructor = _constructor(rules=[{"match": "0.*", "freeze": True}])
    with pytest.raises(TypeError, match=r"step_siz"):
        constructor.explain(model, scheduler={"type": "StepLR", "step_siz": 3}, at=[1])
    assert all(param.requires_grad for param in model.parameters())


def test_a_tensor_lr_of_the_config_is_not_stepped() -> None:
    # torch keeps the config's tensor as the group's lr, and a scheduler changes it in place.
    lr = torch.tensor(0.5)
    constructor = DefaultOptimizerConstructor({"type": "SGD", "lr": lr}, {"bias_lr_mult": 2.0})
    rows = constructor.explain(_model(), scheduler=SCHEDULE, at=[0, 300])
    assert lr.item() == 0.5
    assert constructor.optimizer_cfg["lr"] is lr
    # Each step's lr as it was then, not the tensor as the last step left it.
    assert float(rows[0].lr_at[0]) == pytest.approx(0.5 * 0.01)
    assert float(rows[0].lr_at[300]) != pytest.approx(float(rows[0].lr_at[0]))


def test_the_table_prints_one_column_per_step() -> None:
    rows = _constructor().explain(_model(), scheduler=SCHEDULE, at=[0, 300, -1])
    header, _, *lines = str(rows).splitlines()
    assert header.split() == [
        "group", "name", "shape", "lr", "lr@0", "lr@300", "lr@-1", "weight_decay", "rule",
    ]  # fmt: skip
    first = re.split(r"\s{2,}", lines[0])  # columns are two spaces apart at least
    assert first[1] == "0.weight"
    assert float(first[4]) == rows[0].lr_at[0]
    assert float(first[6]) == rows[0].lr_at[-1]


def test_without_a_schedule_rows_have_no_lr_columns() -> None:
    rows = _constructor().explain(_model())
    assert all(row.lr_at == {} for row in rows)
    assert "lr@" not in str(rows)


def test_a_negative_step_without_an_end_is_a_value_error() -> None:
    open_ended = [SCHEDULE[0], {"type": "ExponentialLR", "gamma": 0.99}]
    with pytest.raises(ValueError, match=r"step -1 counts back from the end .* has no end"):
        _constructor().explain(_model(), scheduler=open_ended, at=[0, -1])
    single = {"type": "CosineAnnealingLR", "T_max": 100}
    with pytest.raises(ValueError, match=r"step -1 counts back"):
        _constructor().explain(_model(), scheduler=single, at=[-1])


def test_a_step_before_the_start_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"step -601 is before the schedule's start"):
        _constructor().explain(_model(), scheduler=SCHEDULE, at=[-601])


def test_at_and_scheduler_go_together() -> None:
    with pytest.raises(ValueError, match=r"scheduler= and at= together"):
        _constructor().explain(_model(), at=[0])
    with pytest.raises(ValueError, match=r"scheduler= and at= together"):
        _constructor().explain(_model(), scheduler=SCHEDULE)


@pytest.mark.parametrize("at", [[0.5], ["3"], "0,1", [True]])
def test_steps_must_be_ints(at: Any) -> None:
    with pytest.raises(TypeError, match=r"step numbers \(ints\)"):
        _constructor().explain(_model(), scheduler=SCHEDULE, at=at)


@pytest.mark.parametrize(
    "plateau",
    [{"type": "ReduceLROnPlateau"}, [{"type": "ReduceLROnPlateau", "patience": 1, "end": 10}]],
    ids=["mapping", "one-phase"],
)
def test_a_metric_driven_scheduler_shows_step_0_only(plateau: Any) -> None:
    # Its step() takes the validation loss: without training it has no lr after step 0.
    rows = _constructor().explain(_model(), scheduler=plateau, at=[0])
    assert all(row.lr_at == {0: row.lr} for row in rows)
    with pytest.raises(
        ValueError,
        match=r"ReduceLROnPlateau sets the lr from a metric .* explain cannot step it without "
        r"training: step 3 has no lr to show; ask for at=\[0\]",
    ):
        _constructor().explain(_model(), scheduler=plateau, at=[0, 3])
