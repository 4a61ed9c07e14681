"""get() (SPEC 2, steps 1-7) on a tree of three levels and two branches, and ``locations``."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from regtree import Registry, _plugins, _registry

from .conftest import LOCATION_HOST, Tree


def _owner(found: Any) -> str:
    """The scope of the registry that holds ``found`` (the tree fixture records it)."""
    return found.registry.scope  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("start", "key", "name", "owner"),
    [
        ("dog", "Dog", "Dog", "dog"),  # own
        ("dog", "Shared", "Shared", "dog"),  # own wins over the parent
        ("hound", "Shared", "Shared", "dog"),  # parent fallback, nearest first
        ("little", "Animal", "Animal", "animal"),  # grandparent fallback
        ("dog", "dog.Dog", "Dog", "dog"),  # own-scope prefix
        ("hound", "hound.Dog", "Dog", "dog"),  # own-scope prefix, then fallback
        ("dog", "hound.BloodHound", "BloodHound", "hound"),  # child
        ("dog", "hound.little_hound.LittleHound", "LittleHound", "little_hound"),  # multi-level
        ("root", "dog.hound.little_hound.LittleHound", "LittleHound", "little_hound"),
        ("root", "hound.BloodHound", "BloodHound", "hound"),  # anywhere in the tree
        ("dog", "cat.Cat", "Cat", "cat"),  # sibling
        ("hound", "cat.Cat", "Cat", "cat"),  # uncle
        ("hound", "lion.Lion", "Lion", "lion"),  # cousin
        ("lion", "little_hound.LittleHound", "LittleHound", "little_hound"),  # far cousin
        ("little", "animal.Animal", "Animal", "animal"),  # the root by scope
        ("cat", "dog.Shared", "Shared", "dog"),
        ("lion", "cat.Animal", "Animal", "animal"),  # the scope's own fallback
    ],
)
def test_lookup_table(tree: Tree, start: str, key: str, name: str, owner: str) -> None:
    found = getattr(tree, start).get(key)
    assert found is not None
    assert (found.__name__, _owner(found)) == (name, owner)
    assert key in getattr(tree, start)


@pytest.mark.parametrize(
    ("start", "key"),
    [
        ("dog", "Nope"),
        ("dog", "Lion"),  # in a sibling's child: unscoped keys only climb
        ("root", "Dog"),  # unscoped keys never descend
        ("dog", "cat.Dog"),
        ("dog", "nowhere.Dog"),  # unknown scope
        ("dog", "hound.nowhere.X"),
        ("dog", "dog."),
        ("dog", ".Dog"),
        ("dog", ""),
    ],
)
def test_misses_return_none(
    tree: Tree, catalog: _plugins.PluginCatalog, start: str, key: str
) -> None:
    registry = getattr(tree, start)
    before = (list(registry.module_dict.items()), dict(registry.children))
    assert registry.get(key) is None
    assert key not in registry
    assert (list(registry.module_dict.items()), dict(registry.children)) == before


@pytest.mark.parametrize("key", [1, None, 2.5, ("a",), b"Dog"])
def test_a_non_str_key_is_a_type_error(tree: Tree, key: Any) -> None:
    with pytest.raises(
        TypeError, match=r"a key of registry 'animal' \(scope 'dog'\) must be a str"
    ):
        tree.dog.get(key)
    assert key not in tree.dog


@pytest.mark.parametrize("key", [["Dog"], {"Dog": 1}, {"Dog"}])
def test_an_unhashable_key_is_the_same_type_error(tree: Tree, key: Any) -> None:
    with pytest.raises(TypeError, match=r"must be a str such as 'Net' or 'scope\.Net'"):
        tree.dog.get(key)
    with pytest.raises(TypeError, match=r"must be a str such as 'Net' or 'scope\.Net'"):
        tree.dog.resolve(key)
    assert key not in tree.dog


def test_a_miss_imports_no_module_that_no_distribution_advertises(
    tree: Tree, module_dir: Path, catalog: _plugins.PluginCatalog
) -> None:
    (module_dir / "unadvertised_scope.py").write_text("raise AssertionError('imported')\n")
    assert tree.dog.get("unadvertised_scope.X") is None
    assert "unadvertised_scope" not in sys.modules


def _write_location(folder: Path, module: str, body: str) -> None:
    source = f"from {LOCATION_HOST} import imports, registry\nimports.append(__name__)\n{body}"
    (folder / f"{module}.py").write_text(source)


def test_locations_are_imported_once_on_the_first_lookup(
    location_host: types.ModuleType, module_dir: Path
) -> None:
    _write_location(
        module_dir, "loc_first", "registry.register_module(name='Located', module=dict)\n"
    )
    _write_location(
        module_dir, "loc_second", "registry.register_module(name='Also', module=list)\n"
    )
    registry: Registry[Any] = Registry("model", scope="loc", locations=["loc_first", "loc_second"])
    location_host.registry = registry  # type: ignore[attr-defined]
    registry.register_module(name="Eager", module=set)
    assert location_host.imports == []  # neither construction nor registration imports
    assert registry.get("Eager") is set
    assert location_host.imports == ["loc_first", "loc_second"]
    assert registry.get("Located") is dict
    assert registry.get("Also") is list
    del sys.modules["loc_first"]
    assert registry.get("Nope") is None
    assert "Located" in registry
    assert location_host.imports == ["loc_first", "loc_second"]
    assert registry.locations == ("loc_first", "loc_second")


def test_locations_of_an_ancestor_and_a_sibling_are_imported_by_lookups_through_them(
    location_host: types.ModuleType, module_dir: Path
) -> None:
    _write_location(module_dir, "loc_root", "registry.register_module(name='Base', module=dict)\n")
    root: Registry[Any] = Registry("model", scope="loc_root", locations="loc_root")
    child: Registry[Any] = Registry("model", parent=root, scope="loc_child")
    location_host.registry = root  # type: ignore[attr-defined]
    assert child.get("Base") is dict
    assert location_host.imports == ["loc_root"]


def test_a_location_module_may_look_up_its_own_registry_while_imported(
    location_host: types.ModuleType, module_dir: Path
) -> None:
    body = "registry.register_module(name='First', module=dict)\nFOUND = registry.get('First')\n"
    _write_location(module_dir, "loc_reentrant", body)
    registry: Registry[Any] = Registry("model", scope="loc", locations=["loc_reentrant"])
    location_host.registry = registry  # type: ignore[attr-defined]
    assert registry.get("First") is dict
    assert sys.modules["loc_reentrant"].FOUND is dict


def test_a_hit_among_entries_registered_directly_still_imports_the_locations(
    location_host: types.ModuleType, module_dir: Path
) -> None:
    _write_location(module_dir, "loc_late", "registry.register_module(name='Late', module=dict)\n")
    registry: Registry[Any] = Registry("model", scope="loc", locations=["loc_late"])
    location_host.registry = registry  # type: ignore[attr-defined]
    registry.register_module(name="Early", module=set)
    assert registry.resolve("Early") is set
    assert location_host.imports == ["loc_late"]
    assert registry.module_dict == {"Early": set, "Late": dict}


def test_each_location_is_imported_whole_before_the_next(
    location_host: types.ModuleType, module_dir: Path
) -> None:
    # A location that looks its registry up while imported sees it as it is: the locations after
    # it are not imported in the middle of it.
    body = "SEEN = registry.get('Second')\nimports.append(__name__ + ' done')\n"
    _write_location(module_dir, "loc_one", body)
    _write_location(module_dir, "loc_two", "registry.register_module(name='Second', module=dict)\n")
    registry: Registry[Any] = Registry("model", scope="loc", locations=["loc_one", "loc_two"])
    location_host.registry = registry  # type: ignore[attr-defined]
    assert registry.get("Second") is dict
    assert location_host.imports == ["loc_one", "loc_one done", "loc_two"]
    assert sys.modules["loc_one"].SEEN is None


def test_a_failing_location_raises_with_a_note_and_is_retried(
    location_host: types.ModuleType, module_dir: Path
) -> None:
    registry: Registry[Any] = Registry("model", scope="loc", locations=["loc_missing_module"])
    for _ in range(2):
        with pytest.raises(ModuleNotFoundError, match="loc_missing_module") as caught:
            registry.get("X")
        assert caught.value.__notes__ == [
            "regtree: while importing location 'loc_missing_module' of registry 'model' "
            "(scope 'loc')"
        ]


def test_a_location_that_fails_after_registering_takes_its_entries_back(
    location_host: types.ModuleType, module_dir: Path
) -> None:
    # Each retry runs the module again: entries its failed run left would clash with the new
    # run's and hide the real error behind an AlreadyRegisteredError. The location imported
    # before it keeps its entries (Python does not import it again).
    _write_location(module_dir, "loc_good", "registry.register_module(name='Good', module=set)\n")
    body = (
        "registry.register_module(name='Half', module=type('Half', (), {}))\n"
        "if not getattr(sys.modules[__name__ + '_switch'], 'ON', False):\n"
        "    raise ImportError('loc_half needs the optional dependency zzz')\n"
    )
    _write_location(module_dir, "loc_half", "import sys\n" + body)
    switch = types.ModuleType("loc_half_switch")
    sys.modules["loc_half_switch"] = switch
    try:
        registry: Registry[Any] = Registry("model", scope="loc", locations=["loc_good", "loc_half"])
        location_host.registry = registry  # type: ignore[attr-defined]
        registry.register_module(name="Eager", module=dict)
        for _ in range(2):
            with pytest.raises(ImportError, match="needs the optional dependency zzz"):
                registry.get("Half")
            assert list(registry) == ["Eager", "Good"]
        switch.ON = True  # type: ignore[attr-defined]  # the dependency, installed meanwhile
        assert registry.get("Half") is not None
        assert list(registry) == ["Eager", "Good", "Half"]
    finally:
        del sys.modules["loc_half_switch"]


def test_a_failed_location_s_partials_and_forced_replacements_are_taken_back(
    location_host: types.ModuleType, module_dir: Path
) -> None:
    # A partial is the dropped module's by its function; a forced replacement is undone.
    body = (
        "import functools\n"
        "def make(x): return x\n"
        "registry.register_module(name='part', module=functools.partial(make, 1))\n"
        "registry.register_module(name='Old', module=type('New', (), {}), force=True)\n"
        "raise RuntimeError('the real error')\n"
    )
    _write_location(module_dir, "loc_partial", body)
    registry: Registry[Any] = Registry("model", scope="loc", locations=["loc_partial"])
    location_host.registry = registry  # type: ignore[attr-defined]
    registry.register_module(name="Old", module=dict)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="the real error"):
            registry.get("part")
        assert registry.module_dict == {"Old": dict}


def test_a_failed_location_takes_back_what_it_registered_of_other_modules(
    location_host: types.ModuleType, module_dir: Path
) -> None:
    # A partial of another module's function and an instance of another module's class are
    # the failed module's by who registered them: a retry meets the real error, not a clash.
    # What a helper it imported registered stays: the helper is still imported.
    # So is what it registers through a helper's function (a wrapper of register_module).
    _write_location(
        module_dir,
        "loc_foreign_helper",
        "import functools\n"
        "registry.register_module(name='helped', module=functools.partial(max, 0))\n"
        "def register(name, obj):\n"
        "    return registry.register_module(name=name, module=obj)\n",
    )
    body = (
        "import functools, operator\n"
        "import loc_foreign_helper\n"
        "registry.register_module(name='ConvNoBias', module=functools.partial(min, 0))\n"
        "registry.register_module(name='first', module=operator.itemgetter(0))\n"
        "loc_foreign_helper.register('wrapped', functools.partial(abs))\n"
        "raise RuntimeError('the real error')\n"
    )
    _write_location(module_dir, "loc_foreign", body)
    registry: Registry[Any] = Registry("model", scope="loc", locations=["loc_foreign"])
    location_host.registry = registry  # type: ignore[attr-defined]
    for _ in range(2):
        with pytest.raises(RuntimeError, match="the real error"):
            registry.get("ConvNoBias")
        assert list(registry) == ["helped"]


def test_a_failed_location_leaves_what_others_registered_meanwhile(
    location_host: types.ModuleType, module_dir: Path
) -> None:
    # Registered while the failed import ran, but not by a module Python dropped: an entry
    # that was there before (registered again, a no-op), one from a thread (whose stack holds
    # no module body), and one a helper it imported put into a registry the failed module left
    # alone. After it, no registration is noted any more.
    _write_location(
        module_dir,
        "loc_meanwhile_helper",
        "registry.parent.register_module(name='Helped', module=type('Helped', (), {}))\n",
    )
    body = (
        "import threading\n"
        "import loc_meanwhile_helper\n"
        "registry.register_module(name='Before', module=dict)\n"
        "def register():\n"
        "    registry.register_module(name='Threaded', module=list)\n"
        "worker = threading.Thread(target=register)\n"
        "worker.start()\n"
        "worker.join()\n"
        "raise RuntimeError('the real error')\n"
    )
    _write_location(module_dir, "loc_meanwhile", body)
    root: Registry[Any] = Registry("model", scope="loc_root")
    registry: Registry[Any] = Registry(
        "model", parent=root, scope="loc", locations=["loc_meanwhile"]
    )
    location_host.registry = registry  # type: ignore[attr-defined]
    registry.register_module(name="Before", module=dict)
    with pytest.raises(RuntimeError, match="the real error"):
        registry.get("Anything")
    assert registry.module_dict == {"Before": dict, "Threaded": list}
    assert list(root.module_dict) == ["Helped"]
    assert not _registry._WATCHING
    assert _registry._JOURNALS == {}
    # Every decorator is the plain one again (the noting ones are swapped in for an import).
    decorators = [node.register_module() for node in (root, registry)]
    assert [d.func.__func__ for d in decorators] == [Registry._register] * 2  # type: ignore[attr-defined]


def test_a_registry_a_failed_location_made_through_a_helper_leaves_with_it(
    location_host: types.ModuleType, module_dir: Path
) -> None:
    # The module whose body made it is the failed one, not the helper whose function it called.
    _write_location(
        module_dir,
        "loc_maker",
        "from regtree import Registry\n"
        "def make(scope):\n"
        "    return Registry('model', parent=registry.parent, scope=scope)\n",
    )
    body = "import loc_maker\nloc_maker.make('loc_helped')\nraise RuntimeError('the real error')\n"
    _write_location(module_dir, "loc_via_helper", body)
    root: Registry[Any] = Registry("model", scope="loc_root")
    registry: Registry[Any] = Registry(
        "model", parent=root, scope="loc", locations=["loc_via_helper"]
    )
    location_host.registry = registry  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError, match="the real error"):
        registry.get("Anything")
    assert list(root.children) == ["loc"]


def test_a_failed_location_takes_back_what_it_left_in_other_registries(
    location_host: types.ModuleType, module_dir: Path
) -> None:
    # As a failed plugin: its entry in the parent and the child it made leave with it.
    body = (
        "from regtree import Registry\n"
        "registry.parent.register_module(name='Leaked', module=type('Leaked', (), {}))\n"
        "Registry('model', parent=registry.parent, scope='loc_made')\n"
        "raise RuntimeError('the real error')\n"
    )
    _write_location(module_dir, "loc_wide", body)
    root: Registry[Any] = Registry("model", scope="loc_root")
    registry: Registry[Any] = Registry("model", parent=root, scope="loc", locations=["loc_wide"])
    location_host.registry = registry  # type: ignore[attr-defined]
    for _ in range(2):  # the retry meets the real error, not an AlreadyRegisteredError
        with pytest.raises(RuntimeError, match="the real error"):
            registry.get("Anything")
        assert list(root.module_dict) == []
        assert list(root.children) == ["loc"]


def test_many_distinct_misses_never_hide_a_later_registration(tree: Tree) -> None:
    keys = [f"Missing{number}" for number in range(5_000)]
    assert all(tree.little.get(key) is None for key in keys)
    assert all(tree.little.get(f"cat.{key}") is None for key in keys[:100])
    late = tree.root.register_module(name=keys[-1], module=type("Late", (), {}))
    early = tree.cat.register_module(name=keys[0], module=type("Early", (), {}))
    assert tree.little.get(keys[-1]) is late
    assert tree.little.get(f"cat.{keys[0]}") is early


def test_a_new_child_is_reached_by_keys_that_missed_before(
    tree: Tree, catalog: _plugins.PluginCatalog
) -> None:
    assert tree.lion.get("wolf.Wolf") is None
    wolf: Registry[Any] = Registry("animal", parent=tree.dog, scope="wolf")
    made = wolf.register_module(module=type("Wolf", (), {}))
    assert tree.lion.get("wolf.Wolf") is made
    assert tree.dog.get("wolf.Wolf") is made


def test_a_scope_reached_through_the_tree_is_its_first_registry_breadth_first(
    catalog: _plugins.PluginCatalog,
) -> None:
    root: Registry[Any] = Registry("animal", scope="zoo")
    branch: Registry[Any] = Registry("animal", parent=root, scope="branch")
    deep: Registry[Any] = Registry("animal", parent=branch, scope="shared")  # adopted first
    shallow: Registry[Any] = Registry("animal", parent=root, scope="shared")
    later: Registry[Any] = Registry("animal", parent=root, scope="other")
    Registry("animal", parent=later, scope="shared")  # as shallow as another, adopted later
    for registry in (deep, shallow):
        registry.register_module(name="Where", module=type(f"In{registry.parent}", (), {}))
    elsewhere: Registry[Any] = Registry("animal", parent=root, scope="elsewhere")
    assert elsewhere.get("shared.Where") is shallow.get("Where")
    assert root.get("shared.Where") is shallow.get("Where")


def test_a_registry_reaches_its_own_scope_and_children_before_the_tree(
    catalog: _plugins.PluginCatalog,
) -> None:
    root: Registry[Any] = Registry("animal", scope="zoo")
    # Earlier breadth first than the registries below, with the same scopes.
    first_pet: Registry[Any] = Registry("animal", parent=root, scope="pet")
    first_toy: Registry[Any] = Registry("animal", parent=root, scope="toy")
    house: Registry[Any] = Registry("animal", parent=root, scope="house")
    pet: Registry[Any] = Registry("animal", parent=house, scope="pet")
    toy: Registry[Any] = Registry("animal", parent=pet, scope="toy")
    for registry in (first_pet, first_toy, pet, toy):
        registry.register_module(name="Which", module=type(f"Which{id(registry)}", (), {}))
    assert pet.get("pet.Which") is pet.get("Which")  # its own scope
    assert pet.get("toy.Which") is toy.get("Which")  # its child
    assert house.get("pet.toy.Which") is toy.get("Which")
    assert house.get("toy.Which") is first_toy.get("Which")  # not a child of house: the tree
