"""OPTIMIZERS and OPTIMIZER_BUILDERS: what they hold, their scope, ZeroRedundancyOptimizer."""

from __future__ import annotations

import inspect

import pytest
import torch
from torch import nn

from regtree import NotRegisteredError, Registry
from regtree_optim import (
    OPTIMIZER_BUILDERS,
    OPTIMIZERS,
    DefaultOptimizerConstructor,
    build_optimizer,
)

_TORCH_JIT_DEPRECATION = "ignore:`torch\\.jit\\.\\w+` is deprecated:DeprecationWarning"


def _concrete_torch_optimizers() -> dict[str, type]:
    return {
        name: value
        for name, value in vars(torch.optim).items()
        if isinstance(value, type)
        and issubclass(value, torch.optim.Optimizer)
        and value is not torch.optim.Optimizer
        and not inspect.isabstract(value)
    }


def test_registries_are_roots_of_the_optim_scope() -> None:
    for registry, name in ((OPTIMIZERS, "optimizer"), (OPTIMIZER_BUILDERS, "optimizer builder")):
        assert isinstance(registry, Registry)
        assert (registry.name, registry.scope, registry.parent) == (name, "regtree_optim", None)


def test_every_concrete_torch_optimizer_is_registered_under_its_class_name() -> None:
    expected = _concrete_torch_optimizers()
    assert {"SGD", "Adam", "AdamW", "Rprop", "LBFGS"} <= set(expected)
    for name, cls in expected.items():
        assert OPTIMIZERS.get(name) is cls
    assert OPTIMIZERS.get("Optimizer") is None
    assert set(OPTIMIZERS) == set(expected) | {"ZeroRedundancyOptimizer"}


def test_scoped_names_resolve() -> None:
    assert OPTIMIZERS.get("regtree_optim.AdamW") is torch.optim.AdamW
    assert OPTIMIZER_BUILDERS.get("regtree_optim.DefaultOptimizerConstructor") is (
        DefaultOptimizerConstructor
    )


def test_builders_hold_the_default_constructor() -> None:
    assert list(OPTIMIZER_BUILDERS) == ["DefaultOptimizerConstructor"] or (
        OPTIMIZER_BUILDERS.get("DefaultOptimizerConstructor") is DefaultOptimizerConstructor
    )


@pytest.mark.filterwarnings(_TORCH_JIT_DEPRECATION)
@pytest.mark.usefixtures("process_group")
def test_zero_redundancy_optimizer_names_its_local_optimizer() -> None:
    from torch.distributed.optim import ZeroRedundancyOptimizer

    model = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 1))
    cfg = {
        "type": "ZeroRedundancyOptimizer",
        "optimizer_type": "AdamW",
        "lr": 0.01,
        "weight_decay": 0.1,
        "paramwise_cfg": {"bias_decay_mult": 0, "custom_keys": {"1.": {"betas": (0.5, 0.6)}}},
    }
    optimizer = build_optimizer(model, cfg)
    assert isinstance(optimizer, ZeroRedundancyOptimizer)
    assert isinstance(optimizer.optim, torch.optim.AdamW)
    settings = {
        n: (g["weight_decay"], g["betas"]) for g in optimizer.param_groups for n in g["param_names"]
    }
    assert settings == {
        "0.weight": (0.1, (0.9, 0.999)),
        "0.bias": (0.1 * 0, (0.9, 0.999)),
        "1.weight": (0.1, (0.5, 0.6)),
        "1.bias": (0.1, (0.5, 0.6)),
    }
    model(torch.ones(2, 3)).sum().backward()
    optimizer.step()


@pytest.mark.filterwarnings(_TORCH_JIT_DEPRECATION)
def test_zero_redundancy_optimizer_with_unknown_optimizer_type() -> None:
    model = nn.Linear(2, 2)
    cfg = {"type": "ZeroRedundancyOptimizer", "optimizer_type": "AdamX", "lr": 0.1}
    with pytest.raises(
        NotRegisteredError, match=r"optimizer_type='AdamX' is not registered.*Did you mean 'Adam'"
    ):
        build_optimizer(model, cfg)


def test_zero_custom_option_is_checked_against_the_local_optimizer() -> None:
    cfg = {"type": "ZeroRedundancyOptimizer", "optimizer_type": "SGD", "lr": 0.1}
    with pytest.raises(ValueError, match=r"unknown key 'betas'.*options SGD accepts"):
        DefaultOptimizerConstructor(cfg, {"custom_keys": {"head": {"betas": (0.9, 0.9)}}})
