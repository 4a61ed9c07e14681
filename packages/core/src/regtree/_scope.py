"""Scope names: their rules, inference from the caller, and the default scope of a build."""

from __future__ import annotations

from contextvars import ContextVar
from types import FrameType, TracebackType

__all__ = ["check_scope", "current_scope", "default_scope", "infer_scope"]

# The default scopes entered in this context, innermost last. A ContextVar, not a global: each
# thread and each asyncio task sees its own. A tuple, replaced on every change, so a `with` leaves
# exactly what it found in its own context, however many threads share one default_scope object.
_ENTERED: ContextVar[tuple[str | None, ...]] = ContextVar("regtree_default_scopes", default=())


def check_scope(scope: object, what: str) -> str:
    """Return ``scope`` if it is a valid scope name.

    Args:
        scope: The candidate scope.
        what: How the error message names the value.

    Returns:
        The scope, unchanged.

    Raises:
        TypeError: ``scope`` is not a str.
        ValueError: ``scope`` is empty or contains a dot (a dot separates scopes in a key).
    """
    if not isinstance(scope, str):
        raise TypeError(f"{what} must be a str such as 'mypackage', got {scope!r}")
    if not scope or "." in scope:
        raise ValueError(
            f"{what} must be a non-empty name without '.', got {scope!r} "
            "(a dot separates the scope from the name in a key such as 'mypackage.Net')"
        )
    return scope


def infer_scope(frame: FrameType | None) -> str:
    """Return the top-level package of the module that runs ``frame``.

    Args:
        frame: The caller's frame; ``None`` (no Python caller) counts as ``'__main__'``.

    Returns:
        ``'demo_det'`` for code in ``demo_det.models``; ``'__main__'`` for a script, the REPL or
        ``python -c``.
    """
    if frame is None:
        return "__main__"
    module = frame.f_globals.get("__name__")
    if not isinstance(module, str) or not module:
        return "__main__"
    return module.partition(".")[0]


def current_scope() -> str | None:
    """Return the default scope active in this thread or task, or None outside any."""
    entered = _ENTERED.get()
    return entered[-1] if entered else None


# Lower-case: it is used like a function, ``with default_scope('x'):``.
class default_scope:
    """Context manager that makes ``scope`` the default scope of builds inside it.

    While active, ``build`` resolves a key first through the registry of that scope in the
    called registry's tree, then through the called registry. Blocks nest; leaving one, normally
    or by an exception, restores the scope that was active before. ``None`` switches the default
    scope off inside the block. One object may be entered again, and by several threads and
    asyncio tasks at once: each ``with`` restores what it found in its own context.

    Args:
        scope: A scope name, or None.

    Example:
        >>> with default_scope("demo_cls"):
        ...     net = MODELS.build(dict(type="NetB"))  # doctest: +SKIP
    """

    __slots__ = ("_scope",)

    def __init__(self, scope: str | None) -> None:
        self._scope = None if scope is None else check_scope(scope, "default scope")

    def __enter__(self) -> str | None:
        _ENTERED.set((*_ENTERED.get(), self._scope))
        return self._scope

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _ENTERED.set(_ENTERED.get()[:-1])

    def __repr__(self) -> str:
        return f"default_scope({self._scope!r})"
