"""Scope names: their rules, inference from the caller, and the default scope of a build."""

from __future__ import annotations

from contextvars import ContextVar
from types import FrameType, TracebackType
from typing import TypeAlias

__all__ = ["check_scope", "current_scope", "default_scope", "infer_scope"]

# The active default scope. A ContextVar, not a global: each thread and asyncio task sees its own.
_CURRENT: ContextVar[str | None] = ContextVar("regtree_default_scope", default=None)

# An open `with default_scope(...)` block: the object, the scope it found, the block it is in.
_Block: TypeAlias = "tuple[default_scope, str | None, _Block | None]"
# The innermost open block of this context. Kept per block, not per object, so one object may be
# re-entered and shared by threads and tasks; and a block restores what it found even when blocks
# end out of order (a generator suspended inside an inner block while the outer one ends).
_OPEN: ContextVar[_Block | None] = ContextVar("regtree_open_default_scopes", default=None)


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
    return _CURRENT.get()


# Lower-case: it is used like a function, ``with default_scope('x'):``.
class default_scope:
    """Context manager that makes ``scope`` the default scope of builds inside it.

    While active, ``build`` resolves a key first through the registry of that scope in the
    called registry's tree, then through the called registry. Blocks nest; leaving one, normally
    or by an exception, restores the scope that was active before. ``None`` switches the default
    scope off inside the block. One object may be entered again, and by several threads and
    asyncio tasks at once: each ``with`` restores what it found in its own context. A block left
    while one inside it is still open (a generator suspended there) restores what it found too,
    and the inner block, when it ends, restores that same scope.

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
        _OPEN.set((self, _CURRENT.get(), _OPEN.get()))
        _CURRENT.set(self._scope)
        return self._scope

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        block = _OPEN.get()
        inside: list[_Block] = []  # blocks inside this one that are still open
        while block is not None and block[0] is not self:
            inside.append(block)
            block = block[2]
        if block is None:  # entered in another context (a generator closed elsewhere)
            return
        found, chain = block[1], block[2]
        # Blocks still open inside this one (a suspended generator's) stay open; the one just
        # inside now restores what this one found, since what it found ends here, so that no
        # scope of this block outlives it.
        if inside:
            owner, _, _ = inside.pop()
            chain = (owner, found, chain)
            for owner, its_found, _ in reversed(inside):
                chain = (owner, its_found, chain)
        _OPEN.set(chain)
        _CURRENT.set(found)

    def __repr__(self) -> str:
        return f"default_scope({self._scope!r})"
