"""SPEC 3.2's walk: named_children() as mmcv walks it, shared modules, and cycles cut."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch
from torch import nn

from regtree_optim import DefaultOptimizerConstructor, build_optimizer

SGD = {"type": "SGD", "lr": 0.1, "weight_decay": 0.01}


def _names(optimizer: torch.optim.Optimizer) -> list[str]:
    return [name for group in optimizer.param_groups for name in group["param_names"]]


@pytest.mark.parametrize("precedence", ["mmcv", "mmengine"])
def test_a_module_held_twice_by_one_parent_is_walked_once(precedence: str) -> None:
    # Deformable DETR's head: nn.ModuleList([fc_cls for _ in range(6)]) raised here before.
    fc = nn.Linear(4, 2)
    model = nn.Module()
    model.heads = nn.ModuleList([fc for _ in range(6)])
    paramwise = {"bias_lr_mult": 2.0, "bias_decay_mult": 0, "decay_precedence": precedence}
    optimizer = build_optimizer(model, {**SGD, "paramwise_cfg": paramwise})  # no warning either
    assert _names(optimizer) == ["heads.0.weight", "heads.0.bias"]
    assert _names(optimizer) == [name for name, _ in model.named_parameters()]
    lrs = {n: g["lr"] for g in optimizer.param_groups for n in g["param_names"]}
    assert lrs == {"heads.0.weight": 0.1, "heads.0.bias": 0.1 * 2.0}


def test_a_tensor_held_twice_by_one_module_counts_once() -> None:
    model = nn.Module()
    weight = nn.Parameter(torch.ones(2))
    model.register_parameter("a", weight)
    model.register_parameter("b", weight)
    optimizer = build_optimizer(model, {**SGD, "paramwise_cfg": {"flat_decay_mult": 0}})
    assert _names(optimizer) == ["a"]


def test_a_module_reached_through_two_parents_shares_its_parameters() -> None:
    fc = nn.Linear(4, 2)
    model = nn.Module()
    model.first = nn.Sequential(fc)
    model.second = nn.Sequential(fc)
    with pytest.raises(ValueError, match=r"'second\.0\.weight' is the same tensor as 'first\.0"):
        build_optimizer(model, {**SGD, "paramwise_cfg": {"bias_lr_mult": 2.0}})
    paramwise = {"bias_lr_mult": 2.0, "bypass_duplicate": True}
    with pytest.warns(
        UserWarning, match=r"'second\.0\.(weight|bias)' is the same tensor as"
    ) as seen:
        optimizer = build_optimizer(model, {**SGD, "paramwise_cfg": paramwise})
    assert len(seen) == 2
    assert _names(optimizer) == ["first.0.weight", "first.0.bias"]


@pytest.mark.parametrize("bypass_duplicate", [True, False])
def test_a_cycle_in_the_module_graph_is_walked_once(bypass_duplicate: bool) -> None:
    model = nn.Sequential(nn.Linear(2, 2))
    model.add_module("loop", model)
    inner = nn.Sequential(nn.Linear(2, 2))
    inner.add_module("back", model)  # a longer cycle: model -> inner -> model
    model.add_module("inner", inner)
    paramwise = {"bias_lr_mult": 2.0, "bypass_duplicate": bypass_duplicate, "merge_groups": False}
    optimizer = build_optimizer(model, {**SGD, "paramwise_cfg": paramwise})
    assert _names(optimizer) == ["0.weight", "0.bias", "inner.0.weight", "inner.0.bias"]
    explained = DefaultOptimizerConstructor(SGD, paramwise).explain(model)
    assert [row.name for row in explained] == _names(optimizer)


class _AddParamsOverride(DefaultOptimizerConstructor):
    """An mmcv-era constructor: its add_params override makes the walk go through add_params."""

    def add_params(
        self,
        params: list[dict[str, Any]],
        module: nn.Module,
        prefix: str = "",
        is_dcn_module: bool | float | None = None,
    ) -> None:
        super().add_params(params, module, prefix, is_dcn_module)


def test_an_add_params_walk_cuts_a_module_holding_itself_as_the_walk_does() -> None:
    # The same step as walk_modules: the module is on the path before its children are listed.
    model = nn.Sequential(nn.Linear(2, 2))
    model.add_module("loop", model)
    paramwise = {"bias_lr_mult": 2.0}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        walked = _names(build_optimizer(model, {**SGD, "paramwise_cfg": paramwise}))
        overridden = _names(_AddParamsOverride(SGD, paramwise)(model))
    assert overridden == walked == ["0.weight", "0.bias"]


def test_children_come_in_named_children_order_under_their_first_name() -> None:
    shared = nn.Linear(2, 2)
    model = nn.Module()
    model.z = nn.Linear(2, 2)
    model.a = shared
    model.m = nn.Linear(2, 2)
    model.b = shared
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        optimizer = build_optimizer(model, {**SGD, "paramwise_cfg": {"merge_groups": False}})
    assert _names(optimizer) == [name for name, _ in model.named_parameters()]
    assert _names(optimizer) == ["z.weight", "z.bias", "a.weight", "a.bias", "m.weight", "m.bias"]
