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


class _PlainKeyError(KeyError):
    # KeyError.__str__ quotes its argument (it is meant to print a missing key); ours carry
    # sentences, which should print as written.
    def __str__(self) -> str:
        return Exception.__str__(self)


class NotRegisteredError(RegistryError, _PlainKeyError):
    """A key names nothing in the registry tree it was looked up in."""


class AlreadyRegisteredError(RegistryError, _PlainKeyError):
    """A name is already bound to a different object and ``force`` was not given."""


class ScopeConflictError(RegistryError, ValueError):
    """A registry already has a child with the scope of a new child."""


# Tracebacks and pickles name the public home of the classes: regtree.NotRegisteredError.
for _error in (RegistryError, NotRegisteredError, AlreadyRegisteredError, ScopeConflictError):
    _error.__module__ = "regtree"
