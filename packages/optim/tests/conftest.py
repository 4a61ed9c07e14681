"""Shared fixtures: mmcv's reference model and the optimizer configs of issue 3."""

from __future__ import annotations

import datetime
import gc
from collections.abc import Iterator
from typing import Any

import pytest
import torch
import torch.distributed as dist
from torch import nn

from regtree_optim import register_dcn_type

BASE_LR = 0.01
BASE_WD = 0.0001
MOMENTUM = 0.9


class DeformConvStandIn(nn.Module):
    """A deformable conv as mmcv's tests model it: its own weight and a ``conv_offset`` child."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(4, 3, 3, 3))
        self.conv_offset = nn.Conv2d(3, 4, 3)


register_dcn_type(DeformConvStandIn)


class SubModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.param1 = nn.Parameter(torch.ones(1))
        self.conv1 = nn.Conv2d(2, 2, 1, groups=2)
        self.gn = nn.GroupNorm(2, 2)


class ReferenceModel(nn.Module):
    """mmcv's ``ExampleModel`` for the optimizer constructor, with a deformable conv."""

    def __init__(self) -> None:
        super().__init__()
        self.param1 = nn.Parameter(torch.ones(1))
        self.conv1 = nn.Conv2d(3, 4, 1, bias=False)
        self.conv2 = nn.Conv2d(4, 2, 1)
        self.bn = nn.BatchNorm2d(2)
        self.sub = SubModel()
        self.dcn = DeformConvStandIn()


REFERENCE_NAMES = [
    "param1",
    "conv1.weight",
    "conv2.weight",
    "conv2.bias",
    "bn.weight",
    "bn.bias",
    "sub.param1",
    "sub.conv1.weight",
    "sub.conv1.bias",
    "sub.gn.weight",
    "sub.gn.bias",
    "dcn.weight",
    "dcn.conv_offset.weight",
    "dcn.conv_offset.bias",
]


@pytest.fixture
def reference_names() -> list[str]:
    """The reference model's parameter names, in model order."""
    return list(REFERENCE_NAMES)


@pytest.fixture
def dcn_type() -> type[nn.Module]:
    """The deformable-conv stand-in, registered with ``register_dcn_type``."""
    return DeformConvStandIn


@pytest.fixture
def model() -> nn.Module:
    torch.manual_seed(0)
    return ReferenceModel()


@pytest.fixture
def sgd_cfg() -> dict[str, Any]:
    return {"type": "SGD", "lr": BASE_LR, "momentum": MOMENTUM, "weight_decay": BASE_WD}


@pytest.fixture
def rules_cfg() -> dict[str, Any]:
    """The first reference paramwise_cfg of issue 3."""
    return {
        "bias_lr_mult": 2,
        "bias_decay_mult": 0.5,
        "norm_decay_mult": 0,
        "dwconv_decay_mult": 0.1,
        "dcn_offset_lr_mult": 0.1,
    }


@pytest.fixture
def custom_cfg() -> dict[str, Any]:
    """The second reference paramwise_cfg of issue 3 (custom_keys plus norm_decay_mult)."""
    return {
        "custom_keys": {
            "param1": {"lr_mult": 10},
            "sub": {"lr_mult": 0.1, "decay_mult": 0},
            "sub.gn": {"lr_mult": 0.01},
        },
        "norm_decay_mult": 0.5,
    }


@pytest.fixture
def process_group() -> Iterator[None]:
    """A one-process gloo group, so that DistributedDataParallel can wrap a model in a test."""
    if not (dist.is_available() and dist.is_gloo_available()):
        pytest.skip("torch.distributed with gloo is not available")
    dist.init_process_group(
        "gloo",
        store=dist.HashStore(),
        rank=0,
        world_size=1,
        timeout=datetime.timedelta(seconds=60),
    )
    try:
        yield
    finally:
        # Free what Python holds of the group (optimizers, modules in cycles) before destroying
        # it. An untrained DDP's C++ reducer may still keep this one-rank group until exit; with
        # no work in flight its idle threads are harmless there.
        gc.collect()
        dist.destroy_process_group()
