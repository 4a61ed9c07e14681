"""``ZeroRedundancyOptimizer`` built from a config that names its local optimizer by type.

Registered in ``OPTIMIZERS`` (where ``torch.distributed`` is available) as a stand-in class
rather than a subclass of torch's class: see its docstring.
"""

from __future__ import annotations

import sys
import warnings
from typing import TYPE_CHECKING, Any

import torch
from torch.optim import Optimizer

from ._registries import OPTIMIZERS, resolve_optimizer_type

if TYPE_CHECKING:
    from torch.distributed.optim import ZeroRedundancyOptimizer as TorchZeroRedundancyOptimizer

__all__ = ["ZeroRedundancyOptimizer"]

_TORCH_MODULE = "torch.distributed.optim.zero_redundancy_optimizer"


def _torch_zero_class() -> type[TorchZeroRedundancyOptimizer]:
    # Imported on first use: torch.distributed.optim scripts its functional optimizers at import
    # (most of a second) and warns that torch.jit.script is deprecated while doing so.
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=r"`torch\.jit\.\w+` is deprecated", category=DeprecationWarning
        )
        from torch.distributed.optim import ZeroRedundancyOptimizer as torch_class
    return torch_class


def _loaded_torch_zero_class() -> type | None:
    # Never imports: until torch's module is loaded, no instance or subclass of its class exists.
    torch_class = getattr(sys.modules.get(_TORCH_MODULE), "ZeroRedundancyOptimizer", None)
    return torch_class if isinstance(torch_class, type) else None


class _StandsForTorchZero(type):
    """``isinstance`` and ``issubclass`` against the stand-in answer for torch's class too."""

    def __instancecheck__(cls, instance: object) -> bool:
        torch_class = _loaded_torch_zero_class()
        return type.__instancecheck__(cls, instance) or (
            torch_class is not None and isinstance(instance, torch_class)
        )

    def __subclasscheck__(cls, subclass: type) -> bool:
        torch_class = _loaded_torch_zero_class()
        return type.__subclasscheck__(cls, subclass) or (
            torch_class is not None and issubclass(subclass, torch_class)
        )


class ZeroRedundancyOptimizer(Optimizer, metaclass=_StandsForTorchZero):
    """Torch's ``ZeroRedundancyOptimizer``, naming its local optimizer by type or class.

    A stand-in: calling it returns a ``torch.distributed.optim.ZeroRedundancyOptimizer``, and
    ``isinstance``/``issubclass`` against it answer for torch's class too. A subclass of torch's
    class could only be defined after importing ``torch.distributed.optim``, which costs most of
    a second and warns at import; this class lets ``import regtree_optim`` register an
    ``Optimizer`` subclass under the name and import torch's class on first use.

    Built from ``dict(type='ZeroRedundancyOptimizer', optimizer_type='AdamW', lr=...)``; torch's
    own keyword ``optimizer_class=`` works too. Either names any optimizer registered in
    ``OPTIMIZERS`` or is an optimizer class. Every other keyword goes to torch's class, and from
    there to the local optimizer.

    Args:
        params: Parameters or parameter groups.
        optimizer_type: The local optimizer each rank runs on its shard, by name or class.
        optimizer_class: The same, under torch's name for it; give one of the two.
        **kwargs: ``process_group``, ``parameters_as_bucket_view``, ``overlap_with_ddp`` and the
            local optimizer's options.

    Returns:
        A ``torch.distributed.optim.ZeroRedundancyOptimizer``.

    Raises:
        NotRegisteredError: the local optimizer's name is not registered in ``OPTIMIZERS``.
        TypeError: neither or both of ``optimizer_type`` and ``optimizer_class`` are given.
        ValueError: the local optimizer is a ZeroRedundancyOptimizer itself.
    """

    # __new__ returns torch's object, not an instance of this class, so __init__ never runs.
    def __new__(  # type: ignore[misc]  # returns torch's class, which this one stands for
        cls,
        params: Any,
        optimizer_type: Any = None,
        *,
        optimizer_class: Any = None,
        **kwargs: Any,
    ) -> TorchZeroRedundancyOptimizer:
        return _build_torch_zero(params, optimizer_type, optimizer_class, kwargs)


def _build_torch_zero(
    params: Any, optimizer_type: Any, optimizer_class: Any, kwargs: dict[str, Any]
) -> TorchZeroRedundancyOptimizer:
    if (optimizer_type is None) == (optimizer_class is None):
        given = "both" if optimizer_type is not None else "neither"
        raise TypeError(
            f"ZeroRedundancyOptimizer got {given} of optimizer_type and optimizer_class "
            f"(optimizer_type={optimizer_type!r}, optimizer_class={optimizer_class!r}); give "
            f"exactly one, a name registered in registry {OPTIMIZERS.name!r} (scope "
            f"{OPTIMIZERS.scope!r}) such as 'AdamW', or an optimizer class"
        )
    key = "optimizer_type" if optimizer_type is not None else "optimizer_class"
    local = optimizer_type if optimizer_type is not None else optimizer_class
    torch_class = _torch_zero_class()
    local_class = resolve_optimizer_type(local, key)
    if isinstance(local_class, type) and issubclass(local_class, ZeroRedundancyOptimizer):
        raise ValueError(
            f"{key}={local!r} is a ZeroRedundancyOptimizer; name the local optimizer each rank "
            "runs on its shard, such as 'AdamW' or 'SGD'"
        )
    # torch types this as type[Optimizer]; any registered factory of an optimizer works.
    return torch_class(params, local_class, **kwargs)  # type: ignore[arg-type]


if torch.distributed.is_available():
    OPTIMIZERS.register_module(name="ZeroRedundancyOptimizer", module=ZeroRedundancyOptimizer)
