"""Shared fixtures: mmcv's reference model, the optimizer configs of issue 3, rank launchers."""

from __future__ import annotations

import datetime
import gc
import multiprocessing
import runpy
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist
from torch import nn

from regtree_optim import register_dcn_type

BASE_LR = 0.01
BASE_WD = 0.0001
MOMENTUM = 0.9


class DeformConvStandIn(nn.Module):
    """A deformable conv as mmcv's tests model it: its own weight and a ``conv_offset`` child."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(4, 3, 3, 3))
        self.conv_offset = nn.Conv2d(3, 4, 3)


register_dcn_type(DeformConvStandIn)


class SubModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.param1 = nn.Parameter(torch.ones(1))
        self.conv1 = nn.Conv2d(2, 2, 1, groups=2)
        self.gn = nn.GroupNorm(2, 2)


class ReferenceModel(nn.Module):
    """mmcv's ``ExampleModel`` for the optimizer constructor, with a deformable conv."""

    def __init__(self) -> None:
        super().__init__()
        self.param1 = nn.Parameter(torch.ones(1))
        self.conv1 = nn.Conv2d(3, 4, 1, bias=False)
        self.conv2 = nn.Conv2d(4, 2, 1)
        self.bn = nn.BatchNorm2d(2)
        self.sub = SubModel()
        self.dcn = DeformConvStandIn()


REFERENCE_NAMES = [
    "param1",
    "conv1.weight",
    "conv2.weight",
    "conv2.bias",
    "bn.weight",
    "bn.bias",
    "sub.param1",
    "sub.conv1.weight",
    "sub.conv1.bias",
    "sub.gn.weight",
    "sub.gn.bias",
    "dcn.weight",
    "dcn.conv_offset.weight",
    "dcn.conv_offset.bias",
]


@pytest.fixture
def reference_names() -> list[str]:
    """The reference model's parameter names, in model order."""
    return list(REFERENCE_NAMES)


@pytest.fixture
def dcn_type() -> type[nn.Module]:
    """The deformable-conv stand-in, registered with ``register_dcn_type``."""
    return DeformConvStandIn


@pytest.fixture
def model() -> nn.Module:
    torch.manual_seed(0)
    return ReferenceModel()


@pytest.fixture
def sgd_cfg() -> dict[str, Any]:
    return {"type": "SGD", "lr": BASE_LR, "momentum": MOMENTUM, "weight_decay": BASE_WD}


@pytest.fixture
def rules_cfg() -> dict[str, Any]:
    """The first reference paramwise_cfg of issue 3."""
    return {
        "bias_lr_mult": 2,
        "bias_decay_mult": 0.5,
        "norm_decay_mult": 0,
        "dwconv_decay_mult": 0.1,
        "dcn_offset_lr_mult": 0.1,
    }


@pytest.fixture
def custom_cfg() -> dict[str, Any]:
    """The second reference paramwise_cfg of issue 3 (custom_keys plus norm_decay_mult)."""
    return {
        "custom_keys": {
            "param1": {"lr_mult": 10},
            "sub": {"lr_mult": 0.1, "decay_mult": 0},
            "sub.gn": {"lr_mult": 0.01},
        },
        "norm_decay_mult": 0.5,
    }


@pytest.fixture
def process_group() -> Iterator[None]:
    """A one-process gloo group, so that DistributedDataParallel can wrap a model in a test."""
    if not (dist.is_available() and dist.is_gloo_available()):
        pytest.skip("torch.distributed with gloo is not available")
    dist.init_process_group(
        "gloo",
        store=dist.HashStore(),
        rank=0,
        world_size=1,
        timeout=datetime.timedelta(seconds=60),
    )
    try:
        yield
    finally:
        # Free what Python holds of the group (optimizers, modules in cycles) before destroying
        # it. An untrained DDP's C++ reducer may still keep this one-rank group until exit; with
        # no work in flight its idle threads are harmless there.
        gc.collect()
        dist.destroy_process_group()


# Every multi-process test: its ranks run in fresh interpreters and are killed after this long.
RANK_TIMEOUT_S = 90
RANK_ATTEMPTS = 2

RunRanks = Callable[[Path, int, dict[str, Any]], None]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _rank_report(out_dir: Path, rank: int, exit_code: int | None) -> str:
    status = f"killed after {RANK_TIMEOUT_S}s" if exit_code is None else f"exit {exit_code}"
    if (out_dir / f"rank{rank}.done").exists():
        stage = "after its teardown"
    elif (out_dir / f"rank{rank}.pt").exists():
        stage = "after saving its results, before the end of its teardown"
    else:
        stage = "before saving its results"
    return f"rank {rank}: {status} {stage}"


def _start_ranks(
    worker: Path, out_dir: Path, world_size: int, params: dict[str, Any]
) -> list[int | None]:
    context = multiprocessing.get_context("spawn")
    init_method = f"tcp://127.0.0.1:{_free_port()}"
    processes = [
        context.Process(
            target=runpy.run_path,
            args=(str(worker),),
            kwargs={
                "run_name": "__regtree_worker__",
                "init_globals": {
                    "RANK": rank,
                    "WORLD_SIZE": world_size,
                    "INIT_METHOD": init_method,
                    "OUT_DIR": str(out_dir),
                    **params,
                },
            },
        )
        for rank in range(world_size)
    ]
    for process in processes:
        process.start()
    try:
        for process in processes:
            process.join(RANK_TIMEOUT_S)
    finally:
        # A rank still running after the timeout is killed: the test never hangs.
        for process in processes:
            if process.is_alive():
                process.kill()
                process.join(10)
    return [process.exitcode for process in processes]


def _run_ranks(worker: Path, out_dir: Path, world_size: int, params: dict[str, Any]) -> None:
    # A second try covers the one race a free port has: another process taking it meanwhile.
    reports: list[str] = []
    for _ in range(RANK_ATTEMPTS):
        for stale in [*out_dir.glob("rank*.pt"), *out_dir.glob("rank*.done")]:
            stale.unlink()
        exit_codes = _start_ranks(worker, out_dir, world_size, params)
        if exit_codes == [0] * world_size:
            return
        ranks = enumerate(exit_codes)
        reports.append(", ".join(_rank_report(out_dir, rank, code) for rank, code in ranks))
    pytest.fail(f"the ranks failed {RANK_ATTEMPTS} times: " + "; then ".join(reports))


@pytest.fixture(scope="session")
def run_ranks() -> RunRanks:
    """``run_ranks(worker, out_dir, world_size, params)``: a gloo group of fresh interpreters.

    Each rank runs ``worker`` (a script calling ``_distributed_worker.rank_main``) with the
    globals ``RANK``, ``WORLD_SIZE``, ``INIT_METHOD``, ``OUT_DIR`` and ``params``; it writes
    ``rank{N}.pt`` and, after its teardown, ``rank{N}.done`` into ``out_dir``. A failure reports
    how far each rank got; a rank past the timeout is killed.
    """
    if not (dist.is_available() and dist.is_gloo_available()):
        pytest.skip("torch.distributed with gloo is not available")
    return _run_ranks
