"""The root model registry and its build function, which also turns lists into Sequentials."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._build import build_from_cfg
from ._registry import Registry

__all__ = ["MODELS", "build_model_from_cfg"]


def build_model_from_cfg(
    cfg: Mapping[str, Any] | list[Mapping[str, Any]],
    registry: Registry[Any],
    default_args: Mapping[str, Any] | None = None,
) -> Any:
    """Build a model from a config, or a ``torch.nn.Sequential`` from a list of configs.

    Args:
        cfg: A config mapping (built with :func:`build_from_cfg`) or a list of them.
        registry: Where to look up ``type`` names.
        default_args: Values for keys that a config lacks (given to every config of a list).

    Returns:
        The model; for a list, a ``torch.nn.Sequential`` of the models in order.

    Raises:
        ImportError: ``cfg`` is a list and torch is not installed.
    """
    if isinstance(cfg, list):
        # Imported here only: regtree itself never needs torch.
        try:
            import torch
        except ImportError as exc:
            raise ImportError(
                f"building a list of {len(cfg)} configs with registry {registry.name!r} "
                f"(scope {registry.scope!r}) makes a torch.nn.Sequential, which needs torch: "
                "pip install torch"
            ) from exc
        return torch.nn.Sequential(*[build_from_cfg(one, registry, default_args) for one in cfg])
    return build_from_cfg(cfg, registry, default_args)


# The root of every model tree: downstream packages hang their registries below it.
MODELS: Registry[Any] = Registry("model", build_func=build_model_from_cfg, scope="regtree")
