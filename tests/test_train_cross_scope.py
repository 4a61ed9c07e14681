"""The detector with a backbone from another scope trains with an optimizer built from a config."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

import demo_det
import regtree_optim

OPTIMIZER_CFG: dict[str, Any] = {"type": "SGD", "lr": 0.05, "momentum": 0.9, "weight_decay": 1e-3}
PARAMWISE_CFG: dict[str, Any] = {
    "custom_keys": {"backbone.blocks": {"lr_mult": 0.1}},
    "bias_lr_mult": 2.0,
    "bias_decay_mult": 0.0,
    "norm_decay_mult": 0.0,
    "dwconv_decay_mult": 0.5,
    "flat_decay_mult": 0.2,
    "dcn_offset_lr_mult": 0.25,
    "bypass_duplicate": True,
}


@pytest.fixture
def detector() -> nn.Module:
    torch.manual_seed(0)
    backbone = {
        "type": "demo_cls.SeparableConvNet",
        "widths": [8, 16],
        "strides": [1, 2],
        "freeze_stem": True,
    }
    model: nn.Module = demo_det.MODELS.build(
        {"type": "TinyDetector", "backbone": backbone, "feat_channels": 8}
    )
    return model


def test_backbone_comes_from_the_demo_cls_scope(detector: nn.Module) -> None:
    assert type(detector.backbone).__module__.partition(".")[0] == "demo_cls"


def test_optimizer_groups_match_explain(detector: nn.Module) -> None:
    cfg = {**OPTIMIZER_CFG, "paramwise_cfg": PARAMWISE_CFG}
    with pytest.warns(UserWarning, match="bypass_duplicate"):
        optimizer = regtree_optim.build_optimizer(detector, cfg)
    constructor = regtree_optim.DefaultOptimizerConstructor(OPTIMIZER_CFG, PARAMWISE_CFG)
    with pytest.warns(UserWarning, match="bypass_duplicate"):
        rows = constructor.explain(detector)

    assert len(optimizer.param_groups) == 1 + max(row.group for row in rows)
    parameters = dict(detector.named_parameters())
    for index, group in enumerate(optimizer.param_groups):
        members = [row for row in rows if row.group == index]
        assert group["param_names"] == [row.name for row in members]
        for param, row in zip(group["params"], members, strict=True):
            assert param is parameters[row.name]
        assert {(row.lr, row.weight_decay) for row in members} == {
            (group["lr"], group["weight_decay"])
        }
    # Every parameter is grouped once, and the layers cover every rule that was configured.
    assert sorted(row.name for row in rows) == sorted(parameters)
    decided = " ".join(row.rule for row in rows)
    for rule in [key for key in PARAMWISE_CFG if key.endswith("_mult")] + ["custom_keys", "frozen"]:
        assert rule in decided


def test_a_few_steps_lower_the_loss_and_leave_frozen_weights_alone(detector: nn.Module) -> None:
    with pytest.warns(UserWarning, match="bypass_duplicate"):
        optimizer = regtree_optim.build_optimizer(
            detector, {**OPTIMIZER_CFG, "paramwise_cfg": PARAMWISE_CFG}
        )
    before = {name: p.detach().clone() for name, p in detector.named_parameters()}
    batch = demo_det.synthetic_batch(8, 32, 3, torch.Generator().manual_seed(0))
    losses = []
    for _ in range(6):
        total = sum(detector.loss(batch).values())
        optimizer.zero_grad()
        total.backward()
        optimizer.step()
        losses.append(float(total.detach()))
    assert losses[-1] < losses[0]
    for name, p in detector.named_parameters():
        assert torch.equal(p, before[name]) == (not p.requires_grad), name
