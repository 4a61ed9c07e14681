"""What lookups remember: every change to a tree is seen by the next lookup, from any registry.

A registry remembers what its lookups found until its tree changes (``Registry._forget``); these
tests change the tree in every way it can change after a lookup, and look again.
"""

from __future__ import annotations

import sys
import threading
import types
from pathlib import Path
from typing import Any

import pytest

from regtree import (
    AlreadyRegisteredError,
    Registry,
    _plugins,
    _registry,
    default_scope,
)

from .conftest import LOCATION_HOST, PLUGIN_HOST, MakeDistribution, PluginHost, Tree


def _made(name: str) -> type:
    return type(name, (), {})


def test_a_name_registered_in_an_ancestor_is_found_where_it_missed_before(tree: Tree) -> None:
    for _ in range(2):  # the second lookup is answered from what the first found
        assert tree.little.get("Late") is None
        assert "Late" not in tree.hound
    late = tree.root.register_module(module=_made("Late"))
    assert tree.little.get("Late") is late
    assert "Late" in tree.hound


def test_a_registry_s_own_new_entry_wins_over_the_ancestor_s_it_found_before(tree: Tree) -> None:
    assert tree.hound.get("Shared") is tree.dog.get("Shared")
    own = tree.hound.register_module(name="Shared", module=_made("OwnShared"))
    assert tree.hound.get("Shared") is own
    assert tree.little.get("Shared") is own
    assert tree.cat.get("hound.Shared") is own


def test_a_forced_replacement_is_found_by_every_kind_of_key(tree: Tree) -> None:
    old = tree.cat.get("Cat")
    assert tree.lion.get("Cat") is old
    assert tree.dog.get("cat.Cat") is old
    assert tree.root.get("animal.cat.Cat") is old
    new = tree.cat.register_module(name="Cat", module=_made("NewCat"), force=True)
    assert tree.cat.get("Cat") is new
    assert tree.lion.get("Cat") is new
    assert tree.dog.get("cat.Cat") is new
    assert tree.root.get("animal.cat.Cat") is new


def test_names_registered_together_are_found_where_they_missed(tree: Tree) -> None:
    assert tree.dog.get("Left") is None
    assert tree.dog.get("dog.Right") is None
    both = tree.dog.register_module(name=["Left", "Right"], module=_made("Both"))
    assert tree.dog.get("Left") is tree.dog.get("Right") is both
    assert tree.hound.get("dog.Right") is both


def test_a_name_taken_back_is_not_remembered_as_bound(registry: Registry[Any]) -> None:
    # A lookup that runs while a registration of ['Left', 'Right'] holds 'Left' finds it; the
    # registration then meets 'Right' taken and takes 'Left' back: the lookup after it misses.
    taken = registry.register_module(module=_made("Taken"), name="Right")
    pair = _made("Pair")
    seen: list[object] = []

    class LookingName(str):
        """'Right', whose hash looks 'Left' up while the pair holds it."""

        def __hash__(self) -> int:
            if registry.module_dict.get("Left") is pair and not seen:
                seen.append(registry.get("Left"))
            return str.__hash__(self)

    with pytest.raises(AlreadyRegisteredError, match="'Right' is already registered"):
        registry.register_module(module=pair, name=["Left", LookingName("Right")])
    assert seen == [pair]
    assert registry.get("Left") is None
    assert registry.get("Right") is taken


def test_a_take_back_keeps_a_name_that_already_held_the_same_object(
    registry: Registry[Any],
) -> None:
    # ['A', 'B'] for an object that 'A' already holds, with 'B' taken: only what this call bound
    # is taken back, so 'A' stays.
    held, other = _made("Held"), _made("Other")
    registry.register_module(name="A", module=held)
    registry.register_module(name="B", module=other)
    with pytest.raises(AlreadyRegisteredError, match="'B' is already registered"):
        registry.register_module(name=["A", "B"], module=held)
    assert dict(registry.module_dict) == {"A": held, "B": other}
    assert registry.get("A") is held


def test_a_lookup_that_raced_a_registration_keeps_no_stale_miss(registry: Registry[Any]) -> None:
    # Another thread registers 'Late' after this lookup found nothing and before it kept that:
    # the miss must not outlive the registration.
    resolve = Registry._resolve
    late = _made("Late")

    def resolve_then_register(self: Registry[Any], *args: Any) -> Any:
        found = resolve(self, *args)
        if self is registry and late not in registry.module_dict.values():
            registry.register_module(module=late)
        return found

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Registry, "_resolve", resolve_then_register)
        assert registry.get("Late") is None  # what the lookup saw before the registration
    assert registry.get("Late") is late
    assert registry.resolve("Late") is late


def test_a_build_under_a_default_scope_leaves_plain_lookups_as_they_were(tree: Tree) -> None:
    calls: list[Registry[Any]] = []
    for registry in (tree.root, tree.dog):

        def made(registry: Registry[Any] = registry) -> None:
            calls.append(registry)

        registry.register_module(name="Made", module=made)
    tree.root.build({"type": "Made"})  # remembered: the root's own
    with default_scope("dog"):
        tree.root.build({"type": "Made"})
        tree.root.build({"type": "Made"})
    tree.root.build({"type": "Made"})
    assert calls == [tree.root, tree.dog, tree.dog, tree.root]
    assert tree.root.get("Made") is tree.root.module_dict["Made"]


def test_a_new_child_takes_its_scope_over_a_farther_registry_found_before(tree: Tree) -> None:
    # 'wolf' is first a registry far down another branch; then the dog gets its own child 'wolf',
    # which is nearer: a scoped key from the dog leads there now, even before it holds anything.
    far: Registry[Any] = Registry("animal", parent=tree.lion, scope="wolf")
    far_wolf = far.register_module(module=_made("Wolf"))
    assert tree.dog.get("wolf.Wolf") is far_wolf
    near: Registry[Any] = Registry("animal", parent=tree.dog, scope="wolf")
    assert tree.dog.get("wolf.Wolf") is None
    near_wolf = near.register_module(module=_made("Wolf"))
    assert tree.dog.get("wolf.Wolf") is near_wolf
    assert tree.lion.get("wolf.Wolf") is far_wolf


def test_a_scope_that_missed_is_found_once_a_plugin_provides_it(
    make_distribution: MakeDistribution, plugin_host: PluginHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert plugin_host.root.get("plug_later.Plugged") is None
    # The plugins installed decide a miss of a scoped key; here a fresh catalog stands in for a
    # distribution installed after the first lookup.
    monkeypatch.setattr(_plugins, "catalog", _plugins.PluginCatalog())
    source = (
        f"from {PLUGIN_HOST} import host\nfrom regtree import Registry\n"
        "MODELS = Registry('model', parent=host.root)\n"
        "MODELS.register_module(name='Plugged', module=dict)\n"
    )
    make_distribution("regtree-plug-later", {"plug_later": "plug_later"}, {"plug_later": source})
    monkeypatch.setattr(_plugins, "catalog", _plugins.PluginCatalog())
    assert plugin_host.root.get("plug_later.Plugged") is dict


def test_a_scope_found_while_its_plugin_failed_half_way_answers_with_the_error(
    make_distribution: MakeDistribution, plugin_host: PluginHost
) -> None:
    # The plugin finds its own entry through the root while it is imported, then fails: that
    # hit must not be kept, or later lookups would find a class instead of the import error.
    source = (
        f"from {PLUGIN_HOST} import host\nfrom regtree import Registry\n"
        "HALF = Registry('model', parent=host.root)\n"
        "HALF.register_module(module=dict, name='First')\n"
        "assert host.root.get('plug_seen.First') is dict\n"
        "assert host.root.resolve('plug_seen.First') is dict\n"
        "raise RuntimeError('plugin failed after looking First up')\n"
    )
    make_distribution("regtree-plug-seen", {"plug_seen": "plug_seen"}, {"plug_seen": source})
    with pytest.raises(RuntimeError, match="after looking First up"):
        plugin_host.root.get("plug_seen.Other")
    for _ in range(2):
        with pytest.raises(ImportError, match="plugin for scope 'plug_seen'"):
            plugin_host.root.get("plug_seen.First")
    with pytest.raises(ImportError, match="plugin for scope 'plug_seen'"):
        plugin_host.root.build({"type": "plug_seen.First"})


def test_a_hit_found_while_a_plugin_imported_is_not_kept_once_the_plugin_failed(
    make_distribution: MakeDistribution, plugin_host: PluginHost
) -> None:
    # Another thread finds the plugin's class in the root (an unscoped key, which waits for no
    # plugin) while the plugin is being imported, and keeps its result only after the plugin
    # has failed and its class was taken back: the name must be free again.
    events = {name: threading.Event() for name in ("registered", "found", "failed")}
    plugin_host.events.update(events)
    source = (
        f"from {PLUGIN_HOST} import host\nfrom regtree import Registry\n"
        "HALF = Registry('model', parent=host.root)\n"
        "@host.root.register_module()\nclass RaceFirst:\n    pass\n"
        "host.events['registered'].set()\n"
        "host.events['found'].wait(30)\n"
        "raise RuntimeError('plugin failed while another thread looked')\n"
    )
    make_distribution("regtree-plug-race", {"plug_race": "plug_race"}, {"plug_race": source})
    resolve = Registry._resolve

    def resolve_then_wait(self: Registry[Any], *args: Any) -> Any:
        found = resolve(self, *args)
        if threading.current_thread() is looker:
            events["found"].set()
            events["failed"].wait(30)  # the plugin fails before this lookup keeps its result
        return found

    seen: list[object] = []

    def look() -> None:
        assert events["registered"].wait(30), "the plugin never registered RaceFirst"
        seen.append(plugin_host.root.get("RaceFirst"))

    looker = threading.Thread(target=look)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Registry, "_resolve", resolve_then_wait)
        looker.start()
        with pytest.raises(RuntimeError, match="another thread looked"):
            plugin_host.root.get("plug_race.Other")
        events["failed"].set()
        looker.join(timeout=30)
    assert [getattr(found, "__name__", None) for found in seen] == ["RaceFirst"]  # half-way
    assert plugin_host.root.get("RaceFirst") is None
    with pytest.raises(ImportError, match="plugin for scope 'plug_race'"):
        plugin_host.root.get("plug_race.First")


def test_a_hit_kept_before_its_scope_s_plugin_failed_answers_with_the_error(
    make_distribution: MakeDistribution, plugin_host: PluginHost
) -> None:
    # The scope's registry came into two trees without its plugin (made directly); a hit
    # through it is kept in each; then a third tree's lookup imports the plugin, which fails:
    # the scope answers with the import error in every tree from then on, as it would had
    # nothing been kept. (Not load_plugins(): it would import the installed demo plugins, and
    # torch with them, inside a test that forgets the modules it imported.)
    make_distribution(
        "regtree-plug-direct",
        {"plug_direct": "plug_direct"},
        {"plug_direct": "raise ImportError('plug_direct needs libbar')\n"},
    )
    direct: Registry[Any] = Registry("model", parent=plugin_host.root, scope="plug_direct")
    made = direct.register_module(module=_made("Direct"))
    other: Registry[Any] = Registry("model", scope="elsewhere")  # another tree
    Registry("model", parent=other, scope="plug_direct").register_module(module=_made("Direct"))
    for registry in (plugin_host.root, other):
        assert registry.get("plug_direct.Direct") is not None
    assert plugin_host.root.resolve("plug_direct.Direct") is made
    with pytest.raises(ImportError, match="needs libbar"):
        Registry("model", scope="third").get("plug_direct.Direct")
    for registry in (plugin_host.root, other):
        with pytest.raises(ImportError, match="plugin for scope 'plug_direct'"):
            registry.get("plug_direct.Direct")
        with pytest.raises(ImportError, match="plugin for scope 'plug_direct'"):
            registry.build({"type": "plug_direct.Direct"})


def test_a_registration_that_raises_half_way_leaves_entries_and_lookups_as_they_were(
    registry: Registry[Any],
) -> None:
    old, new = _made("Old"), _made("New")
    registry.register_module(name="A", module=old)
    assert registry.get("A") is old
    assert registry.get("B") is None

    class BrokenName(str):
        """A name whose hash works once (the check of repeats), then raises."""

        calls = 0

        def __hash__(self) -> int:
            BrokenName.calls += 1
            if BrokenName.calls > 1:
                raise RuntimeError("broken hash")
            return str.__hash__(self)

    with pytest.raises(RuntimeError, match="broken hash"):
        registry.register_module(name=["B", BrokenName("C")], module=new)
    BrokenName.calls = 0
    with pytest.raises(RuntimeError, match="broken hash"):
        registry.register_module(name=["A", "Fresh", BrokenName("D")], module=new, force=True)
    assert dict(registry.module_dict) == {"A": old}
    assert registry.get("A") is old
    assert registry.get("B") is None
    assert registry.register_module(name=["B", "C"], module=new) is new
    assert registry.get("B") is registry.get("C") is new


def test_a_lookup_waits_for_the_locations_even_after_the_importer_looked_the_key_up(
    location_host: types.ModuleType, module_dir: Path
) -> None:
    # The location module looks 'Late' up (nothing yet), then pauses before registering it.
    # Another thread's lookup of 'Late' in that moment waits for the import and finds it: what
    # the importing thread saw half-way is not kept for others.
    body = (
        "SEEN = registry.get('Late')\n"
        "host.paused.set()\n"
        "host.proceed.wait(30)\n"
        "registry.register_module(name='Late', module=dict)\n"
    )
    (module_dir / "loc_paused.py").write_text(
        f"import {LOCATION_HOST} as host\nfrom {LOCATION_HOST} import registry\n{body}"
    )
    registry: Registry[Any] = Registry("model", scope="loc", locations=["loc_paused"])
    location_host.registry = registry  # type: ignore[attr-defined]
    location_host.paused = threading.Event()  # type: ignore[attr-defined]
    location_host.proceed = threading.Event()  # type: ignore[attr-defined]
    found: dict[str, object] = {}

    def look(name: str) -> None:
        found[name] = registry.get("Late")

    importer = threading.Thread(target=look, args=("importer",))
    importer.start()
    assert location_host.paused.wait(30), "the location import never reached its pause"  # type: ignore[attr-defined]
    other = threading.Thread(target=look, args=("other",))
    other.start()
    other.join(timeout=0.2)  # it waits for the import; a kept half-way miss would end it now
    location_host.proceed.set()  # type: ignore[attr-defined]
    importer.join(timeout=30)
    other.join(timeout=30)
    assert sys.modules["loc_paused"].SEEN is None
    assert found == {"importer": dict, "other": dict}


def test_what_lookups_remember_is_bounded(tree: Tree) -> None:
    # Lookups of ever new keys (a program probing generated names) keep a bounded table.
    for number in range(_registry._KNOWN_LIMIT + 100):
        assert tree.dog.get(f"Probe{number}") is None
    assert len(tree.dog._known) == _registry._KNOWN_LIMIT
    late = tree.dog.register_module(name=f"Probe{_registry._KNOWN_LIMIT + 50}", module=_made("P"))
    assert tree.dog.get(f"Probe{_registry._KNOWN_LIMIT + 50}") is late
