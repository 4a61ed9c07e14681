"""The walk of a model: its modules in mmcv's order, and its parameters by the names rules see.

Children are those of ``named_children()`` less the wrappers that never show in names
(:func:`child_step`); every part of regtree_optim that names parameters (the grouping, layer
decay's ids, the model hooks, mmcv-era groups) takes its names from here: :func:`join_name`
says how a name is made, :func:`child_step` is the step from a module to its children, which
:func:`walk_modules` and the constructor's ``add_params`` walk both take.
"""

from __future__ import annotations

from collections.abc import Container, Iterator

import torch
from torch import nn

from ._module_kinds import inner_attr_cache, inner_module, module_kind

__all__ = ["child_step", "join_name", "walk_modules", "walk_parameters"]


def join_name(prefix: str, name: str) -> str:
    """``name`` under the module path ``prefix``: ``'prefix.name'``, or ``name`` at the top.

    How the walk names a child module and a parameter (the top module's path is ``''``). The
    loops that run once per module or per parameter (:func:`child_step`,
    :func:`walk_parameters`, the planner's ``GroupPlanner._batches``) write it inline and point
    here: called there, it cost 0.4 ms more per 10,000 parameters in ``walk_parameters``.
    """
    return f"{prefix}.{name}" if prefix else name


def child_step(
    module: nn.Module, prefix: str, path: Container[int], depth: int = 0
) -> list[tuple[str, nn.Module, bool, int]]:
    """The walk's step from ``module`` (named ``prefix``) to its children, in order.

    Returns one entry ``(child_prefix, child, in_dcn, depth)`` per child: ``named_children()``'s
    children less any on ``path`` (ids of the modules from the root to ``module``, ``module``
    included: a cycle in the graph is not entered again), each named by :func:`join_name`;
    ``in_dcn`` says whether they are direct children of a deformable conv, and ``depth`` is
    carried as given (:func:`walk_modules` keeps its path by depth; the ``add_params`` walk
    ignores it). As ``named_children()`` does, a module held twice by ``module`` comes once,
    under its first name. A wrapper that never shows in names (checkpointing, FSDP1, compile)
    gives the module it wraps, under the wrapper's name.
    """
    # _modules is what named_children() reads; reading it directly keeps the walk cheap. The
    # wrapper cache is probed here, not through inner_module(): a call less per module, 0.3 ms
    # of the 2.6 ms walk of 10,000 tensors. The entries are walk_modules' stack entries, so it
    # pushes them all at once: 3% less of its time than a loop over (name, child) pairs there
    # (the benchmark's 10,000-tensor model, paired runs in one process).
    plain = inner_attr_cache
    is_dcn = module_kind(type(module)).is_dcn
    found: list[tuple[str, nn.Module, bool, int]] = []
    listed: set[int] = set()
    for name, child in module._modules.items():
        if child is None:
            continue
        if plain.get(type(child), "") is not None:
            child = inner_module(child)
        child_id = id(child)
        if child_id in listed or child_id in path:
            continue
        listed.add(child_id)
        # join_name, inline: this runs once per module of the walk.
        found.append((f"{prefix}.{name}" if prefix else name, child, is_dcn, depth))
    return found


def walk_modules(root: nn.Module) -> Iterator[tuple[str, nn.Module, bool]]:
    """Yield ``(prefix, module, in_dcn)`` for ``root`` and its descendants, in pre-order.

    Children are those of ``named_children()``, as mmcv walks them (:func:`child_step`): a
    module held twice by one parent is walked once there; a module reached through two parents
    is walked at each (that is how shared parameters are found); a module already on the path
    from ``root`` (a cycle) is not entered again. ``in_dcn`` says whether the module is a direct
    child of a deformable conv.
    """
    # path[d] is the id of the module at depth d on the way to the current one (a list by
    # depth: no leave markers on the stack). Children are pushed in reverse so they pop in order.
    path: list[int] = []
    stack: list[tuple[str, nn.Module, bool, int]] = [("", root, False, 0)]
    pop, extend = stack.pop, stack.extend
    while stack:
        module_prefix, module, module_in_dcn, depth = pop()
        yield module_prefix, module, module_in_dcn
        if not module._modules:
            continue
        del path[depth:]
        path.append(id(module))
        extend(reversed(child_step(module, module_prefix, path, depth + 1)))


def walk_parameters(root: nn.Module) -> Iterator[tuple[str, str, nn.Module, torch.Tensor]]:
    """Yield ``(name, attribute, module, param)`` for each parameter of ``root`` once.

    ``name`` is the parameter's full name, as :func:`walk_modules` names its module (which
    holds it as ``attribute``); the order of ``named_parameters()``, and unlike its names, no
    wrapper inside the model (checkpointing, FSDP1, compile) shows in them, so they are the
    names every rule matches. A tensor met again (a shared module) keeps its first name.
    """
    seen: set[int] = set()
    for prefix, module, _ in walk_modules(root):
        for attr, param in module._parameters.items():
            if param is not None and id(param) not in seen:
                seen.add(id(param))
                # join_name, inline: this runs once per parameter.
                yield (f"{prefix}.{attr}" if prefix else attr), attr, module, param
