"""SPEC 3.1: the configs are read when the constructor is called, not only when it is created."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch
from torch import nn

from regtree_optim import DefaultOptimizerConstructor, build_scheduler


def _lrs(optimizer: torch.optim.Optimizer) -> dict[str, float]:
    return {n: g["lr"] for g in optimizer.param_groups for n in g["param_names"]}


def _model() -> nn.Module:
    return nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))


def test_an_edit_in_place_after_construction_is_honoured() -> None:
    paramwise: dict[str, Any] = {"bias_lr_mult": 2}
    constructor = DefaultOptimizerConstructor({"type": "SGD", "lr": 0.1}, paramwise)
    paramwise["bias_lr_mult"] = 5
    assert constructor.paramwise_cfg["bias_lr_mult"] == 5
    assert _lrs(constructor(_model()))["0.bias"] == 0.1 * 5
    assert _lrs(constructor(_model()))["0.bias"] == 0.1 * 5


def test_an_edit_of_the_optimizer_cfg_is_honoured_and_updates_base_lr() -> None:
    optimizer_cfg: dict[str, Any] = {"type": "SGD", "lr": 0.1}
    constructor = DefaultOptimizerConstructor(optimizer_cfg, {"bias_lr_mult": 2})
    optimizer_cfg["lr"] = 0.5
    assert _lrs(constructor(_model()))["0.bias"] == 0.5 * 2
    assert constructor.base_lr == 0.5


def test_reassigned_configs_are_honoured() -> None:
    constructor = DefaultOptimizerConstructor({"type": "SGD", "lr": 0.1}, {"bias_lr_mult": 2})
    constructor.paramwise_cfg = {"custom_keys": {"1.": {"lr_mult": 0.5}}}
    assert _lrs(constructor(_model())) == {
        "0.weight": 0.1,
        "0.bias": 0.1,
        "1.weight": 0.1 * 0.5,
        "1.bias": 0.1 * 0.5,
    }
    constructor.optimizer_cfg = {"type": "SGD", "lr": 1.0}
    assert _lrs(constructor(_model()))["1.bias"] == 1.0 * 0.5


def test_an_invalid_edit_is_reported_at_the_call() -> None:
    paramwise: dict[str, Any] = {"bias_lr_mult": 2}
    constructor = DefaultOptimizerConstructor({"type": "SGD", "lr": 0.1}, paramwise)
    paramwise["bias_lr_mul"] = 3
    with pytest.raises(ValueError, match=r"Unknown paramwise_cfg key 'bias_lr_mul'"):
        constructor(_model())
    with pytest.raises(ValueError, match=r"Unknown paramwise_cfg key 'bias_lr_mul'"):
        constructor.explain(_model())
    del paramwise["bias_lr_mul"]
    paramwise["norm_decay_mult"] = 0  # the optimizer config has no weight_decay
    with pytest.raises(ValueError, match=r"norm_decay_mult=0 but optimizer_cfg has no weight_"):
        constructor(_model())
    constructor.paramwise_cfg = ["bias_lr_mult"]  # type: ignore[assignment]
    with pytest.raises(TypeError, match=r"paramwise_cfg must be a mapping"):
        constructor(_model())


def test_an_edit_to_an_equal_value_of_another_type_is_validated_again() -> None:
    # 1 == True: an edit from one to the other must not pass as "unchanged".
    optimizer_cfg: dict[str, Any] = {"type": "SGD", "lr": 1}
    paramwise: dict[str, Any] = {"bias_lr_mult": 1}
    constructor = DefaultOptimizerConstructor(optimizer_cfg, paramwise)
    constructor(_model())
    optimizer_cfg["lr"] = True
    with pytest.raises(TypeError, match=r"optimizer_cfg\['lr'\] must be a real number .* got True"):
        constructor(_model())
    optimizer_cfg["lr"] = 1
    paramwise["bias_lr_mult"] = True
    with pytest.raises(TypeError, match=r"paramwise_cfg\['bias_lr_mult'\] must be a real number"):
        constructor(_model())


def test_an_mmcv_subclass_updating_paramwise_cfg_in_its_init() -> None:
    class NormFreeConstructor(DefaultOptimizerConstructor):
        def __init__(self, optimizer_cfg: Any, paramwise_cfg: Any = None) -> None:
            super().__init__(optimizer_cfg, paramwise_cfg)
            self.paramwise_cfg.update({"norm_decay_mult": 0.0})

    cfg = {"type": "SGD", "lr": 0.1, "weight_decay": 0.01}
    optimizer = NormFreeConstructor(cfg, {"bias_lr_mult": 2})(_model())
    decay = {n: g["weight_decay"] for g in optimizer.param_groups for n in g["param_names"]}
    assert decay == {"0.weight": 0.01, "0.bias": 0.01, "1.weight": 0.0, "1.bias": 0.0}


def test_an_undeclared_key_warns_once_however_often_the_configs_change() -> None:
    class ReadsItsOwnKey(DefaultOptimizerConstructor):
        pass

    paramwise: dict[str, Any] = {"head_lr": 2}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        constructor = ReadsItsOwnKey({"type": "SGD", "lr": 0.1}, paramwise)
        paramwise["bias_lr_mult"] = 2
        constructor(_model())
        constructor(_model())
    assert [str(w.message).split(";")[0] for w in caught] == [
        f"paramwise_cfg key 'head_lr' is not declared by {__name__}:"
        "test_an_undeclared_key_warns_once_however_often_the_configs_change.<locals>."
        "ReadsItsOwnKey"
    ]


@pytest.mark.parametrize("merge_groups", [True, False])
def test_training_never_changes_a_tensor_lr_of_the_configs(merge_groups: bool) -> None:
    # torch keeps the tensor it is given as a group's lr, and its schedulers fill_ it in place.
    lr, head_lr, decay = torch.tensor(0.1), torch.tensor(0.5), torch.tensor(0.01)
    paramwise = {
        "bias_lr_mult": 2.0,
        "custom_keys": {"1.": {"lr": head_lr}},
        "merge_groups": merge_groups,
    }
    constructor = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": lr, "weight_decay": decay}, paramwise
    )
    optimizer = constructor(_model())
    scheduler = build_scheduler(optimizer, {"type": "StepLR", "step_size": 1, "gamma": 0.5})
    for _ in range(3):
        optimizer.step()
        scheduler.step()
    assert float(optimizer.param_groups[0]["lr"]) == pytest.approx(0.1 / 8)  # it was trained
    assert constructor.optimizer_cfg["lr"] is lr
    assert (float(lr), float(head_lr), float(constructor.base_lr)) == pytest.approx((0.1, 0.5, 0.1))
    assert optimizer.defaults["lr"] is not lr  # a group added later starts from 0.1 too
    assert {n: float(v) for n, v in _lrs(constructor(_model())).items()} == pytest.approx(
        {"0.weight": 0.1, "0.bias": 0.2, "1.weight": 0.5, "1.bias": 0.5}
    )


def test_each_group_gets_its_own_tensor_lr() -> None:
    # One tensor in several groups: a per-group schedule would write each group's lr into it.
    constructor = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": torch.tensor(1.0)}, {"bias_lr_mult": 1.0, "merge_groups": False}
    )
    optimizer = constructor(_model())
    factors = [0.1, 0.2, 0.3, 0.4]
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, [lambda step, f=f: f ** (step > 0) for f in factors]
    )
    optimizer.step()
    scheduler.step()
    assert [float(g["lr"]) for g in optimizer.param_groups] == pytest.approx(factors)


def test_a_tensor_lr_that_requires_grad_stays_the_user_s_own() -> None:
    # A learned lr (differentiable=True): a copy would cut it off from its graph.
    lr = torch.tensor(0.1, requires_grad=True)
    model = nn.Linear(2, 1)
    optimizer = DefaultOptimizerConstructor({"type": "SGD", "lr": lr, "differentiable": True})(
        model
    )
    assert optimizer.param_groups[0]["lr"] is lr
    assert optimizer.defaults["lr"] is lr
