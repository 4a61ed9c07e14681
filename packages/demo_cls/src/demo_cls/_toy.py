"""The smallest model of the scope, the one every cross-scope check builds."""

from __future__ import annotations

from torch import Tensor, nn

from ._registry import MODELS


@MODELS.register_module()
class NetB(nn.Module):
    """A parameter-free model that returns ``x + 1``, so a build is checked by its output."""

    def forward(self, x: Tensor) -> Tensor:
        """Return ``x + 1``."""
        return x + 1
