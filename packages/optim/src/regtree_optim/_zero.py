"""``ZeroRedundancyOptimizer`` built from a config that names its local optimizer by type.

Registered as a factory rather than a subclass of torch's class: see the factory's docstring.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch.distributed.optim import ZeroRedundancyOptimizer as TorchZeroRedundancyOptimizer

__all__ = ["ZeroRedundancyOptimizer"]


def _torch_zero_class() -> type[TorchZeroRedundancyOptimizer]:
    # Imported on first use: torch.distributed.optim scripts its functional optimizers at import
    # (most of a second) and warns that torch.jit.script is deprecated while doing so.
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=r"`torch\.jit\.\w+` is deprecated", category=DeprecationWarning
        )
        from torch.distributed.optim import ZeroRedundancyOptimizer as torch_class
    return torch_class


def ZeroRedundancyOptimizer(
    params: Any,
    optimizer_type: Any = None,
    *,
    optimizer_class: Any = None,
    **kwargs: Any,
) -> TorchZeroRedundancyOptimizer:
    """Build torch's ``ZeroRedundancyOptimizer``, naming its local optimizer by type or class.

    This is a factory, not a class: a subclass of torch's class could only be defined after
    importing ``torch.distributed.optim``, which costs most of a second and warns at import, so
    ``import regtree_optim`` registers this function and imports torch's class on first use. The
    object it returns is a ``torch.distributed.optim.ZeroRedundancyOptimizer``.

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
    from ._optimizer_types import resolve_optimizer_type

    if (optimizer_type is None) == (optimizer_class is None):
        given = "both" if optimizer_type is not None else "neither"
        raise TypeError(
            f"ZeroRedundancyOptimizer got {given} of optimizer_type and optimizer_class "
            f"(optimizer_type={optimizer_type!r}, optimizer_class={optimizer_class!r}); give "
            "exactly one, a name registered in registry 'optimizer' (scope 'regtree_optim') "
            "such as 'AdamW', or an optimizer class"
        )
    key = "optimizer_type" if optimizer_type is not None else "optimizer_class"
    local = optimizer_type if optimizer_type is not None else optimizer_class
    torch_class = _torch_zero_class()
    local_class = resolve_optimizer_type(local, key)
    if local_class is ZeroRedundancyOptimizer or (
        isinstance(local_class, type) and issubclass(local_class, torch_class)
    ):
        raise ValueError(
            f"{key}={local!r} is a ZeroRedundancyOptimizer; name the local optimizer each rank "
            "runs on its shard, such as 'AdamW' or 'SGD'"
        )
    # torch types this as type[Optimizer]; any registered factory of an optimizer works.
    return torch_class(params, local_class, **kwargs)  # type: ignore[arg-type]
