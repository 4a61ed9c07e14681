"""Two processes over gloo: DDP and ZeroRedundancyOptimizer built by build_optimizer.

Also ``full_state_dict``: rank 0 gets the whole consolidated state, the other rank None, and the
consolidated state loads by name into a one-process optimizer.
"""

from __future__ import annotations

import runpy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist

from regtree_optim import build_optimizer, load_state_dict_by_name

WORKER = Path(__file__).with_name("_distributed_worker.py")
WORLD_SIZE = 2
STEPS = 3

pytestmark = pytest.mark.skipif(
    not (dist.is_available() and dist.is_gloo_available()),
    reason="torch.distributed with gloo is not available",
)


def _single_process_run() -> tuple[dict[str, torch.Tensor], dict[str, float]]:
    worker: dict[str, Any] = runpy.run_path(str(WORKER), run_name="__single__")
    model = worker["make_model"]()
    cfg = {"type": "SGD", **worker["OPTIMIZER_OPTIONS"], "paramwise_cfg": worker["PARAMWISE_CFG"]}
    optimizer = build_optimizer(model, cfg)
    worker["train"](model, optimizer, worker["make_batches"](STEPS), slice(None))
    lrs = {n: g["lr"] for g in optimizer.param_groups for n in g["param_names"]}
    return {n: p.detach() for n, p in model.named_parameters()}, lrs


@pytest.fixture(scope="module")
def rank_results(
    tmp_path_factory: pytest.TempPathFactory, run_ranks: Callable[..., None]
) -> list[dict[str, Any]]:
    """What each rank saved; the two ranks run once for the module's tests."""
    out_dir = tmp_path_factory.mktemp("ranks")
    run_ranks(WORKER, out_dir, WORLD_SIZE, {"STEPS": STEPS})
    return [torch.load(out_dir / f"rank{r}.pt", weights_only=True) for r in range(WORLD_SIZE)]


@pytest.mark.slow
def test_ddp_zero_matches_single_process(rank_results: list[dict[str, Any]]) -> None:
    results = rank_results
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


@pytest.mark.slow
def test_full_state_dict_gives_rank_0_the_whole_state_and_loads_by_name(
    rank_results: list[dict[str, Any]],
) -> None:
    results = rank_results
    full = results[0]["full_state_dict"]
    assert results[1]["full_state_dict"] is None

    # The whole state: every parameter's momentum, each equal to the shard that owns it.
    shards: dict[str, dict[str, torch.Tensor]] = {}
    for result in results:
        assert not set(shards) & set(result["shard_state"])
        shards.update(result["shard_state"])
    names = [name for group in full["param_groups"] for name in group["param_names"]]
    assert sorted(names) == sorted(shards) == sorted(results[0]["params"])

    # Loaded by name into one process's optimizer (merged groups, another layout than ZeRO's
    # shards), every parameter holds the state of its shard, bit for bit.
    worker: dict[str, Any] = runpy.run_path(str(WORKER), run_name="__single__")
    model = worker["make_model"]()
    cfg = {"type": "SGD", **worker["OPTIMIZER_OPTIONS"], "paramwise_cfg": worker["PARAMWISE_CFG"]}
    optimizer = build_optimizer(model, cfg)
    report = load_state_dict_by_name(optimizer, full)
    assert (report.loaded, report.new, report.dropped) == (sorted(shards), [], [])
    params = dict(model.named_parameters())
    for name, state in shards.items():
        loaded = optimizer.state[params[name]]
        assert loaded.keys() == state.keys(), name
        for key, value in state.items():
            assert torch.equal(loaded[key], value), (name, key)
