"""The optimizer constructor under bad models (SPEC 3.2): odd devices, dtypes and parameter sets.

Each model here is one a user really hands over by mistake or by design: parameters spread over
several dtypes or devices, no parameters at all, every parameter frozen, one tensor shared by
three modules, and parameters of unusual shapes.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch
from torch import nn

from regtree_optim import DefaultOptimizerConstructor, build_optimizer

LR = 0.1
WD = 0.01
PARAMWISE = {"bias_lr_mult": 2.0, "bias_decay_mult": 0.5, "norm_decay_mult": 0.0}


def _sgd(paramwise_cfg: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {"type": "SGD", "lr": LR, "weight_decay": WD, **extra}
    if paramwise_cfg is not None:
        cfg["paramwise_cfg"] = paramwise_cfg
    return cfg


def _placed(optimizer: torch.optim.Optimizer) -> dict[str, tuple[torch.Tensor, float, float]]:
    """Every parameter the optimizer holds, by name: the tensor, its lr and its weight decay."""
    placed: dict[str, tuple[torch.Tensor, float, float]] = {}
    for group in optimizer.param_groups:
        for name, param in zip(group["param_names"], group["params"], strict=True):
            assert name not in placed, f"{name} is in two groups"
            placed[name] = (param, group["lr"], group["weight_decay"])
    return placed


def _expected_settings(model: nn.Module) -> dict[str, tuple[float, float]]:
    """The lr and weight decay of each parameter under PARAMWISE, by the rules of SPEC 3.2."""
    expected: dict[str, tuple[float, float]] = {}
    for module_name, module in model.named_modules():
        for name, _ in module.named_parameters(recurse=False):
            full = f"{module_name}.{name}" if module_name else name
            if isinstance(module, nn.LayerNorm | nn.BatchNorm1d):
                expected[full] = (LR, WD * PARAMWISE["norm_decay_mult"])
            elif name == "bias":
                expected[full] = (LR * PARAMWISE["bias_lr_mult"], WD * PARAMWISE["bias_decay_mult"])
            else:
                expected[full] = (LR, WD)
    return expected


class MixedDtypes(nn.Module):
    """Layers in float32, float64 and bfloat16, a norm layer among them."""

    def __init__(self) -> None:
        super().__init__()
        self.f32 = nn.Linear(3, 3)
        self.f64 = nn.Linear(3, 3).double()
        self.bf16 = nn.Linear(3, 3).to(torch.bfloat16)
        self.norm = nn.LayerNorm(3).double()


@pytest.mark.parametrize("merge_groups", [True, False])
def test_parameters_of_several_dtypes_get_their_settings_and_step(merge_groups: bool) -> None:
    torch.manual_seed(0)
    model = MixedDtypes()
    before = {name: param.detach().clone() for name, param in model.named_parameters()}

    optimizer = build_optimizer(model, _sgd({**PARAMWISE, "merge_groups": merge_groups}))

    placed = _placed(optimizer)
    assert sorted(placed) == sorted(before)  # every parameter, each once
    if not merge_groups:
        assert list(placed) == list(before)  # one group per parameter, in model order
    expected = _expected_settings(model)
    for name, (param, lr, weight_decay) in placed.items():
        assert param is model.get_parameter(name)
        assert (lr, weight_decay) == expected[name]
    for param in model.parameters():
        param.grad = torch.ones_like(param)
    optimizer.step()
    for name, param in model.named_parameters():
        lr, weight_decay = expected[name]
        start = before[name]
        # SGD without momentum: p <- p - lr * (grad + weight_decay * p), in the parameter's dtype.
        wanted = start - lr * (torch.ones_like(start) + weight_decay * start)
        assert param.dtype == start.dtype
        torch.testing.assert_close(param.detach(), wanted)


def test_parameters_on_several_devices_are_placed_without_moving() -> None:
    model = nn.Module()
    model.host = nn.Linear(4, 4)
    model.shadow = nn.Linear(4, 4, device="meta")
    model.shadow_norm = nn.LayerNorm(4, device="meta")
    devices = {name: param.device for name, param in model.named_parameters()}

    constructor = DefaultOptimizerConstructor(_sgd(), paramwise_cfg=PARAMWISE)
    optimizer = constructor(model)
    explanation = constructor.explain(model)

    placed = _placed(optimizer)
    assert sorted(placed) == sorted(devices)
    assert {name: param.device for name, (param, _, _) in placed.items()} == devices
    expected = {
        "host.weight": (LR, WD),
        "host.bias": (LR * 2, WD * 0.5),
        "shadow.weight": (LR, WD),
        "shadow.bias": (LR * 2, WD * 0.5),
        "shadow_norm.weight": (LR, 0.0),
        "shadow_norm.bias": (LR, 0.0),
    }
    assert {name: (lr, wd) for name, (_, lr, wd) in placed.items()} == expected
    assert [(row.name, row.lr, row.weight_decay) for row in explanation] == [
        (name, lr, wd) for name, (lr, wd) in expected.items()
    ]  # explain lists the parameters in model order
    assert [row.shape for row in explanation] == [
        tuple(param.shape) for param in model.parameters()
    ]


@pytest.mark.parametrize(
    "model",
    [
        nn.Sequential(nn.ReLU(), nn.Flatten()),
        nn.BatchNorm1d(3, affine=False),  # buffers, but no parameters
        nn.Module(),
    ],
    ids=["activations", "buffers-only", "empty"],
)
@pytest.mark.parametrize("paramwise_cfg", [None, PARAMWISE], ids=["plain", "paramwise"])
def test_model_without_parameters_is_a_clear_error(
    model: nn.Module, paramwise_cfg: dict[str, Any] | None
) -> None:
    # The message names the model and says what is wrong with it.
    with pytest.raises(ValueError, match=rf"(?i)\b{type(model).__name__}\b.*\bno parameters\b"):
        build_optimizer(model, _sgd(paramwise_cfg))


@pytest.mark.parametrize("paramwise_cfg", [None, PARAMWISE], ids=["plain", "paramwise"])
def test_every_parameter_frozen_keeps_them_all_with_the_defaults(
    paramwise_cfg: dict[str, Any] | None,
) -> None:
    model = nn.Sequential(nn.Linear(3, 3), nn.LayerNorm(3), nn.Linear(3, 1))
    model.requires_grad_(False)
    before = [param.detach().clone() for param in model.parameters()]

    optimizer = build_optimizer(model, _sgd(paramwise_cfg, momentum=0.9))

    placed = _placed(optimizer)
    assert sorted(placed) == sorted(name for name, _ in model.named_parameters())
    # Frozen parameters take the optimizer's defaults: no multiplier applies to them.
    assert {(lr, wd) for _, lr, wd in placed.values()} == {(LR, WD)}
    if paramwise_cfg is not None:
        constructor = DefaultOptimizerConstructor(_sgd(momentum=0.9), paramwise_cfg)
        assert all(row.rule.startswith("frozen") for row in constructor.explain(model))
    optimizer.step()  # nothing has a gradient: nothing moves
    assert all(
        torch.equal(param, start) for param, start in zip(model.parameters(), before, strict=True)
    )


class ThreeTied(nn.Module):
    """One weight tensor shared by three Linear modules, each with its own bias."""

    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Linear(3, 3)
        self.second = nn.Linear(3, 3)
        self.third = nn.Linear(3, 3)
        self.second.weight = self.first.weight
        self.third.weight = self.first.weight


# Custom keys that would give the shared weight another lr, were a later name to decide it.
TIED_KEYS = {"second": {"lr_mult": 10.0}, "third": {"lr_mult": 100.0}}


def test_parameter_shared_by_three_modules_without_bypass_names_the_first_two() -> None:
    with pytest.raises(ValueError, match=r"'second\.weight'.*'first\.weight'"):
        build_optimizer(ThreeTied(), _sgd({"custom_keys": TIED_KEYS}))


@pytest.mark.parametrize("frozen", [False, True])
def test_parameter_shared_by_three_modules_is_kept_once_under_its_first_name(frozen: bool) -> None:
    model = ThreeTied()
    model.first.weight.requires_grad_(not frozen)
    cfg = _sgd({"custom_keys": TIED_KEYS, "bypass_duplicate": True})

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        optimizer = build_optimizer(model, cfg)

    messages = [str(warning.message) for warning in caught]
    assert len(messages) == 2
    assert "'second.weight' is the same tensor as 'first.weight'" in messages[0]
    assert "'third.weight' is the same tensor as 'first.weight'" in messages[1]
    placed = _placed(optimizer)
    assert sorted(placed) == ["first.bias", "first.weight", "second.bias", "third.bias"]
    assert placed["first.weight"][0] is model.first.weight
    # The first occurrence decides: 'first' matches no custom key, so the base settings.
    assert placed["first.weight"][1:] == (LR, WD)
    assert placed["second.bias"][1:] == (LR * 10.0, WD)
    assert placed["third.bias"][1:] == (LR * 100.0, WD)


def test_parameters_of_unusual_shapes_follow_the_one_dimensional_rule() -> None:
    model = nn.Module()
    model.scalar = nn.Parameter(torch.tensor(1.0))  # 0-D: not 1-D, keeps the base decay
    model.empty = nn.Parameter(torch.empty(0))  # 1-D with no elements: flat_decay_mult applies
    model.wide = nn.Parameter(torch.ones(1, 1, 1, 1, 1, 1))
    model.column = nn.Parameter(torch.ones(5))

    optimizer = build_optimizer(model, _sgd({"flat_decay_mult": 0.0}))

    placed = _placed(optimizer)
    assert {name: (lr, wd) for name, (_, lr, wd) in placed.items()} == {
        "scalar": (LR, WD),
        "empty": (LR, 0.0),
        "wide": (LR, WD),
        "column": (LR, 0.0),
    }
