"""configs/routed_muon.toml: Muon for the blocks' 2-D weights, AdamW for the rest, one schedule."""

from __future__ import annotations

import copy
from pathlib import Path

import torch

import regtree
from regtree_optim import (
    RoutedOptimizer,
    build_optimizer,
    build_scheduler,
    load_state_dict_by_name,
)


def test_the_example_config_trains_with_two_optimizers_and_one_schedule(repo_root: Path) -> None:
    config = regtree.load_config(repo_root / "configs" / "routed_muon.toml")
    torch.manual_seed(0)
    model = regtree.MODELS.build(config["model"])
    optimizer = build_optimizer(model, config["optimizer"])
    assert isinstance(optimizer, RoutedOptimizer)
    routed = {
        name: group["optimizer"]
        for group in optimizer.param_groups
        for name in group["param_names"]
    }
    shapes = dict(model.named_parameters())
    muon = {name for name, route in routed.items() if route == "muon"}
    assert muon == {
        name for name, param in shapes.items() if name.startswith("blocks.") and param.ndim == 2
    }
    assert muon
    assert set(routed) - muon  # the embeddings, head, norms and biases: AdamW

    scheduler = build_scheduler(optimizer, config["scheduler"])
    initial = [group["lr"] for group in optimizer.param_groups]
    images = torch.randn(4, 3, 32, 32)
    for _ in range(3):
        optimizer.zero_grad()
        model(images).square().mean().backward()
        optimizer.step()
        scheduler.step()
    # One warmup raised every group's lr by the same factor, Muon's and AdamW's alike.
    factors = {
        round(g["lr"] / lr, 12) for g, lr in zip(optimizer.param_groups, initial, strict=True)
    }
    assert len(factors) == 1
    assert factors != {1.0}

    # One checkpoint: it loads by name into a fresh RoutedOptimizer.
    fresh = build_optimizer(copy.deepcopy(model), config["optimizer"])
    report = load_state_dict_by_name(fresh, optimizer.state_dict())
    assert report.loaded == sorted(routed)
    assert report.new == report.dropped == []
