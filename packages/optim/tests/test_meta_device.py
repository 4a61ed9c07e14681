"""The meta device (SPEC 3.6): a model's groups without allocating its weights."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from regtree import Registry
from regtree_optim import DefaultOptimizerConstructor, RoutedOptimizer, build_optimizer
from regtree_optim._cli import main


class Block(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.attn_norm = nn.RMSNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)
        self.mlp_norm = nn.RMSNorm(dim)
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)


class TinyLM(nn.Module):
    """A decoder's parameters: embeddings, attention, MLP, RMSNorm, an untied head."""

    def __init__(self, vocab: int = 64, dim: int = 16, depth: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(Block(dim) for _ in range(depth))
        self.norm = nn.RMSNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)


PARAMWISE_CFG: dict[str, Any] = {
    "norm_decay_mult": 0.0,
    "bias_decay_mult": 0.0,
    "custom_keys": {"embed": {"lr_mult": 0.5}},
    "rules": [
        {"match": "blocks.1.*", "lr_mult": 2},
        {"module": "embedding", "decay_mult": 0},
    ],
}
ROUTED_CFG: dict[str, Any] = {
    "type": "RoutedOptimizer",
    "optimizers": {
        "muon": {"type": "Muon", "lr": 0.02, "weight_decay": 0.01},
        "adamw": {"type": "AdamW", "lr": 3e-4, "weight_decay": 0.1},
    },
    "default": "adamw",
}
ROUTE_BLOCKS: dict[str, Any] = {
    **PARAMWISE_CFG,
    "rules": [*PARAMWISE_CFG["rules"], {"match": "blocks.*", "ndim": 2, "optimizer": "muon"}],
}


def _lm(device: str) -> TinyLM:
    torch.manual_seed(0)
    with torch.device(device):
        return TinyLM()


def _rows(model: nn.Module, optimizer_cfg: dict[str, Any], paramwise: dict[str, Any]) -> list[Any]:
    return list(DefaultOptimizerConstructor(optimizer_cfg, paramwise).explain(model))


@pytest.mark.parametrize(
    ("optimizer_cfg", "paramwise"),
    [
        ({"type": "AdamW", "lr": 1e-3, "weight_decay": 0.1}, PARAMWISE_CFG),
        (
            {"type": "AdamW", "lr": 1e-3, "weight_decay": 0.1},
            {**PARAMWISE_CFG, "merge_groups": False},
        ),
        (ROUTED_CFG, ROUTE_BLOCKS),
    ],
    ids=["merged", "one-group-per-parameter", "routed"],
)
def test_a_meta_model_explains_as_the_same_model_on_cpu(
    optimizer_cfg: dict[str, Any], paramwise: dict[str, Any]
) -> None:
    meta = _lm("meta")
    assert all(param.is_meta for param in meta.parameters())
    # Every field: name, shape, lr, weight decay, rule, group, multipliers.
    assert _rows(meta, optimizer_cfg, paramwise) == _rows(_lm("cpu"), optimizer_cfg, paramwise)


def test_the_optimizer_builds_on_meta_parameters() -> None:
    meta = _lm("meta")
    optimizer = build_optimizer(meta, {**ROUTED_CFG, "paramwise_cfg": ROUTE_BLOCKS})
    assert isinstance(optimizer, RoutedOptimizer)
    cpu = build_optimizer(_lm("cpu"), {**ROUTED_CFG, "paramwise_cfg": ROUTE_BLOCKS})
    layout = [{k: v for k, v in group.items() if k != "params"} for group in optimizer.param_groups]
    assert layout == [{k: v for k, v in g.items() if k != "params"} for g in cpu.param_groups]
    assert all(p.is_meta for group in optimizer.param_groups for p in group["params"])


CONFIG = """\
[model]
type = "TinyLM"
depth = 3

[optimizer]
type = "AdamW"
lr = 1e-3
weight_decay = 0.1

[optimizer.paramwise_cfg]
norm_decay_mult = 0.0
rules = [{match = "blocks.*", ndim = 2, lr_mult = 2}]
"""


def test_cli_device_meta_shows_the_groups_without_allocating_weights(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    built: list[nn.Module] = []

    def tiny_lm(**kwargs: Any) -> nn.Module:
        built.append(TinyLM(**kwargs))
        return built[-1]

    models: Registry[Any] = Registry("model", scope="meta_device_test")
    models.register_module(module=tiny_lm, name="TinyLM")
    config = tmp_path / "lm.toml"
    config.write_text(CONFIG, encoding="utf-8")

    reports = []
    for device in ("meta", "cpu"):
        assert main(["explain", str(config), "--json", "--device", device], models=models) == 0
        out, err = capsys.readouterr()
        assert err == ""
        reports.append(json.loads(out)["parameters"])
    assert reports[0] == reports[1]
    assert all(param.is_meta for param in built[0].parameters())
    assert not any(param.is_meta for param in built[1].parameters())


def test_cli_device_that_is_not_a_device_is_exit_status_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "lm.toml"
    config.write_text(CONFIG, encoding="utf-8")
    assert main(["explain", str(config), "--device", "metal"]) == 2
    assert "argument --device: 'metal' is not a torch device; try meta, cpu" in (
        capsys.readouterr().err
    )
