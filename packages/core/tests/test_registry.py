"""Registry construction (SPEC 2): scope inference and rules, the tree, properties, keys."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from regtree import Registry, ScopeConflictError, _scope, build_from_cfg

from .conftest import Tree


def _write(folder: Path, relative: str, source: str) -> None:
    path = folder / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))


def test_scope_defaults_to_the_top_level_package_of_the_caller(module_dir: Path) -> None:
    _write(module_dir, "infer_pkg/__init__.py", "")
    _write(
        module_dir,
        "infer_pkg/deep/models.py",
        "from regtree import Registry\nMODELS = Registry('model')\n",
    )
    _write(module_dir, "infer_pkg/deep/__init__.py", "")
    from infer_pkg.deep import models  # type: ignore[import-not-found]

    assert models.MODELS.scope == "infer_pkg"


def test_scope_of_a_top_level_module_is_its_name(module_dir: Path) -> None:
    _write(
        module_dir, "infer_tools.py", "from regtree import Registry\nMODELS = Registry('model')\n"
    )
    import infer_tools  # type: ignore[import-not-found]

    assert infer_tools.MODELS.scope == "infer_tools"


def test_scope_of_a_generic_registry_is_its_callers_package(module_dir: Path) -> None:
    # Registry[Any](...) calls through typing's alias, which must not count as the caller.
    _write(module_dir, "typed_pkg/__init__.py", "")
    _write(
        module_dir,
        "typed_pkg/models.py",
        """\
        from typing import Any
        from regtree import Registry
        MODELS = Registry[Any]('model')
        """,
    )
    from typed_pkg import models  # type: ignore[import-not-found]

    assert models.MODELS.scope == "typed_pkg"


def test_scope_is_main_without_a_module() -> None:
    code = "from regtree import Registry; print(Registry('model').scope)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "__main__"


def test_scope_is_main_where_the_caller_has_no_module_name() -> None:
    namespace: dict[str, Any] = {"Registry": Registry}
    exec("made = Registry('model')", namespace)
    assert namespace["made"].scope == "__main__"
    namespace["__name__"] = ""
    exec("made = Registry('model')", namespace)
    assert namespace["made"].scope == "__main__"


def test_a_registry_made_with_no_python_caller_gets_scope_main() -> None:
    # Registry.__init__ called from C code (an embedding program) has no caller frame to read.
    assert _scope.infer_scope(None) == "__main__"


def test_split_scope_key_rejects_a_key_that_is_not_a_str() -> None:
    with pytest.raises(TypeError, match=r"^a key must be a str such as 'scope\.Name', got 3$"):
        Registry.split_scope_key(3)  # type: ignore[arg-type]


def test_a_scope_with_a_dot_says_what_the_dot_means() -> None:
    with pytest.raises(
        ValueError,
        match=(
            r"^scope of registry 'model' must be a non-empty name without '\.', got 'a\.b' "
            r"\(a dot separates the scope from the name in a key such as 'mypackage\.Net'\)$"
        ),
    ):
        Registry("model", scope="a.b")


def test_a_subclass_gets_the_scope_of_the_module_that_instantiates_it(module_dir: Path) -> None:
    _write(
        module_dir,
        "infer_base.py",
        """
        from regtree import Registry

        class NamedRegistry(Registry):
            def __init__(self, name, **kwargs):
                super().__init__(name.lower(), **kwargs)
        """,
    )
    _write(
        module_dir,
        "infer_user/__init__.py",
        "from infer_base import NamedRegistry\nMODELS = NamedRegistry('MODEL')\n",
    )
    import infer_user  # type: ignore[import-not-found]

    assert (infer_user.MODELS.name, infer_user.MODELS.scope) == ("model", "infer_user")


def test_an_explicit_scope_wins() -> None:
    assert Registry("model", scope="mine").scope == "mine"


@pytest.mark.parametrize("scope", [1, b"bytes", ["a"]])
def test_a_scope_must_be_a_str(scope: object) -> None:
    with pytest.raises(TypeError, match=r"scope of registry 'model' must be a str"):
        Registry("model", scope=scope)  # type: ignore[arg-type]


@pytest.mark.parametrize("scope", ["", "a.b", "."])
def test_a_scope_is_non_empty_and_without_dots(scope: str) -> None:
    with pytest.raises(ValueError, match=r"non-empty name without '\.'"):
        Registry("model", scope=scope)


def test_a_name_must_be_a_str() -> None:
    with pytest.raises(TypeError, match=r"registry name must be a str.*got 3"):
        Registry(3, scope="x")  # type: ignore[arg-type]


def test_a_parent_must_be_a_registry() -> None:
    with pytest.raises(TypeError, match=r"parent of registry 'model' must be a Registry.*'root'"):
        Registry("model", parent="root", scope="x")  # type: ignore[arg-type]


def test_a_bad_parent_is_rejected_before_the_scope_is_checked() -> None:
    with pytest.raises(TypeError, match="parent"):
        Registry("model", parent=object(), scope="a.b")  # type: ignore[arg-type]


def test_build_func_must_be_callable() -> None:
    with pytest.raises(TypeError, match=r"build_func of registry 'model' must be callable"):
        Registry("model", build_func="build", scope="x")  # type: ignore[arg-type]


@pytest.mark.parametrize("locations", [3, ["ok", 3]])
def test_locations_must_be_module_names(locations: object) -> None:
    with pytest.raises(TypeError, match=r"locations of registry 'model' must be a sequence"):
        Registry("model", scope="x", locations=locations)  # type: ignore[arg-type]


@pytest.mark.parametrize("location", ["", "pkg..models", "pkg.2models", "pkg/models"])
def test_a_location_that_is_no_module_name_is_refused_when_the_registry_is_made(
    location: str,
) -> None:
    with pytest.raises(
        ValueError,
        match=(
            rf"^locations of registry 'model' must be module names such as 'mypackage\.models', "
            rf"got {re.escape(repr(location))}$"
        ),
    ):
        Registry("model", scope="x", locations=["ok.models", location])
    with pytest.raises(ValueError, match="must be module names"):
        Registry("model", scope="x", locations=location)  # one name, as a str


def test_children_are_recorded_by_scope(tree: Tree) -> None:
    assert dict(tree.root.children) == {"dog": tree.dog, "cat": tree.cat}
    assert tree.hound.parent is tree.dog
    assert tree.little.root is tree.root
    assert tree.root.root is tree.root
    assert tree.root.parent is None


def test_a_second_child_with_the_same_scope_is_a_conflict(tree: Tree) -> None:
    with pytest.raises(
        ScopeConflictError,
        match=(
            r"^registry 'animal' \(scope 'animal'\) already has a child with scope 'dog' "
            r"\(registry 'animal' \(scope 'dog'\)\); give registry 'other' another scope, "
            r"e\.g\. Registry\(\.\.\., scope='mypackage'\)$"
        ),
    ):
        Registry("other", parent=tree.root, scope="dog")
    assert tree.root.children["dog"] is tree.dog
    assert list(tree.root.children) == ["dog", "cat"]


def test_the_same_scope_under_another_parent_is_fine(tree: Tree) -> None:
    other = Registry("animal", parent=tree.cat, scope="dog")
    assert tree.cat.children["dog"] is other
    assert tree.root.children["dog"] is tree.dog


def test_children_and_module_dict_are_read_only(tree: Tree) -> None:
    with pytest.raises(TypeError, match="does not support item assignment"):
        tree.root.children["x"] = tree.dog  # type: ignore[index]
    with pytest.raises(TypeError, match="does not support item assignment"):
        tree.root.module_dict["x"] = object  # type: ignore[index]
    assert set(tree.root.module_dict) == {"Animal", "Shared"}


def test_build_func_comes_from_the_argument_then_the_parent_then_the_default() -> None:
    def custom(cfg: Any, registry: Registry[Any]) -> Any:
        return ("custom", cfg)

    root: Registry[Any] = Registry("model", build_func=custom, scope="root")
    child: Registry[Any] = Registry("model", parent=root, scope="child")
    plain: Registry[Any] = Registry("model", scope="plain")
    assert root.build_func is custom
    assert child.build_func is custom
    assert child.build({"type": "X"}) == ("custom", {"type": "X"})
    assert plain.build_func is build_from_cfg
    assert Registry("model", parent=root, scope="own", build_func=build_from_cfg).build_func is (
        build_from_cfg
    )


def test_build_passes_extra_arguments_and_the_registry_to_build_func() -> None:
    seen: list[tuple[Any, ...]] = []

    def record(cfg: Any, *args: Any, **kwargs: Any) -> str:
        seen.append((cfg, args, kwargs))
        return "built"

    registry: Registry[str] = Registry("model", build_func=record, scope="x")
    assert registry.build({"type": "A"}, 1, flag=True) == "built"
    assert seen == [({"type": "A"}, (1,), {"flag": True, "registry": registry})]


def test_len_and_iteration_cover_own_entries_in_registration_order(tree: Tree) -> None:
    for name in ["Zebra", "Ant", "Moose"]:
        tree.dog.register_module(module=type(name, (), {}))
    assert len(tree.dog) == 5
    assert list(tree.dog) == ["Dog", "Shared", "Zebra", "Ant", "Moose"]
    assert len(tree.hound) == 1


@pytest.mark.parametrize(
    ("key", "split"),
    [
        ("a.b.X", ("a", "b.X")),
        ("a.X", ("a", "X")),
        ("X", (None, "X")),
        ("", (None, "")),
    ],
)
def test_split_scope_key_splits_at_the_first_dot(key: str, split: tuple[str | None, str]) -> None:
    assert Registry.split_scope_key(key) == split


def test_registry_is_generic_at_runtime() -> None:
    alias = Registry[int]
    assert alias.__origin__ is Registry  # type: ignore[attr-defined]
    assert alias.__args__ == (int,)  # type: ignore[attr-defined]
    made: Registry[int] = alias("model", scope="generic")  # type: ignore[operator]
    assert isinstance(made, Registry)


def test_repr_names_the_registry() -> None:
    registry: Registry[Any] = Registry("model", scope="shown")
    registry.register_module(module=int, name="Int")
    assert repr(registry) == "Registry(name='model', scope='shown', entries=1, children=[])"
