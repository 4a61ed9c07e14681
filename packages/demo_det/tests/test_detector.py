from __future__ import annotations

import pytest
import torch

import demo_det
import regtree


def test_predictions_cover_the_feature_grid(
    detector: demo_det.TinyDetector, batch: demo_det.DetectionBatch
) -> None:
    out = detector(batch.images)
    assert out.cls_logits.shape == (4, 3 + 1, 8, 8)
    assert out.box_deltas.shape == (4, 4, 8, 8)


def test_the_tower_is_one_module_shared_by_both_branches(
    detector: demo_det.TinyDetector,
) -> None:
    assert detector.cls_branch.tower is detector.box_branch.tower
    names = [name for name, _ in detector.named_parameters(remove_duplicate=False)]
    assert "box_branch.tower.1.weight" in names
    assert "box_branch.tower.1.weight" not in dict(detector.named_parameters())


def test_loss_falls_on_a_fixed_batch(
    detector: demo_det.TinyDetector, batch: demo_det.DetectionBatch
) -> None:
    optimizer = torch.optim.SGD(detector.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for _ in range(8):
        total = sum(detector.loss(batch).values())
        optimizer.zero_grad()
        total.backward()
        optimizer.step()
        losses.append(float(total.detach()))
    assert all(torch.isfinite(torch.tensor(losses)))
    assert losses[-1] < losses[0]


def test_backbone_without_out_channels_is_rejected() -> None:
    with pytest.raises(TypeError, match=r"int `out_channels`; NetA \(from 'NetA'\) has None"):
        demo_det.TinyDetector(backbone={"type": "NetA"})


def test_unknown_backbone_raises_not_registered() -> None:
    with pytest.raises(regtree.NotRegisteredError, match="NoSuchBackbone"):
        demo_det.TinyDetector(backbone={"type": "NoSuchBackbone"})
