"""Two processes over gloo: DDP and ZeroRedundancyOptimizer built by build_optimizer."""

from __future__ import annotations

import runpy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist

WORKER = Path(__file__).with_name("_distributed_worker.py")
WORLD_SIZE = 2
STEPS = 3

pytestmark = pytest.mark.skipif(
    not (dist.is_available() and dist.is_gloo_available()),
    reason="torch.distributed with gloo is not available",
)


def _single_process_run() -> tuple[dict[str, torch.Tensor], dict[str, float]]:
    worker: dict[str, Any] = runpy.run_path(str(WORKER), run_name="__single__")
    from regtree_optim import build_optimizer

    model = worker["make_model"]()
    cfg = {"type": "SGD", **worker["OPTIMIZER_OPTIONS"], "paramwise_cfg": worker["PARAMWISE_CFG"]}
    optimizer = build_optimizer(model, cfg)
    worker["train"](model, optimizer, worker["make_batches"](STEPS), slice(None))
    lrs = {n: g["lr"] for g in optimizer.param_groups for n in g["param_names"]}
    return {n: p.detach() for n, p in model.named_parameters()}, lrs


@pytest.mark.slow
def test_ddp_zero_matches_single_process(tmp_path: Path, run_ranks: Callable[..., None]) -> None:
    run_ranks(WORKER, tmp_path, WORLD_SIZE, {"STEPS": STEPS})
    results = [torch.load(tmp_path / f"rank{r}.pt", weights_only=True) for r in range(WORLD_SIZE)]
    assert {result["type"] for result in results} == {"ZeroRedundancyOptimizer"}

    # Identical on both ranks, bit for bit.
    for name, value in results[0]["params"].items():
        assert torch.equal(value, results[1]["params"][name]), name

    # Equal to one process on the whole batch (DDP averages the shards' gradients).
    expected_params, expected_lrs = _single_process_run()
    assert set(results[0]["params"]) == set(expected_params)
    for name, value in expected_params.items():
        torch.testing.assert_close(results[0]["params"][name], value, rtol=1e-5, atol=1e-6)

    # Every parameter got its configured lr, in the exposed groups and in the shard that owns it.
    lr = 0.1
    configured = {
        "0.weight": lr,
        "0.bias": lr * 2,
        "1.weight": lr,
        "1.bias": lr,
        "2.weight": lr * 0.5,
        "2.bias": lr * 0.5,
    }
    assert expected_lrs == configured
    for result in results:
        assert result["group_lrs"] == configured
    owned: dict[str, float] = {}
    for result in results:
        assert not set(owned) & set(result["local_lrs"])
        owned.update(result["local_lrs"])
    assert owned == configured
