"""Plugins: installed distributions that advertise a scope in entry-point group ``regtree.scopes``.

Entry points are read lazily, the first time they are needed (a lookup meets a scope that no
registry in its tree has, a message lists the advertised scopes, or ``load_plugins`` runs), and at
most once per process; each advertised scope is imported at most once. A failed import
is remembered: every later lookup under that scope raises an ImportError that names the
distribution and chains the original error, never a miss, and the plugin is not run again.
What the import left in the registries is taken back by the registry layer (``import_watchers``).

Threads (SPEC 2.4): one thread imports a scope's plugin while the others that ask for it wait for
the outcome, so a plugin runs once even when it fails. No lock is held while a plugin is imported:
a plugin's import may look up another plugin's scope. A thread that would wait for an import that
is itself (through other imports) waiting on that thread sees the scope as it is instead.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, NoReturn

from ._errors import add_note

if TYPE_CHECKING:  # importlib.metadata is imported when entry points are first read
    from importlib.metadata import EntryPoint

__all__ = ["ENTRY_POINT_GROUP", "PluginCatalog", "catalog", "import_watchers", "load_plugins"]

ENTRY_POINT_GROUP = "regtree.scopes"

# Each is called as a plugin's import begins, and what it returns is called as the import ends,
# with whether it failed (before the import's waiters wake): where it failed, the registry layer
# takes back what the import left in the registries (Python drops its modules, and a retry would
# meet their first run's entries) and drops what its lookups remember, since a scope whose
# plugin failed now answers with the import error.
import_watchers: list[Callable[[], Callable[[bool], object]]] = []

# How often a thread waiting for another thread's plugin import checks that the wait can end.
# The importing thread may be blocked in the import system on a module that the waiting thread is
# importing; nothing wakes the waiter then, so it looks at the threads again after this long.
_DEADLOCK_CHECK_SECONDS = 0.01


class _PluginImport:
    """One scope's plugin import in progress: who runs it, which modules, when it is over."""

    __slots__ = ("done", "modules", "owner")

    def __init__(self, entries: list[EntryPoint]) -> None:
        self.owner = threading.get_ident()
        self.modules = tuple(entry.module for entry in entries)
        self.done = threading.Event()


class PluginCatalog:
    """The scopes that installed distributions advertise, read once and imported on demand.

    Args:
        group: The entry-point group to read.
    """

    __slots__ = ("_advertised", "_group", "_imports", "_loaded", "_lock", "_waiting", "failed")

    def __init__(self, group: str = ENTRY_POINT_GROUP) -> None:
        self._group = group
        self._advertised: dict[str, list[EntryPoint]] | None = None
        self._loaded: set[str] = set()
        # Guards the bookkeeping below; never held while a plugin is imported or waited for.
        self._lock = threading.Lock()
        self._imports: dict[str, _PluginImport] = {}  # scope -> its import in progress
        self._waiting: dict[int, _PluginImport] = {}  # thread id -> the import it waits for
        #: Scope -> (distribution, error) of each plugin whose import failed in this process.
        self.failed: dict[str, tuple[str, BaseException]] = {}

    @property
    def group(self) -> str:
        """The entry-point group this catalog reads."""
        return self._group

    def _entry_points(self) -> dict[str, list[EntryPoint]]:
        advertised = self._advertised
        if advertised is None:
            # Imported here: reading the installed distributions costs milliseconds.
            from importlib.metadata import entry_points

            found: dict[str, list[EntryPoint]] = {}
            for entry in entry_points(group=self._group):
                found.setdefault(entry.name, []).append(entry)
            with self._lock:  # two threads may read at once; the first reading is kept
                if self._advertised is None:
                    self._advertised = found
                advertised = self._advertised
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
            now, were before, or are being imported by a thread that waits on this one), False
            when none does.

        Raises:
            Exception: Whatever importing a plugin raises (an ImportError above all), with a note
                naming the distribution and the entry point; an ImportError in every other
                thread that asked for the scope meanwhile, and in every later call.
        """
        if scope in self._loaded:
            return True
        if scope in self.failed:
            self.raise_failure(scope)
        entries = self._entry_points().get(scope)
        if not entries:
            return False
        job = self._claim(scope, entries)
        if job is None:
            return True
        ends: list[Callable[[bool], object]] = []
        try:
            ends.extend(watch() for watch in tuple(import_watchers))
            for entry in entries:
                _import_entry_point(entry, self._group)
        except BaseException as exc:
            with self._lock:
                del self._imports[scope]
                # An import cycle between threads is no fault of the plugin: a later lookup may
                # import it again. Anything else is final (SPEC 2.4: imported once).
                deadlock = _is_import_deadlock(exc)
                if not deadlock and isinstance(exc, Exception):
                    self.failed[scope] = (_distribution_name(entries[0]), exc)
            for end in ends:
                end(True)
            job.done.set()
            if deadlock:
                return True
            raise
        for end in ends:
            end(False)
        with self._lock:
            self._loaded.add(scope)
            del self._imports[scope]
        job.done.set()
        return True

    def importing(self, scope: str) -> bool:
        """Tell whether a thread is importing the plugin of ``scope`` now."""
        return scope in self._imports

    def _claim(self, scope: str, entries: list[EntryPoint]) -> _PluginImport | None:
        """Return a new import of ``scope`` for this thread to run, or None once none is needed.

        Waits while another thread imports ``scope``, unless that import waits on this thread;
        raises the recorded ImportError if the import failed meanwhile.
        """
        me = threading.get_ident()
        while True:
            with self._lock:
                if scope in self.failed:
                    break
                if scope in self._loaded:
                    return None
                job = self._imports.get(scope)
                if job is None:
                    job = self._imports[scope] = _PluginImport(entries)
                    return job
                # The plugin's own import looks its scope up, or a cycle of imports between
                # threads: the scope is seen as it is now.
                if job.owner == me or self._waits_on(job.owner, me):
                    return None
                self._waiting[me] = job
            try:
                job.done.wait(_DEADLOCK_CHECK_SECONDS)
            finally:
                with self._lock:
                    del self._waiting[me]
        return self.raise_failure(scope)  # NoReturn: it raises the ImportError

    def _waits_on(self, thread: int, me: int) -> bool:
        """Tell whether ``thread`` is waiting, through plugin imports, for thread ``me``.

        A thread waits for another where it waits on that thread's plugin import here, or where
        it imports a plugin module whose code that other thread is running (the import system
        then blocks it until the module is done). Called under the lock.
        """
        frames = sys._current_frames()
        seen: set[int] = set()
        while thread not in seen:
            if thread == me:
                return True
            seen.add(thread)
            waited = self._waiting.get(thread)
            if waited is not None:
                thread = waited.owner
                continue
            running = [
                runner
                for job in self._imports.values()
                if job.owner == thread
                for module in job.modules
                if (runner := _thread_running_module(frames, module)) not in (None, thread)
            ]
            if not running:
                return False
            thread = running[0]
        return False

    def raise_failure(self, scope: str) -> NoReturn:
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


def _thread_running_module(frames: dict[int, FrameType], module: str) -> int | None:
    """Return the thread whose stack runs the code of ``module``, if one does.

    Only the module itself: a package above it is in ``sys.modules`` before its code runs, so
    importing the module never waits for another thread that runs the package
    (test_plugin_threads.py shows it).
    """
    for thread, top in frames.items():
        frame: FrameType | None = top
        while frame is not None:
            if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") == module:
                return thread
            frame = frame.f_back
    return None


def _is_import_deadlock(exc: BaseException) -> bool:
    """Tell whether ``exc`` is the import system's error for a cycle of imports between threads."""
    return isinstance(exc, RuntimeError) and type(exc).__name__ == "_DeadlockError"


def _distribution_name(entry: EntryPoint) -> str:
    # An entry point made by hand has no distribution; metadata without a Name gives None.
    name = None if entry.dist is None else entry.dist.name
    return name if isinstance(name, str) else "<unknown distribution>"


def _import_entry_point(entry: EntryPoint, group: str) -> None:
    try:
        entry.load()
    except Exception as exc:
        add_note(
            exc,
            f"regtree: while importing plugin module {entry.value!r} for scope {entry.name!r}, "
            f"advertised by distribution {_distribution_name(entry)!r} "
            f"(entry point group {group!r})",
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
