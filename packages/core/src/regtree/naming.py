"""How regtree's messages name things: a registry, a callable, the names close to a typo.

Public so that packages built on regtree word their messages the same way (``regtree-optim``
does): a registry is ``registry 'model' (scope 'demo_det')``, a callable ``module:qualname``,
and every "did you mean" comes from :func:`closest`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["closest", "origin", "registry_label"]


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


def closest(word: str, candidates: Iterable[str], count: int = 3, cutoff: float = 0.6) -> list[str]:
    """Return up to ``count`` candidates close to ``word``, best first, ignoring case.

    ``'RESNET'`` finds ``'ResNet'``. Nothing close gives an empty list: a suggestion that is not
    close misleads more than none.

    Args:
        word: What was given.
        candidates: The valid names.
        count: The most names returned.
        cutoff: How close a name must be (``difflib``'s ratio, 0 to 1).

    Returns:
        The close candidates, closest first.
    """
    import difflib  # messages only: importing regtree stays without it

    by_folded: dict[str, list[str]] = {}
    for candidate in candidates:
        by_folded.setdefault(candidate.casefold(), []).append(candidate)
    matches = difflib.get_close_matches(word.casefold(), list(by_folded), n=count, cutoff=cutoff)
    return [name for folded in matches for name in by_folded[folded]][:count]
