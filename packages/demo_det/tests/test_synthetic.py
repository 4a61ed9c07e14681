from __future__ import annotations

import pytest
import torch

import demo_det


def test_batch_shapes_and_boxes_inside_the_image(generator: torch.Generator) -> None:
    batch = demo_det.synthetic_batch(8, 24, 5, generator)
    assert batch.images.shape == (8, 3, 24, 24)
    assert batch.labels.shape == (8,)
    assert batch.boxes.shape == (8, 4)
    assert int(batch.labels.min()) >= 0
    assert int(batch.labels.max()) < 5
    x1, y1, x2, y2 = batch.boxes.unbind(1)
    assert float(batch.boxes.min()) >= 0
    assert float(batch.boxes.max()) <= 24
    assert bool((x2 > x1).all())
    torch.testing.assert_close(x2 - x1, y2 - y1)


def test_each_box_is_painted_in_its_class_colour(generator: torch.Generator) -> None:
    batch = demo_det.synthetic_batch(6, 32, 7, generator)
    for image, label, box in zip(batch.images, batch.labels, batch.boxes, strict=True):
        x1, y1, x2, y2 = (int(v) for v in box)
        inside = image[:, y1:y2, x1:x2].mean(dim=(1, 2))
        torch.testing.assert_close(inside, demo_det.class_colour(int(label)), atol=0.1, rtol=0)


def test_same_seed_same_batch() -> None:
    first = demo_det.synthetic_batch(3, 16, 2, torch.Generator().manual_seed(7))
    second = demo_det.synthetic_batch(3, 16, 2, torch.Generator().manual_seed(7))
    for a, b in zip(first, second, strict=True):
        torch.testing.assert_close(a, b)


def test_class_colours_are_distinct() -> None:
    colours = {tuple(demo_det.class_colour(c).tolist()) for c in range(demo_det.MAX_CLASSES)}
    assert len(colours) == demo_det.MAX_CLASSES


@pytest.mark.parametrize(("num_classes", "image_size"), [(0, 32), (8, 32), (3, 4)])
def test_out_of_range_arguments_are_rejected(
    num_classes: int, image_size: int, generator: torch.Generator
) -> None:
    with pytest.raises(ValueError, match=rf"got (num_classes={num_classes}|{image_size})"):
        demo_det.synthetic_batch(2, image_size, num_classes, generator)
