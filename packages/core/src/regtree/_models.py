"""The root model registry and its build function, which also turns lists into Sequentials."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._build import build_from_cfg, check_default_args
from ._errors import add_note
from ._miss import check_registry
from ._registry import Registry
from .naming import registry_label

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
        TypeError: ``cfg`` is a tuple (a list is meant), or the arguments are wrong as for
            :func:`build_from_cfg`, an empty list's included.
        ImportError: ``cfg`` is a list and torch is not installed.
        Exception: Whatever building an item raises, with a note naming its index.
    """
    given: object = cfg  # typed as the SPEC's two forms; anything may come
    if isinstance(given, tuple):
        raise TypeError(
            f"cfg must be a mapping such as dict(type='Name', ...), or a list of them (built into "
            f"a torch.nn.Sequential), got a tuple of {len(given)}: write it as a list"
        )
    if not isinstance(cfg, list):
        return build_from_cfg(cfg, registry, default_args)
    check_registry(registry)
    check_default_args(default_args)
    # Imported here only: regtree itself never needs torch.
    try:
        import torch
    except ImportError as exc:
        raise ImportError(
            f"building a list of {len(cfg)} configs with {registry_label(registry)} makes a "
            "torch.nn.Sequential, which needs torch: pip install torch"
        ) from exc
    models = []
    for index, item in enumerate(cfg):
        try:
            models.append(build_from_cfg(item, registry, default_args))
        except Exception as exc:
            add_note(exc, f"regtree: while building item {index} of a list of {len(cfg)} configs")
            raise
    return torch.nn.Sequential(*models)


# The root of every model tree: downstream packages hang their registries below it.
MODELS: Registry[Any] = Registry("model", build_func=build_model_from_cfg, scope="regtree")
