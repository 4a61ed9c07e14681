"""The models and the seeded random configs that ``compat.py`` runs through regtree and its peers.

The models cover every rule of SPEC 3.2 between them: each kind of norm layer, depthwise convs
(and the convs where the peers' depthwise test differs from ours), biases and other 1-D
parameters, deformable convs with ``conv_offset`` children, shared and aliased modules, and
frozen parameters.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from regtree_optim import register_dcn_type, register_norm_type

MULTS = (0, 0.0, 0.1, 0.25, 0.5, 1, 2, 3.0, 10)
LR_KEYS = ("bias_lr_mult", "dcn_offset_lr_mult")
DECAY_KEYS = ("bias_decay_mult", "norm_decay_mult", "dwconv_decay_mult", "flat_decay_mult")


class DeformConvStandIn(nn.Module):
    """A deformable conv as mmcv's ops build it: its own weight and bias, offset convs inside."""

    def __init__(self, channels: int = 4) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(channels, channels, 3, 3))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.conv_offset = nn.Conv2d(channels, 18, 3, padding=1)
        self.conv_offset_1d = nn.Conv1d(channels, 6, 1)  # not a Conv2d: no offset lr
        self.extra = nn.Sequential(nn.Conv2d(channels, channels, 1))
        self.extra.add_module("conv_offset", nn.Conv2d(channels, channels, 1))  # a grandchild


class ModulatedDeformConvStandIn(nn.Module):
    """mmcv's ModulatedDeformConv2d shape: offset and mask from one ``conv_offset``."""

    def __init__(self, channels: int = 4) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(channels, channels, 3, 3))
        self.conv_offset = nn.Conv2d(channels, 27, 3, padding=1)
        self.norm = nn.GroupNorm(2, channels)


class ScaleNorm(nn.Module):
    """A norm layer of our own, registered with ``register_norm_type``."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.gain = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))


register_dcn_type(DeformConvStandIn)
register_dcn_type(ModulatedDeformConvStandIn)
register_norm_type(ScaleNorm)


def rule_zoo() -> nn.Module:
    """One module of every kind the rules look at, and the kinds where the peers differ."""
    model = nn.Module()
    model.param1 = nn.Parameter(torch.ones(1))
    model.param2d = nn.Parameter(torch.ones(2, 2))
    model.stem = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU())
    model.dw = nn.Conv2d(8, 8, 3, groups=8)
    model.pw = nn.Conv2d(8, 16, 1, bias=False)
    model.grouped = nn.Conv2d(16, 16, 3, groups=4)
    model.gn = nn.GroupNorm(4, 16)
    model.ln = nn.LayerNorm(16)
    model.inorm = nn.InstanceNorm2d(16, affine=True)
    model.sbn = nn.SyncBatchNorm(16)
    model.bn1d = nn.BatchNorm1d(16)
    model.dcn = DeformConvStandIn()
    model.mdcn = ModulatedDeformConvStandIn()
    model.head = nn.Sequential(nn.Linear(16, 8), nn.Linear(8, 2))
    model.emb = nn.Embedding(10, 4)
    model.frozen = nn.Linear(4, 4)
    model.frozen.requires_grad_(False)
    # Where the rules differ from the peers', each counted as a documented difference.
    model.single = nn.Conv2d(1, 4, 3)  # groups == in_channels == 1: mmcv calls it depthwise
    model.dw1d = nn.Conv1d(4, 4, 3, groups=4)  # depthwise for us, not for mmcv
    model.dw3d = nn.Conv3d(4, 4, 1, groups=4)
    model.rms = nn.RMSNorm(16)  # a norm layer for us, not for mmcv
    model.scale = ScaleNorm(16)
    return model


def shared_zoo() -> nn.Module:
    """Shared modules (two parents), aliased ones (one parent, twice) and tied weights."""
    model = nn.Module()
    fc = nn.Linear(4, 4)
    model.a = nn.Sequential(fc, nn.LayerNorm(4))
    model.b = nn.Sequential(nn.Conv2d(4, 4, 1), fc)  # fc reached through a second parent
    cls = nn.Linear(4, 2)
    model.heads = nn.ModuleList([cls for _ in range(6)])  # Deformable DETR's head: one module
    model.encoder = nn.Linear(4, 4)
    model.decoder = nn.Linear(4, 4)
    model.decoder.weight = model.encoder.weight
    model.norm = nn.BatchNorm1d(4)
    model.alias = model.norm  # the same parent again: walked once, under 'norm'
    model.frozen = nn.Conv2d(4, 4, 3, groups=4)
    model.frozen.requires_grad_(False)
    return model


def transformer() -> nn.Module:
    """A small transformer: attention's 1-D ``in_proj_bias`` (not named ``bias``), LayerNorms."""
    model = nn.Module()
    model.embed = nn.Linear(8, 16)
    model.cls_token = nn.Parameter(torch.zeros(1, 1, 16))
    model.pos = nn.Parameter(torch.zeros(1, 4, 16))
    model.encoder = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, batch_first=True),
        num_layers=2,
        enable_nested_tensor=False,
    )
    model.norm = nn.LayerNorm(16)
    model.head = nn.Linear(16, 3)
    return model


def convnet() -> nn.Module:
    """A MobileNet-style stack: convs, BatchNorm, depthwise and pointwise pairs, a classifier."""
    layers: list[nn.Module] = [nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8)]
    for channels in (8, 16):
        layers += [
            nn.Conv2d(channels, channels, 3, groups=channels, bias=False),
            nn.BatchNorm2d(channels),
            nn.Conv2d(channels, channels * 2, 1),
            nn.BatchNorm2d(channels * 2),
        ]
    layers[1].requires_grad_(False)  # a frozen stem BatchNorm, as detectors freeze norms
    model = nn.Sequential(nn.Sequential(*layers), nn.Flatten(), nn.Linear(32, 10))
    return model


MODELS: dict[str, Callable[[], nn.Module]] = {
    "rule_zoo": rule_zoo,
    "shared_zoo": shared_zoo,
    "transformer": transformer,
    "convnet": convnet,
}


@dataclass(frozen=True)
class Case:
    """One random config for one model.

    Attributes:
        model: The model's name in :data:`MODELS`.
        optimizer_cfg: The optimizer config.
        paramwise_cfg: The paramwise config (no ``decay_precedence``: the runner adds it).
    """

    model: str
    optimizer_cfg: dict[str, Any]
    paramwise_cfg: dict[str, Any]


def match_names(model: nn.Module) -> list[str]:
    """``f'{prefix}.{name}'`` of every parameter, as custom keys are matched against them."""
    names = []
    for full_name, _ in model.named_parameters():
        prefix, _, name = full_name.rpartition(".")
        names.append(f"{prefix}.{name}")
    return names


def _cut(rng: random.Random, name: str) -> str:
    # A substring of a real name: a module path, a tail, or a slice from anywhere in it.
    style = rng.random()
    if style < 0.3:
        return name.rsplit(".", 1)[0] + "." if "." in name.strip(".") else name
    if style < 0.5:
        return name[rng.randrange(len(name)) :] or name
    start = rng.randrange(len(name))
    end = rng.randrange(start + 1, len(name) + 1)
    return name[start:end]


def _custom_keys(
    rng: random.Random, names: list[str], has_wd: bool, optimizer: str
) -> dict[str, dict[str, Any]]:
    keys: list[str] = []
    for _ in range(rng.randint(1, 4)):
        key = _cut(rng, rng.choice(names))
        keys.append(key)
        if rng.random() < 0.3:
            # A tie: another key of the same length, so that the alphabetical order decides.
            same_length = [
                name[i : i + len(key)]
                for name in names
                for i in range(len(name) - len(key) + 1)
                if name[i : i + len(key)] != key
            ]
            if same_length:
                keys.append(rng.choice(same_length))
    custom: dict[str, dict[str, Any]] = {}
    for key in keys:
        entry: dict[str, Any] = {}
        if rng.random() < 0.7:
            entry["lr_mult"] = rng.choice(MULTS)
        if has_wd and rng.random() < 0.5:
            entry["decay_mult"] = rng.choice(MULTS)
        if rng.random() < 0.1:
            # An optimizer option: copied into the group here and by mmengine, not by mmcv.
            entry.update({"momentum": 0.5} if optimizer == "SGD" else {"betas": (0.8, 0.99)})
        custom[key] = entry
    return custom


def random_cases(count: int, seed: int) -> list[Case]:
    """``count`` seeded random configs, spread over the models in turn."""
    rng = random.Random(seed)
    models = {name: build() for name, build in MODELS.items()}
    names = {name: match_names(model) for name, model in models.items()}
    cases = []
    for index in range(count):
        model = list(MODELS)[index % len(MODELS)]
        has_wd = rng.random() < 0.75
        optimizer = rng.choice(("SGD", "SGD", "AdamW"))
        optimizer_cfg: dict[str, Any] = (
            {"type": "SGD", "lr": rng.choice((0.01, 0.02, 0.1)), "momentum": 0.9}
            if optimizer == "SGD"
            else {"type": "AdamW", "lr": rng.choice((1e-3, 2e-4))}
        )
        if has_wd:
            optimizer_cfg["weight_decay"] = rng.choice((1e-4, 5e-4, 0.05))
        paramwise: dict[str, Any] = {}
        for key in (*LR_KEYS, *(DECAY_KEYS if has_wd else ())):
            if rng.random() < 0.45:
                paramwise[key] = rng.choice(MULTS)
        if rng.random() < 0.6:
            paramwise["custom_keys"] = _custom_keys(rng, names[model], has_wd, optimizer)
        if rng.random() < 0.5 or (model == "shared_zoo" and rng.random() < 0.8):
            paramwise["bypass_duplicate"] = True
        cases.append(Case(model, optimizer_cfg, paramwise))
    return cases
