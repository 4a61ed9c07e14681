"""A reference for the five-rules row: its paramwise_cfg written out by hand as one Python loop.

Not a library: what a plain per-parameter loop costs for ``RULES_PARAMWISE`` (SPEC 3.2's rules,
the five ``rules`` and layer decay of ``_optim_bench``), beside regtree's general constructor.
The config is fixed, so nothing is read from it: each module type is classified once, the three
name selectors and the layer-decay regex are compiled once, and each parameter costs its name,
one duplicate check, its ``requires_grad`` and ``ndim``, four pattern calls, one dict lookup and
two appends. It omits what a constructor must also do (cycle and wrapper checks, FSDP1's
per-parameter mark, explain records, warnings). :func:`check_reference` compares its groups
with regtree's (names in order, tensors, settings), untimed.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Any

import torch
from torch import nn

_NORMS: tuple[type[nn.Module], ...] = (
    nn.modules.batchnorm._BatchNorm,
    nn.modules.instancenorm._InstanceNorm,
    nn.GroupNorm,
    nn.LayerNorm,
    nn.RMSNorm,
)
_CONVS = (nn.Conv1d, nn.Conv2d, nn.Conv3d)
# rules[0] match 'backbone.*', rules[3] regex, rules[4] exclude 'head.*', and layer decay's depth.
_BACKBONE = re.compile(fnmatch.translate("backbone.*")).match
_FOURTH_WEIGHT = re.compile(r"\.4\.weight$").search
_HEAD = re.compile(fnmatch.translate("head.*")).match
_STAGE = re.compile(r"backbone\.(\d+)\.").match
_NUM_LAYERS = 101


def _kind(module_type: type) -> int:
    # 0 other, 1 norm, 2 conv, 3 depthwise conv (told per module: it depends on groups).
    if issubclass(module_type, _NORMS):
        return 1
    return 2 if issubclass(module_type, _CONVS) else 0


def _settings(key: tuple[Any, ...], optimizer_cfg: dict[str, Any]) -> dict[str, Any]:
    # One group's options, as base * SPEC 3.2's multiplier * each rule's, then the layer's scale.
    kind, is_bias, one_dim, head, backbone, fourth, excluded, layer = key
    lr, weight_decay = optimizer_cfg["lr"], optimizer_cfg["weight_decay"]
    if head:  # custom_keys={'head': {'lr_mult': 0.1}} decides alone
        lr = lr * 0.1
    else:
        if is_bias and kind != 1:  # bias_lr_mult, not in norm layers
            lr = lr * 2.0
        if kind in (1, 3) or is_bias:  # norm, then dwconv, then bias decay mults: all 0
            weight_decay = weight_decay * 0.0
    settings: dict[str, Any] = {}
    if backbone:
        lr = lr * 0.5
    if kind == 1:
        weight_decay = weight_decay * 0.5
    if is_bias and one_dim:
        lr = lr * 0.9
    if fourth:
        lr = lr * 2.0
    if kind in (2, 3) and not excluded:
        settings["momentum"] = 0.8
    layer_id = _NUM_LAYERS - 1 if layer is None else int(layer)
    lr = lr * max(0.0, 0.9 ** (_NUM_LAYERS - layer_id - 1))
    return {"lr": lr, "weight_decay": weight_decay, **settings}


def reference_optimizer(model: nn.Module, optimizer_cfg: dict[str, Any]) -> torch.optim.Optimizer:
    """Build the SGD optimizer of ``RULES_PARAMWISE`` for ``model``, rules written by hand."""
    kinds: dict[type, int] = {}
    groups: dict[tuple[Any, ...], tuple[list[torch.Tensor], list[str]]] = {}
    merged: dict[tuple[Any, ...], dict[str, Any]] = {}  # settings -> group
    frozen: tuple[list[torch.Tensor], list[str]] = ([], [])
    seen: set[int] = set()
    # The patterns as locals, the captured layer kept as text (made an int once per group).
    backbone, fourth_weight, head, stage_of = _BACKBONE, _FOURTH_WEIGHT, _HEAD, _STAGE
    stack: list[tuple[str, nn.Module]] = [("", model)]
    pop, push = stack.pop, stack.append
    while stack:
        prefix, module = pop()
        children = module._modules
        if children:
            dot = f"{prefix}." if prefix else ""
            for name, child in reversed(children.items()):
                if child is not None:
                    push((dot + name, child))
        own = module._parameters
        if not own:
            continue
        module_type = type(module)
        kind = kinds.get(module_type)
        if kind is None:
            kind = kinds[module_type] = _kind(module_type)
        if kind == 2:
            conv: Any = module  # a Conv1d/2d/3d
            if conv.groups == conv.in_channels > 1:
                kind = 3
        for name, param in own.items():
            if param is None or id(param) in seen:
                continue
            seen.add(id(param))
            full_name = f"{prefix}.{name}" if prefix else name
            if not param.requires_grad:
                frozen[0].append(param)
                frozen[1].append(full_name)
                continue
            stage = stage_of(full_name)
            key = (
                kind,
                name == "bias",
                param.ndim == 1,
                "head" in (full_name if prefix else f".{name}"),
                backbone(full_name) is not None,
                fourth_weight(full_name) is not None,
                head(full_name) is not None,
                None if stage is None else stage[1],
            )
            members = groups.get(key)
            if members is None:
                # A key's settings, once; keys of equal settings share a group, as merge_groups
                # does, so every group holds its parameters in model order.
                settings = _settings(key, optimizer_cfg)
                group = merged.get(tuple(settings.items()))
                if group is None:
                    group = merged[tuple(settings.items())] = {
                        "params": [],
                        "param_names": [],
                        **settings,
                    }
                members = groups[key] = (group["params"], group["param_names"])
            members[0].append(param)
            members[1].append(full_name)
    param_groups = list(merged.values())
    if frozen[0]:
        param_groups.append({"params": frozen[0], "param_names": frozen[1]})
    # As regtree builds many groups: one group for torch's checks, then the groups themselves.
    options = {key: value for key, value in optimizer_cfg.items() if key != "type"}
    everything = [param for group in param_groups for param in group["params"]]
    optimizer = torch.optim.SGD([{"params": everything}], **options)
    for group in param_groups:
        for option, default in optimizer.defaults.items():
            group.setdefault(option, default)
    optimizer.param_groups = param_groups
    return optimizer


def check_reference(reference: torch.optim.Optimizer, ours: torch.optim.Optimizer) -> None:
    """Raise ValueError unless both build the same groups: names, tensors and settings.

    Each group is compared by its parameters' names, in order, the tensors themselves, and its
    lr, weight decay and momentum.
    """

    def layout(optimizer: torch.optim.Optimizer) -> list[tuple[Any, ...]]:
        return [
            (
                tuple(group["param_names"]),
                tuple(id(param) for param in group["params"]),
                group["lr"],
                group["weight_decay"],
                group["momentum"],
            )
            for group in optimizer.param_groups
        ]

    mine, theirs = layout(reference), layout(ours)
    if mine != theirs:
        pairs = enumerate(zip(mine, theirs, strict=False))
        differing = [index for index, (one, other) in pairs if one != other]
        where = f"group {differing[0]}" if differing else "the number of groups"
        raise ValueError(
            f"the reference differs from regtree: {len(mine)} groups against {len(theirs)}, "
            f"first at {where}"
        )
