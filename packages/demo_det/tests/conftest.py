from __future__ import annotations

import pytest
import torch
from torch import nn

import demo_det


class PlainBackbone(nn.Module):
    """A backbone defined here, so demo_det's tests need no other package's models."""

    def __init__(self, out_channels: int = 8) -> None:
        super().__init__()
        self.out_channels = out_channels
        self.conv = nn.Conv2d(3, out_channels, 3, stride=4, padding=1)
        self.norm = nn.BatchNorm2d(out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = torch.relu(self.norm(self.conv(x)))
        return out


@pytest.fixture
def generator() -> torch.Generator:
    return torch.Generator().manual_seed(0)


@pytest.fixture
def detector() -> demo_det.TinyDetector:
    torch.manual_seed(0)
    return demo_det.TinyDetector(backbone={"type": PlainBackbone}, num_classes=3, feat_channels=8)


@pytest.fixture
def batch(generator: torch.Generator) -> demo_det.DetectionBatch:
    return demo_det.synthetic_batch(4, 32, 3, generator)
