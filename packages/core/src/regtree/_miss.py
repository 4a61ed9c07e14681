"""What a lookup reads and reports: the registry as seen below its class, and the miss record.

The record, the error texts, the build and the config validator read registries but do not
import the registry module, which imports them (dependencies run one way, issue 10): they see a
registry through `RegistryNode`, which `regtree.Registry` satisfies, and tell one by its nominal
base, `RegistryBase`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import MappingProxyType
from typing import Any, Protocol, final

__all__ = ["LookupMiss", "RegistryBase", "RegistryNode", "check_registry"]


class RegistryBase:
    """The base class of :class:`regtree.Registry`, defined here so that a build can check it.

    The build and the validator cannot import the registry's module, which imports them; a
    registry is what derives from this class.
    """

    __slots__ = ()


class RegistryNode(Protocol):
    """What is read of a :class:`regtree.Registry` below it: its place in the tree and lookup."""

    @property
    def name(self) -> str:
        """What the registry holds."""

    @property
    def scope(self) -> str:
        """Its scope in the tree."""

    @property
    def parent(self) -> RegistryNode | None:
        """The parent registry, or None for a root."""

    @property
    def root(self) -> RegistryNode:
        """The root of the tree."""

    @property
    def module_dict(self) -> MappingProxyType[str, Callable[..., Any]]:
        """Its own entries by name."""

    def walk(self) -> Iterable[RegistryNode]:
        """This registry and its descendants, breadth first."""

    def resolve(
        self, key: str, default_scope: str | None = None
    ) -> Callable[..., Any] | LookupMiss:
        """The object ``key`` names, or the record of the miss."""

    def _scoped(self, scope: str) -> RegistryNode | None:
        """The registry a key's ``scope`` names from here now: no plugin or location imported."""


def check_registry(registry: object) -> None:
    """Raise TypeError unless ``registry`` is a :class:`regtree.Registry` (SPEC 2).

    Raises:
        TypeError: ``registry`` is anything else, such as a dict of classes or an object that
            merely has a ``resolve`` method.
    """
    if not isinstance(registry, RegistryBase):
        raise TypeError(
            f"registry must be a regtree.Registry, got {type(registry).__name__} {registry!r}; "
            "pass the Registry that holds the names, such as regtree.MODELS"
        )


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
        unknown_default_scope: The active default scope where no registry of the tree has it
            (so nothing was searched first, SPEC 2.1), else None.
    """

    __slots__ = (
        "default_registry",
        "key",
        "missing_scope",
        "name",
        "providers",
        "reached",
        "registry",
        "unknown_default_scope",
    )

    def __init__(
        self,
        key: str,
        registry: RegistryNode,
        reached: RegistryNode,
        name: str,
        missing_scope: str | None = None,
        providers: tuple[str, ...] = (),
        default_registry: RegistryNode | None = None,
    ) -> None:
        self.key = key
        self.registry = registry
        self.reached = reached
        self.name = name
        self.missing_scope = missing_scope
        self.providers = providers
        self.default_registry = default_registry
        self.unknown_default_scope: str | None = None

    def __repr__(self) -> str:
        return (
            f"LookupMiss(key={self.key!r}, reached={self.reached!r}, name={self.name!r}, "
            f"missing_scope={self.missing_scope!r})"
        )
