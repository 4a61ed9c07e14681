"""regtree's exception classes (one base, three specific errors), and notes on others' errors."""

from __future__ import annotations

__all__ = [
    "AlreadyRegisteredError",
    "NotRegisteredError",
    "RegistryError",
    "ScopeConflictError",
    "add_note",
]


class RegistryError(Exception):
    """Base class of every error that regtree raises on its own account."""


# KeyError.__str__ quotes its argument (it is meant to print a missing key); ours carry
# sentences, which print as written.


class NotRegisteredError(RegistryError, KeyError):
    """A key names nothing in the registry tree it was looked up in."""

    def __str__(self) -> str:
        return Exception.__str__(self)


class AlreadyRegisteredError(RegistryError, KeyError):
    """A name is already bound to a different object and ``force`` was not given."""

    def __str__(self) -> str:
        return Exception.__str__(self)


class ScopeConflictError(RegistryError, ValueError):
    """A registry already has a child with the scope of a new child."""


# Tracebacks and pickles name the public home of the classes: regtree.NotRegisteredError.
for _error in (RegistryError, NotRegisteredError, AlreadyRegisteredError, ScopeConflictError):
    _error.__module__ = "regtree"


def add_note(exc: BaseException, note: str) -> None:
    """Add ``note`` (PEP 678) to ``exc``, someone else's error, where it can take one."""
    # A __notes__ that is not a list makes add_note raise: keep the error as it is.
    if isinstance(getattr(exc, "__notes__", []), list):
        exc.add_note(note)
