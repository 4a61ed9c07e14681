"""How messages name things: a registry by name and scope, a callable by ``module:qualname``."""

from __future__ import annotations

from typing import Any

__all__ = ["origin", "registry_label"]


def registry_label(registry: Any) -> str:
    """Return how messages name ``registry``: ``registry 'model' (scope 'demo_det')``."""
    return f"registry {registry.name!r} (scope {registry.scope!r})"


def origin(obj: object) -> str:
    """Return where ``obj`` is defined as ``module:qualname`` (a partial names its function).

    Anything else, a key (str) among them, is shown by its repr. Never raises: an object whose
    attributes cannot be read is named by ``object.__repr__``.
    """
    try:
        func = getattr(obj, "func", None)
        if func is not None and callable(func) and type(obj).__name__ == "partial":
            return f"functools.partial({origin(func)})"
        module = getattr(obj, "__module__", None)
        qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
        if isinstance(module, str) and isinstance(qualname, str):
            return f"{module}:{qualname}"
        return repr(obj)
    except Exception:  # a hostile __getattr__ or __repr__
        return object.__repr__(obj)
