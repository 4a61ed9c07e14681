"""Which modules are norm layers, deformable convs or wrappers: type tables and lookups."""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm
from torch.nn.modules.instancenorm import _InstanceNorm

__all__ = [
    "inner_attr_cache",
    "inner_module",
    "is_depthwise",
    "module_kind",
    "register_dcn_type",
    "register_norm_type",
    "register_wrapper_type",
    "unwrap_model",
]

_ModuleT = TypeVar("_ModuleT", bound=type)

# SyncBatchNorm and the lazy variants derive from these bases, so isinstance covers them.
_BUILTIN_NORM_TYPES: Final[tuple[type, ...]] = (
    _BatchNorm,
    _InstanceNorm,
    nn.GroupNorm,
    nn.LayerNorm,
    nn.RMSNorm,
)
_CONV_TYPES: Final[tuple[type, ...]] = (nn.Conv1d, nn.Conv2d, nn.Conv3d)

# Guards the tables and the cache; a classification runs under it (see module_kind).
_lock = threading.RLock()
_norm_types: list[type] = []
_dcn_types: list[type] = []
_wrapper_attrs: dict[type, str] = {
    nn.DataParallel: "module",
    nn.parallel.DistributedDataParallel: "module",
}
# type -> ModuleKind; cleared whenever a table changes.
_kind_cache: dict[type, ModuleKind] = {}


@dataclass(frozen=True, slots=True)
class ModuleKind:
    """What the paramwise rules need to know about a module's type.

    Attributes:
        is_norm: A norm layer (its parameters follow ``norm_decay_mult``).
        is_conv: A Conv1d/2d/3d, so depthwise when ``groups == in_channels > 1``.
        is_conv2d: A Conv2d (``dcn_offset_lr_mult`` applies to these only).
        is_dcn: A deformable conv; its direct children are "inside a deformable conv".
    """

    is_norm: bool
    is_conv: bool
    is_conv2d: bool
    is_dcn: bool


def _check_type(cls: object, what: str) -> type:
    # Before any table changes: nn.Module itself would make every module a norm, a deformable
    # conv or a wrapper, for good (there is no unregister), and a class that is no module none.
    if not isinstance(cls, type) or not issubclass(cls, nn.Module) or cls is nn.Module:
        given = f"{cls!r}" if isinstance(cls, type) else f"{cls!r} ({type(cls).__name__})"
        raise TypeError(
            f"register_{what}_type expects a class deriving from torch.nn.Module (not nn.Module "
            f"itself, which every module is), got {given}"
        )
    return cls


def _add_type(cls: object, what: str, table: list[type]) -> None:
    """Check ``cls`` and add it to ``table`` once, forgetting every cached ``ModuleKind``."""
    checked = _check_type(cls, what)
    with _lock:
        if checked not in table:
            table.append(checked)
        _kind_cache.clear()


def register_norm_type(cls: _ModuleT) -> _ModuleT:
    """Treat ``cls`` (and its subclasses) as a norm layer for ``norm_decay_mult``.

    Usable as a decorator; returns ``cls`` unchanged. Registering twice is a no-op.

    Raises:
        TypeError: ``cls`` is not a subclass of ``nn.Module`` (or is ``nn.Module``).
    """
    _add_type(cls, "norm", _norm_types)
    return cls


def register_dcn_type(cls: _ModuleT) -> _ModuleT:
    """Treat ``cls`` (and its subclasses) as a deformable convolution.

    Usable as a decorator; returns ``cls`` unchanged. Registering twice is a no-op.

    Raises:
        TypeError: ``cls`` is not a subclass of ``nn.Module`` (or is ``nn.Module``).
    """
    _add_type(cls, "dcn", _dcn_types)
    return cls


def register_wrapper_type(cls: _ModuleT, attr: str = "module") -> _ModuleT:
    """Unwrap instances of ``cls`` (and its subclasses) to ``getattr(instance, attr)``.

    Usable as a decorator only in its one-argument form; returns ``cls`` unchanged.

    Raises:
        TypeError: ``cls`` is not a subclass of ``nn.Module`` (or is ``nn.Module``), or ``attr``
            is not a non-empty str.
    """
    checked = _check_type(cls, "wrapper")
    if not isinstance(attr, str) or not attr:
        raise TypeError(f"register_wrapper_type expects attr to be a non-empty str, got {attr!r}")
    with _lock:
        _wrapper_attrs[checked] = attr
    return cls


def _torchvision_dcn_types() -> tuple[type, ...]:
    # A model holding torchvision's DeformConv2d has imported torchvision.ops already, so looking
    # in sys.modules finds it without ever importing (or requiring) torchvision ourselves.
    ops = sys.modules.get("torchvision.ops")
    found = getattr(ops, "DeformConv2d", None)
    return (found,) if isinstance(found, type) else ()


def module_kind(module_type: type) -> ModuleKind:
    """Classify a module type once; later calls for the same type are a dict lookup."""
    kind = _kind_cache.get(module_type)
    if kind is not None:
        return kind
    # Classified and stored under the lock that registration takes to change the tables and
    # clear the cache: a kind computed from the tables as they were before a concurrent
    # register_norm_type can then never be stored after that registration cleared the cache.
    with _lock:
        kind = _kind_cache.get(module_type)
        if kind is None:
            kind = _classify(module_type)
            # Safe although torchvision may be imported later: no type derived from its
            # DeformConv2d can exist before torchvision.ops is imported.
            _kind_cache[module_type] = kind
    return kind


def _classify(module_type: type) -> ModuleKind:
    norm_types = (*_BUILTIN_NORM_TYPES, *_norm_types)
    dcn_types = (*_torchvision_dcn_types(), *_dcn_types)
    return ModuleKind(
        is_norm=issubclass(module_type, norm_types),
        is_conv=issubclass(module_type, _CONV_TYPES),
        is_conv2d=issubclass(module_type, nn.Conv2d),
        is_dcn=bool(dcn_types) and issubclass(module_type, dcn_types),
    )


# Wrappers that never show in parameter names, wherever they sit in a model (SPEC 3.6):
# torch.compile's module, activation checkpointing (CheckpointWrapper and OffloadWrapper derive
# from ActivationWrapper) and FSDP1. (module, class, attribute holding the wrapped module)
_TRANSPARENT_WRAPPERS: Final[tuple[tuple[str, str, str], ...]] = (
    ("torch._dynamo.eval_frame", "OptimizedModule", "_orig_mod"),
    (
        "torch.distributed.algorithms._checkpoint.checkpoint_wrapper",
        "ActivationWrapper",
        "_checkpoint_wrapped_module",
    ),
    (
        "torch.distributed.fsdp.fully_sharded_data_parallel",
        "FullyShardedDataParallel",
        "_fsdp_wrapped_module",
    ),
)
# type -> the attribute of a transparent wrapper, or None. Caching None is safe although torch's
# modules may be imported later: no subclass of a wrapper exists before its module is imported.
# Filled by inner_module; the walk's child step (_walk.child_step) reads it itself, to call
# inner_module only for a type not known to wrap nothing.
inner_attr_cache: dict[type, str | None] = {}


def _transparent_attrs() -> dict[type, str]:
    # Never imports: a model holding one of these has imported its module already.
    attrs: dict[type, str] = {}
    for module_name, class_name, attr in _TRANSPARENT_WRAPPERS:
        found = getattr(sys.modules.get(module_name), class_name, None)
        if isinstance(found, type):
            attrs[found] = attr
    return attrs


def inner_module(module: nn.Module) -> nn.Module:
    """Strip the wrappers that never show in names (compile, checkpointing, FSDP1).

    The walk's child step calls it for a child whose type :data:`inner_attr_cache` does not
    know to wrap nothing, so a child wrapped in place (``checkpoint_wrapper`` on a block, FSDP1
    on a layer) is named as the unwrapped block.
    """
    if inner_attr_cache.get(type(module), "") is None:
        return module  # most modules: a type known to wrap nothing, one lookup
    while True:
        cls = type(module)
        if cls in inner_attr_cache:
            attr = inner_attr_cache[cls]
        else:
            attrs = _transparent_attrs()
            attr = next((a for t, a in attrs.items() if issubclass(cls, t)), None)
            inner_attr_cache[cls] = attr
        inner = None if attr is None else getattr(module, attr, None)
        if not isinstance(inner, nn.Module):
            return module
        module = inner


def _wrapped_attr(model: nn.Module) -> str | None:
    with _lock:
        attrs = dict(_wrapper_attrs)
    attrs.update(_transparent_attrs())
    for wrapper_type, attr in attrs.items():
        if isinstance(model, wrapper_type):
            return attr
    return None


def unwrap_model(model: nn.Module) -> nn.Module:
    """Strip every known wrapper: DDP, DataParallel, compile, checkpointing, FSDP1, registered.

    A plain model with a child that happens to be called ``module`` is left as it is.

    Raises:
        TypeError: a wrapper's attribute does not hold an ``nn.Module``.
    """
    while (attr := _wrapped_attr(model)) is not None:
        inner = getattr(model, attr, None)
        if not isinstance(inner, nn.Module):
            raise TypeError(
                f"{type(model).__name__} is registered as a wrapper whose model is in "
                f"attribute {attr!r}, but that attribute holds {inner!r}; register it with the "
                "attribute that holds the wrapped nn.Module"
            )
        model = inner
    return model


def is_depthwise(module: nn.Module, is_conv: bool) -> bool:
    """A depthwise conv: a Conv1d/2d/3d with ``groups == in_channels > 1`` (SPEC 3.2).

    The attributes are read on convs only (``is_conv``): on another module a missing attribute
    costs ``nn.Module.__getattr__`` an exception, a microsecond per module.
    """
    conv: Any = module  # a _ConvNd where is_conv (typing.cast is a call at run time)
    return is_conv and conv.groups == conv.in_channels > 1
