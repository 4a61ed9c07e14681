"""configs/mask2former_style.toml: three rules give the rows of Mask2Former's long custom_keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

import regtree
from regtree_optim import DefaultOptimizerConstructor, Explanation

# Swin-T's depths, as in mmdetection's mask2former_swin-t config.
DEPTHS = (2, 2, 6, 2)
DIM = 4


class WindowMSA(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.relative_position_bias_table = nn.Parameter(torch.zeros(9, 1))
        self.qkv = nn.Linear(DIM, DIM * 3)
        self.proj = nn.Linear(DIM, DIM)


class SwinBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(DIM)
        self.attn = nn.Module()
        self.attn.w_msa = WindowMSA()
        self.norm2 = nn.LayerNorm(DIM)
        self.ffn = nn.Module()
        self.ffn.layers = nn.Sequential(
            nn.Sequential(nn.Linear(DIM, DIM * 2), nn.GELU()), nn.Linear(DIM * 2, DIM)
        )


class PatchMerging(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(DIM * 4)
        self.reduction = nn.Linear(DIM * 4, DIM, bias=False)


class SwinBackbone(nn.Module):
    """mmdet's SwinTransformer parameter names, with an absolute position embedding."""

    def __init__(self) -> None:
        super().__init__()
        self.patch_embed = nn.Module()
        self.patch_embed.projection = nn.Conv2d(3, DIM, 4, stride=4)
        self.patch_embed.norm = nn.LayerNorm(DIM)
        self.absolute_pos_embed = nn.Parameter(torch.zeros(1, 16, DIM))
        self.stages = nn.ModuleList()
        for index, depth in enumerate(DEPTHS):
            stage = nn.Module()
            stage.blocks = nn.ModuleList(SwinBlock() for _ in range(depth))
            if index < len(DEPTHS) - 1:
                stage.downsample = PatchMerging()
            self.stages.append(stage)
        for index in range(len(DEPTHS)):
            self.add_module(f"norm{index}", nn.LayerNorm(DIM))


class Mask2FormerHead(nn.Module):
    """The head's parameters that the configs name, and others that no key names."""

    def __init__(self) -> None:
        super().__init__()
        self.pixel_decoder = nn.Module()
        self.pixel_decoder.input_conv = nn.Conv2d(DIM, DIM, 1)
        self.pixel_decoder.gn = nn.GroupNorm(2, DIM)
        self.pixel_decoder.level_encoding = nn.Embedding(3, DIM)  # no key: keeps its decay
        self.transformer_decoder = nn.Module()
        self.transformer_decoder.layers = nn.ModuleList(
            nn.ModuleDict(
                {
                    "cross_attn": nn.MultiheadAttention(DIM, 1),
                    "norm": nn.LayerNorm(DIM),
                    "ffn": nn.Linear(DIM, DIM),
                }
            )
            for _ in range(2)
        )
        self.transformer_decoder.post_norm = nn.LayerNorm(DIM)
        self.query_embed = nn.Embedding(5, DIM)
        self.query_feat = nn.Embedding(5, DIM)
        self.level_embed = nn.Embedding(3, DIM)
        self.cls_embed = nn.Linear(DIM, 3)


class Mask2Former(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.backbone = SwinBackbone()
        self.panoptic_head = Mask2FormerHead()


def mmdet_custom_keys() -> dict[str, dict[str, float]]:
    """The custom_keys of mmdetection's Mask2Former Swin configs, for ``DEPTHS``."""
    backbone_norm = {"lr_mult": 0.1, "decay_mult": 0.0}
    backbone_embed = {"lr_mult": 0.1, "decay_mult": 0.0}
    embed = {"lr_mult": 1.0, "decay_mult": 0.0}
    keys = {
        "backbone": {"lr_mult": 0.1, "decay_mult": 1.0},
        "backbone.patch_embed.norm": backbone_norm,
        "backbone.norm": backbone_norm,
        "absolute_pos_embed": backbone_embed,
        "relative_position_bias_table": backbone_embed,
        "query_embed": embed,
        "query_feat": embed,
        "level_embed": embed,
    }
    for stage, depth in enumerate(DEPTHS):
        for block in range(depth):
            keys[f"backbone.stages.{stage}.blocks.{block}.norm"] = backbone_norm
    for stage in range(len(DEPTHS) - 1):
        keys[f"backbone.stages.{stage}.downsample.norm"] = backbone_norm
    return keys


def _comparable(explanation: Explanation) -> list[tuple[Any, ...]]:
    # Everything but the rule column, which names different rules by design; groups as the
    # partition of names they make.
    members: dict[int, list[str]] = {}
    for row in explanation:
        members.setdefault(row.group, []).append(row.name)
    return [
        (
            row.name,
            row.shape,
            row.lr,
            row.weight_decay,
            row.lr_mult,
            row.decay_mult,
            members[row.group],
        )
        for row in explanation
    ]


def test_three_rules_give_the_rows_of_mmdetections_custom_keys(repo_root: Path) -> None:
    config = regtree.load_config(repo_root / "configs" / "mask2former_style.toml")
    optimizer_cfg = dict(config["optimizer"])
    rules_cfg = optimizer_cfg.pop("paramwise_cfg")
    assert len(rules_cfg["rules"]) == 3
    custom_keys = mmdet_custom_keys()
    assert len(custom_keys) == 23
    model = Mask2Former()
    by_rules = DefaultOptimizerConstructor(optimizer_cfg, rules_cfg).explain(model)
    by_keys = DefaultOptimizerConstructor(
        optimizer_cfg, {"custom_keys": custom_keys, "norm_decay_mult": 0.0}
    ).explain(model)
    assert _comparable(by_rules) == _comparable(by_keys)
    rows = {row.name: row for row in by_rules}
    table = rows["backbone.stages.2.blocks.5.attn.w_msa.relative_position_bias_table"]
    assert (table.lr, table.weight_decay, table.rule) == (1e-4 * 0.1, 0.0, "rules[0], rules[2]")
    assert rows["backbone.stages.0.blocks.0.norm1.weight"].rule == "rules[0], rules[1]"
    assert rows["panoptic_head.query_embed.weight"].weight_decay == 0.0
    assert rows["panoptic_head.pixel_decoder.level_encoding.weight"].weight_decay == 0.05
    assert len({row.group for row in by_rules}) == 4
