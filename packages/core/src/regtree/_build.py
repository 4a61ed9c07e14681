"""Building objects from configs: ``build_from_cfg`` and the notes it adds to failures."""

from __future__ import annotations

from _collections_abc import Mapping

from ._errors import NotRegisteredError
from ._registry import Registry, registry_label
from ._scope import active_scope, check_scope, default_scope

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["add_build_note", "build_from_cfg"]

_MISSING: Any = object()


def build_from_cfg(
    cfg: Mapping[str, Any],
    registry: Registry[Any],
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
    # A dict first: the Mapping ABC check costs more than the whole type test.
    if type(cfg) is dict:
        kwargs = cfg.copy()
    elif isinstance(cfg, Mapping):
        kwargs = dict(cfg)
    else:
        raise TypeError(
            f"cfg must be a mapping such as dict(type='Name', ...), got {type(cfg).__name__}: "
            f"{cfg!r}"
        )
    if type(registry) is not Registry and not isinstance(registry, Registry):
        raise TypeError(f"registry must be a regtree.Registry, got {registry!r}")
    if default_args is not None:
        if not isinstance(default_args, Mapping):
            raise TypeError(f"default_args must be a mapping or None, got {default_args!r}")
        for key, value in default_args.items():
            kwargs.setdefault(key, value)
    if "_scope_" in kwargs:
        scope = check_scope(kwargs.pop("_scope_"), "the '_scope_' of a config")
        with default_scope(scope):
            return build_from_cfg(kwargs, registry)
    obj_type = kwargs.pop("type", _MISSING)
    if type(obj_type) is str or isinstance(obj_type, str):
        active = active_scope()
        if active is None:
            # The own dict first, inline: a hit there is final (names hold no dots). A subclass
            # may override get(), so only a plain Registry takes the shortcut.
            target = None
            if type(registry) is Registry and not registry._locations_pending:
                target = registry._module_dict.get(obj_type)
            if target is None:
                target = registry.get(obj_type)
        else:
            target = _resolve_in_scope(registry, obj_type, active)
        if target is None:
            from ._diagnostics import describe_miss

            raise NotRegisteredError(describe_miss(registry, obj_type, active))
    elif callable(obj_type):
        target = obj_type
    elif obj_type is _MISSING:
        raise KeyError(
            f'cfg must contain the key "type" (or default_args must), got keys {list(cfg)!r} '
            f"for {registry_label(registry)}"
        )
    else:
        raise TypeError(
            f"'type' must be a registered name, a class or a callable, got {obj_type!r} "
            f"of type {type(obj_type).__name__} (building with {registry_label(registry)})"
        )
    try:
        return target(**kwargs)
    except Exception as exc:
        add_build_note(exc, obj_type, target, kwargs, registry)
        raise


def _resolve_in_scope(registry: Registry[Any], key: str, scope: str) -> Callable[..., Any] | None:
    """Look ``key`` up through the registry of the default ``scope``, then ``registry``."""
    scoped = registry._registry_for_scope(scope)
    if scoped is not None and scoped is not registry:
        found = scoped.get(key)
        if found is not None:
            return found
    return registry.get(key)


def add_build_note(
    exc: Exception,
    obj_type: object,
    target: Callable[..., Any],
    kwargs: dict[str, Any],
    registry: Registry[Any],
) -> None:
    """Add the note (PEP 678) that names this build level to ``exc``, in place."""
    note = f"regtree: while building {_describe_type(obj_type)} with {registry_label(registry)}"
    if isinstance(exc, TypeError):
        from ._diagnostics import describe_keyword_mismatch

        try:
            mismatch = describe_keyword_mismatch(target, kwargs)
        except Exception:  # a diagnosis must never replace the error it explains
            mismatch = None
        if mismatch:
            note = f"{note}: {mismatch}"
    # A __notes__ that is not a list makes add_note raise: keep the callable's error as it is.
    if isinstance(getattr(exc, "__notes__", []), list):
        exc.add_note(note)


def _describe_type(obj_type: object) -> str:
    if isinstance(obj_type, str):
        return repr(obj_type)
    try:
        module = getattr(obj_type, "__module__", None)
        qualname = getattr(obj_type, "__qualname__", None)
        if isinstance(module, str) and isinstance(qualname, str):
            return f"{module}.{qualname}"
        return repr(obj_type)
    except Exception:  # a hostile __getattr__ or __repr__
        return object.__repr__(obj_type)
