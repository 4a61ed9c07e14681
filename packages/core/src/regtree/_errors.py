"""The exception classes of regtree, one base and three specific errors."""

from __future__ import annotations

__all__ = [
    "AlreadyRegisteredError",
    "NotRegisteredError",
    "RegistryError",
    "ScopeConflictError",
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
