"""One rank of test_fsdp: FSDP2 (``fully_shard``) or FSDP1 around test_distributed's model.

Run by conftest's ``run_ranks`` with the globals ``MODE`` (``'fsdp2'`` or ``'fsdp1'``) and
``STEPS`` besides the rank's; the model, batches, training loop and rank life cycle are
``_distributed_worker``'s. Also loaded by the test for ``PARAMWISE_CFG``.
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import torch
from torch import nn

from regtree_optim import build_optimizer
from regtree_optim._registries import constructor_from_config

SHARED: dict[str, Any] = runpy.run_path(
    str(Path(__file__).with_name("_distributed_worker.py")), run_name="__helpers__"
)
# test_distributed's rules, plus a 1-D rule that sharding must not fool (FSDP1 flattens every
# parameter into 1-D pieces) and a class selector that FSDP2 must not fool (FSDPLinear).
PARAMWISE_CFG: dict[str, Any] = {
    **SHARED["PARAMWISE_CFG"],
    "flat_decay_mult": 0.5,
    "rules": [{"module": "Linear", "ndim": 2, "lr_mult": 3}],
}
OPTIMIZER_CFG: dict[str, Any] = {
    "type": "SGD",
    **SHARED["OPTIMIZER_OPTIONS"],
    "paramwise_cfg": PARAMWISE_CFG,
}


def _shard(model: nn.Module, mode: str) -> nn.Module:
    if mode == "fsdp2":
        from torch.distributed.fsdp import fully_shard

        for layer in (model[0], model[2]):
            fully_shard(layer)
        fully_shard(model)
        return model
    from torch.distributed.fsdp import FullyShardedDataParallel
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    return FullyShardedDataParallel(
        model,
        use_orig_params=True,
        device_id=torch.device("cpu"),
        auto_wrap_policy=ModuleWrapPolicy({nn.Linear}),
    )


def _full_params(model: nn.Module, mode: str) -> dict[str, torch.Tensor]:
    if mode == "fsdp2":
        return {
            name: param.full_tensor().detach().clone()  # type: ignore[attr-defined]
            for name, param in model.named_parameters()
        }
    from torch.distributed.fsdp import FullyShardedDataParallel

    # Inside summon_full_params FSDP1 names the parameters without its prefixes itself.
    with FullyShardedDataParallel.summon_full_params(model):
        return {name: param.detach().clone() for name, param in model.named_parameters()}


def _train_and_save(rank: int, world_size: int, out_dir: str, mode: str, steps: int) -> None:
    model = _shard(SHARED["make_model"](), mode)
    optimizer = build_optimizer(model, OPTIMIZER_CFG)
    rows = constructor_from_config(OPTIMIZER_CFG)[1].explain(model)  # type: ignore[attr-defined]
    settings = {
        name: (group["lr"], group["weight_decay"])
        for group in optimizer.param_groups
        for name in group["param_names"]
    }
    held = sorted({type(p).__name__ for g in optimizer.param_groups for p in g["params"]})
    per_rank = SHARED["BATCH"] // world_size
    shard = slice(rank * per_rank, (rank + 1) * per_rank)
    SHARED["train"](model, optimizer, SHARED["make_batches"](steps), shard)
    torch.save(
        {
            "settings": settings,
            "held": held,
            "shapes": {row.name: tuple(row.shape) for row in rows},
            "params": _full_params(model, mode),
        },
        Path(out_dir) / f"rank{rank}.pt",
    )


if __name__ == "__regtree_worker__":
    mode: str = globals()["MODE"]
    steps: int = globals()["STEPS"]
    SHARED["rank_main"](
        lambda rank, size, out: _train_and_save(rank, size, out, mode, steps), globals()
    )
