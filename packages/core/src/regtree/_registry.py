"""The Registry: named callables in a tree of scopes, and the lookup of scoped keys."""

from __future__ import annotations

import functools
import sys
import threading
import warnings
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import FrameType, MappingProxyType
from typing import Any, Generic, Literal, TypeVar, overload

from . import _plugins
from ._build import build_from_cfg
from ._errors import AlreadyRegisteredError, ScopeConflictError, add_note
from ._miss import LookupMiss, RegistryBase
from ._scope import check_scope, default_scope, infer_scope
from .naming import origin, registry_label

__all__ = ["Registry", "registry_label"]

# How many keys a registry remembers the lookup of (Registry._known): a bound on the memory
# that lookups of ever new keys could take; past it, lookups run as if nothing were remembered.
_KNOWN_LIMIT = 4096
_FREE = object()  # in _register's record of the names it changed: the name held nothing

T = TypeVar("T")
C = TypeVar("C", bound=Callable[..., Any])


class Registry(RegistryBase, Generic[T]):
    """A mapping from names to classes or callables, one node of a tree of scopes.

    A child registry is created with ``parent=``; a key ``'scope.Name'`` reaches any registry of
    the tree (and of an installed plugin) from any other, and an unscoped ``'Name'`` falls back to
    the ancestors.

    Args:
        name: What the registry holds, for messages (``'model'``).
        build_func: Builds an object from a config: ``build_func(cfg, *args, registry=self,
            **kwargs)``. Defaults to the parent's, else :func:`regtree.build_from_cfg`.
        parent: The registry this one is a child of.
        scope: The scope of this registry in its tree; defaults to the top-level package of the
            calling module (``'__main__'`` for a script, the REPL or ``python -c``).
        locations: Module names imported once, on the first lookup, to fill the registry.

    Raises:
        TypeError: An argument has the wrong type.
        ValueError: ``scope`` is empty or contains a dot.
        ScopeConflictError: ``parent`` already has a child with this scope.

    Example:
        >>> MODELS = Registry("model", scope="mypkg")
        >>> @MODELS.register_module()
        ... class Net:
        ...     def __init__(self, depth: int = 1) -> None:
        ...         self.depth = depth
        >>> MODELS.build(dict(type="Net", depth=3)).depth
        3
    """

    __slots__ = (
        "__weakref__",  # _ROOTS holds the roots weakly
        "_build_func",
        "_children",
        "_decorator",
        "_importing_locations",
        "_known",
        "_lineage",
        "_locations",
        "_locations_lock",
        "_locations_pending",
        "_lock",
        "_made_in",
        "_members",
        "_module_dict",
        "_name",
        "_parent",
        "_root",
        "_scope",
        "_scopes",
    )

    def __init__(
        self,
        name: str,
        build_func: Callable[..., Any] | None = None,
        parent: Registry[Any] | None = None,
        scope: str | None = None,
        locations: Sequence[str] | str = (),
    ) -> None:
        if not isinstance(name, str):
            raise TypeError(f"a registry name must be a str such as 'model', got {name!r}")
        if parent is not None and not isinstance(parent, Registry):
            raise TypeError(
                f"parent of registry {name!r} must be a Registry or None, got {parent!r}"
            )
        if build_func is not None and not callable(build_func):
            raise TypeError(
                f"build_func of registry {name!r} must be callable or None, got {build_func!r}"
            )
        caller = self._constructor_caller()
        if scope is None:
            scope = infer_scope(caller)
        else:
            check_scope(scope, f"scope of registry {name!r}")
        locations = _location_names(locations, name)
        if build_func is None:
            build_func = parent._build_func if parent is not None else build_from_cfg

        self._name = name
        self._scope = scope
        # The module that made it: a failed plugin import takes back what its modules made.
        self._made_in = _module_running(caller)
        self._build_func: Callable[..., Any] = build_func
        self._parent = parent
        self._root: Registry[Any] = self if parent is None else parent._root
        # Where an unscoped name is looked for (SPEC 2, step 2): here, then the ancestors.
        self._lineage: tuple[Registry[Any], ...] = (
            (self,) if parent is None else (self, *parent._lineage)
        )
        self._children: dict[str, Registry[Any]] = {}
        # Registration order is the dict's order; ``force`` replaces a value in place.
        self._module_dict: dict[str, Callable[..., T]] = {}
        self._locations = locations
        self._locations_pending = bool(self._locations)
        self._importing_locations = False
        self._locations_lock = threading.RLock()
        # The root's lock guards every change to its tree: entries and children.
        self._lock = threading.Lock()  # never taken twice: no callback runs under it
        # The registry that a key's scope names, as seen from here (SPEC 2, steps 3-5): this
        # registry's own scope, else a child's, else the first registry with that scope breadth
        # first from the root. Replaced whole, under the root's lock, when the tree grows, so a
        # lookup reads one consistent table.
        self._scopes: dict[str, Registry[Any]] = {scope: self}
        # The registries of the tree, breadth first, as of the last adoption. Kept on the root
        # only (_adopt replaces the root's; a child keeps its own (self,), never read).
        self._members: tuple[Registry[Any], ...] = (self,)
        # What lookups found for a key since the tree last changed (None: nothing). See _forget.
        self._known: dict[str, Callable[..., T] | None] = {}
        # What @register_module() returns, made once: making a partial per class took 90 ns
        # of the 344 ns a class cost (mmengine: 323 ns; benchmarks/_registry_bench.py).
        self._decorator: Callable[[Any], Any] = _decorator_of(self)
        if parent is None:
            _ROOTS.add(self)
        else:
            parent._adopt(self)

    def _constructor_caller(self) -> FrameType | None:
        # The nearest frame that does not hold this registry: the frames that do are making it
        # (Registry.__init__, a subclass's __init__ calling super(), anything wrapping them).
        # ``Registry[T](...)`` runs through typing's alias call, which holds no registry yet.
        frame: FrameType | None = sys._getframe(1)
        while frame is not None and (
            _holds(frame, self) or frame.f_globals.get("__name__") == "typing"
        ):
            frame = frame.f_back
        return frame

    def _adopt(self, child: Registry[Any]) -> None:
        root = self._root
        with root._lock:
            existing = self._children.get(child._scope)
            if existing is not None:
                raise ScopeConflictError(
                    f"{registry_label(self)} already has a child with scope {child._scope!r} "
                    f"({registry_label(existing)}); give registry {child._name!r} another scope, "
                    "e.g. Registry(..., scope='mypackage')"
                )
            self._children[child._scope] = child
            root._replace_tables()
            self._forget()

    def _disown(self, child: Registry[Any]) -> None:
        # The inverse of _adopt, for a child that a failed plugin import made.
        with self._root._lock:
            if self._children.get(child._scope) is child:
                del self._children[child._scope]
                self._root._replace_tables()
        self._forget()

    def _replace_tables(self) -> None:
        # On the root, under its lock: every registry's scope table, and the members, anew.
        tree = self.walk()
        first: dict[str, Registry[Any]] = {}
        for registry in tree:
            first.setdefault(registry._scope, registry)
        for registry in tree:
            registry._scopes = {**first, **registry._children, registry._scope: registry}
        self._members = tuple(tree)

    def _forget(self) -> None:
        """Drop what the lookups of this tree remember; called after every change to the tree.

        A lookup remembers what it found in the table it read before it began (get), and every
        change replaces every table after it is made: a result found before a change lands in a
        table that the change has dropped, or will drop. So no lock is needed on either side.
        The changes: a name bound, replaced or taken back, a child adopted, and a plugin's
        failure (any tree's: its scope now answers with the import error).
        """
        for registry in self._root._members:
            registry._known = {}

    def walk(self) -> list[Registry[Any]]:
        """Return this registry and its descendants, breadth first, children in adoption order.

        The list is a snapshot: registries that join the tree later are not in it.
        """
        found: list[Registry[Any]] = [self]
        for registry in found:
            found.extend(registry._children.copy().values())
        return found

    # -- properties --------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """What the registry holds, e.g. ``'model'``."""
        return self._name

    @property
    def scope(self) -> str:
        """The scope of this registry in its tree, e.g. ``'demo_det'``."""
        return self._scope

    @property
    def parent(self) -> Registry[Any] | None:
        """The parent registry, or None for a root."""
        return self._parent

    @property
    def root(self) -> Registry[Any]:
        """The root of this registry's tree (the registry itself for a root)."""
        return self._root

    @property
    def children(self) -> MappingProxyType[str, Registry[Any]]:
        """The child registries by scope, read-only."""
        return MappingProxyType(self._children)

    @property
    def module_dict(self) -> MappingProxyType[str, Callable[..., T]]:
        """The registry's own entries by name, read-only, in registration order."""
        return MappingProxyType(self._module_dict)

    @property
    def build_func(self) -> Callable[..., Any]:
        """The function that :meth:`build` calls."""
        return self._build_func

    @property
    def locations(self) -> tuple[str, ...]:
        """The modules imported on the first lookup."""
        return self._locations

    def __len__(self) -> int:
        return len(self._module_dict)

    def __iter__(self) -> Iterator[str]:
        # A snapshot: another thread may register while the caller iterates.
        return iter(tuple(self._module_dict))

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def __repr__(self) -> str:
        return (
            f"Registry(name={self._name!r}, scope={self._scope!r}, "
            f"entries={len(self._module_dict)}, children={list(self._children)})"
        )

    # -- keys --------------------------------------------------------------------------------

    @staticmethod
    def split_scope_key(key: str) -> tuple[str | None, str]:
        """Split ``key`` at its first dot.

        Args:
            key: A key such as ``'a.b.X'`` or ``'X'``.

        Returns:
            ``('a', 'b.X')`` for ``'a.b.X'``; ``(None, 'X')`` for ``'X'``.
        """
        if not isinstance(key, str):
            raise TypeError(f"a key must be a str such as 'scope.Name', got {key!r}")
        scope, dot, rest = key.partition(".")
        if not dot:
            return None, key
        return scope, rest

    # -- lookup ------------------------------------------------------------------------------

    def get(self, key: str) -> Callable[..., T] | None:
        """Return the object registered under ``key``, or None.

        An unscoped key is looked up here, then in the ancestors, nearest first. ``'scope.Name'``
        goes to this registry (its own scope), a child, the registry with that scope anywhere in
        the tree, or, once, to the installed plugin that advertises the scope. A miss returns None:
        it never raises and imports nothing that no installed distribution advertises.

        Args:
            key: ``'Name'`` or ``'scope.Name'`` (scopes may nest: ``'a.b.Name'``).

        Returns:
            The registered class or callable, or None.

        Raises:
            TypeError: ``key`` is not a str.
            Exception: Importing a plugin or a location failed (never reported as a miss).
        """
        # A key looked up before, since the tree last changed, is answered from the table of what
        # was found: without it a miss took 157 ns and a root-to-child get 270 ns (mmcv: 115 ns
        # and 398 ns; the benchmarks hold both to half of mmcv's), with it 49 ns. A try/except
        # KeyError would take 40 ns, but 150 ns more for each key not in the table.
        known = self._known
        if type(key) is str and key in known:
            return known[key]
        found = self._resolve(key, None, False)
        self._remember(known, key, found)
        return found

    def resolve(self, key: str, default_scope: str | None = None) -> Callable[..., T] | LookupMiss:
        """Look ``key`` up (SPEC 2, steps 1-7) and say what was missing where nothing is found.

        The one lookup of regtree: ``get``, builds, validation and error messages all use it.

        Args:
            key: ``'Name'`` or ``'scope.Name'``.
            default_scope: The default scope of a build: the registry of that scope in this tree
                is searched first, where one exists (SPEC 2.1).

        Returns:
            The registered object, or a :class:`LookupMiss` that records the miss.

        Raises:
            TypeError: ``key`` is not a str.
            Exception: Importing a plugin or a location failed (never reported as a miss).
        """
        known = self._known
        if default_scope is None and type(key) is str:
            entry = known.get(key)  # what get() remembers, for builds (see there)
            if entry is not None:
                return entry
        found = self._resolve(key, default_scope)
        if default_scope is None and type(found) is not LookupMiss:
            self._remember(known, key, found)
        if type(found) is LookupMiss and type(self).get is not Registry.get:
            # A subclass's own get() (as mmengine's registries have) gets the last word.
            entry = self.get(key)
            if entry is not None:
                return entry
        return found

    @overload
    def _resolve(
        self, key: str, default_scope: str | None, record: Literal[True] = True
    ) -> Callable[..., T] | LookupMiss: ...

    @overload
    def _resolve(
        self, key: str, default_scope: str | None, record: Literal[False]
    ) -> Callable[..., T] | None: ...

    @overload
    def _resolve(
        self, key: str, default_scope: str | None, record: bool
    ) -> Callable[..., T] | LookupMiss | None: ...

    def _resolve(
        self, key: str, default_scope: str | None, record: bool = True
    ) -> Callable[..., T] | LookupMiss | None:
        # record=False: a miss returns None instead of its LookupMiss (for get()).
        if not isinstance(key, str):
            raise TypeError(
                f"a key of {registry_label(self)} must be a str such as 'Net' or 'scope.Net', "
                f"got {key!r}"
            )
        if default_scope is not None:
            scoped = self._registry_for_scope(default_scope)
            if scoped is None:
                found = self._resolve(key, None, record)
                if type(found) is LookupMiss:  # the message says the scope named nothing
                    found.unknown_default_scope = default_scope
                return found
            if scoped is not self:
                found = scoped._resolve(key, None, record)
                if found is not None and type(found) is not LookupMiss:
                    return found
                found = self._resolve(key, None, record)
                if type(found) is LookupMiss:
                    found.default_registry = scoped
                return found
        # The key's scopes, one by one (steps 3-6, each through _registry_for_scope), then the
        # name there and in the ancestors (step 2).
        node: Registry[Any] = self
        rest = key
        while "." in rest:
            if node._locations_pending:  # they may add children
                node._import_locations()
            scope, _, rest = rest.partition(".")
            next_node = node._registry_for_scope(scope)
            if next_node is None:
                if not record:
                    return None
                providers = tuple(_plugins.catalog.providers(scope)) if scope else ()
                return LookupMiss(key, self, node, rest, scope, providers)
            node = next_node
        for owner in node._lineage:
            if owner._locations_pending:
                owner._import_locations()
            entry = owner._module_dict.get(rest)
            if entry is not None:
                return entry
        return LookupMiss(key, self, node, rest) if record else None

    def _remember(self, known: dict[str, Any], key: str, found: Callable[..., T] | None) -> None:
        """Keep what a lookup found for ``key`` in ``known``, the table read before it began.

        Not kept: a miss of a scoped key (the plugins installed decide it, and tests swap them);
        anything while a registry of the tree imports its locations (what the importing thread
        sees is half-done, and other threads wait for it); and anything past _KNOWN_LIMIT keys.
        """
        if type(key) is not str or len(known) >= _KNOWN_LIMIT:
            return
        if found is None and "." in key:
            return
        for registry in self._root._members:
            if registry._importing_locations:
                return
        known[key] = found

    def _scoped(self, scope: str) -> Registry[Any] | None:
        # The registry ``scope`` names from here now, importing no plugin or location: for
        # messages, which format what a lookup found, and for validation's nested configs.
        return self._scopes.get(scope)

    def _registry_for_scope(self, scope: str) -> Registry[Any] | None:
        """Return the registry of ``scope`` as a key sees it from here, loading a plugin once."""
        catalog = _plugins.catalog
        found = self._scopes.get(scope)
        if found is None:
            if scope and catalog.load(scope):  # raises where the plugin failed before
                found = self._scopes.get(scope)
        elif catalog.importing(scope) and not getattr(_IN_LOCATIONS, "depth", 0):
            # Its plugin made the registry and, in another thread, is still filling it: wait
            # for the import (SPEC 2.4), as for a scope not yet in the tree. Not from inside a
            # location import: the plugin may need that location's registry, whose lock this
            # thread holds, and neither would end.
            catalog.load(scope)
        # Read last: a plugin that failed half-way, even while this lookup ran, answers with
        # the import error, never with a miss or a half-filled registry.
        if catalog.failed and scope in catalog.failed:
            catalog.raise_failure(scope)
        return found

    @contextmanager
    def switch_scope_and_registry(self, scope: str | None) -> Iterator[Registry[Any]]:
        """Run a block under ``default_scope(scope)``; yield the registry of that scope.

        mmengine's name. The registry is the one of ``scope`` in this registry's tree (its plugin
        is loaded as a lookup would), or this registry itself where the tree has none, with a
        warning naming the closest scopes (as mmengine warns).

        Args:
            scope: A scope name, or None (no default scope inside the block).

        Yields:
            The registry of ``scope``, else this registry.
        """
        if scope is not None:
            check_scope(scope, "the scope to switch to")
        found = None if scope is None else self._registry_for_scope(scope)
        if scope is not None and found is None and not _scope_known(scope):  # a misspelt one
            from ._diagnostics import describe_unswitched_scope  # error texts: on problems only

            # The generator's frame, then contextlib's __enter__, then the `with` that asked.
            warnings.warn(describe_unswitched_scope(self, scope), stacklevel=3)
        with default_scope(scope):
            yield self if found is None else found

    def _import_locations(self) -> None:
        # Other threads wait here until the import finished; the importing thread itself, when
        # the imported module looks something up, passes through.
        with self._locations_lock:
            if not self._locations_pending or self._importing_locations:
                return
            self._importing_locations = True
            _IN_LOCATIONS.depth = getattr(_IN_LOCATIONS, "depth", 0) + 1
            try:
                for location in self._locations:
                    self._import_location(location)
                self._locations_pending = False
            finally:
                _IN_LOCATIONS.depth -= 1
                self._importing_locations = False

    def _import_location(self, location: str) -> None:
        end_watch = _watch_import()
        failed = True
        try:
            __import__(location)
            failed = False
        except Exception as exc:
            add_note(
                exc, f"regtree: while importing location {location!r} of {registry_label(self)}"
            )
            raise
        finally:
            end_watch(failed)

    def _take_back_dropped(self, before: dict[str, Any], dropped: set[tuple[str, int]]) -> None:
        # What a failed import bound here from the modules that Python dropped with it (see
        # _watch_import): ``dropped`` holds the ``(name, id(object))`` of each registration
        # such a module made, whatever the object (its own class, a partial of another
        # module's function, an instance of another module's class). An entry that a module
        # still imported bound (a helper it imported, another thread) stays: no import would
        # bring it back.
        entries = self._module_dict
        with self._root._lock:
            changed = [
                (name, before.get(name, _FREE))
                for name, obj in list(entries.items())  # one step: no registration midway
                if before.get(name, _FREE) is not obj and (name, id(obj)) in dropped
            ]
            for name, held in changed:
                if held is _FREE:
                    del entries[name]
                else:  # a forced replacement, undone in place
                    entries[name] = held
        if changed:
            self._forget()

    # -- registration ------------------------------------------------------------------------

    @overload
    def register_module(
        self,
        name: str | Sequence[str] | None = None,
        force: bool = False,
        module: None = None,
    ) -> Callable[[C], C]: ...

    @overload
    def register_module(
        self,
        name: str | Sequence[str] | None = None,
        force: bool = False,
        *,
        module: C,
    ) -> C: ...

    def register_module(
        self,
        name: Any = None,
        force: Any = False,
        module: Any = None,
    ) -> Any:
        """Register a class or callable, as a decorator or directly.

        Forms: ``@R.register_module()``, ``@R.register_module('alias')``,
        ``@R.register_module(name=['a', 'b'])`` and ``R.register_module(module=obj, name=...)``.
        ``R.register_module(SomeClass)`` still works and warns (DeprecationWarning).

        Registration is atomic (all names or none) and thread-safe. Registering the same object
        under the same name again does nothing.

        Args:
            name: None (the object's ``__name__``), a name, or a non-empty sequence of distinct
                names. A name never contains a dot.
            force: Replace an entry bound to another object, keeping its position.
            module: The class or callable to register now; without it a decorator is returned.

        Returns:
            The registered object (direct form) or a decorator that returns its argument.

        Raises:
            TypeError: ``module`` is not callable, lacks a ``__name__`` and no name was given,
                ``name`` is not a str or sequence of str, or ``force`` is not a bool.
            ValueError: A name is empty, contains a dot, or repeats in the sequence.
            AlreadyRegisteredError: A name is bound to a different object and ``force`` is False.
        """
        if not isinstance(force, bool):
            raise TypeError(f"force must be a bool, got {force!r}")
        if module is not None:
            if not callable(module):
                self._register(None, force, module)  # raises the TypeError that explains
            return self._registration()(_check_names(name, self), force, module)
        if name is not None and not isinstance(name, (str, Sequence)) and callable(name):
            warnings.warn(
                "register_module(SomeClass) is deprecated; use the decorator "
                "@registry.register_module() or registry.register_module(module=SomeClass)",
                DeprecationWarning,
                stacklevel=2,
            )
            return self._registration()(None, force, name)
        if name is None and not force:
            return self._decorator
        # The decorator is a partial, not a closure: one Python call less each.
        return functools.partial(
            self._registration(), None if name is None else _check_names(name, self), force
        )

    def _register(self, names: tuple[str, ...] | None, force: bool, module: C) -> C:
        if not callable(module):
            raise TypeError(
                f"{registry_label(self)} registers classes and callables, got {module!r} "
                f"of type {type(module).__name__}"
            )
        if names is None:
            default = getattr(module, "__name__", None)
            if not isinstance(default, str):
                raise TypeError(
                    f"{module!r} has no __name__; register it in {registry_label(self)} with an "
                    "explicit name: register_module(name='...', module=obj)"
                )
            # _check_names's own check of a plain name, without the call (see there).
            names = (default,) if default and "." not in default else _check_names(default, self)
            assert names is not None
        entries = self._module_dict
        if not force and len(names) == 1:
            # One name binds in one step, without the lock: dict.setdefault with a str key runs
            # no Python code, so of several threads binding one name exactly one wins, and the
            # others see its entry. Under the lock a class took 517 ns against mmengine's
            # 363 ns (mmengine takes none); so, 211 ns against 312 ns, and 288 ns against
            # 342 ns with the tables of what lookups found replaced (_registry_bench.py).
            # A setdefault that raises (a str subclass's hash) has bound nothing to forget.
            holder = entries.setdefault(names[0], module)
            if holder is not module:
                # A clash is decided under the lock, where no registration of several names is
                # half-done: the entry seen may be one that such a registration takes back.
                with self._root._lock:
                    holder = entries.setdefault(names[0], module)
                if holder is not module:
                    raise self._clash(names[0], holder, module)
            self._forget()
            return module
        with self._root._lock:
            # Several names, all or none, or a forced replacement. Only the setdefault above
            # runs beside this block: a name it binds meanwhile is a clash here, and the names
            # this call has bound by then are taken back. The one race this leaves: another
            # thread registering this very object under one of these names at that moment
            # returns as if the name stayed bound.
            changed: list[tuple[str, object]] = []  # each name bound so far, and what it held
            clash = None
            try:
                for name in names:
                    if force:
                        held = entries.get(name, _FREE)
                        entries[name] = module
                    else:
                        was_free = name not in entries
                        held = entries.setdefault(name, module)
                        if held is not module:
                            clash = name, held
                            break
                        held = _FREE if was_free else module
                    if held is not module:
                        changed.append((name, held))
                if clash is not None:
                    _put_back(entries, changed)
            except BaseException:
                _put_back(entries, changed)  # a name whose hash or comparison raised: none bound
                raise
            finally:
                self._forget()  # after a take-back too: the names were visible meanwhile
        if clash is not None:
            raise self._clash(*clash, module)  # outside the lock: it runs the objects' code
        return module

    def _registration(self) -> Callable[[tuple[str, ...] | None, bool, C], C]:
        # What registers now: _register, or while an import runs _register_noted (see
        # _watch_import).
        return self._register_noted if _WATCHING else self._register

    def _register_noted(self, names: tuple[str, ...] | None, force: bool, module: C) -> C:
        """``_register``, noted in the journals of the imports in progress (_watch_import)."""
        registered = self._register(names, force, module)
        _note_registration(self, (module.__name__,) if names is None else names, module)
        return registered

    def _clash(self, name: str, holder: object, module: object) -> AlreadyRegisteredError:
        return AlreadyRegisteredError(
            f"{name!r} is already registered in {registry_label(self)} as {origin(holder)}; "
            f"cannot bind it to {origin(module)}. Pass force=True to replace the entry, or "
            "register under another name."
        )

    # -- building ----------------------------------------------------------------------------

    def build(self, cfg: Any, *args: Any, **kwargs: Any) -> T:
        """Build an object from ``cfg``: ``self.build_func(cfg, *args, **kwargs, registry=self)``.

        Args:
            cfg: A mapping with a ``type`` key (a list, for a build function that takes one).
            *args: Passed on to the build function.
            **kwargs: Passed on to the build function (``default_args=`` for the default one).

        Returns:
            The built object.
        """
        built: T = self._build_func(cfg, *args, **kwargs, registry=self)
        return built

    def validate(self, cfg: Mapping[str, Any] | list[Any]) -> list[Any]:
        """Return every problem in ``cfg`` without building anything (see ``regtree.config``)."""
        # The one import of the registry layer from the tools (SPEC 1), lazy: a tool on demand.
        from .config import validate_config

        problems: list[Any] = validate_config(self, cfg)
        return problems


# Every root registry: a plugin's failure drops what the lookups of every tree remember.
_ROOTS: weakref.WeakSet[Registry[Any]] = weakref.WeakSet()
# How many location imports the current thread is inside (``depth``; absent: none).
_IN_LOCATIONS = threading.local()


# What each import in progress (a location's, a plugin's, in any thread) has seen registered:
# (registry, name, object, the module that registered it), by id of its list. _WATCHING says
# whether any is in progress; registrations go through _register_noted only then.
_JOURNALS: dict[int, list[tuple[Registry[Any], str, object, object]]] = {}
_WATCHING = False
_JOURNALS_LOCK = threading.Lock()


def _note_registration(registry: Registry[Any], names: tuple[str, ...], module: object) -> None:
    """Record a registration in every journal of an import in progress (see _watch_import)."""
    by = _module_running(sys._getframe(1))
    for journal in tuple(_JOURNALS.values()):
        journal.extend((registry, name, module, by) for name in names)


def _module_running(frame: FrameType | None) -> str | None:
    """The module whose body runs ``frame``'s code, directly or through what it calls.

    The innermost module frame: a registration or a registry made by a module's body, or by a
    function or decorator it calls (a test tool's trampoline too), is that module's; a helper
    module it imports is its own. None where no module body is on the stack (a thread).
    """
    while frame is not None and frame.f_code.co_name != "<module>":
        frame = frame.f_back
    name = None if frame is None else frame.f_globals.get("__name__")
    return name if isinstance(name, str) else None


def _scope_known(scope: str) -> bool:
    """Whether any tree has a registry of ``scope``, or an installed package advertises it."""
    if any(node.scope == scope for root in list(_ROOTS) for node in root.walk()):
        return True
    return bool(_plugins.catalog.providers(scope))


def _journals_change(journal: list[Any], *, add: bool) -> None:
    global _WATCHING
    with _JOURNALS_LOCK:  # the flag and the dict change together, whichever thread ends last
        if add:
            _JOURNALS[id(journal)] = journal
        else:
            del _JOURNALS[id(journal)]
        watching = bool(_JOURNALS)
        if watching != _WATCHING:
            _WATCHING = watching
            # The decorator of every registry notes what it registers only while an import
            # runs: a check in _register, even of one flag, cost 25 ns of 350 a class on the
            # register row (within 5% of mmengine), so the decorators are swapped instead.
            for root in list(_ROOTS):
                for registry in root.walk():
                    registry._decorator = _decorator_of(registry)


def _decorator_of(registry: Registry[Any]) -> Callable[[Any], Any]:
    # The decorator register_module() returns now (see _journals_change): a partial, not a
    # closure (a Python call less).
    return functools.partial(registry._registration(), None, False)


def _watch_import() -> Callable[[bool], None]:
    """Note every tree as an import (a location's, a plugin's) begins; return its ending.

    Call what it returns when the import ends, with whether it failed. Where it failed, Python
    dropped the modules it was running, and the next import runs them again, whose first run's
    entries would clash with the second's and hide the error behind an AlreadyRegisteredError.
    So what those modules registered or defined, in any registry, their forced replacements and
    the registries they made are taken back (an entry or a registry of a module still imported
    stays), and every tree forgets what its lookups found: a scope whose plugin failed now
    answers with the import error.
    """
    # Each registry kept with its entries, so that no id is reused while the import runs.
    trees = [
        (root, {id(registry): (registry, dict(registry._module_dict)) for registry in root.walk()})
        for root in list(_ROOTS)
    ]
    journal: list[tuple[Registry[Any], str, object, object]] = []
    _journals_change(journal, add=True)

    def end(failed: bool) -> None:
        _journals_change(journal, add=False)
        if failed:
            _take_back(trees, journal)

    return end


def _take_back(
    trees: list[tuple[Registry[Any], dict[int, tuple[Registry[Any], dict[str, Any]]]]],
    journal: list[tuple[Registry[Any], str, object, object]],
) -> None:
    # Where a module that Python dropped registered: (registry id) -> {(name, id(object))}.
    dropped: dict[int, set[tuple[str, int]]] = {}
    for registry, name, obj, by in journal:
        if by is not None and by not in sys.modules:  # no module body (a thread): it stays
            dropped.setdefault(id(registry), set()).add((name, id(obj)))
    for root, before in trees:
        tree = root.walk()
        for registry in tree:  # a new registry too: one a module still imported made
            registry._take_back_dropped(
                before.get(id(registry), (registry, {}))[1], dropped.get(id(registry), set())
            )
        made = {
            id(registry): registry
            for registry in tree
            if id(registry) not in before
            and registry._made_in is not None
            and registry._made_in not in sys.modules
        }
        for registry in made.values():
            parent = registry._parent
            if parent is not None and id(parent) not in made:  # the topmost of each branch
                parent._disown(registry)
    for root in list(_ROOTS):
        root._forget()


_plugins.import_watchers.append(_watch_import)


def _put_back(entries: dict[str, Any], changed: list[tuple[str, object]]) -> None:
    """Undo a registration's changes to ``entries``, last first (see Registry._register)."""
    for name, held in reversed(changed):
        if held is _FREE:
            del entries[name]
        else:
            entries[name] = held


def _holds(frame: FrameType, obj: object) -> bool:
    """Tell whether a local variable of ``frame`` is ``obj``, or a tuple or list holding it."""
    for value in frame.f_locals.values():
        if value is obj:
            return True
        if type(value) in (tuple, list) and any(item is obj for item in value):
            return True
    return False


def _location_names(locations: object, registry_name: str) -> tuple[str, ...]:
    """Return ``locations`` (one module name or a sequence of them) as a tuple of names."""
    if isinstance(locations, str):
        locations = (locations,)
    if not isinstance(locations, Sequence) or not all(
        isinstance(location, str) for location in locations
    ):
        raise TypeError(
            f"locations of registry {registry_name!r} must be a sequence of module names, "
            f"got {locations!r}"
        )
    for location in locations:
        # Told now, not at the first lookup, which would import it.
        if not all(part.isidentifier() for part in location.split(".")):
            raise ValueError(
                f"locations of registry {registry_name!r} must be module names such as "
                f"'mypackage.models', got {location!r}"
            )
    return tuple(locations)


def _check_names(name: object, registry: Registry[Any]) -> tuple[str, ...] | None:
    """Return ``name`` as a tuple of valid names (None stays None)."""
    if name is None:
        return None
    if type(name) is str and name and "." not in name:
        # The common case, a class's own name, checked without the loop below: registering a
        # class took 1.12 us with it (mmengine: 0.43 us).
        return (name,)
    if isinstance(name, str):
        names: tuple[object, ...] = (name,)
    elif isinstance(name, Sequence) and not isinstance(name, bytes | bytearray):
        names = tuple(name)
        if not names:
            raise ValueError(
                f"name for {registry_label(registry)} is an empty sequence; give one or more"
            )
    else:
        hint = f"; decode it: {name.decode(errors='replace')!r}" if isinstance(name, bytes) else ""
        raise TypeError(
            f"name for {registry_label(registry)} must be None, a str or a sequence of str, "
            f"got {name!r} ({type(name).__name__}){hint}"
        )
    checked: list[str] = []
    for one in names:
        if not isinstance(one, str):
            raise TypeError(
                f"names in {registry_label(registry)} must be str, got {one!r} in {name!r}"
            )
        if not one or "." in one:
            raise ValueError(
                f"invalid name {one!r} for {registry_label(registry)}: a name is non-empty and "
                "holds no '.' (a dot separates the scope in a key such as 'scope.Name')"
            )
        checked.append(one)
    if len(set(checked)) != len(checked):
        raise ValueError(f"names for {registry_label(registry)} repeat: {name!r}")
    return tuple(checked)
