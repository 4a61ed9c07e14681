"""A one-stage dense detector whose backbone comes from a config, from any scope."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from ._deform import DeformConv2d
from ._registry import MODELS
from ._synthetic import DetectionBatch


class Scale(nn.Module):
    """A learnable per-channel scale (a 1-D parameter), as FCOS puts on its box branch.

    Args:
        channels: Number of channels.
        init: Initial value of every scale.
    """

    def __init__(self, channels: int, init: float = 1.0) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.full((channels,), init))

    def forward(self, x: Tensor) -> Tensor:
        """Multiply each channel of ``x`` by its scale."""
        return x * self.scale.view(1, -1, 1, 1)


class DenseBranch(nn.Module):
    """A prediction branch: a (possibly shared) tower, a 1x1 conv, an optional scale.

    Args:
        tower: Feature tower; the detector passes the same module to both branches.
        channels: Channels of the tower's output.
        out_channels: Channels predicted per location.
        scaled: Whether to add a learnable per-channel ``Scale``.
    """

    def __init__(
        self, tower: nn.Module, channels: int, out_channels: int, scaled: bool = False
    ) -> None:
        super().__init__()
        self.tower = tower
        self.predict = nn.Conv2d(channels, out_channels, 1)
        self.scale = Scale(out_channels) if scaled else nn.Identity()

    def forward(self, x: Tensor) -> Tensor:
        """Return the dense predictions for feature map ``x``."""
        out: Tensor = self.scale(self.predict(self.tower(x)))
        return out


class DetectorOutput(NamedTuple):
    """Dense predictions on the feature grid.

    Attributes:
        cls_logits: ``(batch, num_classes + 1, h, w)``; channel 0 is background.
        box_deltas: ``(batch, 4, h, w)`` distances to the box's left, top, right and bottom
            edges, as fractions of the image size.
    """

    cls_logits: Tensor
    box_deltas: Tensor


@MODELS.register_module()
class TinyDetector(nn.Module):
    """Backbone (built from a config) -> deformable neck -> shared tower -> class and box branches.

    Its layers cover every per-parameter rule of ``regtree_optim``: norms (GroupNorm here,
    BatchNorm in typical backbones), a depthwise conv and biases in the tower, a deformable conv
    with a ``conv_offset`` child in the neck, a 1-D ``Scale``, and a tower shared by both branches
    (so ``paramwise_cfg`` needs ``bypass_duplicate=True``).

    Args:
        backbone: Config of the backbone, built with ``demo_det.MODELS``;
            ``dict(type='demo_cls.SeparableConvNet')`` reaches the demo_cls scope without
            importing it. The backbone must expose ``out_channels``.
        num_classes: Number of object classes (background is added).
        feat_channels: Channels of the neck and tower.
    """

    def __init__(
        self, backbone: Mapping[str, Any], num_classes: int = 3, feat_channels: int = 16
    ) -> None:
        super().__init__()
        self.num_classes = num_classes
        self.backbone: nn.Module = MODELS.build(backbone)
        in_channels = getattr(self.backbone, "out_channels", None)
        if not isinstance(in_channels, int):
            raise TypeError(
                f"TinyDetector needs a backbone with an int `out_channels`; "
                f"{type(self.backbone).__qualname__} (from {backbone.get('type')!r}) has "
                f"{in_channels!r}."
            )
        groups = 4 if feat_channels % 4 == 0 else 1
        self.neck = nn.Sequential(
            DeformConv2d(in_channels, feat_channels, 3, padding=1),
            nn.GroupNorm(groups, feat_channels),
            nn.ReLU(inplace=True),
        )
        tower = nn.Sequential(
            nn.Conv2d(feat_channels, feat_channels, 3, padding=1, groups=feat_channels, bias=False),
            nn.Conv2d(feat_channels, feat_channels, 1),
            nn.GroupNorm(groups, feat_channels),
            nn.ReLU(inplace=True),
        )
        self.cls_branch = DenseBranch(tower, feat_channels, num_classes + 1)
        self.box_branch = DenseBranch(tower, feat_channels, 4, scaled=True)

    def forward(self, images: Tensor) -> DetectorOutput:
        """Return dense class logits and box distances for a batch of images."""
        features = self.neck(self.backbone(images))
        return DetectorOutput(self.cls_branch(features), self.box_branch(features))

    def loss(self, batch: DetectionBatch) -> dict[str, Tensor]:
        """Return the classification and box losses for a batch with one box per image.

        A grid cell is positive when its centre lies inside the box; it must predict the box's
        class and its distances to the box's edges. Every other cell predicts background.
        """
        out = self(batch.images)
        size = batch.images.shape[-1]
        grid_h, grid_w = out.cls_logits.shape[-2:]
        stride = size / grid_w
        centres_x = (torch.arange(grid_w, device=out.cls_logits.device) + 0.5) * stride
        centres_y = (torch.arange(grid_h, device=out.cls_logits.device) + 0.5) * stride
        boxes = batch.boxes.view(-1, 4, 1, 1)
        cx, cy = centres_x.view(1, 1, -1), centres_y.view(1, -1, 1)
        shape = (-1, grid_h, grid_w)
        distances = torch.stack(
            (
                (cx - boxes[:, 0]).expand(shape),
                (cy - boxes[:, 1]).expand(shape),
                (boxes[:, 2] - cx).expand(shape),
                (boxes[:, 3] - cy).expand(shape),
            ),
            dim=1,
        )
        inside = (distances > 0).all(dim=1)
        targets = torch.where(inside, batch.labels.view(-1, 1, 1) + 1, 0)
        loss_cls = F.cross_entropy(out.cls_logits, targets)
        positives = inside.unsqueeze(1).expand_as(distances)
        # Summed then divided, so a batch without positive cells gives 0 rather than NaN.
        loss_box = F.l1_loss(
            out.box_deltas[positives], distances[positives] / size, reduction="sum"
        ) / max(int(inside.sum()), 1)
        return {"loss_cls": loss_cls, "loss_box": loss_box}
