from __future__ import annotations

import pytest
import torch
from torch import nn

import demo_cls


def test_feature_map_has_the_advertised_channels_and_stride(images: torch.Tensor) -> None:
    backbone = demo_cls.MODELS.build(
        {"type": "SeparableConvNet", "widths": [8, 24], "strides": [2, 2]}
    )
    features = backbone(images)
    size = images.shape[-1] // backbone.stride
    assert features.shape == (images.shape[0], backbone.out_channels, size, size)
    assert backbone.out_channels == 24


def test_blocks_hold_depthwise_convs_without_bias() -> None:
    backbone = demo_cls.SeparableConvNet(widths=(8, 16), strides=(1, 1))
    depthwise = [block.depthwise for block in backbone.blocks]
    assert all(conv.groups == conv.in_channels > 1 for conv in depthwise)
    assert all(conv.bias is None for conv in backbone.modules() if isinstance(conv, nn.Conv2d))


def test_widths_and_strides_of_different_lengths_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"one stride per block: got widths=\[8, 16\]"):
        demo_cls.SeparableConvNet(widths=(8, 16), strides=(1,))


def test_norm_requires_grad_false_freezes_only_the_norms() -> None:
    backbone = demo_cls.SeparableConvNet(norm_requires_grad=False)
    for module in backbone.modules():
        params = list(module.parameters(recurse=False))
        if isinstance(module, nn.BatchNorm2d):
            assert params
            assert not any(p.requires_grad for p in params)
        elif isinstance(module, nn.Conv2d):
            assert all(p.requires_grad for p in params)


def test_norm_eval_keeps_running_statistics_fixed(images: torch.Tensor) -> None:
    backbone = demo_cls.SeparableConvNet(norm_eval=True).train()
    before = backbone.stem_norm.running_mean.clone()
    backbone(images)
    assert backbone.training
    assert not backbone.stem_norm.training
    torch.testing.assert_close(backbone.stem_norm.running_mean, before)


def test_freeze_stem_freezes_the_stem_conv_and_norm() -> None:
    backbone = demo_cls.SeparableConvNet(freeze_stem=True)
    frozen = {name for name, p in backbone.named_parameters() if not p.requires_grad}
    assert frozen == {"stem.weight", "stem_norm.weight", "stem_norm.bias"}
