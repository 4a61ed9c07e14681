"""SPEC 3.2's decay_precedence: mmcv 1.x's weight-decay rules (the default) or mmengine 0.x's."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from regtree_optim import DefaultOptimizerConstructor, build_optimizer

LR = 0.1
WD = 0.01


def _decay(model: nn.Module, paramwise: dict[str, Any]) -> dict[str, float]:
    cfg = {"type": "SGD", "lr": LR, "weight_decay": WD, "paramwise_cfg": paramwise}
    optimizer = build_optimizer(model, cfg)
    return {n: g["weight_decay"] for g in optimizer.param_groups for n in g["param_names"]}


def test_mmcv_is_the_default() -> None:
    model = nn.Sequential(nn.GroupNorm(2, 4))
    assert _decay(model, {"bias_decay_mult": 0}) == _decay(
        model, {"bias_decay_mult": 0, "decay_precedence": "mmcv"}
    )


@pytest.mark.parametrize(("precedence", "norm_bias"), [("mmcv", WD), ("mmengine", WD * 0)])
def test_norm_bias_with_only_bias_decay_mult(precedence: str, norm_bias: float) -> None:
    # The official FCOS config: the head's GroupNorm biases get 1e-4 in mmcv, 0 in mmengine.
    model = nn.Sequential(nn.Conv2d(4, 4, 3), nn.GroupNorm(2, 4))
    decay = _decay(model, {"bias_decay_mult": 0, "decay_precedence": precedence})
    assert decay == {"0.weight": WD, "0.bias": WD * 0, "1.weight": WD, "1.bias": norm_bias}


@pytest.mark.parametrize(("precedence", "dw_bias"), [("mmcv", WD * 0.5), ("mmengine", WD * 0.25)])
def test_depthwise_conv_bias_with_both_multipliers(precedence: str, dw_bias: float) -> None:
    # mmcv tries depthwise before bias; mmengine bias before depthwise.
    model = nn.Sequential(nn.Conv2d(4, 4, 3, groups=4))
    paramwise = {"dwconv_decay_mult": 0.5, "bias_decay_mult": 0.25, "decay_precedence": precedence}
    assert _decay(model, paramwise) == {"0.weight": WD * 0.5, "0.bias": dw_bias}


@pytest.mark.parametrize(("precedence", "dw_bias"), [("mmcv", WD), ("mmengine", WD * 0.25)])
def test_depthwise_conv_bias_with_only_bias_decay_mult(precedence: str, dw_bias: float) -> None:
    model = nn.Sequential(nn.Conv2d(4, 4, 3, groups=4))
    paramwise = {"bias_decay_mult": 0.25, "decay_precedence": precedence}
    assert _decay(model, paramwise) == {"0.weight": WD, "0.bias": dw_bias}


@pytest.mark.parametrize("precedence", ["mmcv", "mmengine"])
def test_norm_decay_mult_decides_norm_layers_in_both(precedence: str) -> None:
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    paramwise = {
        "norm_decay_mult": 0.5,
        "bias_decay_mult": 0.25,
        "flat_decay_mult": 0,
        "decay_precedence": precedence,
    }
    assert _decay(model, paramwise) == {
        "0.weight": WD,
        "0.bias": WD * 0.25,
        "1.weight": WD * 0.5,
        "1.bias": WD * 0.5,
    }


@pytest.mark.parametrize("precedence", ["mmcv", "mmengine"])
def test_flat_decay_mult_alone(precedence: str) -> None:
    model = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4), nn.Conv1d(4, 4, 1, groups=4))
    model.register_parameter("scale", nn.Parameter(torch.ones(1)))
    decay = _decay(model, {"flat_decay_mult": 0, "decay_precedence": precedence})
    if precedence == "mmengine":
        # Every 1-D parameter: no other multiplier is given.
        expected = {n: WD * 0 if p.ndim == 1 else WD for n, p in model.named_parameters()}
    else:
        # Norm layers, depthwise convs and biases are decided first, each with multiplier 1.
        expected = {n: WD for n, _ in model.named_parameters()}
        expected["scale"] = WD * 0
    assert decay == expected


@pytest.mark.parametrize("precedence", ["mmcv", "mmengine"])
def test_lr_rules_do_not_depend_on_the_precedence(precedence: str) -> None:
    model = nn.Sequential(nn.GroupNorm(2, 4), nn.Linear(4, 4))
    cfg = {
        "type": "SGD",
        "lr": LR,
        "weight_decay": WD,
        "paramwise_cfg": {"bias_lr_mult": 3, "decay_precedence": precedence},
    }
    optimizer = build_optimizer(model, cfg)
    lrs = {n: g["lr"] for g in optimizer.param_groups for n in g["param_names"]}
    assert lrs == {"0.weight": LR, "0.bias": LR, "1.weight": LR, "1.bias": LR * 3}


@pytest.mark.parametrize("value", ["mmdet", "MMCV", 1, None])
def test_other_values_are_a_value_error_naming_both(value: object) -> None:
    with pytest.raises(ValueError, match=r"decay_precedence'\] must be 'mmcv' or 'mmengine'"):
        DefaultOptimizerConstructor({"type": "SGD", "lr": LR}, {"decay_precedence": value})
