"""An image classifier that builds its backbone from a config."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torch import Tensor, nn

from ._registry import MODELS


@MODELS.register_module()
class TinyClassifier(nn.Module):
    """A backbone built by name, global average pooling, LayerNorm and a linear classifier.

    Args:
        backbone: Config of the backbone, built with ``demo_cls.MODELS`` (so a scoped name such as
            ``'other_pkg.Net'`` works too). It must expose ``out_channels``. Defaults to
            ``dict(type='SeparableConvNet')``.
        num_classes: Number of classes.
    """

    def __init__(self, backbone: Mapping[str, Any] | None = None, num_classes: int = 10) -> None:
        super().__init__()
        self.backbone: nn.Module = MODELS.build(
            backbone if backbone is not None else {"type": "SeparableConvNet"}
        )
        channels = getattr(self.backbone, "out_channels", None)
        if not isinstance(channels, int):
            raise TypeError(
                f"TinyClassifier needs a backbone with an int `out_channels`; "
                f"{type(self.backbone).__qualname__} has {channels!r}."
            )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.norm = nn.LayerNorm(channels)
        self.fc = nn.Linear(channels, num_classes)

    def forward(self, x: Tensor) -> Tensor:
        """Return class logits of shape ``(batch, num_classes)``."""
        features = self.pool(self.backbone(x)).flatten(1)
        logits: Tensor = self.fc(self.norm(features))
        return logits
