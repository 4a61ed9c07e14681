"""The smallest model of the scope, the one every cross-scope check builds."""

from __future__ import annotations

from torch import Tensor, nn

from ._registry import MODELS


@MODELS.register_module()
class NetA(nn.Module):
    """A parameter-free model that returns its input, so a build is checked by its output."""

    def forward(self, x: Tensor) -> Tensor:
        """Return ``x`` unchanged."""
        return x
