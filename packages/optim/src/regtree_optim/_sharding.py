"""Sharded models seen as unsharded: the original shapes of FSDP1's flattened parameters.

FSDP2's DTensor parameters carry their global shape, so ``param.shape`` is already the original
one; FSDP1 (``FullyShardedDataParallel``) replaces each parameter's data by a 1-D piece of its
rank's shard and keeps the original shapes in the flat parameter's records (``_shapes``). The
rules (``flat_decay_mult``, ``ndim`` selectors, Muon's 2-D check) and explain's shape column use
the original shapes (SPEC 3.6), through one :class:`OriginalShapes` per build or explain.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import torch
from torch import nn

from ._walk import join_name

__all__ = [
    "FSDP_FLATTENED",
    "FlatOriginal",
    "OriginalShapes",
    "flat_originals",
    "flat_parameters",
    "is_flat_parameter",
    "is_fsdp_flattened",
    "original_shapes",
]

_FSDP1_MODULE: Final = "torch.distributed.fsdp.fully_sharded_data_parallel"
# The attribute FSDP1 sets to True on a flat parameter and on each original one it holds.
FSDP_FLATTENED: Final = "_fsdp_flattened"


def _fsdp1_type() -> type | None:
    # Never imports: a model holding FSDP1 modules has imported torch's module already.
    found = getattr(sys.modules.get(_FSDP1_MODULE), "FullyShardedDataParallel", None)
    return found if isinstance(found, type) else None


def flat_parameters(model: nn.Module) -> Iterator[tuple[nn.Module, Any]]:
    """Yield ``(fsdp_module, flat_parameter)`` for every FSDP1 module of ``model`` with one."""
    fsdp = _fsdp1_type()
    if fsdp is None:
        return
    # model.modules()'s order and its once-per-module rule, without its generator per level:
    # 2 ms against model.modules()'s 4.5 ms on the benchmark's 10,000-tensor model. It runs
    # once per build or explain of a model holding a parameter FSDP1 flattened (OriginalShapes).
    seen: set[int] = set()
    stack = [model]
    while stack:
        module = stack.pop()
        if id(module) in seen:
            continue
        seen.add(id(module))
        if isinstance(module, fsdp):
            handle = getattr(module, "_handle", None)
            flat = getattr(handle, "flat_param", None)
            if flat is not None:
                yield module, flat
        children = module._modules
        if children:
            stack.extend(child for child in reversed(children.values()) if child is not None)


def original_shapes(model: nn.Module) -> Mapping[int, torch.Size]:
    """``id(param) -> original shape`` for the parameters FSDP1 flattened (use_orig_params=True).

    Empty for any other model, without walking it where FSDP1 was never imported.
    """
    shapes: dict[int, torch.Size] = {}
    for _, flat in flat_parameters(model):
        originals = getattr(flat, "_params", None)
        if originals is None:  # use_orig_params=False: the flat parameter is the parameter
            continue
        for param, shape in zip(originals, flat._shapes, strict=True):
            shapes[id(param)] = shape
    return shapes


class OriginalShapes:
    """The original shapes of one model's parameters, for one build or explain.

    FSDP1's records are read at the first parameter asked for that carries FSDP1's mark, not
    by a walk of every module at every construction: that FSDP1's module is imported says
    little about the model (``torch.distributed.fsdp``, FSDP2's ``fully_shard`` included,
    imports it). The grouping (``ndim``), RoutedOptimizer's shape check and explain's shape
    column all ask the one instance, which reads the records once.

    Args:
        model: The unwrapped model.
        given: The model as given, before unwrapping: an FSDP1 root holds the records of its
            own flat parameter, which the unwrapped model lacks.
    """

    __slots__ = ("_records", "_source")

    def __init__(self, model: nn.Module, given: nn.Module | None = None) -> None:
        fsdp = _fsdp1_type()
        root_wrapped = given is not None and fsdp is not None and isinstance(given, fsdp)
        self._source: nn.Module = given if given is not None and root_wrapped else model
        self._records: Mapping[int, torch.Size] | None = None

    def recorded(self, param: torch.Tensor) -> torch.Size | None:
        """The shape FSDP1 recorded for ``param`` (``use_orig_params=True``), else None.

        Reads the records at the first call; ask only for a parameter FSDP1 flattened
        (:func:`is_fsdp_flattened`).
        """
        if self._records is None:
            self._records = original_shapes(self._source)
        return self._records.get(id(param))

    def shape(self, param: torch.Tensor) -> Sequence[int]:
        """``param``'s original shape: FSDP1's record where FSDP1 flattened it, else its own."""
        if not is_fsdp_flattened(param):
            return param.shape
        recorded = self.recorded(param)
        return param.shape if recorded is None else recorded


@dataclass(frozen=True, slots=True)
class FlatOriginal:
    """One original parameter inside an FSDP1 flat parameter (``use_orig_params=False``).

    Attributes:
        name: Its attribute name in its module (``'bias'``).
        module: The module that held it before flattening.
        module_path: That module's path below the module holding the flat parameter.
        shape: Its original shape.
    """

    name: str
    module: nn.Module
    module_path: str
    shape: torch.Size

    def path_in(self, prefix: str) -> str:
        """Its module's path in the model, where ``prefix`` holds the flat parameter."""
        return join_name(prefix, self.module_path) if self.module_path else prefix

    def name_in(self, prefix: str) -> str:
        """Its name in the model, as the rules see it, where ``prefix`` holds the flat parameter."""
        return join_name(self.path_in(prefix), self.name)


def is_flat_parameter(param: torch.Tensor) -> bool:
    """Whether ``param`` is an FSDP1 flat parameter (any other tensor is not)."""
    # FlatParameter marks itself with this attribute; its isinstance check reads the same.
    return getattr(param, "_is_flat_param", False) is True


def is_fsdp_flattened(param: torch.Tensor) -> bool:
    """Whether FSDP1 flattened ``param``: a flat parameter, or an original one it holds.

    FSDP1 marks both (``_fsdp_flattened``), so one attribute read per parameter tells a walk
    whether it needs FSDP1's records (:class:`OriginalShapes`) at all.
    """
    return getattr(param, FSDP_FLATTENED, False) is True


def flat_originals(flat: torch.Tensor) -> list[FlatOriginal]:
    """The original parameters an FSDP1 flat parameter holds, in its order."""
    infos = flat._param_infos  # type: ignore[attr-defined]
    shapes = flat._shapes  # type: ignore[attr-defined]
    return [
        FlatOriginal(info.param_name, info.module, info.module_name, shape)
        for info, shape in zip(infos, shapes, strict=True)
    ]
