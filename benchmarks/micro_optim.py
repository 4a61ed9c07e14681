"""Micro-benchmark of regtree_optim on a model of 10,000 parameter tensors (CPU, one process).

Prints the constructor's time next to ``torch.optim.SGD(model.parameters())``, the number of
groups, and ``step()`` times (foreach and fused) of the merged groups next to one group per
tensor and one group holding everything. Run: ``python benchmarks/micro_optim.py``.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from regtree_optim import build_optimizer

BLOCKS = 2500  # conv (weight, bias) + batch norm (weight, bias): 4 tensors per block
PARAMWISE_CFG: dict[str, Any] = {
    "bias_lr_mult": 2.0,
    "bias_decay_mult": 0.0,
    "norm_decay_mult": 0.0,
    "custom_keys": {"head": {"lr_mult": 0.1}},
}


def make_model(blocks: int = BLOCKS) -> nn.Module:
    body = nn.Sequential(
        *[nn.Sequential(nn.Conv2d(8, 8, 1), nn.BatchNorm2d(8)) for _ in range(blocks - 1)]
    )
    model = nn.Module()
    model.body = body
    model.head = nn.Sequential(nn.Conv2d(8, 8, 1), nn.BatchNorm2d(8))
    return model


def interleaved(cases: dict[str, Callable[[], object]], rounds: int) -> dict[str, list[float]]:
    """Time each case once per round, alternating, so that load on the machine hits all alike."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, fn in cases.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return times


def ratio(times: dict[str, list[float]], case: str, floor: str) -> float:
    """Median of the per-round ratios: robust to rounds where the machine was busy."""
    return statistics.median(a / b for a, b in zip(times[case], times[floor], strict=True))


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1e3:8.1f} ms"


def stepper(model: nn.Module, cfg: dict[str, Any]) -> tuple[Callable[[], object], int]:
    optimizer = build_optimizer(model, cfg)
    optimizer.step()  # momentum buffers created
    return optimizer.step, len(optimizer.param_groups)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=15, help="rounds of each measurement")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = make_model()
    count = sum(1 for _ in model.parameters())
    base = {"type": "SGD", "lr": 0.01, "momentum": 0.9, "weight_decay": 1e-4}
    base_options: dict[str, Any] = {key: value for key, value in base.items() if key != "type"}
    ours = {**base, "paramwise_cfg": PARAMWISE_CFG}
    unmerged = {**base, "paramwise_cfg": {**PARAMWISE_CFG, "merge_groups": False}}
    print(f"model: {count} parameter tensors, torch {torch.__version__}")

    times = interleaved(
        {
            "floor": lambda: torch.optim.SGD(model.parameters(), **base_options),
            "ours": lambda: build_optimizer(model, ours),
            "unmerged": lambda: build_optimizer(model, unmerged),
        },
        args.repeat,
    )
    groups = len(build_optimizer(model, ours).param_groups)
    print(f"torch.optim.SGD(model.parameters()):  {ms(times['floor'])}")
    print(
        f"build_optimizer, paramwise_cfg:       {ms(times['ours'])}  "
        f"({ratio(times, 'ours', 'floor'):.2f}x, {groups} groups)"
    )
    print(
        f"build_optimizer, merge_groups=False:  {ms(times['unmerged'])}  "
        f"({ratio(times, 'unmerged', 'floor'):.2f}x, {count} groups)"
    )

    tied = make_model()
    blocks: Any = tied.body  # an nn.Sequential of (conv, norm) pairs
    for index in range(1, BLOCKS - 1):
        blocks[index][0].weight = blocks[0][0].weight
    bypass = {**base, "paramwise_cfg": {**PARAMWISE_CFG, "bypass_duplicate": True}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        times = interleaved(
            {
                "floor": lambda: torch.optim.SGD(tied.parameters(), **base_options),
                "ours": lambda: build_optimizer(tied, bypass),
            },
            args.repeat,
        )
    print(
        f"bypass_duplicate ({BLOCKS - 2} shared):  {ms(times['ours'])}  "
        f"({ratio(times, 'ours', 'floor'):.2f}x SGD(parameters()) {ms(times['floor']).strip()})"
    )

    for param in model.parameters():
        param.grad = torch.full_like(param, 1e-3)
    for flavour in ("foreach", "fused"):
        flags = {flavour: True}
        steps: dict[str, Callable[[], object]] = {}
        counts: dict[str, int] = {}
        for name, cfg in (
            ("one group", {**base, **flags}),
            ("ours", {**ours, **flags}),
            # Same arithmetic as one group (no zero weight decay to skip): grouping cost alone.
            ("ours, lr rules only", {**base, **flags, "paramwise_cfg": {"bias_lr_mult": 2.0}}),
            ("per tensor", {**unmerged, **flags}),
        ):
            steps[name], counts[name] = stepper(model, cfg)
        times = interleaved(steps, args.repeat)
        print(
            f"step ({flavour:7s}): "
            + " | ".join(f"{name} ({counts[name]}) {ms(times[name]).strip()}" for name in steps)
            + f" | ours/one group {ratio(times, 'ours', 'one group'):.2f}x"
            + f" | lr rules only/one group {ratio(times, 'ours, lr rules only', 'one group'):.2f}x"
            + f" | per tensor/one group {ratio(times, 'per tensor', 'one group'):.2f}x"
        )


if __name__ == "__main__":
    main()
