"""build_from_cfg (SPEC 2): what it calls and with what, and each TypeError/KeyError case."""

from __future__ import annotations

import copy
import functools
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from regtree import NotRegisteredError, Registry, build_from_cfg


class Point:
    def __init__(self, x: int = 0, y: int = 0, payload: object = None) -> None:
        self.x, self.y, self.payload = x, y, payload


def make_pair(a: object, b: object = "b") -> tuple[object, object]:
    return (a, b)


class FrozenConfig(Mapping[str, Any]):
    """A mapping that is not a dict and cannot be changed."""

    def __init__(self, **items: Any) -> None:
        self._items = items

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


@pytest.fixture
def shapes() -> Registry[Any]:
    registry: Registry[Any] = Registry("shape", scope="shapes")
    registry.register_module(module=Point)
    registry.register_module(module=make_pair)
    registry.register_module(name="partial_pair", module=functools.partial(make_pair, b="p"))
    registry.register_module(name="lam", module=lambda value=1: ("lambda", value))
    return registry


def test_a_registered_class_is_called_with_the_other_keys(shapes: Registry[Any]) -> None:
    point = build_from_cfg({"type": "Point", "x": 1, "y": 2}, shapes)
    assert isinstance(point, Point)
    assert (point.x, point.y) == (1, 2)


def test_registry_build_is_build_from_cfg(shapes: Registry[Any]) -> None:
    point = shapes.build({"type": "Point", "x": 5})
    assert (point.x, point.y) == (5, 0)


@pytest.mark.parametrize(
    ("cfg", "expected"),
    [
        ({"type": "make_pair", "a": 1}, (1, "b")),
        ({"type": "partial_pair", "a": 1}, (1, "p")),
        ({"type": "lam", "value": 3}, ("lambda", 3)),
        ({"type": "lam"}, ("lambda", 1)),
    ],
    ids=["function", "partial", "lambda", "lambda-default"],
)
def test_functions_partials_and_lambdas_build(
    shapes: Registry[Any], cfg: dict[str, Any], expected: object
) -> None:
    assert build_from_cfg(cfg, shapes) == expected


def test_a_class_or_callable_as_type_is_used_as_is(shapes: Registry[Any]) -> None:
    class Unregistered:
        def __init__(self, value: int) -> None:
            self.value = value

    assert build_from_cfg({"type": Unregistered, "value": 3}, shapes).value == 3
    assert build_from_cfg({"type": make_pair, "a": 9}, shapes) == (9, "b")
    assert build_from_cfg({"type": functools.partial(make_pair, 1)}, shapes) == (1, "b")


def test_default_args_fill_missing_keys_only(shapes: Registry[Any]) -> None:
    point = build_from_cfg({"type": "Point", "x": 1}, shapes, default_args={"x": 7, "y": 8})
    assert (point.x, point.y) == (1, 8)


def test_type_may_come_from_default_args(shapes: Registry[Any]) -> None:
    point = build_from_cfg({"x": 3}, shapes, default_args={"type": "Point"})
    assert (point.x, point.y) == (3, 0)


def test_type_in_cfg_wins_over_default_args(shapes: Registry[Any]) -> None:
    built = build_from_cfg({"type": "make_pair", "a": 1}, shapes, default_args={"type": "Point"})
    assert built == (1, "b")


def test_build_passes_default_args_through(shapes: Registry[Any]) -> None:
    point = shapes.build({"type": "Point"}, default_args={"y": 4})
    assert point.y == 4


def test_any_mapping_is_a_config(shapes: Registry[Any]) -> None:
    assert build_from_cfg(FrozenConfig(type="Point", x=2), shapes).x == 2
    assert build_from_cfg(OrderedDict(type="Point", y=2), shapes).y == 2
    defaults = FrozenConfig(y=6)
    assert build_from_cfg({"type": "Point"}, shapes, default_args=defaults).y == 6


def test_the_cfg_and_nested_values_are_unchanged_and_passed_as_the_same_objects(
    shapes: Registry[Any],
) -> None:
    payload = {"nested": [1, {"deep": "value"}], "type": "not-a-build"}
    cfg = {"type": "Point", "x": 1, "payload": payload, "_scope_": "shapes"}
    defaults: dict[str, Any] = {"y": [2], "type": "make_pair"}
    snapshot, defaults_snapshot = copy.deepcopy(cfg), copy.deepcopy(defaults)
    point = build_from_cfg(cfg, shapes, default_args=defaults)
    assert cfg == snapshot
    assert defaults == defaults_snapshot
    assert point.payload is payload
    assert point.y is defaults["y"]
    assert list(cfg) == ["type", "x", "payload", "_scope_"]


@pytest.mark.parametrize("cfg", [None, ["type", "Point"], "Point", 3])
def test_cfg_must_be_a_mapping(shapes: Registry[Any], cfg: Any) -> None:
    with pytest.raises(
        TypeError, match=r"cfg must be a mapping such as dict\(type='Name', \.\.\.\)"
    ):
        build_from_cfg(cfg, shapes)


@pytest.mark.parametrize("default_args", [["y", 1], "y", 3])
def test_default_args_must_be_a_mapping_or_none(shapes: Registry[Any], default_args: Any) -> None:
    with pytest.raises(TypeError, match=r"default_args must be a mapping or None, got"):
        build_from_cfg({"type": "Point"}, shapes, default_args=default_args)


@pytest.mark.parametrize("registry", [None, {"Point": Point}, "shapes"])
def test_registry_must_be_a_registry(registry: Any) -> None:
    with pytest.raises(TypeError, match=r"registry must be a regtree\.Registry, got"):
        build_from_cfg({"type": "Point"}, registry)


class ResolvesAnything:
    """Has a registry's ``resolve`` method, and is no registry."""

    def resolve(self, key: str, default_scope: str | None = None) -> Any:
        return dict


def test_an_object_with_a_resolve_method_is_not_a_registry() -> None:
    with pytest.raises(
        TypeError,
        match=r"registry must be a regtree\.Registry, got ResolvesAnything <.*>; pass the "
        r"Registry that holds the names, such as regtree\.MODELS",
    ):
        build_from_cfg({"type": "whatever", "a": 1}, ResolvesAnything())  # type: ignore[arg-type]


@pytest.mark.parametrize("default_args", [None, {"x": 1}])
def test_a_missing_type_is_a_key_error_mentioning_it(
    shapes: Registry[Any], default_args: dict[str, Any] | None
) -> None:
    with pytest.raises(KeyError, match=r'cfg must contain the key "type" \(or default_args must\)'):
        build_from_cfg({"x": 1}, shapes, default_args=default_args)


@pytest.mark.parametrize("obj_type", [3, None, ["Point"], Point()])
def test_a_type_that_is_neither_a_str_nor_callable_is_a_type_error(
    shapes: Registry[Any], obj_type: Any
) -> None:
    with pytest.raises(TypeError, match=r"'type' must be a registered name, a class or a callable"):
        build_from_cfg({"type": obj_type}, shapes)


def test_a_config_that_is_not_a_mapping_is_named_with_its_type(shapes: Registry[Any]) -> None:
    with pytest.raises(TypeError, match=r"^cfg must be a mapping such as .*, got list: \[1\]$"):
        build_from_cfg([1], shapes)  # type: ignore[arg-type]


def test_a_type_that_is_neither_a_name_nor_callable_is_named_with_its_type(
    shapes: Registry[Any],
) -> None:
    with pytest.raises(TypeError, match=r"got 3 of type int \(building with registry 'shape'"):
        build_from_cfg({"type": 3}, shapes)


def test_an_unknown_name_is_not_registered(shapes: Registry[Any]) -> None:
    with pytest.raises(
        NotRegisteredError, match=r"'Nothing' is not registered in registry 'shape'"
    ):
        build_from_cfg({"type": "Nothing"}, shapes)


def test_a_registry_subclass_with_its_own_get_is_honoured() -> None:
    class Aliasing(Registry[Any]):
        def get(self, key: str) -> Any:
            return super().get(key.lower())

    registry = Aliasing("shape", scope="aliasing")
    registry.register_module(name="point", module=Point)
    assert isinstance(build_from_cfg({"type": "POINT"}, registry), Point)


def test_a_registry_subclass_is_asked_only_for_what_the_tree_lacks() -> None:
    asked: list[str] = []

    class Fallback(Registry[Any]):
        def get(self, key: str) -> Any:
            asked.append(key)
            found = super().get(key)
            return found if found is not None else Point

    parent: Registry[Any] = Registry("shape", scope="fallback_root")
    parent.register_module(name="Inherited", module=dict)
    registry = Fallback("shape", parent=parent, scope="fallback")
    assert build_from_cfg({"type": "Inherited"}, registry) == {}
    assert asked == []
    assert isinstance(build_from_cfg({"type": "Elsewhere"}, registry), Point)
    assert asked == ["Elsewhere"]


def test_nested_builds_resolve_in_the_same_registry(shapes: Registry[Any]) -> None:
    @shapes.register_module()
    class Holder:
        def __init__(self, inner: dict[str, Any]) -> None:
            self.inner = shapes.build(inner)

    holder = shapes.build({"type": "Holder", "inner": {"type": "Point", "x": 4}})
    assert holder.inner.x == 4
