"""One rank of test_distributed: DDP + ZeroRedundancyOptimizer built by build_optimizer.

After training, each rank calls ``full_state_dict`` (a collective): rank 0 saves the whole
consolidated state, the other rank what it got (None), and each rank its own shard's state by
name, so the test can check the consolidated state against the shards.

Run by ``runpy.run_path`` in a spawned process (conftest's ``run_ranks``); the test passes
``RANK``, ``WORLD_SIZE``, ``INIT_METHOD``, ``OUT_DIR`` and ``STEPS`` as globals. Also loaded for
the single-process run, and by other workers for :func:`rank_main`, the one rank life cycle:
join the group, work, tear down, leave.
"""

from __future__ import annotations

import datetime
import gc
import os
import sys
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from regtree_optim import build_optimizer, full_state_dict

PARAMWISE_CFG: dict[str, Any] = {
    "bias_lr_mult": 2,
    "norm_decay_mult": 0,
    "custom_keys": {"2.": {"lr_mult": 0.5}},
}
OPTIMIZER_OPTIONS: dict[str, Any] = {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01}
BATCH = 8


def make_model() -> nn.Module:
    torch.manual_seed(0)
    # LayerNorm, not BatchNorm: per-sample statistics make a sharded batch equal to the full one.
    return nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.Linear(8, 2))


def make_batches(steps: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(1)
    return [
        (torch.randn(BATCH, 4, generator=generator), torch.randn(BATCH, 2, generator=generator))
        for _ in range(steps)
    ]


def train(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    batches: list[tuple[torch.Tensor, torch.Tensor]],
    shard: slice,
) -> None:
    for inputs, targets in batches:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs[shard]), targets[shard])
        loss.backward()
        optimizer.step()


def _train_and_save(rank: int, world_size: int, out_dir: str, steps: int) -> None:
    model = make_model()
    ddp = nn.parallel.DistributedDataParallel(model)
    cfg = {
        "type": "ZeroRedundancyOptimizer",
        "optimizer_type": "SGD",
        **OPTIMIZER_OPTIONS,
        "paramwise_cfg": PARAMWISE_CFG,
    }
    optimizer = build_optimizer(ddp, cfg)
    per_rank = BATCH // world_size
    train(ddp, optimizer, make_batches(steps), slice(rank * per_rank, (rank + 1) * per_rank))
    names = {id(p): n for n, p in model.named_parameters()}
    # The local optimizer holds the shard this rank updates, with its group's settings.
    local_lrs = {
        names[id(param)]: group["lr"]
        for group in optimizer.optim.param_groups  # type: ignore[attr-defined]
        for param in group["params"]
    }
    # Every rank calls it: consolidation gathers the shards on rank 0.
    full = full_state_dict(optimizer)
    local = optimizer.optim  # type: ignore[attr-defined]
    shard_state = {
        names[id(param)]: {key: value.clone() for key, value in local.state[param].items()}
        for group in local.param_groups
        for param in group["params"]
        if local.state.get(param)
    }
    torch.save(
        {
            "type": type(optimizer).__name__,
            "full_state_dict": full,
            "shard_state": shard_state,
            "params": {n: p.detach().clone() for n, p in model.named_parameters()},
            "group_lrs": {n: g["lr"] for g in optimizer.param_groups for n in g["param_names"]},
            "local_lrs": local_lrs,
        },
        Path(out_dir) / f"rank{rank}.pt",
    )


# work(rank, world_size, out_dir): one rank's part, run inside the group.
RankWork = Callable[[int, int, str], None]


def run_rank(work: RankWork, rank: int, world_size: int, init_method: str, out_dir: str) -> None:
    # Keep gloo on the loopback device: a host name resolving to another interface must not
    # matter for a test that talks to 127.0.0.1 only.
    if sys.platform.startswith("linux"):
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    elif sys.platform == "darwin":
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo0")
    dist.init_process_group(
        "gloo",
        init_method=init_method,
        rank=rank,
        world_size=world_size,
        timeout=datetime.timedelta(seconds=60),
    )
    try:
        work(rank, world_size, out_dir)
        # Free what Python holds of the model, DDP and ZeRO (nn.Module graphs are cyclic). DDP's
        # C++ reducer still keeps the group alive after destroy_process_group(), so _main leaves
        # without finalization: gloo's threads torn down there can abort the process
        # ("terminate called without an active exception", seen on a CI machine).
        gc.collect()
        dist.barrier()
    finally:
        dist.destroy_process_group()
    # Written only when every collective and the teardown succeeded; the test reports it.
    (Path(out_dir) / f"rank{rank}.done").touch()


def rank_main(work: RankWork, given: Mapping[str, Any]) -> None:
    """Run ``work`` as the rank ``given`` (a worker's globals) names, then leave the process."""
    try:
        run_rank(work, given["RANK"], given["WORLD_SIZE"], given["INIT_METHOD"], given["OUT_DIR"])
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    # Leave without the interpreter's finalization: no C++ destructor of torch's runs after the
    # work is done and checked, so the exit status reports the test's work alone.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__regtree_worker__":
    steps: int = globals()["STEPS"]
    rank_main(lambda rank, size, out: _train_and_save(rank, size, out, steps), globals())
