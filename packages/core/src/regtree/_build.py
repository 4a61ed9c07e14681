"""Building objects from configs: ``build_from_cfg`` and the notes it adds to failures."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ._errors import NotRegisteredError, add_note
from ._miss import LookupMiss, RegistryNode, check_registry
from ._scope import check_scope, current_scope, default_scope
from .naming import origin, registry_label

__all__ = ["add_build_note", "build_from_cfg", "check_default_args"]

_MISSING: Any = object()


def build_from_cfg(
    cfg: Mapping[str, Any],
    registry: RegistryNode,
    default_args: Mapping[str, Any] | None = None,
) -> Any:
    """Build the object that ``cfg`` describes.

    ``cfg['type']`` (else ``default_args['type']``) names the class or callable: a key looked
    up in ``registry`` (through the default scope first, when one is active), or the class or
    callable itself. It is called with the other keys of ``cfg``, completed by ``default_args``.
    ``cfg`` is never changed and its values are passed as they are, never copied. A ``_scope_``
    key runs this build and the builds nested in it under that default scope.

    Args:
        cfg: The config.
        registry: Where to look up a ``type`` given by name.
        default_args: Values for keys that ``cfg`` lacks.

    Returns:
        What the callable returned.

    Raises:
        TypeError: ``cfg`` or ``default_args`` is not a mapping, ``registry`` is not a Registry,
            ``type`` is neither a str nor callable, or ``_scope_`` is not a str.
        ValueError: ``_scope_`` is empty or contains a dot.
        KeyError: Neither ``cfg`` nor ``default_args`` has a ``type``.
        NotRegisteredError: ``type`` names nothing in the registry tree.
        Exception: Whatever the callable raises, the same object, with a note (PEP 678) naming
            this build; for a wrong keyword also the accepted parameters and the closest match.
    """
    kwargs = _merge_arguments(cfg, registry, default_args)
    if "_scope_" in kwargs:
        scope = check_scope(kwargs.pop("_scope_"), "the '_scope_' of a config")
        with default_scope(scope):
            return build_from_cfg(kwargs, registry)
    obj_type = kwargs.pop("type", _MISSING)
    target = _resolve_type(obj_type, registry, cfg)
    try:
        return target(**kwargs)
    except Exception as exc:
        add_build_note(exc, obj_type, target, kwargs, registry)
        raise


def _merge_arguments(cfg: object, registry: RegistryNode, default_args: object) -> dict[str, Any]:
    """Check a build's arguments; return a new dict of ``cfg`` completed by ``default_args``."""
    # A dict first: the Mapping ABC check costs more than copying the config.
    if type(cfg) is not dict and not isinstance(cfg, Mapping):
        raise TypeError(
            f"cfg must be a mapping such as dict(type='Name', ...), got {type(cfg).__name__}: "
            f"{cfg!r}"
        )
    check_registry(registry)
    kwargs = dict(cfg)
    defaults = check_default_args(default_args)
    if defaults is not None:
        for key, value in defaults.items():
            kwargs.setdefault(key, value)
    return kwargs


def check_default_args(default_args: object) -> Mapping[str, Any] | None:
    """Return ``default_args``; raise TypeError unless it is a mapping or None."""
    if default_args is None or isinstance(default_args, Mapping):
        return default_args
    raise TypeError(f"default_args must be a mapping or None, got {default_args!r}")


def _resolve_type(
    obj_type: object, registry: RegistryNode, cfg: Mapping[str, Any]
) -> Callable[..., Any]:
    """Return the callable that the ``type`` of a config names."""
    if isinstance(obj_type, str):
        found = registry.resolve(obj_type, current_scope())
        if type(found) is LookupMiss:
            from ._diagnostics import describe_miss  # error texts only: inspect

            raise NotRegisteredError(describe_miss(found))
        return found
    if callable(obj_type):
        return obj_type
    if obj_type is _MISSING:
        raise KeyError(
            f'cfg must contain the key "type" (or default_args must), got keys {list(cfg)!r} '
            f"for {registry_label(registry)}"
        )
    raise TypeError(
        f"'type' must be a registered name, a class or a callable, got {obj_type!r} "
        f"of type {type(obj_type).__name__} (building with {registry_label(registry)})"
    )


def add_build_note(
    exc: Exception,
    obj_type: object,
    target: Callable[..., Any],
    kwargs: dict[str, Any],
    registry: RegistryNode,
) -> None:
    """Add the note (PEP 678) that names this build level to ``exc``, in place."""
    note = f"regtree: while building {origin(obj_type)} with {registry_label(registry)}"
    if isinstance(exc, TypeError):
        from ._diagnostics import describe_keyword_mismatch  # error texts only: inspect

        try:
            mismatch = describe_keyword_mismatch(target, kwargs, exc)
        except Exception:  # a diagnosis must never replace the error it explains
            mismatch = None
        if mismatch:
            note = f"{note}: {mismatch}"
    add_note(exc, note)
