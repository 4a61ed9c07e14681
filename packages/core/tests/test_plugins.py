"""Plugins (SPEC 2.4): throwaway distributions with ``regtree.scopes`` entry points."""

from __future__ import annotations

import importlib.metadata
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from regtree import LookupMiss, NotRegisteredError, Registry, _plugins, default_scope, load_plugins

from .conftest import PLUGIN_HOST, PLUGIN_SOURCE, MakeDistribution, PluginHost, Tree


def test_a_plugin_scope_is_discovered_lazily_and_imported_once(
    make_distribution: MakeDistribution, plugin_host: PluginHost
) -> None:
    make_distribution(
        "regtree-plug-alpha", {"plug_alpha": "plug_alpha"}, {"plug_alpha": PLUGIN_SOURCE}
    )
    root = plugin_host.root
    assert "plug_alpha" not in sys.modules
    assert root.get("Plugged") is None  # an unscoped miss asks no plugin
    assert plugin_host.imports == []

    found = root.get("plug_alpha.Plugged")
    assert found is sys.modules["plug_alpha"].Plugged
    assert plugin_host.imports == ["plug_alpha"]
    assert root.children["plug_alpha"].scope == "plug_alpha"

    # The catalog, not just the import system, remembers: nothing is imported again.
    del sys.modules["plug_alpha"]
    assert root.build({"type": "plug_alpha.Plugged", "size": 3}).size == 3
    assert root.get("plug_alpha.Missing") is None
    assert plugin_host.imports == ["plug_alpha"]


def test_entry_points_are_read_once_however_many_scopes_are_asked_for(
    make_distribution: MakeDistribution,
    plugin_host: PluginHost,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    make_distribution("regtree-plug-beta", {"plug_beta": "plug_beta"}, {"plug_beta": PLUGIN_SOURCE})
    reads: list[object] = []
    real = importlib.metadata.entry_points

    def counting(**params: Any) -> Any:
        reads.append(params)
        return real(**params)

    monkeypatch.setattr(importlib.metadata, "entry_points", counting)
    root = plugin_host.root
    for key in ["nowhere.X", "plug_beta.Plugged", "elsewhere.Y", "nowhere.X", "plug_beta.Z"]:
        root.get(key)
    assert reads == [{"group": "regtree.scopes"}]
    assert plugin_host.imports == ["plug_beta"]


def test_a_default_scope_provided_by_a_plugin_is_loaded_for_a_build(
    make_distribution: MakeDistribution, plugin_host: PluginHost
) -> None:
    make_distribution(
        "regtree-plug-gamma", {"plug_gamma": "plug_gamma"}, {"plug_gamma": PLUGIN_SOURCE}
    )
    with default_scope("plug_gamma"):
        built = plugin_host.root.build({"type": "Plugged", "size": 2})
    assert type(built) is sys.modules["plug_gamma"].Plugged
    assert built.size == 2


def test_a_plugin_whose_import_fails_surfaces_the_import_error(
    make_distribution: MakeDistribution, plugin_host: PluginHost
) -> None:
    source = "import regtree_test_missing_dependency\n"
    make_distribution(
        "regtree-plug-broken", {"plug_broken": "plug_broken"}, {"plug_broken": source}
    )
    note = (
        "regtree: while importing plugin module 'plug_broken' for scope 'plug_broken', "
        "advertised by distribution 'regtree-plug-broken' (entry point group 'regtree.scopes')"
    )
    with pytest.raises(ImportError, match="regtree_test_missing_dependency") as caught:
        plugin_host.root.get("plug_broken.Thing")
    assert caught.value.__notes__ == [note]
    assert not isinstance(caught.value, NotRegisteredError)
    # Never a miss, never imported twice: later lookups, builds and load_plugins() raise an
    # ImportError naming the distribution, chained from the original error.
    imports_before = sys.modules.get("plug_broken")
    for attempt in (
        lambda: plugin_host.root.build({"type": "plug_broken.Thing"}),
        lambda: plugin_host.root.get("plug_broken.Other"),
        load_plugins,
    ):
        with pytest.raises(
            ImportError,
            match=r"plugin for scope 'plug_broken' \(distribution 'regtree-plug-broken'\) "
            r"failed to import earlier in this process: ModuleNotFoundError",
        ) as again:
            attempt()
        assert again.value.__cause__ is caught.value
        assert not isinstance(again.value, NotRegisteredError)
    assert sys.modules.get("plug_broken") is imports_before


def test_a_plugin_that_fails_after_creating_its_registry_is_never_a_miss(
    make_distribution: MakeDistribution, plugin_host: PluginHost
) -> None:
    source = (
        f"from {PLUGIN_HOST} import host\n"
        "from regtree import Registry\n"
        "HALF = Registry('model', parent=host.root)\n"
        "HALF.register_module(module=dict, name='First')\n"
        "raise RuntimeError('plugin failed after registering First')\n"
    )
    make_distribution("regtree-plug-half", {"plug_half": "plug_half"}, {"plug_half": source})
    with pytest.raises(RuntimeError, match="plugin failed after registering First"):
        plugin_host.root.get("plug_half.First")
    # The half-made child left the tree with its module, and its scope answers with the
    # import error.
    assert "plug_half" not in plugin_host.root.children
    for key in ("plug_half.First", "plug_half.Second"):
        with pytest.raises(ImportError, match="plugin for scope 'plug_half'"):
            plugin_host.root.get(key)
    with pytest.raises(ImportError, match="failed to import earlier"):
        plugin_host.root.build({"type": "plug_half.Second"})
    # Nor is it offered: a key into it could only raise that error.
    with pytest.raises(NotRegisteredError) as missed:
        plugin_host.root.build({"type": "Frist"})
    assert "plug_half" not in str(missed.value)


def test_a_failed_plugin_takes_back_what_it_left_in_other_registries(
    make_distribution: MakeDistribution, plugin_host: PluginHost
) -> None:
    # Beyond its own scope, the plugin registers into the root, replaces a root entry by
    # force and makes a registry of a second scope; a helper module it imports succeeds.
    kept = type("Kept", (), {})
    plugin_host.root.register_module(name="Replaced", module=kept)
    # An entry and a registry from before the import whose module is not imported either:
    # neither is the import's.
    earlier = type("Earlier", (), {"__module__": "plug_side_long_gone"})
    plugin_host.root.register_module(module=earlier)
    namespace: dict[str, Any] = {"__name__": "plug_side_long_gone", "Registry": Registry}
    namespace["root"] = plugin_host.root
    exec("OLD = Registry('model', parent=root, scope='plug_side_old')", namespace)
    helper = (
        f"from {PLUGIN_HOST} import host\n"
        "@host.root.register_module()\nclass FromHelper:\n    pass\n"
    )
    source = (
        f"from {PLUGIN_HOST} import host\n"
        "from regtree import Registry\n"
        "import plug_side_helper\n"
        "MODELS = Registry('model', parent=host.root)\n"
        "@host.root.register_module()\nclass LeakRoot:\n    pass\n"
        "host.root.register_module(name='Replaced', module=LeakRoot, force=True)\n"
        "SIDE = Registry('model', parent=host.root, scope='plug_side_extra')\n"
        "@SIDE.register_module()\nclass ExtraThing:\n    pass\n"
        "raise ModuleNotFoundError('plug_side needs libbaz')\n"
    )
    make_distribution(
        "regtree-plug-side",
        {"plug_side": "plug_side"},
        {"plug_side": source, "plug_side_helper": helper},
    )
    with pytest.raises(ModuleNotFoundError, match="needs libbaz"):
        plugin_host.root.get("plug_side.Thing")
    root = plugin_host.root
    assert root.get("LeakRoot") is None
    assert root.get("Replaced") is kept
    assert list(root.children) == ["plug_side_old"]
    assert root.get("plug_side_extra.ExtraThing") is None
    # The helper's module is still imported, so its entry stays, as for a failed location.
    assert root.get("FromHelper") is sys.modules["plug_side_helper"].FromHelper
    assert root.get("Earlier") is earlier
    with pytest.raises(NotRegisteredError) as missed:
        root.build({"type": "LeakRot"})
    assert "LeakRoot" not in str(missed.value)


def test_a_lookup_waits_for_a_filling_plugin_outside_location_imports_only(
    monkeypatch: pytest.MonkeyPatch, module_dir: Path
) -> None:
    # A plugin is filling scope 'wf' (as another thread would): lookups wait for it,
    # except inside a location import, nested ones too, and again once they have ended.
    waited: list[str] = []
    monkeypatch.setattr(_plugins.PluginCatalog, "importing", lambda self, scope: scope == "wf")
    monkeypatch.setattr(
        _plugins.PluginCatalog, "load", lambda self, scope: not waited.append(scope)
    )
    root: Registry[Any] = Registry("model", scope="wait_root")
    Registry("model", parent=root, scope="wf")
    host = types.ModuleType("wait_host")
    host.root, host.seen = root, []  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "wait_host", host)
    (module_dir / "wait_outer.py").write_text(
        "from wait_host import root, seen\n"
        "root.get('wait_inner_locs.Anything')\n"  # imports another registry's locations first
        "seen.append(root.get('wf.Thing'))\n"
    )
    (module_dir / "wait_inner.py").write_text(
        "from wait_host import root, seen\nseen.append(root.get('wf.Thing'))\n"
    )
    Registry("model", parent=root, scope="wait_outer_locs", locations=["wait_outer"])
    Registry("model", parent=root, scope="wait_inner_locs", locations=["wait_inner"])
    root.get("wait_outer_locs.Anything")
    assert host.seen == [None, None]  # type: ignore[attr-defined]
    assert waited == []
    root.get("wf.Thing")
    assert waited == ["wf"]


def test_a_failed_plugin_leaves_a_registry_that_a_module_still_imported_made(
    make_distribution: MakeDistribution, plugin_host: PluginHost
) -> None:
    # The helper module the plugin imports makes a registry and stays imported: the registry
    # stays in the tree, less the entry the dropped plugin module put into it.
    helper = (
        f"from {PLUGIN_HOST} import host\n"
        "from regtree import Registry\n"
        "SHARED = Registry('model', parent=host.root, scope='plug_helper_made')\n"
        "@SHARED.register_module()\nclass FromHelper:\n    pass\n"
    )
    source = (
        "import plug_made_helper\n"
        "@plug_made_helper.SHARED.register_module()\nclass FromPlugin:\n    pass\n"
        "raise ModuleNotFoundError('plug_made needs libzip')\n"
    )
    make_distribution(
        "regtree-plug-made",
        {"plug_made": "plug_made"},
        {"plug_made": source, "plug_made_helper": helper},
    )
    with pytest.raises(ModuleNotFoundError, match="needs libzip"):
        plugin_host.root.get("plug_made.Thing")
    shared = sys.modules["plug_made_helper"].SHARED
    assert plugin_host.root.children["plug_helper_made"] is shared
    assert list(shared.module_dict) == ["FromHelper"]


def test_a_failed_plugin_takes_back_by_who_registered_even_an_unreadable_module(
    make_distribution: MakeDistribution, plugin_host: PluginHost
) -> None:
    # An object whose __module__ cannot be read, a partial of another module's function: the
    # plugin module registered them, so they leave with it. The same kinds of object that the
    # helper it imported registered stay: the helper is still imported.
    hostile = (
        "class Hostile:\n"
        "    def __getattribute__(self, name):\n"
        "        if name == '__module__':\n"
        "            raise RuntimeError('no module for you')\n"
        "        return object.__getattribute__(self, name)\n"
        "    def __call__(self):\n"
        "        return 1\n"
    )
    helper = (
        f"from {PLUGIN_HOST} import host\n"
        "import functools\n"
        f"{hostile}"
        "host.root.register_module(name='HelperHostile', module=Hostile())\n"
        "host.root.register_module(name='helper_partial', module=functools.partial(max, 0))\n"
    )
    source = (
        f"from {PLUGIN_HOST} import host\n"
        "import functools\n"
        "import plug_hostile_helper\n"
        "host.root.register_module(name='Hostile', module=plug_hostile_helper.Hostile())\n"
        "host.root.register_module(name='partial', module=functools.partial(min, 0))\n"
        "raise ModuleNotFoundError('plug_hostile needs libqux')\n"
    )
    make_distribution(
        "regtree-plug-hostile",
        {"plug_hostile": "plug_hostile"},
        {"plug_hostile": source, "plug_hostile_helper": helper},
    )
    with pytest.raises(ModuleNotFoundError, match="needs libqux"):
        plugin_host.root.get("plug_hostile.Thing")
    assert list(plugin_host.root.module_dict) == ["HelperHostile", "helper_partial"]


def test_a_plugin_that_adds_no_registry_for_its_scope_is_a_clear_miss(
    make_distribution: MakeDistribution, plugin_host: PluginHost
) -> None:
    make_distribution("regtree-plug-empty", {"plug_empty": "plug_empty"}, {"plug_empty": "X = 1\n"})
    assert plugin_host.root.get("plug_empty.X") is None
    with pytest.raises(
        NotRegisteredError,
        match=(
            r"Distribution 'regtree-plug-empty' advertises scope 'plug_empty' in entry point "
            r"group 'regtree\.scopes', but no registry with that scope is in this tree: "
            r"importing it added none"
        ),
    ):
        plugin_host.root.build({"type": "plug_empty.X"})


# An entry-point group of its own, for the tests that load every advertised scope: the packages
# installed beside regtree are not imported there.
OWN_GROUP = "regtree.test_scopes"


@pytest.fixture
def own_catalog(monkeypatch: pytest.MonkeyPatch) -> _plugins.PluginCatalog:
    """A fresh catalog of the group OWN_GROUP in place of the process's."""
    fresh = _plugins.PluginCatalog(group=OWN_GROUP)
    monkeypatch.setattr(_plugins, "catalog", fresh)
    return fresh


def test_load_plugins_imports_every_advertised_scope_and_returns_their_names(
    make_distribution: MakeDistribution,
    plugin_host: PluginHost,
    own_catalog: _plugins.PluginCatalog,
) -> None:
    make_distribution(
        "regtree-plug-pair",
        {"plug_one": "plug_one", "plug_two": "plug_two"},
        {"plug_one": PLUGIN_SOURCE, "plug_two": PLUGIN_SOURCE},
        group=OWN_GROUP,
    )
    assert load_plugins() == ["plug_one", "plug_two"]
    assert sorted(plugin_host.imports) == ["plug_one", "plug_two"]
    assert set(plugin_host.root.children) == {"plug_one", "plug_two"}
    assert load_plugins() == ["plug_one", "plug_two"]
    assert len(plugin_host.imports) == 2


def test_the_catalog_reports_scopes_and_providers(
    make_distribution: MakeDistribution, catalog: _plugins.PluginCatalog
) -> None:
    make_distribution("regtree-plug-info", {"plug_info": "plug_info"}, {"plug_info": "X = 1\n"})
    assert "plug_info" in catalog.scopes()
    assert catalog.providers("plug_info") == ["regtree-plug-info"]
    assert catalog.providers("plug_nobody") == []
    assert catalog.load("plug_nobody") is False
    assert catalog.load("plug_info") is True
    assert "loaded=['plug_info']" in repr(catalog)


def test_a_failed_plugin_leaves_every_other_scope_answering(
    make_distribution: MakeDistribution, plugin_host: PluginHost
) -> None:
    make_distribution(
        "regtree-plug-fails",
        {"plug_fails": "plug_fails", "plug_fine": "plug_fine"},
        {
            "plug_fails": "raise ImportError('plug_fails needs libfoo')\n",
            "plug_fine": PLUGIN_SOURCE,
        },
    )
    with pytest.raises(ImportError, match="plug_fails needs libfoo"):
        plugin_host.root.get("plug_fails.Thing")
    assert plugin_host.root.get("plug_fine.Plugged") is sys.modules["plug_fine"].Plugged
    assert plugin_host.root.get("nowhere.Thing") is None
    assert plugin_host.root.get("host.Missing") is None


# The import system raises its _DeadlockError in a thread whose import would close a cycle of
# imports between threads; this plugin raises it itself on its first import, after registering.
_DEADLOCKED_PLUGIN = f"""
from importlib._bootstrap import _DeadlockError

from {PLUGIN_HOST} import host
from regtree import Registry

host.imports.append(__name__)
MODELS = Registry("model", parent=host.root)
MODELS.register_module(name="Plugged", module=dict)
if len(host.imports) == 1:
    raise _DeadlockError("deadlock detected by _ModuleLock('plug_cycle')")
"""


def test_an_import_deadlock_in_a_plugin_is_not_remembered_as_a_failure(
    make_distribution: MakeDistribution,
    plugin_host: PluginHost,
    own_catalog: _plugins.PluginCatalog,
) -> None:
    make_distribution(
        "regtree-plug-cycle",
        {"plug_cycle": "plug_cycle"},
        {"plug_cycle": _DEADLOCKED_PLUGIN},
        OWN_GROUP,
    )
    # The interrupted import's registry left with its module, and nothing is raised.
    assert plugin_host.root.get("plug_cycle.Plugged") is None
    assert own_catalog.failed == {}
    # The scope is not loaded yet: the next load imports the plugin again, and it succeeds,
    # its registry meeting no leftover of the first run's.
    assert load_plugins() == ["plug_cycle"]
    assert plugin_host.imports == ["plug_cycle", "plug_cycle"]
    assert plugin_host.root.get("plug_cycle.Plugged") is dict
    assert load_plugins() == ["plug_cycle"]
    assert plugin_host.imports == ["plug_cycle", "plug_cycle"]


def test_an_interrupted_plugin_import_is_not_remembered_and_runs_again(
    make_distribution: MakeDistribution, plugin_host: PluginHost
) -> None:
    source = PLUGIN_SOURCE.replace(
        "host.imports.append(__name__)\n",
        "host.imports.append(__name__)\nif len(host.imports) == 1:\n    raise KeyboardInterrupt\n",
    )
    make_distribution("regtree-plug-stop", {"plug_stop": "plug_stop"}, {"plug_stop": source})
    with pytest.raises(KeyboardInterrupt):
        plugin_host.root.get("plug_stop.Plugged")
    assert _plugins.catalog.failed == {}
    assert plugin_host.root.get("plug_stop.Plugged") is sys.modules["plug_stop"].Plugged
    assert plugin_host.imports == ["plug_stop", "plug_stop"]


def test_loading_a_loaded_scope_again_reports_it_advertised(
    make_distribution: MakeDistribution, catalog: _plugins.PluginCatalog
) -> None:
    make_distribution("regtree-plug-twice", {"plug_twice": "plug_twice"}, {"plug_twice": "X = 1\n"})
    assert catalog.load("plug_twice") is True
    del sys.modules["plug_twice"]
    assert catalog.load("plug_twice") is True
    assert "plug_twice" not in sys.modules  # loaded once: not imported again


def test_the_catalog_repr_says_whether_the_entry_points_were_read(
    make_distribution: MakeDistribution, own_catalog: _plugins.PluginCatalog
) -> None:
    catalog = own_catalog
    make_distribution(
        "regtree-plug-repr",
        {"plug_r1": "plug_r1", "plug_r2": "plug_r2"},
        {"plug_r1": "X = 1\n", "plug_r2": "X = 2\n"},
        group=OWN_GROUP,
    )
    assert repr(catalog) == "PluginCatalog(group='regtree.test_scopes', unread, loaded=[])"
    catalog.load("plug_r2")
    assert repr(catalog) == (
        "PluginCatalog(group='regtree.test_scopes', 2 scopes, loaded=['plug_r2'])"
    )


def test_a_key_with_an_empty_scope_reads_no_entry_points(
    tree: Tree, catalog: _plugins.PluginCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[object] = []
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **params: reads.append(params))
    assert tree.dog.get(".Dog") is None
    miss = tree.dog.resolve(".Dog")
    assert isinstance(miss, LookupMiss)
    assert (miss.missing_scope, miss.providers) == ("", ())
    assert reads == []


def test_an_entry_point_without_a_distribution_is_named_as_unknown(
    catalog: _plugins.PluginCatalog, plugin_host: PluginHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Entry points made by hand (a test harness, a custom finder) belong to no distribution.
    entry = importlib.metadata.EntryPoint(
        name="plug_anon", value="plug_anon_not_installed", group=_plugins.ENTRY_POINT_GROUP
    )
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **params: [entry])
    assert catalog.providers("plug_anon") == ["<unknown distribution>"]
    with pytest.raises(ModuleNotFoundError, match="plug_anon_not_installed") as caught:
        plugin_host.root.get("plug_anon.Thing")
    assert caught.value.__notes__ == [
        "regtree: while importing plugin module 'plug_anon_not_installed' for scope "
        "'plug_anon', advertised by distribution '<unknown distribution>' (entry point group "
        "'regtree.scopes')"
    ]
