"""mmcv's reference model: both tables of issue 3, merged and with merge_groups=False."""

from __future__ import annotations

from typing import Any

import pytest
from torch import nn
from torch.optim import Optimizer

from regtree_optim import build_optimizer

# The optimizer config of the reference case (the sgd_cfg fixture).
BASE_LR = 0.01
BASE_WD = 0.0001
MOMENTUM = 0.9

# name -> (lr, weight_decay), as mmcv computes them: base * mult, compared with ==.
RULES_TABLE: dict[str, tuple[float, float]] = {
    "param1": (BASE_LR, BASE_WD),
    "conv1.weight": (BASE_LR, BASE_WD),
    "conv2.weight": (BASE_LR, BASE_WD),
    "conv2.bias": (BASE_LR * 2, BASE_WD * 0.5),
    "bn.weight": (BASE_LR, BASE_WD * 0),
    "bn.bias": (BASE_LR, BASE_WD * 0),
    "sub.param1": (BASE_LR, BASE_WD),
    "sub.conv1.weight": (BASE_LR, BASE_WD * 0.1),
    "sub.conv1.bias": (BASE_LR * 2, BASE_WD * 0.1),
    "sub.gn.weight": (BASE_LR, BASE_WD * 0),
    "sub.gn.bias": (BASE_LR, BASE_WD * 0),
    "dcn.weight": (BASE_LR, BASE_WD),
    "dcn.conv_offset.weight": (BASE_LR * 0.1, BASE_WD),
    "dcn.conv_offset.bias": (BASE_LR * 0.1, BASE_WD),
}

CUSTOM_TABLE: dict[str, tuple[float, float]] = {
    "param1": (BASE_LR * 10, BASE_WD),
    "conv1.weight": (BASE_LR, BASE_WD),
    "conv2.weight": (BASE_LR, BASE_WD),
    "conv2.bias": (BASE_LR, BASE_WD),
    "bn.weight": (BASE_LR, BASE_WD * 0.5),
    "bn.bias": (BASE_LR, BASE_WD * 0.5),
    "sub.param1": (BASE_LR * 10, BASE_WD),
    "sub.conv1.weight": (BASE_LR * 0.1, BASE_WD * 0),
    "sub.conv1.bias": (BASE_LR * 0.1, BASE_WD * 0),
    "sub.gn.weight": (BASE_LR * 0.01, BASE_WD),
    "sub.gn.bias": (BASE_LR * 0.01, BASE_WD),
    "dcn.weight": (BASE_LR, BASE_WD),
    "dcn.conv_offset.weight": (BASE_LR, BASE_WD),
    "dcn.conv_offset.bias": (BASE_LR, BASE_WD),
}


def test_reference_config_matches_fixture(sgd_cfg: dict[str, Any]) -> None:
    assert (sgd_cfg["lr"], sgd_cfg["weight_decay"], sgd_cfg["momentum"]) == (
        BASE_LR,
        BASE_WD,
        MOMENTUM,
    )


# Each reference config (the fixture that builds it) with the table mmcv gives for it.
BOTH_TABLES = pytest.mark.parametrize(
    ("paramwise_fixture", "table"),
    [("rules_cfg", RULES_TABLE), ("custom_cfg", CUSTOM_TABLE)],
)


def _settings_by_name(optimizer: Optimizer) -> dict[str, tuple[float, float]]:
    settings: dict[str, tuple[float, float]] = {}
    for group in optimizer.param_groups:
        assert group["momentum"] == MOMENTUM
        assert len(group["param_names"]) == len(group["params"])
        for name in group["param_names"]:
            settings[name] = (group["lr"], group["weight_decay"])
    return settings


def _check_tensors(model: nn.Module, optimizer: Optimizer) -> None:
    by_name = dict(model.named_parameters())
    for group in optimizer.param_groups:
        for name, param in zip(group["param_names"], group["params"], strict=True):
            assert param is by_name[name]


@BOTH_TABLES
def test_reference_table_merged(
    request: pytest.FixtureRequest,
    model: nn.Module,
    sgd_cfg: dict[str, Any],
    paramwise_fixture: str,
    table: dict[str, tuple[float, float]],
    reference_names: list[str],
) -> None:
    paramwise_cfg = request.getfixturevalue(paramwise_fixture)
    optimizer = build_optimizer(model, {**sgd_cfg, "paramwise_cfg": paramwise_cfg})
    assert _settings_by_name(optimizer) == table
    _check_tensors(model, optimizer)
    # One group per distinct setting, in order of first appearance, parameters in model order.
    distinct: list[tuple[float, float]] = []
    for name in reference_names:
        if table[name] not in distinct:
            distinct.append(table[name])
    assert [(g["lr"], g["weight_decay"]) for g in optimizer.param_groups] == distinct
    flattened = [name for group in optimizer.param_groups for name in group["param_names"]]
    assert sorted(flattened, key=reference_names.index) == reference_names
    for group in optimizer.param_groups:
        names = group["param_names"]
        assert names == sorted(names, key=reference_names.index)


@BOTH_TABLES
def test_reference_table_one_group_per_parameter(
    request: pytest.FixtureRequest,
    model: nn.Module,
    sgd_cfg: dict[str, Any],
    paramwise_fixture: str,
    table: dict[str, tuple[float, float]],
    reference_names: list[str],
) -> None:
    paramwise_cfg = {**request.getfixturevalue(paramwise_fixture), "merge_groups": False}
    optimizer = build_optimizer(model, {**sgd_cfg, "paramwise_cfg": paramwise_cfg})
    # mmcv's layout: one group per parameter, in model order.
    assert [g["param_names"] for g in optimizer.param_groups] == [[n] for n in reference_names]
    assert _settings_by_name(optimizer) == table
    _check_tensors(model, optimizer)


def test_reference_table_values_are_exact_products(
    model: nn.Module, sgd_cfg: dict[str, Any], rules_cfg: dict[str, Any]
) -> None:
    optimizer = build_optimizer(model, {**sgd_cfg, "paramwise_cfg": rules_cfg})
    settings = _settings_by_name(optimizer)
    # 0.01 * 0.1 is not 0.001 in binary floating point; mmcv's value is the product.
    assert settings["dcn.conv_offset.weight"][0] == 0.01 * 0.1
    assert settings["sub.conv1.weight"][1] == 0.0001 * 0.1
