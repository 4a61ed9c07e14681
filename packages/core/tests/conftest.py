"""Fixtures of the core tests: small private registry trees and throwaway plugin distributions.

No test touches ``regtree.MODELS`` or another shared registry: each builds its own tree here.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
import threading
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from regtree import Registry, _plugins

PLUGIN_HOST = "regtree_test_plugin_host"
LOCATION_HOST = "regtree_test_location_host"


@dataclass(frozen=True)
class Tree:
    """A registry tree of three levels below the root and two branches.

    root (scope 'animal')
    +-- dog (scope 'dog')
    |   +-- hound (scope 'hound')
    |       +-- little (scope 'little_hound')
    +-- cat (scope 'cat')
        +-- lion (scope 'lion')
    """

    root: Registry[Any]
    dog: Registry[Any]
    hound: Registry[Any]
    little: Registry[Any]
    cat: Registry[Any]
    lion: Registry[Any]


@pytest.fixture
def registry() -> Registry[Any]:
    """A fresh root registry with scope 'testing'."""
    return Registry("model", scope="testing")


@pytest.fixture
def tree() -> Tree:
    """A fresh animal tree (see :class:`Tree`) with a few classes in each registry."""
    root: Registry[Any] = Registry("animal", scope="animal")
    dog: Registry[Any] = Registry("animal", parent=root, scope="dog")
    hound: Registry[Any] = Registry("animal", parent=dog, scope="hound")
    little: Registry[Any] = Registry("animal", parent=hound, scope="little_hound")
    cat: Registry[Any] = Registry("animal", parent=root, scope="cat")
    lion: Registry[Any] = Registry("animal", parent=cat, scope="lion")
    for registry, names in [
        (root, ["Animal", "Shared"]),
        (dog, ["Dog", "Shared"]),
        (hound, ["BloodHound"]),
        (little, ["LittleHound"]),
        (cat, ["Cat"]),
        (lion, ["Lion"]),
    ]:
        for name in names:
            cls = type(name, (), {"__module__": f"zoo.{registry.scope}", "registry": registry})
            registry.register_module(module=cls)
    return Tree(root=root, dog=dog, hound=hound, little=little, cat=cat, lion=lion)


@pytest.fixture
def forget_new_modules() -> Iterator[None]:
    """Remove from ``sys.modules`` whatever the test imported, so names never leak across tests."""
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        sys.modules.pop(name, None)


@pytest.fixture
def module_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forget_new_modules: None) -> Path:
    """A fresh folder on ``sys.path`` for modules that a test writes and then imports."""
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    return folder


@pytest.fixture
def catalog(monkeypatch: pytest.MonkeyPatch) -> _plugins.PluginCatalog:
    """A fresh plugin catalog in place of the process's, so entry points are read anew."""
    fresh = _plugins.PluginCatalog()
    monkeypatch.setattr(_plugins, "catalog", fresh)
    return fresh


@dataclass
class PluginHost:
    """What a throwaway plugin module sees: the test's root registry and a record of imports."""

    root: Registry[Any]
    imports: list[str]
    #: Events that plugin modules and their test use to order threads (made by the test first).
    events: dict[str, threading.Event] = field(default_factory=dict)


@pytest.fixture
def plugin_host(monkeypatch: pytest.MonkeyPatch) -> PluginHost:
    """A module ``regtree_test_plugin_host`` through which plugin modules reach the test's tree."""
    host = PluginHost(root=Registry("model", scope="host"), imports=[])
    module = types.ModuleType(PLUGIN_HOST)
    module.host = host  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, PLUGIN_HOST, module)
    return host


# A plugin module: hangs a child registry, whose scope is inferred from the module's own name,
# under the host's root, and records that it was imported.
PLUGIN_SOURCE = f"""
from {PLUGIN_HOST} import host
from regtree import Registry

host.imports.append(__name__)
MODELS = Registry("model", parent=host.root)


@MODELS.register_module()
class Plugged:
    def __init__(self, size=1):
        self.size = size
"""

MakeDistribution = Callable[..., Path]


@pytest.fixture
def make_distribution(module_dir: Path, catalog: _plugins.PluginCatalog) -> MakeDistribution:
    """Return a function that installs a throwaway distribution into ``module_dir``.

    ``make_distribution(dist, {scope: module}, {module: source}, group=...)`` writes
    ``<dist>-0.1.dist-info`` (METADATA and entry_points.txt) and each module, and returns the
    dist-info folder. The catalog is fresh, so the new entry points are read on first need.
    """

    def make(
        dist: str,
        scopes: dict[str, str],
        modules: dict[str, str],
        group: str = _plugins.ENTRY_POINT_GROUP,
    ) -> Path:
        info = module_dir / f"{dist.replace('-', '_')}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
        lines = [f"[{group}]", *[f"{scope} = {module}" for scope, module in scopes.items()]]
        (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
        for module, source in modules.items():
            (module_dir / f"{module}.py").write_text(textwrap.dedent(source))
        importlib.invalidate_caches()  # the import system caches folder listings
        return info

    return make


@pytest.fixture
def dense_switching() -> Iterator[None]:
    """Make the interpreter switch threads as often as it can, for the length of one test.

    More interleavings for the races under test, and no lock convoys: with the default 5 ms
    switch interval, a thread woken for a lock can wait a whole interval for the interpreter.
    """
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def run_json_script(
    script: str, *, cwd: Path, pythonpath: str, args: tuple[str, ...] = (), no_site: bool = False
) -> Any:
    """Run ``script`` in a fresh interpreter with warnings as errors; return its JSON stdout.

    Fails the test, showing the child's stderr, if the script exits with a non-zero status.
    ``no_site`` passes ``-S``, so no site-packages (and no installed distribution) is visible.
    """
    flags = ["-S"] if no_site else []
    done = subprocess.run(
        [sys.executable, *flags, "-W", "error", "-c", script, *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": pythonpath},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def location_host(monkeypatch: pytest.MonkeyPatch, module_dir: Path) -> types.ModuleType:
    """A module through which location modules reach the test's registries and log imports."""
    host = types.ModuleType(LOCATION_HOST)
    host.imports = []  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, LOCATION_HOST, host)
    return host
