"""Group layout: one group without paramwise_cfg, merging, frozen parameters, param_names."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from regtree_optim import build_optimizer


@pytest.mark.parametrize("paramwise_cfg", [None, {}])
def test_no_paramwise_cfg_gives_one_group(
    model: nn.Module, sgd_cfg: dict[str, Any], paramwise_cfg: dict[str, Any] | None
) -> None:
    optimizer = build_optimizer(model, {**sgd_cfg, "paramwise_cfg": paramwise_cfg})
    assert len(optimizer.param_groups) == 1
    (group,) = optimizer.param_groups
    names, params = zip(*model.named_parameters(), strict=True)
    assert group["param_names"] == list(names)
    assert all(a is b for a, b in zip(group["params"], params, strict=True))
    assert (group["lr"], group["weight_decay"], group["momentum"]) == (
        sgd_cfg["lr"],
        sgd_cfg["weight_decay"],
        sgd_cfg["momentum"],
    )


def test_paramwise_cfg_without_effective_rules_gives_one_group(
    model: nn.Module, sgd_cfg: dict[str, Any], reference_names: list[str]
) -> None:
    optimizer = build_optimizer(model, {**sgd_cfg, "paramwise_cfg": {"bypass_duplicate": True}})
    assert [g["param_names"] for g in optimizer.param_groups] == [reference_names]


def test_every_group_carries_param_names_matching_params(
    model: nn.Module, sgd_cfg: dict[str, Any], rules_cfg: dict[str, Any]
) -> None:
    for merge in (True, False):
        cfg = {**sgd_cfg, "paramwise_cfg": {**rules_cfg, "merge_groups": merge}}
        optimizer = build_optimizer(model, cfg)
        by_name = dict(model.named_parameters())
        for group in optimizer.param_groups:
            assert [by_name[n] for n in group["param_names"]] == group["params"]


def test_frozen_parameters_keep_the_optimizer_defaults(
    model: nn.Module, sgd_cfg: dict[str, Any], rules_cfg: dict[str, Any]
) -> None:
    model.conv2.requires_grad_(False)
    model.bn.weight.requires_grad_(False)
    custom = {"conv2": {"lr_mult": 5}, "bn": {"decay_mult": 3}}
    for merge in (True, False):
        paramwise = {**rules_cfg, "custom_keys": custom, "merge_groups": merge}
        optimizer = build_optimizer(model, {**sgd_cfg, "paramwise_cfg": paramwise})
        by_name = {n: g for g in optimizer.param_groups for n in g["param_names"]}
        for name in ("conv2.weight", "conv2.bias", "bn.weight"):
            assert (by_name[name]["lr"], by_name[name]["weight_decay"]) == (
                sgd_cfg["lr"],
                sgd_cfg["weight_decay"],
            ), name
        assert by_name["bn.bias"]["weight_decay"] == sgd_cfg["weight_decay"] * 3


def test_merge_groups_keeps_model_order_within_and_first_appearance_across() -> None:
    model = nn.Sequential(*[nn.Linear(2, 2) for _ in range(3)])
    cfg = {"type": "SGD", "lr": 1.0, "paramwise_cfg": {"bias_lr_mult": 2}}
    optimizer = build_optimizer(model, cfg)
    assert [g["param_names"] for g in optimizer.param_groups] == [
        ["0.weight", "1.weight", "2.weight"],
        ["0.bias", "1.bias", "2.bias"],
    ]
    assert [g["lr"] for g in optimizer.param_groups] == [1.0, 2.0]


def test_merge_groups_false_gives_one_group_per_parameter_in_model_order() -> None:
    model = nn.Sequential(*[nn.Linear(2, 2) for _ in range(3)])
    model[1].requires_grad_(False)
    cfg = {"type": "SGD", "lr": 1.0, "paramwise_cfg": {"merge_groups": False}}
    optimizer = build_optimizer(model, cfg)
    assert [g["param_names"] for g in optimizer.param_groups] == [
        [name] for name, _ in model.named_parameters()
    ]


def test_custom_options_merge_only_when_equal() -> None:
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2))
    custom = {
        "0.": {"momentum": 0.5},
        "1.": {"momentum": 0.5},
        "2.": {"momentum": 0.7},
    }
    cfg = {"type": "SGD", "lr": 1.0, "momentum": 0.9, "paramwise_cfg": {"custom_keys": custom}}
    optimizer = build_optimizer(model, cfg)
    assert [(g["param_names"], g["momentum"]) for g in optimizer.param_groups] == [
        (["0.weight", "0.bias", "1.weight", "1.bias"], 0.5),
        (["2.weight", "2.bias"], 0.7),
    ]


def test_unhashable_custom_option_is_copied_into_the_group() -> None:
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    betas = [0.8, 0.9]
    cfg = {"type": "Adam", "lr": 1.0, "paramwise_cfg": {"custom_keys": {"1.": {"betas": betas}}}}
    optimizer = build_optimizer(model, cfg)
    assert [g["betas"] for g in optimizer.param_groups] == [(0.9, 0.999), betas]
    model(torch.ones(1, 2)).sum().backward()
    optimizer.step()


class _SgdWithOwnAddParamGroup(torch.optim.SGD):
    """An optimizer that overrides add_param_group, so its groups are never split afterwards."""

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        super().add_param_group(param_group)


@pytest.mark.parametrize("paramwise_fixture", ["rules_cfg", "custom_cfg"])
def test_one_group_per_parameter_is_the_same_however_it_is_built(
    request: pytest.FixtureRequest,
    model: nn.Module,
    sgd_cfg: dict[str, Any],
    paramwise_fixture: str,
) -> None:
    model.bn.requires_grad_(False)
    paramwise = {**request.getfixturevalue(paramwise_fixture), "merge_groups": False}
    split = build_optimizer(model, {**sgd_cfg, "paramwise_cfg": paramwise})
    added = build_optimizer(
        model, {**sgd_cfg, "type": _SgdWithOwnAddParamGroup, "paramwise_cfg": paramwise}
    )
    assert len(split.param_groups) == len(added.param_groups) == len(list(model.parameters()))
    for a, b in zip(split.param_groups, added.param_groups, strict=True):
        assert list(a) == list(b)  # same keys, same order
        assert {k: v for k, v in a.items() if k != "params"} == {
            k: v for k, v in b.items() if k != "params"
        }
        assert a["params"][0] is b["params"][0]
    assert split.state_dict()["param_groups"] == added.state_dict()["param_groups"]


def test_lbfgs_keeps_its_single_group_rule() -> None:
    cfg = {"type": "LBFGS", "lr": 1.0, "paramwise_cfg": {"merge_groups": False}}
    one = nn.Module()
    one.w = nn.Parameter(torch.ones(2))
    assert len(build_optimizer(one, cfg).param_groups) == 1
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
        build_optimizer(nn.Linear(2, 2), cfg)


def test_entries_with_different_list_betas_keep_separate_groups() -> None:
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    custom = {"0.": {"betas": [0.8, 0.9]}, "1.": {"betas": [0.7, 0.9]}}
    cfg = {"type": "Adam", "lr": 1.0, "paramwise_cfg": {"custom_keys": custom}}
    optimizer = build_optimizer(model, cfg)
    assert [(g["param_names"], g["betas"]) for g in optimizer.param_groups] == [
        (["0.weight", "0.bias"], [0.8, 0.9]),
        (["1.weight", "1.bias"], [0.7, 0.9]),
    ]


def test_an_option_set_to_the_optimizers_own_value_is_the_same_setting() -> None:
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2))
    custom = {
        "0.": {"momentum": 0.9},  # the config's own momentum
        "1.": {"dampening": 0, "lr_mult": 1},  # SGD's default dampening, lr * 1
    }
    cfg = {"type": "SGD", "lr": 1.0, "momentum": 0.9, "paramwise_cfg": {"custom_keys": custom}}
    optimizer = build_optimizer(model, cfg)
    assert len(optimizer.param_groups) == 1
    assert optimizer.param_groups[0]["param_names"] == [n for n, _ in model.named_parameters()]


def test_equal_list_and_tuple_options_share_a_group() -> None:
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2))
    # A config file gives lists; Adam's own betas are the tuple (0.9, 0.999).
    custom = {
        "0.": {"betas": [0.8, 0.9]},
        "1.": {"betas": (0.8, 0.9)},
        "2.": {"betas": [0.9, 0.999]},
    }
    cfg = {"type": "Adam", "lr": 1.0, "paramwise_cfg": {"custom_keys": custom}}
    optimizer = build_optimizer(model, cfg)
    assert [g["param_names"] for g in optimizer.param_groups] == [
        ["0.weight", "0.bias", "1.weight", "1.bias"],
        ["2.weight", "2.bias"],
    ]


def test_equal_tensor_lrs_share_a_group() -> None:
    # A 0-dim tensor lr: each multiplier makes a new tensor, yet equal values are one setting.
    model = nn.Sequential(nn.Linear(2, 2), nn.Conv2d(2, 2, 3, groups=2), nn.Linear(2, 2))
    paramwise = {"bias_lr_mult": 2.0, "custom_keys": {"2.weight": {"lr_mult": 2.0}}}
    cfg = {"type": "SGD", "lr": torch.tensor(0.5), "paramwise_cfg": paramwise}
    optimizer = build_optimizer(model, cfg)
    assert [g["param_names"] for g in optimizer.param_groups] == [
        ["0.weight", "1.weight"],
        ["0.bias", "1.bias", "2.weight", "2.bias"],
    ]
    assert [float(g["lr"]) for g in optimizer.param_groups] == [0.5, 1.0]
