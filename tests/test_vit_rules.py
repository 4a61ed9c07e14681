"""demo_cls's TinyViT under SPEC 3.3: its own hooks drive layer decay and the no-decay names."""

from __future__ import annotations

import demo_cls
from regtree_optim import build_optimizer


def test_tiny_vit_layer_decay_and_model_hooks_from_its_own_declarations() -> None:
    vit = demo_cls.TinyViT(depth=2)
    cfg = {
        "type": "AdamW",
        "lr": 1.0,
        "weight_decay": 0.05,
        "paramwise_cfg": {
            "layer_decay": {"rate": 0.5},  # get_layer_depth: depth + 2 = 4 layers
            "model_hooks": True,
            "rules": [{"module": "norm", "decay_mult": 0.0}],
        },
    }
    optimizer = build_optimizer(vit, cfg)
    by_name = {n: g for g in optimizer.param_groups for n in g["param_names"]}
    assert (by_name["cls_token"]["lr"], by_name["cls_token"]["weight_decay"]) == (0.125, 0.0)
    assert by_name["patch_embed.proj.weight"]["lr"] == 0.125
    assert by_name["patch_embed.proj.weight"]["weight_decay"] == 0.05
    assert by_name["blocks.0.attn.qkv.weight"]["lr"] == 0.25
    assert by_name["blocks.1.norm1.weight"]["weight_decay"] == 0.0
    assert by_name["blocks.1.mlp.0.weight"]["lr"] == 0.5
    assert (by_name["head.weight"]["lr"], by_name["norm.bias"]["lr"]) == (1.0, 1.0)


def test_tiny_vit_group_matcher_gives_timms_layer_ids() -> None:
    vit = demo_cls.TinyViT(depth=2)
    cfg = {
        "type": "SGD",
        "lr": 1.0,
        "paramwise_cfg": {"layer_decay": {"rate": 0.5, "depth": "group_matcher"}},
    }
    by_name = {n: g["lr"] for g in build_optimizer(vit, cfg).param_groups for n in g["param_names"]}
    assert by_name["pos_embed"] == 0.125
    assert by_name["blocks.0.norm1.weight"] == 0.25
    assert by_name["norm.weight"] == by_name["blocks.1.mlp.2.bias"] == 0.5  # merged, as in timm
    assert by_name["head.bias"] == 1.0
