from __future__ import annotations

import pytest
import torch

import demo_det
import regtree_optim

# Every multiplier of regtree_optim's paramwise rules, with distinct values.
PARAMWISE_CFG = {
    "bias_lr_mult": 2.0,
    "bias_decay_mult": 0.0,
    "norm_decay_mult": 0.1,
    "dwconv_decay_mult": 0.5,
    "flat_decay_mult": 0.2,
    "dcn_offset_lr_mult": 0.25,
    "bypass_duplicate": True,
}
OPTIMIZER_CFG = {"type": "SGD", "lr": 0.1, "momentum": 0.9, "weight_decay": 1e-3}


def test_the_detector_exercises_every_layer_rule(detector: demo_det.TinyDetector) -> None:
    constructor = regtree_optim.DefaultOptimizerConstructor(OPTIMIZER_CFG, PARAMWISE_CFG)
    with pytest.warns(UserWarning, match="bypass_duplicate") as skipped:
        rows = constructor.explain(detector)
    messages = [str(warning.message) for warning in skipped]
    for name, _ in detector.cls_branch.tower.named_parameters():
        assert sum(f"'box_branch.tower.{name}'" in message for message in messages) == 1
    decided = " ".join(row.rule for row in rows)
    for key in PARAMWISE_CFG:
        if key.endswith("_mult"):
            assert key in decided


def test_the_shared_tower_needs_bypass_duplicate(detector: demo_det.TinyDetector) -> None:
    strict = {key: v for key, v in PARAMWISE_CFG.items() if key != "bypass_duplicate"}
    with pytest.raises(ValueError, match=r"box_branch\.tower\.0\.weight"):
        regtree_optim.build_optimizer(detector, {**OPTIMIZER_CFG, "paramwise_cfg": strict})


def test_optimizer_steps_every_trainable_parameter_once(
    detector: demo_det.TinyDetector, batch: demo_det.DetectionBatch
) -> None:
    with pytest.warns(UserWarning, match="bypass_duplicate"):
        optimizer = regtree_optim.build_optimizer(
            detector, {**OPTIMIZER_CFG, "paramwise_cfg": PARAMWISE_CFG}
        )
    grouped = [p for group in optimizer.param_groups for p in group["params"]]
    assert len(grouped) == len({id(p) for p in grouped}) == len(list(detector.parameters()))
    before = {name: p.detach().clone() for name, p in detector.named_parameters()}
    sum(detector.loss(batch).values()).backward()
    optimizer.step()
    for name, p in detector.named_parameters():
        assert not torch.equal(p, before[name]), name
