"""A small MobileNet-style classification backbone that detectors can borrow by name."""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor, nn

from ._registry import MODELS


class SeparableBlock(nn.Module):
    """A depthwise 3x3 conv and a pointwise 1x1 conv, each followed by BatchNorm and ReLU.

    The convs carry no bias (the norm that follows has one), as in MobileNet.

    Args:
        in_channels: Channels of the input.
        out_channels: Channels of the output.
        stride: Stride of the depthwise conv.
    """

    def __init__(self, in_channels: int, out_channels: int, stride: int = 1) -> None:
        super().__init__()
        self.depthwise = nn.Conv2d(
            in_channels, in_channels, 3, stride=stride, padding=1, groups=in_channels, bias=False
        )
        self.depthwise_norm = nn.BatchNorm2d(in_channels)
        self.pointwise = nn.Conv2d(in_channels, out_channels, 1, bias=False)
        self.pointwise_norm = nn.BatchNorm2d(out_channels)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x: Tensor) -> Tensor:
        """Apply the depthwise then the pointwise stage."""
        x = self.act(self.depthwise_norm(self.depthwise(x)))
        out: Tensor = self.act(self.pointwise_norm(self.pointwise(x)))
        return out


@MODELS.register_module()
class SeparableConvNet(nn.Module):
    """A stem conv and a stack of depthwise-separable blocks; returns the last feature map.

    Detection backbones often freeze their norm layers, as mmdet's ``norm_cfg=dict(type='BN',
    requires_grad=False)`` and ``norm_eval=True`` do: ``norm_requires_grad=False`` freezes the
    norms' affine parameters (they still normalise with batch statistics), ``norm_eval=True``
    also keeps the norms in eval mode under ``train()``, so their running statistics stay put.

    Args:
        in_channels: Channels of the input image.
        stem_channels: Channels after the stride-2 stem conv.
        widths: Output channels of each separable block.
        strides: Stride of each block; as long as ``widths``.
        freeze_stem: Freeze the stem conv and its norm.
        norm_requires_grad: Whether the norms' affine parameters train.
        norm_eval: Keep the norms in eval mode.

    Attributes:
        out_channels: Channels of the returned feature map.
        stride: Total stride of the returned feature map.
    """

    def __init__(
        self,
        in_channels: int = 3,
        stem_channels: int = 16,
        widths: Sequence[int] = (16, 32, 32),
        strides: Sequence[int] = (1, 2, 1),
        freeze_stem: bool = False,
        norm_requires_grad: bool = True,
        norm_eval: bool = False,
    ) -> None:
        super().__init__()
        if len(widths) != len(strides) or not widths:
            raise ValueError(
                f"SeparableConvNet needs one stride per block: got widths={list(widths)} and "
                f"strides={list(strides)}; pass two non-empty sequences of the same length."
            )
        self.stem = nn.Conv2d(in_channels, stem_channels, 3, stride=2, padding=1, bias=False)
        self.stem_norm = nn.BatchNorm2d(stem_channels)
        self.act = nn.ReLU(inplace=True)
        blocks: list[nn.Module] = []
        channels = stem_channels
        for width, stride in zip(widths, strides, strict=True):
            blocks.append(SeparableBlock(channels, width, stride))
            channels = width
        self.blocks = nn.Sequential(*blocks)
        self.out_channels = channels
        self.stride = 2
        for stride in strides:
            self.stride *= stride
        self.norm_eval = norm_eval
        if freeze_stem:
            self.stem.requires_grad_(False)
            self.stem_norm.requires_grad_(False)
        if not norm_requires_grad:
            for norm in self._norms():
                norm.requires_grad_(False)
        self.train()

    def _norms(self) -> list[nn.modules.batchnorm._BatchNorm]:
        return [m for m in self.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]

    def train(self, mode: bool = True) -> SeparableConvNet:
        """Set training mode; with ``norm_eval`` the norms stay in eval mode."""
        super().train(mode)
        if self.norm_eval:
            for norm in self._norms():
                norm.eval()
        return self

    def forward(self, x: Tensor) -> Tensor:
        """Return the feature map of stride ``self.stride`` with ``self.out_channels`` channels."""
        out: Tensor = self.blocks(self.act(self.stem_norm(self.stem(x))))
        return out
