from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

import demo_det
import regtree_optim


@pytest.mark.parametrize(
    ("kernel_size", "stride", "padding", "dilation"),
    [(3, 1, 1, 1), (3, 2, 1, 1), (3, 1, 2, 2), (1, 1, 0, 1), (5, 2, 0, 1)],
)
def test_zero_offsets_make_a_plain_convolution(
    kernel_size: int, stride: int, padding: int, dilation: int, generator: torch.Generator
) -> None:
    conv = demo_det.DeformConv2d(4, 6, kernel_size, stride, padding, dilation)
    x = torch.randn(2, 4, 11, 9, generator=generator)
    expected = F.conv2d(x, conv.weight, conv.bias, stride, padding, dilation)
    torch.testing.assert_close(conv(x), expected)


def test_an_offset_of_one_column_samples_the_next_column(generator: torch.Generator) -> None:
    conv = demo_det.DeformConv2d(3, 5, 3, padding=1)
    with torch.no_grad():
        # Offsets come as (dy, dx) per tap: dx = 1 everywhere shifts every sample right by one.
        conv.conv_offset.bias.view(9, 2)[:, 1] = 1.0
    x = torch.randn(1, 3, 7, 8, generator=generator)
    # Tap j of output column o now reads column o + j (zero beyond the last column).
    expected = F.conv2d(F.pad(x, (0, 2)), conv.weight, conv.bias, padding=(1, 0))
    torch.testing.assert_close(conv(x), expected)


def test_gradients_reach_the_offsets(generator: torch.Generator) -> None:
    conv = demo_det.DeformConv2d(3, 4)
    conv(torch.randn(2, 3, 6, 6, generator=generator)).square().sum().backward()
    assert conv.conv_offset.weight.grad is not None
    assert conv.conv_offset.weight.grad.abs().sum() > 0


def test_conv_offset_follows_dcn_offset_lr_mult() -> None:
    # register_dcn_type ran at import: conv_offset is inside a deformable conv, the conv's own
    # weight and bias are not.
    model = torch.nn.Sequential(demo_det.DeformConv2d(3, 4))
    constructor = regtree_optim.DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0}, {"dcn_offset_lr_mult": 0.25, "bias_lr_mult": 2.0}
    )
    lrs = {row.name: row.lr for row in constructor.explain(model)}
    assert lrs == {
        "0.weight": 1.0,
        "0.bias": 2.0,
        "0.conv_offset.weight": 0.25,
        "0.conv_offset.bias": 0.25,
    }
