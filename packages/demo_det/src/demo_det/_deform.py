"""A deformable convolution (v1) in plain PyTorch, standing in for mmcv's and torchvision's."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from regtree_optim import register_dcn_type

from ._registry import MODELS


@MODELS.register_module()
class DeformConv2d(nn.Module):
    """A 3x3-style conv whose sampling points move by offsets predicted from the input.

    Laid out like mmcv's ``DeformConv2dPack``: the conv's own ``weight`` and ``bias`` are
    parameters of this module, and the offsets come from a child ``conv_offset`` Conv2d,
    zero-initialised so that the layer starts as a plain convolution. It is registered with
    ``regtree_optim.register_dcn_type``, so ``dcn_offset_lr_mult`` applies to ``conv_offset``.
    Bilinear sampling goes through ``grid_sample``: slow for large maps, exact and portable.

    Args:
        in_channels: Channels of the input.
        out_channels: Channels of the output.
        kernel_size: Side of the square kernel.
        stride: Stride of the convolution.
        padding: Zero padding on each side.
        dilation: Spacing between kernel taps.
        bias: Whether the convolution has a bias.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int = 3,
        stride: int = 1,
        padding: int = 1,
        dilation: int = 1,
        bias: bool = True,
    ) -> None:
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.weight = nn.Parameter(torch.empty(out_channels, in_channels, kernel_size, kernel_size))
        self.bias = nn.Parameter(torch.empty(out_channels)) if bias else None
        self.conv_offset = nn.Conv2d(
            in_channels,
            2 * kernel_size * kernel_size,
            kernel_size,
            stride=stride,
            padding=padding,
            dilation=dilation,
            bias=True,
        )
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Initialise the weight like ``nn.Conv2d`` and the offsets to zero."""
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_channels * self.kernel_size * self.kernel_size)
            nn.init.uniform_(self.bias, -bound, bound)
        nn.init.zeros_(self.conv_offset.weight)
        if self.conv_offset.bias is not None:
            nn.init.zeros_(self.conv_offset.bias)

    def _base_positions(self, height: int, width: int, device: torch.device) -> Tensor:
        """Pixel positions (y, x) of every kernel tap at every output location, offsets aside.

        Returns:
            A tensor of shape ``(2, taps, out_height, out_width)``.
        """
        k = self.kernel_size
        span = self.dilation * (k - 1)
        out_h = (height + 2 * self.padding - span - 1) // self.stride + 1
        out_w = (width + 2 * self.padding - span - 1) // self.stride + 1
        taps = torch.arange(k, device=device) * self.dilation
        rows = torch.arange(out_h, device=device) * self.stride - self.padding
        cols = torch.arange(out_w, device=device) * self.stride - self.padding
        tap_y, tap_x = torch.meshgrid(taps, taps, indexing="ij")
        y = tap_y.reshape(-1, 1, 1) + rows.reshape(1, -1, 1)
        x = tap_x.reshape(-1, 1, 1) + cols.reshape(1, 1, -1)
        return torch.stack((y.expand(-1, -1, out_w), x.expand(-1, out_h, -1))).float()

    def forward(self, x: Tensor) -> Tensor:
        """Sample the input at the offset positions and apply the kernel."""
        batch, channels, height, width = x.shape
        taps = self.kernel_size * self.kernel_size
        offsets = self.conv_offset(x)
        out_h, out_w = offsets.shape[-2:]
        # Offsets come as (dy, dx) pairs per tap, the layout of mmcv and torchvision.
        offsets = offsets.view(batch, taps, 2, out_h, out_w)
        base = self._base_positions(height, width, x.device)
        pos_y = base[0] + offsets[:, :, 0]
        pos_x = base[1] + offsets[:, :, 1]
        # align_corners=True maps pixel i to -1 + 2i/(size-1); zeros outside, like zero padding.
        grid = torch.stack(
            (2 * pos_x / max(width - 1, 1) - 1, 2 * pos_y / max(height - 1, 1) - 1), dim=-1
        )
        sampled = F.grid_sample(
            x,
            grid.view(batch, taps * out_h, out_w, 2),
            mode="bilinear",
            padding_mode="zeros",
            align_corners=True,
        ).view(batch, channels, taps, out_h, out_w)
        out = torch.einsum("nckhw,ock->nohw", sampled, self.weight.view(-1, channels, taps))
        if self.bias is not None:
            out = out + self.bias.view(1, -1, 1, 1)
        return out


register_dcn_type(DeformConv2d)
