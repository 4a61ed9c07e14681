"""How messages name things: the closest valid names to a typo, and a callable's location."""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterable

__all__ = ["callable_name", "closest_names"]

# difflib's own default: close enough that a suggestion is worth reading.
_CUTOFF = 0.6


def closest_names(word: str, candidates: Iterable[str], count: int = 1) -> list[str]:
    """Return up to ``count`` candidates close to ``word``, best first; case is ignored.

    ``'RMSPROP'`` finds ``'RMSprop'``. An empty list when nothing is close: a suggestion
    that is not close misleads more than none.
    """
    by_folded: dict[str, str] = {}
    for candidate in candidates:
        by_folded.setdefault(candidate.casefold(), candidate)
    found = difflib.get_close_matches(word.casefold(), list(by_folded), n=count, cutoff=_CUTOFF)
    return [by_folded[folded] for folded in found]


def callable_name(obj: object) -> str:
    """Name a class or function as ``module:qualname`` (``repr`` when it has no such names).

    A ``functools.partial`` is ``functools.partial(module:qualname)``, as regtree names it.
    """
    if isinstance(obj, functools.partial):
        return f"functools.partial({callable_name(obj.func)})"
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if isinstance(module, str) and isinstance(qualname, str):
        return f"{module}:{qualname}"
    return repr(obj)
