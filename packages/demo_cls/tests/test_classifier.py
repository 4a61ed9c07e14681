from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

import demo_cls


class _NoChannels(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


def test_logits_have_one_column_per_class(images: torch.Tensor) -> None:
    model = demo_cls.MODELS.build({"type": "TinyClassifier", "num_classes": 5})
    assert isinstance(model.backbone, demo_cls.SeparableConvNet)
    assert model(images).shape == (images.shape[0], 5)


def test_backbone_config_may_name_a_class() -> None:
    model = demo_cls.TinyClassifier(
        backbone={"type": demo_cls.SeparableConvNet, "widths": [8], "strides": [1]}
    )
    assert model.fc.in_features == 8


def test_backbone_without_out_channels_is_rejected() -> None:
    with pytest.raises(TypeError, match="int `out_channels`; _NoChannels has None"):
        demo_cls.TinyClassifier(backbone={"type": _NoChannels})


def test_a_few_steps_fit_a_fixed_batch(images: torch.Tensor, generator: torch.Generator) -> None:
    torch.manual_seed(0)
    model = demo_cls.TinyClassifier(num_classes=3)
    labels = torch.randint(3, (images.shape[0],), generator=generator)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(10):
        loss = F.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < losses[0]
