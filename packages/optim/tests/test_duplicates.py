"""Shared parameters: an error naming both names, or bypass_duplicate with one warning each."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

from regtree_optim import build_optimizer


def _tied_model() -> nn.Module:
    model = nn.Module()
    model.encoder = nn.Linear(3, 3)
    model.decoder = nn.Linear(3, 3)
    model.decoder.weight = model.encoder.weight
    return model


def test_shared_parameter_without_bypass_names_both() -> None:
    cfg = {"type": "SGD", "lr": 0.1, "paramwise_cfg": {"bias_lr_mult": 2}}
    with pytest.raises(
        ValueError, match=r"'decoder\.weight' is the same tensor as 'encoder\.weight'"
    ):
        build_optimizer(_tied_model(), cfg)


def test_shared_frozen_parameter_is_a_duplicate_too() -> None:
    model = _tied_model()
    model.encoder.weight.requires_grad_(False)
    cfg = {"type": "SGD", "lr": 0.1, "paramwise_cfg": {"bias_lr_mult": 2}}
    with pytest.raises(ValueError, match="bypass_duplicate=True"):
        build_optimizer(model, cfg)


def test_bypass_duplicate_keeps_first_and_warns_once_per_skipped() -> None:
    model = _tied_model()
    model.third = nn.Linear(3, 3)
    model.third.weight = model.encoder.weight
    model.shared = model.decoder  # a shared module: both its parameters are duplicates
    cfg = {"type": "SGD", "lr": 0.1, "paramwise_cfg": {"bypass_duplicate": True}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        optimizer = build_optimizer(model, cfg)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 4
    assert "'decoder.weight' is the same tensor as 'encoder.weight'" in messages[0]
    assert "'third.weight' is the same tensor as 'encoder.weight'" in messages[1]
    assert "'shared.weight' is the same tensor as 'encoder.weight'" in messages[2]
    assert "'shared.bias' is the same tensor as 'decoder.bias'" in messages[3]
    names = [n for g in optimizer.param_groups for n in g["param_names"]]
    assert names == ["encoder.weight", "encoder.bias", "decoder.bias", "third.bias"]
    params = [p for g in optimizer.param_groups for p in g["params"]]
    assert len({id(p) for p in params}) == len(params)


def test_bypass_duplicate_with_shared_module_warns_for_each_parameter() -> None:
    model = nn.Module()
    model.a = nn.Linear(2, 2)
    model.b = model.a
    cfg = {"type": "SGD", "lr": 0.1, "paramwise_cfg": {"bypass_duplicate": True}}
    with pytest.warns(UserWarning, match=r"'b\.(weight|bias)' is the same tensor") as record:
        optimizer = build_optimizer(model, cfg)
    assert len(record) == 2
    assert optimizer.param_groups[0]["param_names"] == ["a.weight", "a.bias"]


def test_many_shared_parameters_are_all_reported() -> None:
    # Linear-time detection: every one of many duplicates is found in a single pass.
    count = 2000
    shared = nn.Parameter(torch.ones(1))
    model = nn.Module()
    for index in range(count):
        model.register_parameter(f"p{index}", shared)
    cfg = {"type": "SGD", "lr": 0.1, "paramwise_cfg": {"bypass_duplicate": True}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        optimizer = build_optimizer(model, cfg)
    assert len(caught) == count - 1
    assert optimizer.param_groups[0]["param_names"] == ["p0"]
