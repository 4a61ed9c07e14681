"""Wrapped models are unwrapped: DataParallel, DDP, torch.compile and registered wrapper types."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from regtree_optim import (
    DefaultOptimizerConstructor,
    build_optimizer,
    register_dcn_type,
    register_norm_type,
    register_wrapper_type,
)

# Importing torch._dynamo scripts a few helpers, which warns inside torch itself.
_TORCH_JIT_DEPRECATION = "ignore:`torch\\.jit\\.\\w+` is deprecated:DeprecationWarning"


def _names(optimizer: torch.optim.Optimizer) -> list[str]:
    return [name for group in optimizer.param_groups for name in group["param_names"]]


def test_data_parallel_is_unwrapped(
    model: nn.Module, sgd_cfg: dict[str, Any], rules_cfg: dict[str, Any], reference_names: list[str]
) -> None:
    wrapped = nn.DataParallel(model)
    optimizer = build_optimizer(wrapped, {**sgd_cfg, "paramwise_cfg": rules_cfg})
    assert sorted(_names(optimizer)) == sorted(reference_names)
    plain = build_optimizer(model, {**sgd_cfg, "paramwise_cfg": rules_cfg})
    assert [g["param_names"] for g in optimizer.param_groups] == [
        g["param_names"] for g in plain.param_groups
    ]


@pytest.mark.usefixtures("process_group")
def test_distributed_data_parallel_is_unwrapped(
    model: nn.Module, sgd_cfg: dict[str, Any], rules_cfg: dict[str, Any], reference_names: list[str]
) -> None:
    wrapped = nn.parallel.DistributedDataParallel(model)
    for paramwise in (rules_cfg, None):
        optimizer = build_optimizer(wrapped, {**sgd_cfg, "paramwise_cfg": paramwise})
        assert sorted(_names(optimizer)) == sorted(reference_names)


def test_groups_an_add_params_override_appends_unnamed_take_the_unwrapped_names() -> None:
    # An mmcv-era override appends groups without param_names; they are named as the walk
    # names parameters, with no checkpoint wrapper in the name.
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

    class ZeroLrNorms(DefaultOptimizerConstructor):
        def add_params(
            self,
            params: list[dict[str, Any]],
            module: nn.Module,
            prefix: str = "",
            is_dcn_module: bool | float | None = None,
        ) -> None:
            if isinstance(module, nn.LayerNorm):
                params.append({"params": [module.weight, module.bias], "lr": 0.0})
                return
            super().add_params(params, module, prefix, is_dcn_module)

    model = nn.Sequential(nn.Linear(2, 2), checkpoint_wrapper(nn.Sequential(nn.LayerNorm(2))))
    optimizer = ZeroLrNorms({"type": "SGD", "lr": 0.1}, {})(model)
    assert [(g["param_names"], g["lr"]) for g in optimizer.param_groups] == [
        (["0.weight"], 0.1),
        (["0.bias"], 0.1),
        (["1.0.weight", "1.0.bias"], 0.0),
    ]


@pytest.mark.filterwarnings(_TORCH_JIT_DEPRECATION)
def test_torch_compile_module_is_unwrapped(
    model: nn.Module, sgd_cfg: dict[str, Any], rules_cfg: dict[str, Any], reference_names: list[str]
) -> None:
    compiled = torch.compile(model)
    assert isinstance(compiled, nn.Module)
    optimizer = build_optimizer(compiled, {**sgd_cfg, "paramwise_cfg": rules_cfg})
    assert sorted(_names(optimizer)) == sorted(reference_names)


@pytest.mark.filterwarnings(_TORCH_JIT_DEPRECATION)
def test_nested_wrappers_are_all_unwrapped(model: nn.Module, reference_names: list[str]) -> None:
    wrapped = torch.compile(nn.DataParallel(model))
    assert isinstance(wrapped, nn.Module)
    optimizer = build_optimizer(wrapped, {"type": "SGD", "lr": 0.1})
    assert _names(optimizer) == reference_names


def test_registered_wrapper_type_is_unwrapped(reference_names: list[str], model: nn.Module) -> None:
    class EmaWrapper(nn.Module):
        def __init__(self, inner: nn.Module) -> None:
            super().__init__()
            self.inner = inner

    wrapped = EmaWrapper(model)
    plain = build_optimizer(wrapped, {"type": "SGD", "lr": 0.1})
    assert _names(plain) == [f"inner.{name}" for name in reference_names]
    assert register_wrapper_type(EmaWrapper, attr="inner") is EmaWrapper
    optimizer = build_optimizer(wrapped, {"type": "SGD", "lr": 0.1})
    assert _names(optimizer) == reference_names


def test_plain_model_with_child_named_module_is_not_unwrapped() -> None:
    model = nn.Module()
    model.module = nn.Linear(2, 2)
    model.head = nn.Linear(2, 1)
    optimizer = build_optimizer(model, {"type": "SGD", "lr": 0.1, "paramwise_cfg": {}})
    assert _names(optimizer) == ["module.weight", "module.bias", "head.weight", "head.bias"]
    rows = DefaultOptimizerConstructor({"type": "SGD", "lr": 0.1}, {"bias_lr_mult": 2}).explain(
        model
    )
    assert [row.name for row in rows] == _names(optimizer)


def test_register_wrapper_type_checks_its_arguments() -> None:
    with pytest.raises(TypeError, match=r"expects a class deriving from torch\.nn\.Module .*got "):
        register_wrapper_type("DataParallel")  # type: ignore[type-var]
    with pytest.raises(TypeError, match=r"attr to be a non-empty str, got ''"):
        register_wrapper_type(nn.Sequential, attr="")


@pytest.mark.parametrize(
    "register",
    [register_wrapper_type, register_norm_type, register_dcn_type],
    ids=lambda register: register.__name__,
)
@pytest.mark.parametrize(
    "cls", [nn.Module, int, nn.Linear(2, 2)], ids=["nn.Module", "int", "an instance"]
)
def test_a_type_that_is_no_module_class_is_refused_and_nothing_changes(
    register: Any, cls: Any
) -> None:
    # nn.Module itself would make every module a wrapper (or norm, or deformable conv) for good.
    with pytest.raises(TypeError, match=r"expects a class deriving from torch\.nn\.Module \(not "):
        register(cls)
    model = nn.Sequential(nn.Linear(2, 2), nn.LayerNorm(2))
    cfg = {"type": "SGD", "lr": 0.1, "weight_decay": 0.1, "paramwise_cfg": {"norm_decay_mult": 0}}
    optimizer = build_optimizer(model, cfg)
    decay = {n: g["weight_decay"] for g in optimizer.param_groups for n in g["param_names"]}
    assert decay == {"0.weight": 0.1, "0.bias": 0.1, "1.weight": 0.0, "1.bias": 0.0}


def test_wrapper_attribute_that_is_not_a_module() -> None:
    class BrokenWrapper(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Linear(2, 2)
            self.payload = "not a module"

    register_wrapper_type(BrokenWrapper, attr="payload")
    with pytest.raises(TypeError, match=r"BrokenWrapper is registered as a wrapper.*'payload'"):
        build_optimizer(BrokenWrapper(), {"type": "SGD", "lr": 0.1})


def test_activation_checkpoint_wrappers_never_show_in_names(
    model: nn.Module, sgd_cfg: dict[str, Any], rules_cfg: dict[str, Any], reference_names: list[str]
) -> None:
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

    plain = build_optimizer(model, {**sgd_cfg, "paramwise_cfg": rules_cfg})
    # Wrapped in place, as apply_activation_checkpointing does to a model's blocks.
    model.sub = checkpoint_wrapper(model.sub)
    model.bn = checkpoint_wrapper(model.bn)
    for paramwise in (rules_cfg, None):
        optimizer = build_optimizer(model, {**sgd_cfg, "paramwise_cfg": paramwise})
        assert sorted(_names(optimizer)) == sorted(reference_names)
    # The wrapped norm is still a norm, the wrapped depthwise conv still depthwise.
    wrapped = build_optimizer(model, {**sgd_cfg, "paramwise_cfg": rules_cfg})
    assert [(g["param_names"], g["lr"], g["weight_decay"]) for g in wrapped.param_groups] == [
        (g["param_names"], g["lr"], g["weight_decay"]) for g in plain.param_groups
    ]


@pytest.mark.filterwarnings(_TORCH_JIT_DEPRECATION)
def test_a_compiled_submodule_never_shows_in_names(
    model: nn.Module, reference_names: list[str]
) -> None:
    model.sub = torch.compile(model.sub)  # type: ignore[assignment]
    rows = DefaultOptimizerConstructor({"type": "SGD", "lr": 0.1}, {"bias_lr_mult": 2}).explain(
        model
    )
    assert [row.name for row in rows] == reference_names
    optimizer = build_optimizer(model, {"type": "SGD", "lr": 0.1})
    assert _names(optimizer) == reference_names
