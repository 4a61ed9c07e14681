"""Synthetic detection data: one coloured square per image, on noise."""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

# Class c paints the channels set in the binary form of c + 1: seven distinct colours.
MAX_CLASSES = 7


class DetectionBatch(NamedTuple):
    """A batch of images with one box each.

    Attributes:
        images: ``(batch, 3, size, size)`` float images.
        labels: ``(batch,)`` class index of each image's box.
        boxes: ``(batch, 4)`` boxes as ``(x1, y1, x2, y2)`` in pixels, ``x2``/``y2`` exclusive.
    """

    images: Tensor
    labels: Tensor
    boxes: Tensor


def class_colour(label: int) -> Tensor:
    """Return the RGB colour (0 or 1 per channel) that class ``label`` paints."""
    code = label + 1
    return torch.tensor([float((code >> bit) & 1) for bit in range(3)])


def synthetic_batch(
    batch_size: int, image_size: int, num_classes: int, generator: torch.Generator
) -> DetectionBatch:
    """Draw a batch of noisy images, each with one square of a class colour.

    Args:
        batch_size: Number of images.
        image_size: Side of each square image, in pixels (at least 8).
        num_classes: Number of classes, 1 to 7.
        generator: The random source, so that a seeded run repeats exactly.

    Returns:
        The images with their labels and boxes.
    """
    if not 1 <= num_classes <= MAX_CLASSES:
        raise ValueError(
            f"synthetic_batch draws 1 to {MAX_CLASSES} classes (one per colour), "
            f"got num_classes={num_classes}."
        )
    if image_size < 8:
        raise ValueError(f"synthetic_batch needs image_size >= 8, got {image_size}.")
    images = 0.1 * torch.randn(batch_size, 3, image_size, image_size, generator=generator)
    labels = torch.randint(num_classes, (batch_size,), generator=generator)
    sides = torch.randint(image_size // 4, image_size // 2 + 1, (batch_size,), generator=generator)
    boxes = torch.empty(batch_size, 4)
    for i in range(batch_size):
        side = int(sides[i])
        x1, y1 = (int(v) for v in torch.randint(image_size - side + 1, (2,), generator=generator))
        images[i, :, y1 : y1 + side, x1 : x1 + side] += class_colour(int(labels[i])).view(3, 1, 1)
        boxes[i] = torch.tensor([x1, y1, x1 + side, y1 + side], dtype=torch.float32)
    return DetectionBatch(images, labels, boxes)
