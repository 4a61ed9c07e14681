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
    assert set(OPTIMIZERS) == set(expected) | {"ZeroRedundancyOptimizer", "RoutedOptimizer"}


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
        NotRegisteredError, match=r"optimizer_type='AdamX' is not registered.*Did you mean .*'Adam'"
    ):
        build_optimizer(model, cfg)


def test_zero_custom_option_is_checked_against_the_local_optimizer() -> None:
    cfg = {"type": "ZeroRedundancyOptimizer", "optimizer_type": "SGD", "lr": 0.1}
    with pytest.raises(ValueError, match=r"unknown key 'betas'.*options .*:SGD accepts"):
        DefaultOptimizerConstructor(cfg, {"custom_keys": {"head": {"betas": (0.9, 0.9)}}})


@pytest.mark.filterwarnings(_TORCH_JIT_DEPRECATION)
@pytest.mark.usefixtures("process_group")
@pytest.mark.parametrize("local", ["SGD", torch.optim.SGD])
def test_zero_redundancy_optimizer_accepts_torchs_optimizer_class_keyword(local: object) -> None:
    from torch.distributed.optim import ZeroRedundancyOptimizer

    model = nn.Linear(3, 1)
    cfg = {"type": "ZeroRedundancyOptimizer", "optimizer_class": local, "lr": 0.1}
    optimizer = build_optimizer(model, {**cfg, "paramwise_cfg": {"bias_lr_mult": 2}})
    assert isinstance(optimizer, ZeroRedundancyOptimizer)
    assert type(optimizer.optim) is torch.optim.SGD
    lrs = {n: g["lr"] for g in optimizer.param_groups for n in g["param_names"]}
    assert lrs == {"weight": 0.1, "bias": 0.1 * 2}
    # The local optimizer's options are checked with optimizer_class= too.
    with pytest.raises(ValueError, match=r"unknown key 'betas'.*options .*:SGD accepts"):
        DefaultOptimizerConstructor(cfg, {"custom_keys": {"bias": {"betas": (0.9, 0.9)}}})
    # torch's own positional form goes through the registered stand-in as well.
    factory = OPTIMIZERS.get("ZeroRedundancyOptimizer")
    assert factory is not None
    assert isinstance(factory(model.parameters(), local, lr=0.1).optim, torch.optim.SGD)


@pytest.mark.filterwarnings(_TORCH_JIT_DEPRECATION)
@pytest.mark.usefixtures("process_group")
def test_zero_redundancy_optimizer_stands_for_torchs_class() -> None:
    from torch.distributed.optim import ZeroRedundancyOptimizer as TorchZero

    stand_in = OPTIMIZERS.get("ZeroRedundancyOptimizer")
    assert stand_in is not None
    optimizer = stand_in(nn.Linear(2, 2).parameters(), "SGD", lr=0.1)
    assert type(optimizer) is TorchZero
    assert isinstance(optimizer, stand_in)
    assert issubclass(TorchZero, stand_in)
    assert not isinstance(torch.optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1), stand_in)


@pytest.mark.filterwarnings(_TORCH_JIT_DEPRECATION)
@pytest.mark.usefixtures("process_group")
def test_zero_redundancy_optimizer_keeps_one_group_per_parameter_with_merge_off() -> None:
    from torch.distributed.optim import ZeroRedundancyOptimizer as TorchZero

    model = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 1))
    cfg = {
        "type": "ZeroRedundancyOptimizer",
        "optimizer_type": "SGD",
        "lr": 0.1,
        "paramwise_cfg": {"bias_lr_mult": 2, "merge_groups": False},
    }
    optimizer = build_optimizer(model, cfg)
    assert isinstance(optimizer, TorchZero)
    # Built through add_param_group, which keeps ZeRO's partition in step with the groups.
    assert [g["param_names"] for g in optimizer.param_groups] == [
        ["0.weight"],
        ["0.bias"],
        ["1.weight"],
        ["1.bias"],
    ]
    assert [g["lr"] for g in optimizer.param_groups] == [0.1, 0.1 * 2, 0.1, 0.1 * 2]
    # The one rank's local optimizer holds the same four groups: ZeRO saw each one added.
    local = optimizer.optim.param_groups
    assert [(len(g["params"]), g["lr"]) for g in local] == [(1, 0.1), (1, 0.2), (1, 0.1), (1, 0.2)]


@pytest.mark.filterwarnings(_TORCH_JIT_DEPRECATION)
def test_zero_redundancy_optimizer_needs_exactly_one_local_optimizer() -> None:
    factory = OPTIMIZERS.get("ZeroRedundancyOptimizer")
    assert factory is not None
    params = list(nn.Linear(2, 2).parameters())
    with pytest.raises(TypeError, match=r"got both of optimizer_type and optimizer_class"):
        factory(params, optimizer_type="SGD", optimizer_class=torch.optim.SGD, lr=0.1)
    with pytest.raises(TypeError, match=r"got neither.*registry 'optimizer' \(scope"):
        factory(params, lr=0.1)
    with pytest.raises(ValueError, match=r"optimizer_class='ZeroRedundancyOptimizer' is a Zero"):
        factory(params, optimizer_class="ZeroRedundancyOptimizer", lr=0.1)
    with pytest.raises(NotRegisteredError, match=r"optimizer_class='SDG' is not registered"):
        factory(params, optimizer_class="SDG", lr=0.1)
