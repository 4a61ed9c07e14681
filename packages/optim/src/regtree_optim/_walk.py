"""The walk of a model: its modules in mmcv's order, and its parameters by the names rules see.

Children are those of ``named_children()`` less the wrappers that never show in names
(`_module_kinds.module_children`); every part of regtree_optim that names parameters (the
grouping, layer decay's ids, the model hooks, mmcv-era groups) takes its names from here.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import nn

from ._module_kinds import module_children, module_kind

__all__ = ["walk_modules", "walk_parameters"]


def walk_modules(
    root: nn.Module, prefix: str = "", in_dcn: bool = False
) -> Iterator[tuple[str, nn.Module, bool]]:
    """Yield ``(prefix, module, in_dcn)`` for ``root`` and its descendants, in pre-order.

    Children are those of ``named_children()``, as mmcv walks them: a module held twice by one
    parent is walked once there; a module reached through two parents is walked at each (that
    is how shared parameters are found); a module already on the path from ``root`` (a cycle)
    is not entered again. ``in_dcn`` says whether the module is a direct child of a deformable
    conv.
    """
    # path[d] is the id of the module at depth d on the way to the current one (a list by
    # depth: no leave markers on the stack). Children are pushed in reverse so they pop in order.
    path: list[int] = []
    stack: list[tuple[str, nn.Module, bool, int]] = [(prefix, root, in_dcn, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        module_prefix, module, module_in_dcn, depth = pop()
        yield module_prefix, module, module_in_dcn
        if not module._modules:
            continue
        del path[depth:]
        path.append(id(module))
        is_dcn = module_kind(type(module)).is_dcn
        depth += 1
        for child_name, child in reversed(module_children(module, path)):
            child_prefix = f"{module_prefix}.{child_name}" if module_prefix else child_name
            push((child_prefix, child, is_dcn, depth))


def walk_parameters(root: nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    """Yield each parameter of ``root`` once, named as :func:`walk_modules` names its module.

    The order of ``named_parameters()``; unlike its names, no wrapper inside the model
    (checkpointing, FSDP1, compile) shows in them, so they are the names every rule matches.
    """
    seen: set[int] = set()
    for prefix, module, _ in walk_modules(root):
        for name, param in module._parameters.items():
            if param is not None and id(param) not in seen:
                seen.add(id(param))
                yield (f"{prefix}.{name}" if prefix else name), param
