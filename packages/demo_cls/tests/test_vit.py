from __future__ import annotations

import pytest
import torch

import demo_cls


def test_vit_is_registered_and_returns_logits(images: torch.Tensor) -> None:
    vit = demo_cls.MODELS.build({"type": "TinyViT", "num_classes": 5})
    assert vit(images).shape == (images.shape[0], 5)


def test_vit_has_the_parts_of_a_vision_transformer() -> None:
    vit = demo_cls.TinyViT(depth=3)
    names = [name for name, _ in vit.named_parameters()]
    assert names[:4] == [
        "cls_token",
        "pos_embed",
        "patch_embed.proj.weight",
        "patch_embed.proj.bias",
    ]
    assert any(name.startswith("blocks.2.") for name in names)
    assert names[-4:] == ["norm.weight", "norm.bias", "head.weight", "head.bias"]


def test_get_layer_depth_puts_tokens_first_blocks_in_order_and_the_rest_on_top() -> None:
    vit = demo_cls.TinyViT(depth=3)
    assert vit.get_layer_depth("cls_token") == (0, 5)
    assert vit.get_layer_depth("patch_embed.proj.weight") == (0, 5)
    assert vit.get_layer_depth("blocks.0.norm1.weight") == (1, 5)
    assert vit.get_layer_depth("blocks.2.mlp.0.bias") == (3, 5)
    assert vit.get_layer_depth("norm.weight") == (4, 5)
    assert vit.get_layer_depth("head.bias") == (4, 5)


def test_no_weight_decay_names_the_tokens() -> None:
    vit = demo_cls.TinyViT()
    declared = vit.no_weight_decay()
    assert declared == {"cls_token", "pos_embed"}
    assert declared <= {name for name, _ in vit.named_parameters()}


def test_patch_size_must_divide_the_image() -> None:
    with pytest.raises(ValueError, match="patch_size to divide image_size"):
        demo_cls.TinyViT(image_size=30, patch_size=8)
