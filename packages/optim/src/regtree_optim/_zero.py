"""``ZeroRedundancyOptimizer`` built from a config that names its local optimizer by type."""

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
    params: Any, optimizer_type: Any, **kwargs: Any
) -> TorchZeroRedundancyOptimizer:
    """Build torch's ``ZeroRedundancyOptimizer`` with its local optimizer named by type.

    Built from ``dict(type='ZeroRedundancyOptimizer', optimizer_type='AdamW', lr=...)``;
    ``optimizer_type`` is any name registered in ``OPTIMIZERS`` (or an optimizer class). Every
    other keyword goes to torch's class, and from there to the local optimizer.

    Args:
        params: Parameters or parameter groups.
        optimizer_type: The local optimizer each rank runs on its shard, by name or class.
        **kwargs: ``process_group``, ``parameters_as_bucket_view``, ``overlap_with_ddp`` and the
            local optimizer's options.

    Returns:
        A ``torch.distributed.optim.ZeroRedundancyOptimizer``.

    Raises:
        NotRegisteredError: ``optimizer_type`` names no registered optimizer.
        ValueError: ``optimizer_type`` is a ZeroRedundancyOptimizer itself.
    """
    from ._optimizer_types import resolve_optimizer_type

    torch_class = _torch_zero_class()
    optimizer_class = resolve_optimizer_type(optimizer_type, "optimizer_type")
    if optimizer_class is ZeroRedundancyOptimizer or (
        isinstance(optimizer_class, type) and issubclass(optimizer_class, torch_class)
    ):
        raise ValueError(
            f"optimizer_type={optimizer_type!r} is a ZeroRedundancyOptimizer; name the local "
            "optimizer each rank runs on its shard, such as 'AdamW' or 'SGD'"
        )
    # torch types this as type[Optimizer]; any registered factory of an optimizer works.
    return torch_class(params, optimizer_class, **kwargs)  # type: ignore[arg-type]
