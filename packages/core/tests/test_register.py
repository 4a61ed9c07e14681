"""register_module (SPEC 2): every form, every error, atomicity, force, threads."""

from __future__ import annotations

import functools
import re
import threading
from typing import Any

import pytest

from regtree import AlreadyRegisteredError, Registry

from .conftest import Tree


class Net:
    pass


class OtherNet:
    pass


def make_net() -> Net:
    return Net()


def test_decorator_without_name_uses_the_class_name(registry: Registry[Any]) -> None:
    @registry.register_module()
    class Backbone:
        pass

    assert registry.get("Backbone") is Backbone
    assert list(registry) == ["Backbone"]


def test_decorator_with_an_alias(registry: Registry[Any]) -> None:
    decorated = registry.register_module("alias")(Net)
    assert decorated is Net
    assert registry.get("alias") is Net
    assert registry.get("Net") is None


def test_decorator_with_several_names(registry: Registry[Any]) -> None:
    registry.register_module(name=["a", "b"])(Net)
    assert list(registry.module_dict.items()) == [("a", Net), ("b", Net)]


def test_decorator_with_a_tuple_of_names(registry: Registry[Any]) -> None:
    registry.register_module(name=("a", "b"))(Net)
    assert registry.get("a") is registry.get("b") is Net


@pytest.mark.parametrize(
    "module",
    [make_net, lambda: 1, functools.partial(make_net), Net],
    ids=["function", "lambda", "partial", "class"],
)
def test_direct_form_takes_classes_and_callables(registry: Registry[Any], module: Any) -> None:
    assert registry.register_module(name="thing", module=module) is module
    assert registry.get("thing") is module


def test_direct_form_uses_the_dunder_name(registry: Registry[Any]) -> None:
    registry.register_module(module=make_net)
    assert registry.get("make_net") is make_net


def test_legacy_positional_class_warns_and_registers(registry: Registry[Any]) -> None:
    with pytest.warns(DeprecationWarning, match=r"register_module\(SomeClass\) is deprecated"):
        returned = registry.register_module(Net)  # type: ignore[call-overload]
    assert returned is Net
    assert registry.get("Net") is Net


def test_the_deprecation_names_the_forms_that_replace_it(registry: Registry[Any]) -> None:
    with pytest.warns(DeprecationWarning, match="deprecated") as caught:
        registry.register_module(Net)  # type: ignore[call-overload]
    assert str(caught[0].message) == (
        "register_module(SomeClass) is deprecated; use the decorator "
        "@registry.register_module() or registry.register_module(module=SomeClass)"
    )


def test_the_deprecation_points_at_the_caller(registry: Registry[Any]) -> None:
    with pytest.warns(DeprecationWarning, match="deprecated") as caught:
        registry.register_module(Net)  # type: ignore[call-overload]
    assert caught[0].filename == __file__


def test_a_non_callable_is_named_with_its_type(registry: Registry[Any]) -> None:
    with pytest.raises(TypeError, match=r"registers classes and callables, got 3 of type int$"):
        registry.register_module(name="x", module=3)


def test_a_class_whose_name_holds_a_dot_needs_an_explicit_name(registry: Registry[Any]) -> None:
    dotted = type("a.b", (), {})
    with pytest.raises(
        ValueError,
        match=(
            r"^invalid name 'a\.b' for registry 'model' \(scope 'testing'\): a name is non-empty "
            r"and holds no '\.' \(a dot separates the scope in a key such as 'scope\.Name'\)$"
        ),
    ):
        registry.register_module(module=dotted)
    registry.register_module(name="ab", module=dotted)


def test_legacy_form_honours_force(registry: Registry[Any]) -> None:
    registry.register_module(name="Net", module=OtherNet)
    with pytest.warns(DeprecationWarning, match="deprecated"):
        registry.register_module(Net, force=True)  # type: ignore[call-overload]
    assert registry.get("Net") is Net


@pytest.mark.parametrize("module", [3, "Net", Net()], ids=["int", "str", "instance"])
def test_module_must_be_callable(registry: Registry[Any], module: Any) -> None:
    with pytest.raises(TypeError, match=r"registers classes and callables, got"):
        registry.register_module(name="x", module=module)


def test_decorator_on_a_non_callable_is_a_type_error(registry: Registry[Any]) -> None:
    with pytest.raises(TypeError, match=r"registry 'model' \(scope 'testing'\) registers classes"):
        registry.register_module("x")(42)  # type: ignore[type-var]


def test_an_object_without_a_name_needs_one(registry: Registry[Any]) -> None:
    with pytest.raises(TypeError, match=r"has no __name__; register it .* with an explicit name"):
        registry.register_module(module=functools.partial(make_net))
    assert len(registry) == 0


@pytest.mark.parametrize(
    ("name", "said"),
    [
        (3, r"got 3 \(int\)$"),
        ({"a": 1}.keys(), r"got dict_keys\(\['a'\]\) \(dict_keys\)$"),
        # Bytes are a sequence of ints, which read as 'got 97 in b'ab'' before.
        (b"ab", r"got b'ab' \(bytes\); decode it: 'ab'$"),
    ],
    ids=["int", "keys", "bytes"],
)
def test_name_must_be_a_str_or_a_sequence_of_str(
    registry: Registry[Any], name: Any, said: str
) -> None:
    with pytest.raises(TypeError, match=r"must be None, a str or a sequence of str, " + said):
        registry.register_module(name=name, module=Net)
    assert len(registry) == 0


def test_names_in_a_sequence_must_be_str(registry: Registry[Any]) -> None:
    with pytest.raises(TypeError, match=r"names in registry 'model' .* must be str, got 1"):
        registry.register_module(name=["a", 1], module=Net)


def test_an_empty_sequence_of_names_is_rejected(registry: Registry[Any]) -> None:
    with pytest.raises(ValueError, match=r"empty sequence"):
        registry.register_module(name=[], module=Net)


def test_repeated_names_are_rejected(registry: Registry[Any]) -> None:
    with pytest.raises(ValueError, match=r"repeat: \['a', 'b', 'a'\]"):
        registry.register_module(name=["a", "b", "a"], module=Net)
    assert len(registry) == 0


@pytest.mark.parametrize("name", ["a.b", "", ".x"])
def test_a_name_with_a_dot_or_empty_is_a_value_error(registry: Registry[Any], name: str) -> None:
    with pytest.raises(ValueError, match=r"invalid name .* \(a dot separates the scope"):
        registry.register_module(name=name, module=Net)
    with pytest.raises(ValueError, match=r"invalid name"):
        registry.register_module(name=["ok", name])
    assert len(registry) == 0


@pytest.mark.parametrize("force", [1, "yes", None])
def test_force_must_be_a_bool(registry: Registry[Any], force: Any) -> None:
    with pytest.raises(TypeError, match=r"force must be a bool, got"):
        registry.register_module(name="x", force=force, module=Net)


def test_a_name_bound_to_another_object_is_already_registered(registry: Registry[Any]) -> None:
    registry.register_module(name="Net", module=Net)
    with pytest.raises(
        AlreadyRegisteredError,
        match=(
            rf"'Net' is already registered in registry 'model' \(scope 'testing'\) as "
            rf"{re.escape(__name__)}:Net; cannot bind it to {re.escape(__name__)}:OtherNet\. "
            r"Pass force=True to replace the entry, or register under another name\.$"
        ),
    ) as caught:
        registry.register_module(name="Net", module=OtherNet)
    assert isinstance(caught.value, KeyError)
    assert registry.get("Net") is Net


def test_the_duplicate_error_names_where_a_partial_comes_from(registry: Registry[Any]) -> None:
    registry.register_module(name="make", module=functools.partial(make_net))
    with pytest.raises(AlreadyRegisteredError, match=r"functools\.partial\(.*:make_net\)"):
        registry.register_module(name="make", module=make_net)


def test_the_same_object_under_the_same_name_again_is_a_no_op(registry: Registry[Any]) -> None:
    registry.register_module(name=["Net", "Alias"], module=Net)
    registry.register_module(name="Other", module=OtherNet)
    assert registry.register_module(name="Net", module=Net) is Net
    assert list(registry.module_dict.items()) == [("Net", Net), ("Alias", Net), ("Other", OtherNet)]


def test_the_decorator_refuses_a_name_that_another_class_holds(registry: Registry[Any]) -> None:
    first = registry.register_module()(type("Net", (), {}))
    with pytest.raises(AlreadyRegisteredError, match=r"^'Net' is already registered in registry"):
        registry.register_module()(type("Net", (), {}))
    assert registry.get("Net") is first


def test_the_decorator_with_force_replaces_a_class_of_the_same_name(
    registry: Registry[Any],
) -> None:
    registry.register_module()(type("Net", (), {}))
    second = registry.register_module(force=True)(type("Net", (), {}))
    assert registry.get("Net") is second


def test_force_replaces_in_place(registry: Registry[Any]) -> None:
    for name in ["A", "Net", "B"]:
        registry.register_module(name=name, module=type(name, (), {}))
    registry.register_module(name="Net", module=OtherNet, force=True)
    assert list(registry) == ["A", "Net", "B"]
    assert registry.get("Net") is OtherNet


def test_a_failing_alias_list_leaves_the_registry_as_it_was(registry: Registry[Any]) -> None:
    registry.register_module(name="A", module=Net)
    registry.register_module(name="C", module=OtherNet)
    before = dict(registry.module_dict)
    with pytest.raises(
        AlreadyRegisteredError,
        match=(
            rf"^'C' is already registered in registry 'model' \(scope 'testing'\) as "
            rf"{re.escape(__name__)}:OtherNet; cannot bind it to {re.escape(__name__)}:make_net\."
        ),
    ):
        registry.register_module(name=["B", "C", "D"], module=make_net)
    assert dict(registry.module_dict) == before
    assert list(registry) == ["A", "C"]
    assert registry.get("B") is None


def test_a_failing_registration_leaves_lookups_in_children_missing(
    registry: Registry[Any],
) -> None:
    child: Registry[Any] = Registry("model", parent=registry, scope="child")
    registry.register_module(name="A", module=OtherNet)
    assert child.get("B") is None
    with pytest.raises(AlreadyRegisteredError, match=r"^'A' is already registered in registry"):
        registry.register_module(name=["B", "A"], module=Net)
    assert child.get("B") is None
    assert child.get("A") is OtherNet


def test_a_later_registration_is_seen_by_lookups_that_missed_before(tree: Tree) -> None:
    assert tree.little.get("Late") is None
    assert tree.lion.get("dog.Late") is None
    late = tree.dog.register_module(module=type("Late", (), {}))
    assert tree.little.get("Late") is late
    assert tree.lion.get("dog.Late") is late
    tree.dog.register_module(name="Late", module=Net, force=True)
    assert tree.little.get("Late") is Net
    assert tree.lion.get("dog.Late") is Net


def test_eight_threads_registering_and_looking_up_lose_nothing(dense_switching: None) -> None:
    root: Registry[Any] = Registry("model", scope="threads")
    child: Registry[Any] = Registry("model", parent=root, scope="threads_child")
    threads_count, per_thread = 8, 2_000
    start = threading.Barrier(threads_count + 2)
    wrong: list[str] = []
    done = threading.Event()

    def register(index: int) -> None:
        start.wait()
        target = root if index % 2 else child
        for number in range(per_thread):
            name = f"T{index}_{number}"
            cls = type(name, (), {})
            target.register_module(name=[name, f"{name}_alias"], module=cls)
            # Look up what this thread just registered, through the tree.
            if target.get(name) is not cls or child.get(f"{target.scope}.{name}") is not cls:
                wrong.append(name)

    def look_up() -> None:
        start.wait()
        while not done.is_set():
            for index in range(threads_count):
                found = child.get(f"T{index}_0")
                if found is not None and found.__name__ != f"T{index}_0":
                    wrong.append(f"T{index}_0")

    workers = [threading.Thread(target=register, args=(i,)) for i in range(threads_count)]
    readers = [threading.Thread(target=look_up) for _ in range(2)]
    for thread in workers + readers:
        thread.start()
    for thread in workers:
        thread.join()
    done.set()
    for thread in readers:
        thread.join()

    assert wrong == []
    assert len(root) + len(child) == threads_count * per_thread * 2
    for index in range(threads_count):
        target = root if index % 2 else child
        for number in range(per_thread):
            name = f"T{index}_{number}"
            assert target.get(name) is target.get(f"{name}_alias") is not None
            assert target.get(name).__name__ == name  # type: ignore[union-attr]


def test_a_single_name_never_loses_to_a_name_that_is_taken_back() -> None:
    # A class registered under ['Left', 'Right'] binds 'Left', then finds 'Right' taken and
    # takes 'Left' back. A second thread registering another class as 'Left' in that moment
    # sees the pair's entry; it must wait for the outcome and bind 'Left', not fail.
    registry: Registry[Any] = Registry("race", scope="taken_back")

    def pair() -> None: ...

    def left() -> None: ...

    def right() -> None: ...

    registry.register_module(module=right, name="Right")
    outcome: list[object] = []
    started: list[threading.Thread] = []

    def register_left() -> None:
        try:
            outcome.append(registry.register_module(module=left, name="Left"))
        except AlreadyRegisteredError as error:
            outcome.append(error)

    class PausingName(str):
        """'Right', whose hash runs the second thread once the pair holds 'Left'."""

        paused = False

        def __hash__(self) -> int:
            if not PausingName.paused and registry.module_dict.get("Left") is pair:
                PausingName.paused = True
                single = threading.Thread(target=register_left)
                started.append(single)
                single.start()
                single.join(timeout=0.5)  # it waits for the pair to finish, or ends now
            return str.__hash__(self)

    with pytest.raises(AlreadyRegisteredError, match="'Right' is already registered"):
        registry.register_module(module=pair, name=["Left", PausingName("Right")])
    assert started, "the pair never held 'Left' while checking 'Right'"
    started[0].join(timeout=30)
    assert outcome == [left]
    assert registry.get("Left") is left
    assert registry.get("Right") is right
    assert list(registry) == ["Right", "Left"]
