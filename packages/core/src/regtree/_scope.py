"""Scope names: their rules, inference from the caller, and the default scope of a build."""

from __future__ import annotations

from contextvars import ContextVar

TYPE_CHECKING = False
if TYPE_CHECKING:
    from contextvars import Token
    from types import FrameType, TracebackType

__all__ = [
    "DEFAULT_SCOPE",
    "active_scope",
    "check_scope",
    "current_scope",
    "default_scope",
    "infer_scope",
]

# A ContextVar, not a global: each thread and each asyncio task sees its own default scope.
DEFAULT_SCOPE: ContextVar[str | None] = ContextVar("regtree_default_scope", default=None)
# Its bound ``get``, made once: build calls it on every object, and ``DEFAULT_SCOPE.get()`` in a
# module that imported DEFAULT_SCOPE compiles to an attribute load that makes a new bound method
# per call (Python 3.11 treats imported names as modules), about 40 ns of a 500 ns build.
active_scope = DEFAULT_SCOPE.get


def check_scope(scope: object, what: str = "scope") -> str:
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
    return DEFAULT_SCOPE.get()


# Lower-case: it is used like a function, ``with default_scope('x'):``.
class default_scope:
    """Context manager that makes ``scope`` the default scope of builds inside it.

    While active, ``build`` resolves a key first through the registry of that scope in the
    called registry's tree, then through the called registry. Blocks nest; leaving one, normally
    or by an exception, restores the scope that was active before. ``None`` switches the default
    scope off inside the block.

    Args:
        scope: A scope name, or None.

    Example:
        >>> with default_scope("demo_cls"):
        ...     net = MODELS.build(dict(type="NetB"))  # doctest: +SKIP
    """

    __slots__ = ("_scope", "_tokens")

    def __init__(self, scope: str | None) -> None:
        self._scope = None if scope is None else check_scope(scope, "default scope")
        self._tokens: list[Token[str | None]] = []

    def __enter__(self) -> str | None:
        self._tokens.append(DEFAULT_SCOPE.set(self._scope))
        return self._scope

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        DEFAULT_SCOPE.reset(self._tokens.pop())

    def __repr__(self) -> str:
        return f"default_scope({self._scope!r})"
