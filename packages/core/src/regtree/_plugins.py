"""Plugins: installed distributions that advertise a scope in entry-point group ``regtree.scopes``.

Entry points are read lazily, the first time they are needed (a lookup meets a scope that no
registry in its tree has, a message lists the advertised scopes, or ``load_plugins`` runs), and at
most once per process; each advertised scope is imported at most once. A failed import
is remembered: every later lookup under that scope raises an ImportError that names the
distribution and chains the original error, never a miss, and the plugin is not run again.
"""

from __future__ import annotations

from _thread import RLock

TYPE_CHECKING = False
if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = ["ENTRY_POINT_GROUP", "PluginCatalog", "catalog", "load_plugins"]

ENTRY_POINT_GROUP = "regtree.scopes"


class PluginCatalog:
    """The scopes that installed distributions advertise, read once and imported on demand.

    Args:
        group: The entry-point group to read.
    """

    __slots__ = ("_advertised", "_group", "_loaded", "_lock", "failed")

    def __init__(self, group: str = ENTRY_POINT_GROUP) -> None:
        self._group = group
        self._advertised: dict[str, list[EntryPoint]] | None = None
        self._loaded: set[str] = set()
        self._lock = RLock()
        #: Scope -> (distribution, error) of each plugin whose import failed in this process.
        self.failed: dict[str, tuple[str, BaseException]] = {}

    @property
    def group(self) -> str:
        """The entry-point group this catalog reads."""
        return self._group

    def _entry_points(self) -> dict[str, list[EntryPoint]]:
        advertised = self._advertised
        if advertised is None:
            with self._lock:
                advertised = self._advertised
                if advertised is None:
                    # Imported here: importlib.metadata costs more than all of regtree.
                    from importlib.metadata import entry_points

                    advertised = {}
                    for entry in entry_points(group=self._group):
                        advertised.setdefault(entry.name, []).append(entry)
                    self._advertised = advertised
        return advertised

    def scopes(self) -> list[str]:
        """Return every advertised scope, sorted."""
        return sorted(self._entry_points())

    def providers(self, scope: str) -> list[str]:
        """Return the names of the distributions that advertise ``scope``."""
        return [_distribution_name(entry) for entry in self._entry_points().get(scope, [])]

    def load(self, scope: str) -> bool:
        """Import the plugin modules that advertise ``scope``, once per process.

        Args:
            scope: The scope to provide.

        Returns:
            True when some installed distribution advertises ``scope`` (its modules are imported
            now or were before), False when none does.

        Raises:
            Exception: Whatever importing a plugin raises (an ImportError above all), with a note
                naming the distribution and the entry point.
        """
        if scope in self._loaded:
            return True
        if scope in self.failed:
            self.raise_failure(scope)
        entries = self._entry_points().get(scope)
        if not entries:
            return False
        with self._lock:
            if scope in self.failed:
                self.raise_failure(scope)
            if scope not in self._loaded:
                for entry in entries:
                    try:
                        _import_entry_point(entry, self._group)
                    except Exception as exc:
                        self.failed[scope] = (_distribution_name(entry), exc)
                        raise
                self._loaded.add(scope)
        return True

    def raise_failure(self, scope: str) -> None:
        """Raise the ImportError for ``scope``, whose plugin failed to import earlier.

        Raises:
            ImportError: Always; chained from the plugin's original error.
        """
        distribution, original = self.failed[scope]
        error = ImportError(
            f"the plugin for scope {scope!r} (distribution {distribution!r}) failed to import "
            f"earlier in this process: {type(original).__name__}: {original}; fix or reinstall "
            f"it and start a new process (plugins are imported once)"
        )
        error.add_note(
            f"regtree: scope {scope!r} is advertised by distribution {distribution!r} "
            f"(entry point group {self._group!r})"
        )
        raise error from original

    def load_all(self) -> list[str]:
        """Import every advertised scope; return their names, sorted."""
        names = self.scopes()
        for scope in names:
            self.load(scope)
        return names

    def __repr__(self) -> str:
        state = "unread" if self._advertised is None else f"{len(self._advertised)} scopes"
        return f"PluginCatalog(group={self._group!r}, {state}, loaded={sorted(self._loaded)})"


def _distribution_name(entry: EntryPoint) -> str:
    dist = getattr(entry, "dist", None)
    name = getattr(dist, "name", None)
    return name if isinstance(name, str) else "<unknown distribution>"


def _import_entry_point(entry: EntryPoint, group: str) -> None:
    try:
        entry.load()
    except Exception as exc:
        exc.add_note(
            f"regtree: while importing plugin module {entry.value!r} for scope {entry.name!r}, "
            f"advertised by distribution {_distribution_name(entry)!r} "
            f"(entry point group {group!r})"
        )
        raise


# The catalog that lookups consult. Entry points are per-process state, so one catalog serves the
# process; tests swap in a fresh one (``monkeypatch.setattr(regtree._plugins, "catalog", ...)``),
# which is why other modules read it as ``_plugins.catalog`` at call time and never bind it.
catalog = PluginCatalog()


def load_plugins() -> list[str]:
    """Import every scope that an installed distribution advertises (for tools and workers).

    Returns:
        The advertised scope names, sorted.

    Raises:
        Exception: Whatever importing a plugin raises, with a note naming its distribution.
    """
    return catalog.load_all()
