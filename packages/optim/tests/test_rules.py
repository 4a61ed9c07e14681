"""The per-parameter rules of SPEC 3.2 beyond the reference tables."""

from __future__ import annotations

import sys
import types
import warnings
from typing import Any

import pytest
import torch
from torch import nn

from regtree_optim import DefaultOptimizerConstructor, build_optimizer, register_norm_type

LR = 0.1
WD = 0.01


def _settings(optimizer: torch.optim.Optimizer) -> dict[str, dict[str, Any]]:
    return {
        name: {key: value for key, value in group.items() if key not in ("params", "param_names")}
        for group in optimizer.param_groups
        for name in group["param_names"]
    }


def test_rprop_without_weight_decay_gets_lr_rules_only() -> None:
    model = nn.Sequential(nn.Conv2d(2, 2, 1), nn.BatchNorm2d(2))
    cfg = {"type": "Rprop", "lr": LR, "paramwise_cfg": {"bias_lr_mult": 2}}
    optimizer = build_optimizer(model, cfg)
    assert isinstance(optimizer, torch.optim.Rprop)
    settings = _settings(optimizer)
    assert settings["0.bias"]["lr"] == LR * 2
    assert settings["0.weight"]["lr"] == LR
    assert settings["1.bias"]["lr"] == LR
    assert all("weight_decay" not in group for group in optimizer.param_groups)


@pytest.mark.parametrize(
    ("layer", "is_norm"),
    [
        (nn.BatchNorm1d(4), True),
        (nn.SyncBatchNorm(4), True),
        (nn.InstanceNorm2d(4, affine=True), True),
        (nn.GroupNorm(2, 4), True),
        (nn.LayerNorm(4), True),
        (nn.RMSNorm(4), True),
        (nn.Linear(4, 4), False),
    ],
)
def test_norm_layer_types(layer: nn.Module, is_norm: bool) -> None:
    cfg = {"type": "SGD", "lr": LR, "weight_decay": WD, "paramwise_cfg": {"norm_decay_mult": 0}}
    settings = _settings(build_optimizer(nn.Sequential(layer), cfg))
    for name in settings:
        assert settings[name]["weight_decay"] == (WD * 0 if is_norm else WD), name


def test_register_norm_type_applies_norm_decay_mult() -> None:
    class ScaleNorm(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gain = nn.Parameter(torch.ones(3))

    model = nn.Sequential(ScaleNorm(), nn.Linear(3, 3))
    cfg = {"type": "SGD", "lr": LR, "weight_decay": WD, "paramwise_cfg": {"norm_decay_mult": 0}}
    assert _settings(build_optimizer(model, cfg))["0.gain"]["weight_decay"] == WD
    assert register_norm_type(ScaleNorm) is ScaleNorm
    settings = _settings(build_optimizer(model, cfg))
    assert settings["0.gain"]["weight_decay"] == WD * 0
    assert settings["1.weight"]["weight_decay"] == WD


@pytest.mark.parametrize(
    ("conv", "depthwise"),
    [
        (nn.Conv1d(4, 4, 3, groups=4), True),
        (nn.Conv2d(4, 8, 3, groups=4), True),
        (nn.Conv3d(2, 2, 1, groups=2), True),
        (nn.Conv2d(4, 4, 3, groups=2), False),
        (nn.Conv2d(1, 1, 3, groups=1), False),
        (nn.Conv2d(4, 4, 3), False),
    ],
)
def test_depthwise_conv_detection(conv: nn.Module, depthwise: bool) -> None:
    cfg = {
        "type": "SGD",
        "lr": LR,
        "weight_decay": WD,
        "paramwise_cfg": {"dwconv_decay_mult": 0.5},
    }
    settings = _settings(build_optimizer(nn.Sequential(conv), cfg))
    assert settings["0.weight"]["weight_decay"] == (WD * 0.5 if depthwise else WD)


def test_dcn_children_skip_bias_rules_and_offset_needs_conv2d(dcn_type: type[nn.Module]) -> None:
    class Detector(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.dcn = dcn_type()
            self.dcn.conv_offset_mask = nn.Linear(3, 3)  # not a Conv2d: no offset lr
            self.dcn.extra = nn.Conv2d(3, 3, 1)  # a Conv2d, but its prefix lacks conv_offset
            self.dcn.extra.add_module("conv_offset", nn.Conv2d(3, 3, 1))  # grandchild of the dcn

    model = Detector()
    cfg = {
        "type": "SGD",
        "lr": LR,
        "weight_decay": WD,
        "paramwise_cfg": {
            "bias_lr_mult": 2,
            "bias_decay_mult": 0.5,
            "flat_decay_mult": 0.25,
            "dcn_offset_lr_mult": 0.1,
        },
    }
    settings = _settings(build_optimizer(model, cfg))
    assert settings["dcn.conv_offset.bias"] == {**settings["dcn.conv_offset.bias"], "lr": LR * 0.1}
    assert settings["dcn.conv_offset.bias"]["weight_decay"] == WD
    # Direct children of the dcn: no bias lr/decay rule, no flat rule.
    assert (settings["dcn.conv_offset_mask.bias"]["lr"], settings["dcn.extra.bias"]["lr"]) == (
        LR,
        LR,
    )
    assert settings["dcn.conv_offset_mask.bias"]["weight_decay"] == WD
    # A grandchild is no longer inside the dcn: its bias follows the bias rules again.
    assert settings["dcn.extra.conv_offset.bias"]["lr"] == LR * 2
    assert settings["dcn.extra.conv_offset.bias"]["weight_decay"] == WD * 0.5


def _fake_torchvision_deform_conv(monkeypatch: pytest.MonkeyPatch) -> type[nn.Module]:
    """Put a fake ``torchvision.ops.DeformConv2d`` in ``sys.modules``, as importing it would."""

    class DeformConv2d(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(4, 3, 3, 3))
            self.bias = nn.Parameter(torch.zeros(4))
            self.conv_offset = nn.Conv2d(3, 18, 3)

    torchvision = types.ModuleType("torchvision")
    ops = types.ModuleType("torchvision.ops")
    ops.DeformConv2d = DeformConv2d  # type: ignore[attr-defined]
    torchvision.ops = ops  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torchvision", torchvision)
    monkeypatch.setitem(sys.modules, "torchvision.ops", ops)
    return DeformConv2d


def test_torchvision_deform_conv_counts_as_a_deformable_conv(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    deform_conv2d = _fake_torchvision_deform_conv(monkeypatch)

    class Subclass(deform_conv2d):  # type: ignore[misc,valid-type]
        pass

    model = nn.Sequential(deform_conv2d(), Subclass(), nn.Conv2d(3, 3, 1))
    model[2].add_module("conv_offset", nn.Conv2d(3, 3, 1))  # not inside a deformable conv
    cfg = {
        "type": "SGD",
        "lr": LR,
        "weight_decay": WD,
        "paramwise_cfg": {"bias_lr_mult": 2, "bias_decay_mult": 0.5, "dcn_offset_lr_mult": 0.1},
    }
    settings = _settings(build_optimizer(model, cfg))
    for dcn in ("0", "1"):
        # The deformable conv's own bias is not inside it: the bias rules apply.
        assert (settings[f"{dcn}.bias"]["lr"], settings[f"{dcn}.bias"]["weight_decay"]) == (
            LR * 2,
            WD * 0.5,
        )
        # Its conv_offset child: offset lr for weight and bias, no bias decay rule.
        for name in ("weight", "bias"):
            offset = settings[f"{dcn}.conv_offset.{name}"]
            assert (offset["lr"], offset["weight_decay"]) == (LR * 0.1, WD)
    plain = settings["2.conv_offset.bias"]
    assert (plain["lr"], plain["weight_decay"]) == (LR * 2, WD * 0.5)


def test_a_class_named_deform_conv2d_outside_torchvision_is_not_a_deformable_conv() -> None:
    class DeformConv2d(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv_offset = nn.Conv2d(3, 18, 3)

    cfg = {"type": "SGD", "lr": LR, "paramwise_cfg": {"dcn_offset_lr_mult": 0.1}}
    settings = _settings(build_optimizer(DeformConv2d(), cfg))
    assert settings["conv_offset.weight"]["lr"] == LR


def test_custom_keys_longest_first_then_alphabetical() -> None:
    model = nn.Module()
    model.ab = nn.Linear(2, 2)
    custom = {"b": {"lr_mult": 2}, "a": {"lr_mult": 3}, "ab.w": {"lr_mult": 5}}
    cfg = {"type": "SGD", "lr": LR, "paramwise_cfg": {"custom_keys": custom}}
    settings = _settings(build_optimizer(model, cfg))
    assert settings["ab.weight"]["lr"] == LR * 5
    # 'a' and 'b' both match 'ab.bias' and are as long: 'a' wins alphabetically.
    assert settings["ab.bias"]["lr"] == LR * 3


def test_custom_key_matches_dotted_top_level_name() -> None:
    model = nn.Module()
    model.param1 = nn.Parameter(torch.ones(2))
    model.sub = nn.Module()
    model.sub.xparam1 = nn.Parameter(torch.ones(2))
    cfg = {"type": "SGD", "lr": LR, "paramwise_cfg": {"custom_keys": {".param1": {"lr_mult": 2}}}}
    settings = _settings(build_optimizer(model, cfg))
    assert settings["param1"]["lr"] == LR * 2
    assert settings["sub.xparam1"]["lr"] == LR


def test_a_top_level_name_is_matched_with_its_leading_dot_even_when_it_holds_a_dot() -> None:
    # f'{prefix}.{name}' with prefix '': '.x.y' for a parameter registered as 'x.y' (possible
    # only through _parameters), not 'x.y', which a nested x.y would be.
    model = nn.Module()
    model._parameters["x.y"] = nn.Parameter(torch.ones(2))
    model.x = nn.Module()
    model.x.y = nn.Parameter(torch.ones(2))
    cfg = {"type": "SGD", "lr": LR, "paramwise_cfg": {"custom_keys": {".x.y": {"lr_mult": 2}}}}
    groups = build_optimizer(model, cfg).param_groups
    assert [(group["param_names"], group["lr"]) for group in groups] == [
        (["x.y"], LR * 2),
        (["x.y"], LR),
    ]
    # Frozen, it takes no multiplier, and the key that matches it does not warn.
    model._parameters["x.y"].requires_grad_(False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        build_optimizer(model, cfg)


def test_custom_key_beats_every_other_rule_and_copies_options() -> None:
    model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    cfg = {
        "type": "SGD",
        "lr": LR,
        "momentum": 0.9,
        "weight_decay": WD,
        "paramwise_cfg": {
            "norm_decay_mult": 0,
            "bias_lr_mult": 2,
            "custom_keys": {"1.": {"decay_mult": 3, "momentum": 0.5, "nesterov": True}},
        },
    }
    settings = _settings(build_optimizer(model, cfg))
    for name in ("1.weight", "1.bias"):
        assert settings[name]["lr"] == LR
        assert settings[name]["weight_decay"] == WD * 3
        assert (settings[name]["momentum"], settings[name]["nesterov"]) == (0.5, True)
    assert settings["0.bias"]["momentum"] == 0.9
    assert settings["0.bias"]["lr"] == LR * 2


def test_unmatched_custom_key_warns() -> None:
    model = nn.Sequential(nn.Linear(2, 2))
    constructor = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": LR},
        {"custom_keys": {"backbone": {"lr_mult": 0.1}, "0.": {"lr_mult": 2}}},
    )
    with pytest.warns(
        UserWarning, match=r"custom_keys key 'backbone' matches no parameter"
    ) as built:
        optimizer = constructor(model)
    assert [g["lr"] for g in optimizer.param_groups] == [LR * 2]
    with pytest.warns(UserWarning, match=r"custom_keys key 'backbone'") as explained:
        constructor.explain(model)
    cfg = {"type": "SGD", "lr": LR, "paramwise_cfg": constructor.paramwise_cfg}
    with pytest.warns(UserWarning, match=r"custom_keys key 'backbone'") as through_builder:
        build_optimizer(model, cfg)
    # The warning points at the caller's line, not into regtree_optim, on every path.
    assert [w.filename for w in [*built, *explained, *through_builder]] == [__file__] * 3


def test_custom_key_matching_only_frozen_or_shadowed_names_does_not_warn() -> None:
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    model[1].requires_grad_(False)
    constructor = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": LR},
        {"custom_keys": {"1": {"lr_mult": 2}, "0.weight": {"lr_mult": 3}, "0": {"lr_mult": 4}}},
    )
    optimizer = constructor(model)
    by_name = {n: g["lr"] for g in optimizer.param_groups for n in g["param_names"]}
    assert by_name == {"0.weight": LR * 3, "0.bias": LR * 4, "1.weight": LR, "1.bias": LR}


def test_custom_entry_option_lr_is_copied_over_the_multiplied_lr() -> None:
    # Like mmengine, an option in the entry is copied into the group as given.
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    custom = {"1.": {"lr_mult": 2, "lr": 0.5, "weight_decay": 0.25}}
    cfg = {"type": "SGD", "lr": LR, "weight_decay": WD, "paramwise_cfg": {"custom_keys": custom}}
    settings = _settings(build_optimizer(model, cfg))
    assert (settings["1.weight"]["lr"], settings["1.weight"]["weight_decay"]) == (0.5, 0.25)
    assert (settings["0.weight"]["lr"], settings["0.weight"]["weight_decay"]) == (LR, WD)


def test_conv1d_offset_inside_a_deformable_conv_keeps_the_base_lr(
    dcn_type: type[nn.Module],
) -> None:
    model = nn.Module()
    model.dcn = dcn_type()
    model.dcn.conv_offset = nn.Conv1d(3, 4, 3)  # dcn_offset_lr_mult is for a Conv2d only
    cfg = {"type": "SGD", "lr": LR, "paramwise_cfg": {"dcn_offset_lr_mult": 0.1}}
    settings = _settings(build_optimizer(model, cfg))
    assert settings["dcn.conv_offset.weight"]["lr"] == LR
    assert settings["dcn.conv_offset.bias"]["lr"] == LR


def test_custom_key_matching_only_a_frozen_top_level_parameter_does_not_warn() -> None:
    model = nn.Sequential(nn.Linear(2, 2))
    model.register_parameter("scale", nn.Parameter(torch.ones(1), requires_grad=False))
    # '.scale' is how a top-level parameter's name is matched; frozen, it keeps the defaults.
    cfg = {"type": "SGD", "lr": LR, "paramwise_cfg": {"custom_keys": {".scale": {"lr_mult": 2}}}}
    settings = _settings(build_optimizer(model, cfg))  # filterwarnings=error: no warning
    assert settings["scale"]["lr"] == LR


def test_lr_mult_zero_gives_lr_zero() -> None:
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    custom = {"0.": {"lr_mult": 0, "decay_mult": 0}}
    cfg = {"type": "SGD", "lr": LR, "weight_decay": WD, "paramwise_cfg": {"custom_keys": custom}}
    settings = _settings(build_optimizer(model, cfg))
    assert (settings["0.weight"]["lr"], settings["0.weight"]["weight_decay"]) == (0, 0)
    assert (settings["1.weight"]["lr"], settings["1.weight"]["weight_decay"]) == (LR, WD)
