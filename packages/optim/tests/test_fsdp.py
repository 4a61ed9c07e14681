"""Sharded models (SPEC 3.6): FSDP2 and FSDP1 over gloo on CPU, seen as the unsharded model."""

from __future__ import annotations

import runpy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from regtree_optim import build_optimizer

WORKER = Path(__file__).with_name("_fsdp_worker.py")
WORLD_SIZE = 2
STEPS = 3


def _unsharded_run() -> tuple[dict[str, tuple[Any, Any]], dict[str, torch.Tensor]]:
    """The same model, config and steps in one process on the whole batch."""
    worker: dict[str, Any] = runpy.run_path(str(WORKER), run_name="__single__")
    shared = worker["SHARED"]
    model = shared["make_model"]()
    optimizer = build_optimizer(model, worker["OPTIMIZER_CFG"])
    settings = {
        name: (group["lr"], group["weight_decay"])
        for group in optimizer.param_groups
        for name in group["param_names"]
    }
    shared["train"](model, optimizer, shared["make_batches"](STEPS), slice(None))
    return settings, {name: param.detach() for name, param in model.named_parameters()}


def _check_ranks(out_dir: Path, held: list[str]) -> None:
    results = [torch.load(out_dir / f"rank{r}.pt", weights_only=True) for r in range(WORLD_SIZE)]
    settings, params = _unsharded_run()
    lr, wd = 0.1, 0.01
    # The rules as the unsharded model sees them (a sharded one must not change any of them).
    assert settings == {
        "0.weight": (lr * 3, wd),
        "0.bias": (lr * 2, wd),
        "1.weight": (lr, wd * 0),
        "1.bias": (lr, wd * 0),
        "2.weight": (lr * 0.5 * 3, wd),
        "2.bias": (lr * 0.5, wd),
    }
    shapes = {name: tuple(param.shape) for name, param in params.items()}
    for result in results:
        assert result["settings"] == settings
        assert result["held"] == held
        assert result["shapes"] == shapes
        # The ranks average their halves' gradients where one process averages the whole
        # batch: equal in exact arithmetic, different in float32 summation order only. Each
        # step's gradient differs by a few ulps (~1e-7 relative); three SGD steps with momentum
        # carry that into the weights at ~1e-6 at most, so 1e-5 relative (1e-6 absolute near
        # zero) is well above rounding and far below any wrong setting (a missed lr_mult or
        # decay moves weights by ~1e-2).
        assert set(result["params"]) == set(params)
        for name, value in params.items():
            torch.testing.assert_close(result["params"][name], value, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_fsdp2_keeps_every_setting_and_trains_as_one_process(
    tmp_path: Path, run_ranks: Callable[..., None]
) -> None:
    run_ranks(WORKER, tmp_path, WORLD_SIZE, {"MODE": "fsdp2", "STEPS": STEPS})
    # The optimizer holds fully_shard's DTensor parameters, not copies.
    _check_ranks(tmp_path, held=["DTensor"])


@pytest.mark.slow
def test_fsdp1_with_orig_params_keeps_every_setting_and_trains_as_one_process(
    tmp_path: Path, run_ranks: Callable[..., None]
) -> None:
    # FSDP1 runs on CPU with gloo in torch 2.13 (device_id=cpu); its parameters are 1-D views
    # of each rank's shard there, so the 1-D rules and the shapes test the flat records.
    run_ranks(WORKER, tmp_path, WORLD_SIZE, {"MODE": "fsdp1", "STEPS": STEPS})
    _check_ranks(tmp_path, held=["Parameter"])


# FSDP1 in a one-rank group shards nothing and says so; its flat parameters are still built.
_NO_SHARD_WARNING = "ignore:FSDP is switching to use `NO_SHARD`:UserWarning"


def _fsdp1(use_orig_params: bool) -> torch.nn.Module:
    from torch.distributed.fsdp import FullyShardedDataParallel

    worker: dict[str, Any] = runpy.run_path(str(WORKER), run_name="__single__")
    model = worker["SHARED"]["make_model"]()
    return FullyShardedDataParallel(
        model, use_orig_params=use_orig_params, device_id=torch.device("cpu")
    )


@pytest.mark.filterwarnings(_NO_SHARD_WARNING)
@pytest.mark.usefixtures("process_group")
def test_fsdp1_flat_parameter_with_different_settings_asks_for_use_orig_params() -> None:
    with pytest.raises(
        ValueError,
        match=r"paramwise_cfg gives '0\.weight' \(default: lr=0\.1\) and '0\.bias' "
        r"\(bias_lr_mult: lr=0\.2\) different settings, but FSDP flattened both into one "
        r"parameter, '_flat_param'.*FullyShardedDataParallel\(\.\.\., use_orig_params=True\)",
    ):
        build_optimizer(
            _fsdp1(False), {"type": "SGD", "lr": 0.1, "paramwise_cfg": {"bias_lr_mult": 2}}
        )


@pytest.mark.filterwarnings(_NO_SHARD_WARNING)
@pytest.mark.usefixtures("process_group")
def test_fsdp1_flat_parameter_whose_parameters_agree_gets_their_settings() -> None:
    # Every parameter of the flat one gets lr 0.1 * 0.5: one setting, so it can be honoured.
    cfg = {"type": "SGD", "lr": 0.1, "paramwise_cfg": {"custom_keys": {".": {"lr_mult": 0.5}}}}
    optimizer = build_optimizer(_fsdp1(False), cfg)
    assert [(g["param_names"], g["lr"]) for g in optimizer.param_groups] == [
        (["_flat_param"], 0.05)
    ]


@pytest.mark.filterwarnings(_NO_SHARD_WARNING)
@pytest.mark.usefixtures("process_group")
def test_fsdp1_with_orig_params_is_named_as_the_unwrapped_model() -> None:
    optimizer = build_optimizer(_fsdp1(True), {"type": "SGD", "lr": 0.1, "paramwise_cfg": {}})
    names = [name for group in optimizer.param_groups for name in group["param_names"]]
    assert names == ["0.weight", "0.bias", "1.weight", "1.bias", "2.weight", "2.bias"]


@pytest.mark.usefixtures("process_group")
def test_fsdp2_modules_keep_their_kind_for_every_rule() -> None:
    from torch.distributed.fsdp import fully_shard

    from regtree_optim import DefaultOptimizerConstructor

    worker: dict[str, Any] = runpy.run_path(str(WORKER), run_name="__single__")
    cfg = {key: value for key, value in worker["OPTIMIZER_CFG"].items() if key != "paramwise_cfg"}
    # Norm layers, 1-D parameters and module selectors by kind and by class name.
    paramwise = {
        **worker["PARAMWISE_CFG"],
        "rules": [
            {"module": "Linear", "ndim": 2, "lr_mult": 3},
            {"module": ["norm", "LayerNorm"], "lr_mult": 5},
        ],
    }
    constructor = DefaultOptimizerConstructor(cfg, paramwise)
    expected = list(constructor.explain(worker["SHARED"]["make_model"]()))
    model = worker["SHARED"]["make_model"]()
    for layer in model:
        fully_shard(layer)  # FSDPLinear, FSDPLayerNorm
    fully_shard(model)
    assert type(model[1]).__name__ == "FSDPLayerNorm"
    assert list(constructor.explain(model)) == expected


class _TimmBlocks(torch.nn.Module):
    """Two blocks and a head, with timm's and mmpretrain's layer-depth hooks."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList([torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)])
        self.head = torch.nn.Linear(2, 2)

    def group_matcher(self, coarse: bool = False) -> dict[str, Any]:
        return {"blocks": [(r"^blocks\.(\d+)", None)]}

    def get_layer_depth(self, name: str) -> tuple[int, int]:
        return (int(name.split(".")[1]), 3) if name.startswith("blocks.") else (2, 3)


@pytest.mark.filterwarnings(_NO_SHARD_WARNING)
@pytest.mark.usefixtures("process_group")
@pytest.mark.parametrize(
    "depth",
    ["group_matcher", "get_layer_depth"],
)
def test_layer_decay_under_nested_fsdp1_gives_the_unwrapped_model_s_layers(depth: str) -> None:
    from torch.distributed.fsdp import FullyShardedDataParallel

    from regtree_optim import DefaultOptimizerConstructor

    constructor = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0}, {"layer_decay": {"rate": 0.5, "depth": depth}}
    )
    expected = [(row.name, row.rule) for row in constructor.explain(_TimmBlocks())]
    model = _TimmBlocks()
    for index, block in enumerate(model.blocks):
        model.blocks[index] = FullyShardedDataParallel(
            block, use_orig_params=True, device_id=torch.device("cpu")
        )
    wrapped = FullyShardedDataParallel(model, use_orig_params=True, device_id=torch.device("cpu"))
    assert [(row.name, row.rule) for row in constructor.explain(wrapped)] == expected


@pytest.mark.filterwarnings(_NO_SHARD_WARNING)
@pytest.mark.usefixtures("process_group")
@pytest.mark.parametrize("depth", ["group_matcher", "get_layer_depth"])
def test_layer_decay_sees_the_parameters_inside_fsdp1_flat_parameters(depth: str) -> None:
    # use_orig_params=False: a flat parameter per block takes its block's layer, and one flat
    # parameter over layers of different scales is refused, whichever hook gives the depth.
    from torch.distributed.fsdp import FullyShardedDataParallel

    from regtree_optim import DefaultOptimizerConstructor

    def flat(module: torch.nn.Module) -> torch.nn.Module:
        return FullyShardedDataParallel(
            module, use_orig_params=False, device_id=torch.device("cpu")
        )

    constructor = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0}, {"layer_decay": {"rate": 0.5, "depth": depth}}
    )
    model = _TimmBlocks()
    for index, block in enumerate(model.blocks):
        model.blocks[index] = flat(block)
    model.head = flat(model.head)
    optimizer = constructor(flat(model))
    assert sorted(group["lr"] for group in optimizer.param_groups) == [0.25, 0.5, 1.0]
    with pytest.raises(ValueError, match=r"different settings, but FSDP flattened both"):
        constructor(flat(_TimmBlocks()))


class _HookedBlock(torch.nn.Module):
    """A block that declares its own no-weight-decay parameter, as timm's blocks do."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(2))
        self.fc = torch.nn.Linear(2, 2)

    def no_weight_decay(self) -> set[str]:
        return {"scale"}


@pytest.mark.filterwarnings(_NO_SHARD_WARNING)
@pytest.mark.usefixtures("process_group")
def test_model_hooks_of_a_block_under_nested_fsdp1_name_the_unwrapped_parameters() -> None:
    from torch.distributed.fsdp import FullyShardedDataParallel

    from regtree_optim import DefaultOptimizerConstructor

    constructor = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0, "weight_decay": 0.1}, {"model_hooks": True}
    )
    model = torch.nn.Sequential(_HookedBlock(), _HookedBlock())
    expected = [(row.name, row.weight_decay, row.rule) for row in constructor.explain(model)]
    assert ("0.scale", 0.0, "0.no_weight_decay()") in expected
    for index, block in enumerate(model):
        model[index] = FullyShardedDataParallel(
            block, use_orig_params=True, device_id=torch.device("cpu")
        )
    wrapped = FullyShardedDataParallel(model, use_orig_params=True, device_id=torch.device("cpu"))
    rows = [(row.name, row.weight_decay, row.rule) for row in constructor.explain(wrapped)]
    assert rows == expected


@pytest.mark.filterwarnings(_NO_SHARD_WARNING)
@pytest.mark.usefixtures("process_group")
def test_a_routed_optimizer_reads_nested_fsdp1_records_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from torch.distributed.fsdp import FullyShardedDataParallel

    from regtree_optim import DefaultOptimizerConstructor, _sharding

    cfg = {
        "type": "RoutedOptimizer",
        "optimizers": {
            "adamw": {"type": "AdamW", "lr": 1e-3, "weight_decay": 0.1},
            "sgd": {"type": "SGD", "lr": 0.1, "weight_decay": 0.01},
        },
        "default": "adamw",
    }
    constructor = DefaultOptimizerConstructor(
        cfg, {"flat_decay_mult": 0.5, "rules": [{"match": "blocks.1.*", "optimizer": "sgd"}]}
    )
    model = _TimmBlocks()
    expected = list(constructor.explain(model))
    for index, block in enumerate(model.blocks):
        model.blocks[index] = FullyShardedDataParallel(
            block, use_orig_params=True, device_id=torch.device("cpu")
        )
    walked: list[torch.nn.Module] = []
    real = _sharding.flat_parameters
    monkeypatch.setattr(
        _sharding, "flat_parameters", lambda model: walked.append(model) or real(model)
    )
    # Every sub-optimizer's plan, the shape check and the shape column share one read.
    assert list(constructor.explain(model)) == expected
    assert len(walked) == 1
    constructor(model)
    assert len(walked) == 2
