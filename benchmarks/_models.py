"""Models for the optimizer benchmarks, built from plain torch layers only.

Every block mixes the layer kinds the paramwise rules look at (a conv with bias, a norm layer, a
depthwise conv, a LayerNorm, a Linear), so every rule is evaluated on every block.
"""

from __future__ import annotations

from torch import nn

TENSORS_PER_BLOCK = 10
RESNET50_TENSORS = 161


def block(channels: int = 4) -> nn.Sequential:
    """Ten parameter tensors: conv, BatchNorm, depthwise conv, LayerNorm and Linear, with biases."""
    return nn.Sequential(
        nn.Conv2d(channels, channels, 3, padding=1),
        nn.BatchNorm2d(channels),
        nn.Conv2d(channels, channels, 3, padding=1, groups=channels),
        nn.LayerNorm(channels),
        nn.Linear(channels, channels),
    )


def blocks_model(tensors: int, per_stage: int = 10) -> nn.Module:
    """A backbone of stages of blocks and a block-shaped head: exactly ``tensors`` tensors.

    Args:
        tensors: Number of parameter tensors, a multiple of ten, at least twenty.
        per_stage: Blocks per stage, so that names nest like a real backbone's
            (``backbone.3.7.2.weight``).

    Returns:
        The model; ``custom_keys={'head': ...}`` matches the head's ten tensors.
    """
    if tensors % TENSORS_PER_BLOCK or tensors < 2 * TENSORS_PER_BLOCK:
        raise ValueError(f"tensors must be a multiple of ten, at least 20, got {tensors}")
    blocks = [block() for _ in range(tensors // TENSORS_PER_BLOCK - 1)]
    stages = [nn.Sequential(*blocks[i : i + per_stage]) for i in range(0, len(blocks), per_stage)]
    model = nn.Module()
    model.backbone = nn.Sequential(*stages)
    model.head = block()
    return model


def shared_model(unique_tensors: int) -> nn.Module:
    """A model whose every layer is reached twice: two containers hold the same blocks.

    Args:
        unique_tensors: Number of distinct parameter tensors, a multiple of ten, at least 20.

    Returns:
        The model; walking its modules meets ``unique_tensors - 10`` duplicates (the head
        is not shared).
    """
    model = blocks_model(unique_tensors)
    backbone = model.get_submodule("backbone")
    model.tied = nn.ModuleList(
        [layer for stage in backbone.children() for layer in stage.children()]
    )
    return model


def resnet50_like() -> nn.Module:
    """A ResNet-50 of plain layers: about 25.6M parameters in 161 tensors (no torchvision)."""

    class Bottleneck(nn.Module):
        def __init__(self, inplanes: int, planes: int, stride: int) -> None:
            super().__init__()
            width, out = planes, planes * 4
            self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(width)
            self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(width)
            self.conv3 = nn.Conv2d(width, out, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(out)
            self.downsample = (
                nn.Sequential(nn.Conv2d(inplanes, out, 1, stride, bias=False), nn.BatchNorm2d(out))
                if stride != 1 or inplanes != out
                else None
            )

    model = nn.Module()
    model.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
    model.bn1 = nn.BatchNorm2d(64)
    inplanes = 64
    for index, (planes, count, stride) in enumerate(
        [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)], start=1
    ):
        layers = []
        for position in range(count):
            layers.append(Bottleneck(inplanes, planes, stride if position == 0 else 1))
            inplanes = planes * 4
        setattr(model, f"layer{index}", nn.Sequential(*layers))
    model.fc = nn.Linear(2048, 1000)
    return model
