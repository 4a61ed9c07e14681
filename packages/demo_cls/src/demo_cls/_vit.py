"""A small vision transformer with the hooks layer decay and weight-decay rules read."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from ._registry import MODELS


class PatchEmbed(nn.Module):
    """Cut the image into square patches and project each to ``dim`` channels (a strided conv).

    Args:
        in_channels: Channels of the input image.
        dim: Channels of each patch token.
        patch_size: Side of a patch, in pixels.
    """

    def __init__(self, in_channels: int, dim: int, patch_size: int) -> None:
        super().__init__()
        self.proj = nn.Conv2d(in_channels, dim, patch_size, stride=patch_size)

    def forward(self, x: Tensor) -> Tensor:
        """Return tokens of shape ``(batch, patches, dim)``."""
        tokens: Tensor = self.proj(x).flatten(2).transpose(1, 2)
        return tokens


class Attention(nn.Module):
    """Multi-head self-attention with one ``qkv`` projection and an output ``proj``."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(
                f"Attention needs dim divisible by heads, got dim={dim}, heads={heads}."
            )
        self.heads = heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: Tensor) -> Tensor:
        """Attend over the tokens of ``x`` (``(batch, tokens, dim)``)."""
        batch, tokens, dim = x.shape
        qkv = self.qkv(x).reshape(batch, tokens, 3, self.heads, dim // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        out = nn.functional.scaled_dot_product_attention(q, k, v)
        result: Tensor = self.proj(out.transpose(1, 2).reshape(batch, tokens, dim))
        return result


class Block(nn.Module):
    """A pre-norm transformer block: attention, then a two-layer MLP, each residual."""

    def __init__(self, dim: int, heads: int, mlp_ratio: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(
            nn.Linear(dim, dim * mlp_ratio), nn.GELU(), nn.Linear(dim * mlp_ratio, dim)
        )

    def forward(self, x: Tensor) -> Tensor:
        """Apply attention and the MLP."""
        x = x + self.attn(self.norm1(x))
        out: Tensor = x + self.mlp(self.norm2(x))
        return out


@MODELS.register_module()
class TinyViT(nn.Module):
    """A vision transformer: patch embedding, class token, position embedding, blocks, norm, head.

    It declares what optimizer rules read, as mmpretrain's and timm's ViTs do:
    :meth:`get_layer_depth` (tokens and patch embedding in layer 0, ``blocks.i`` in layer
    ``i + 1``, the final norm and the head at the top of ``depth + 2`` layers),
    :meth:`group_matcher` (timm's: the same stem, each block, the final norm joined to the last
    block) and :meth:`no_weight_decay` (the class token and the position embedding).

    Args:
        image_size: Side of the (square) input image.
        patch_size: Side of a patch; must divide ``image_size``.
        in_channels: Channels of the input image.
        dim: Width of the tokens.
        depth: Number of blocks.
        heads: Attention heads per block.
        mlp_ratio: Hidden width of each MLP, as a multiple of ``dim``.
        num_classes: Outputs of the head.
    """

    def __init__(
        self,
        image_size: int = 32,
        patch_size: int = 8,
        in_channels: int = 3,
        dim: int = 32,
        depth: int = 2,
        heads: int = 2,
        mlp_ratio: int = 2,
        num_classes: int = 10,
    ) -> None:
        super().__init__()
        if image_size % patch_size:
            raise ValueError(
                f"TinyViT needs patch_size to divide image_size, got image_size={image_size}, "
                f"patch_size={patch_size}."
            )
        self.depth = depth
        self.patch_embed = PatchEmbed(in_channels, dim, patch_size)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        patches = (image_size // patch_size) ** 2
        self.pos_embed = nn.Parameter(torch.randn(1, patches + 1, dim) * 0.02)
        self.blocks = nn.ModuleList(Block(dim, heads, mlp_ratio) for _ in range(depth))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x: Tensor) -> Tensor:
        """Return class logits of shape ``(batch, num_classes)`` from the class token."""
        tokens = self.patch_embed(x)
        cls = self.cls_token.expand(tokens.shape[0], -1, -1)
        tokens = torch.cat([cls, tokens], dim=1) + self.pos_embed
        for block in self.blocks:
            tokens = block(tokens)
        logits: Tensor = self.head(self.norm(tokens)[:, 0])
        return logits

    def get_layer_depth(self, name: str) -> tuple[int, int]:
        """Return ``(layer_id, num_layers)`` of a parameter, as mmpretrain's ViT does."""
        num_layers = self.depth + 2
        if name in ("cls_token", "pos_embed") or name.startswith("patch_embed."):
            return 0, num_layers
        if name.startswith("blocks."):
            return int(name.split(".")[1]) + 1, num_layers
        return num_layers - 1, num_layers

    def group_matcher(self, coarse: bool = False) -> dict[str, Any]:
        """Return timm's layer groups: the stem, each block (the final norm joins the last one)."""
        return {
            "stem": r"^cls_token|pos_embed|patch_embed",
            "blocks": [(r"^blocks\.(\d+)", None), (r"^norm", (99999,))],
        }

    def no_weight_decay(self) -> set[str]:
        """Parameters that get no weight decay, by name."""
        return {"cls_token", "pos_embed"}
