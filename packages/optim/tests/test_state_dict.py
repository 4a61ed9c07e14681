"""An optimizer's state_dict loads into one rebuilt from the same config, and training resumes."""

from __future__ import annotations

import copy
import io
from typing import Any

import pytest
import torch
from torch import nn

from regtree_optim import build_optimizer


def _train(model: nn.Module, optimizer: torch.optim.Optimizer, steps: int) -> None:
    generator = torch.Generator().manual_seed(1)
    for _ in range(steps):
        optimizer.zero_grad()
        inputs = torch.randn(2, 3, 5, 5, generator=generator)
        loss = model.conv1(inputs).square().mean() + model.param1.sum() + model.sub.param1.sum()
        for param in model.parameters():
            loss = loss + param.square().sum() * 1e-3
        loss.backward()
        optimizer.step()


@pytest.mark.parametrize("merge_groups", [True, False])
def test_state_dict_round_trip(
    model: nn.Module,
    sgd_cfg: dict[str, Any],
    custom_cfg: dict[str, Any],
    merge_groups: bool,
) -> None:
    cfg = {**sgd_cfg, "paramwise_cfg": {**custom_cfg, "merge_groups": merge_groups}}
    optimizer = build_optimizer(model, cfg)
    _train(model, optimizer, steps=2)

    buffer = io.BytesIO()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, buffer)
    buffer.seek(0)
    checkpoint = torch.load(buffer, weights_only=True)

    resumed_model = copy.deepcopy(model)
    resumed_model.load_state_dict(checkpoint["model"])
    resumed = build_optimizer(resumed_model, cfg)
    resumed.load_state_dict(checkpoint["optimizer"])
    saved_groups = checkpoint["optimizer"]["param_groups"]
    assert [g["param_names"] for g in resumed.param_groups] == [
        g["param_names"] for g in saved_groups
    ]
    assert [g["lr"] for g in resumed.param_groups] == [g["lr"] for g in saved_groups]
    for name, param in resumed_model.named_parameters():
        original = dict(model.named_parameters())[name]
        assert torch.equal(
            resumed.state[param]["momentum_buffer"], optimizer.state[original]["momentum_buffer"]
        )

    _train(model, optimizer, steps=2)
    _train(resumed_model, resumed, steps=2)
    for (name, a), (_, b) in zip(
        model.named_parameters(), resumed_model.named_parameters(), strict=True
    ):
        assert torch.equal(a, b), name


def test_state_dict_from_other_layout_is_rejected(
    model: nn.Module, sgd_cfg: dict[str, Any], custom_cfg: dict[str, Any]
) -> None:
    merged = build_optimizer(model, {**sgd_cfg, "paramwise_cfg": custom_cfg})
    split = build_optimizer(
        model, {**sgd_cfg, "paramwise_cfg": {**custom_cfg, "merge_groups": False}}
    )
    with pytest.raises(ValueError, match="parameter groups"):
        split.load_state_dict(merged.state_dict())
