"""What a lookup that found nothing reports: where it got to and what was missing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, final

if TYPE_CHECKING:
    from ._registry import Registry

__all__ = ["LookupMiss"]


@final
class LookupMiss:
    """The record of a lookup that found nothing, which error messages and validation format.

    Final, so ``type(found) is LookupMiss`` tells a miss from any registered object.

    Attributes:
        key: The key looked up, as given.
        registry: The registry the key was looked up in.
        reached: The last registry the key's scopes led to (``registry`` for an unscoped key).
        name: What was missing there: the rest of the key after the scopes that were found.
        missing_scope: The scope that no registry of the tree has, or None when every scope of
            the key was found and only ``name`` was missing.
        providers: The distributions that advertise ``missing_scope`` (imported, yet no registry
            of that scope joined the tree); empty when none does.
        default_registry: The registry of the active default scope that was searched first, or
            None.
    """

    __slots__ = (
        "default_registry",
        "key",
        "missing_scope",
        "name",
        "providers",
        "reached",
        "registry",
    )

    def __init__(
        self,
        key: str,
        registry: Registry[Any],
        reached: Registry[Any],
        name: str,
        missing_scope: str | None = None,
        providers: tuple[str, ...] = (),
        default_registry: Registry[Any] | None = None,
    ) -> None:
        self.key = key
        self.registry = registry
        self.reached = reached
        self.name = name
        self.missing_scope = missing_scope
        self.providers = providers
        self.default_registry = default_registry

    def __repr__(self) -> str:
        return (
            f"LookupMiss(key={self.key!r}, reached={self.reached!r}, name={self.name!r}, "
            f"missing_scope={self.missing_scope!r})"
        )
