"""default_scope / current_scope (SPEC 2.1) and the ``_scope_`` key."""

from __future__ import annotations

import asyncio
import importlib.metadata
import threading
import warnings
from collections.abc import AsyncGenerator, Generator
from typing import Any

import pytest

from regtree import NotRegisteredError, Registry, current_scope, default_scope

from .conftest import Tree


def test_no_scope_is_active_by_default() -> None:
    assert current_scope() is None


def test_scopes_nest_and_restore() -> None:
    with default_scope("outer") as entered:
        assert entered == "outer"
        assert current_scope() == "outer"
        with default_scope("inner"):
            assert current_scope() == "inner"
            with default_scope(None):
                assert current_scope() is None
            assert current_scope() == "inner"
        assert current_scope() == "outer"
    assert current_scope() is None


def test_the_scope_is_restored_after_an_exception() -> None:
    with default_scope("outer"):
        with pytest.raises(RuntimeError, match="boom"), default_scope("inner"):
            raise RuntimeError("boom")
        assert current_scope() == "outer"
    assert current_scope() is None


def test_one_context_manager_may_be_entered_again_and_nested() -> None:
    scope = default_scope("again")
    with scope, scope:
        assert current_scope() == "again"
    with default_scope("other"):
        with scope:
            assert current_scope() == "again"
        assert current_scope() == "other"
    assert repr(scope) == "default_scope('again')"


def test_a_with_restores_what_it_found_while_a_generator_inside_it_is_suspended() -> None:
    def suspended() -> Generator[None, None, None]:
        with default_scope("inner"):
            yield

    with default_scope("outer"):
        generator = suspended()
        next(generator)  # the inner block is entered and left open
        assert current_scope() == "inner"
    assert current_scope() is None
    generator.close()  # the inner block ends after the outer one: nothing comes back
    assert current_scope() is None


def test_two_blocks_left_open_inside_an_ended_one_each_restore_in_turn() -> None:
    # The outer block ends first (back to 'base', which the generator then resumes in); the blocks
    # still open inside it end in their order: the inner one restores what it found, the outer
    # one of the two what the ended block found.
    seen: list[str | None] = []

    def suspended() -> Generator[None, None, None]:
        with default_scope("first"):
            with default_scope("second"):
                yield
                seen.append(current_scope())
            seen.append(current_scope())
        seen.append(current_scope())

    with default_scope("base"):
        with default_scope("outer"):
            generator = suspended()
            next(generator)
        assert current_scope() == "base"
        next(generator, None)  # resumes: both blocks end
        assert seen == ["base", "first", "base"]
        assert current_scope() == "base"
    assert current_scope() is None


def test_a_with_restores_what_it_found_while_an_async_generator_inside_it_is_suspended() -> None:
    async def suspended() -> AsyncGenerator[None, None]:
        with default_scope("inner"):
            yield

    async def main() -> list[str | None]:
        seen = []
        with default_scope("outer"):
            generator = suspended()
            await anext(generator)
            seen.append(current_scope())
        seen.append(current_scope())
        await generator.aclose()
        seen.append(current_scope())
        return seen

    assert asyncio.run(main()) == ["inner", None, None]


@pytest.mark.parametrize("scope", ["", "a.b"])
def test_a_default_scope_is_a_valid_scope_name(scope: str) -> None:
    with pytest.raises(ValueError, match=r"default scope must be a non-empty name without '\.'"):
        default_scope(scope)


def test_a_default_scope_is_a_str_or_none() -> None:
    with pytest.raises(TypeError, match=r"default scope must be a str"):
        default_scope(3)  # type: ignore[arg-type]


def test_threads_do_not_see_each_others_scope() -> None:
    seen: dict[str, str | None] = {}
    inside = threading.Event()
    checked = threading.Event()

    def other_thread() -> None:
        inside.wait()
        seen["other before"] = current_scope()
        with default_scope("theirs"):
            seen["other inside"] = current_scope()
        checked.set()

    thread = threading.Thread(target=other_thread)
    thread.start()
    with default_scope("mine"):
        inside.set()
        checked.wait()
        seen["mine"] = current_scope()
    thread.join()
    assert seen == {"other before": None, "other inside": "theirs", "mine": "mine"}


def test_asyncio_tasks_do_not_see_each_others_scope() -> None:
    async def worker(scope: str, started: asyncio.Event, other: asyncio.Event) -> list[Any]:
        seen = []
        with default_scope(scope):
            started.set()
            await other.wait()  # the other task enters its own scope meanwhile
            seen.append(current_scope())
            await asyncio.sleep(0)
            seen.append(current_scope())
        seen.append(current_scope())
        return seen

    async def main() -> list[list[Any]]:
        a_started, b_started = asyncio.Event(), asyncio.Event()
        return await asyncio.gather(
            worker("a", a_started, b_started), worker("b", b_started, a_started)
        )

    assert asyncio.run(main()) == [["a", "a", None], ["b", "b", None]]


def test_one_default_scope_object_is_shared_by_eight_threads() -> None:
    shared = default_scope("shared")
    together = threading.Barrier(8, timeout=60)  # a broken run fails instead of hanging
    seen: dict[int, tuple[str | None, ...]] = {}

    def work(index: int) -> None:
        outer = current_scope()
        with default_scope(f"own{index}"):
            together.wait()
            with shared:  # all eight threads inside the same object at once
                together.wait()
                inside = current_scope()
                with shared:  # and re-entered
                    again = current_scope()
                together.wait()
                after_inner = current_scope()
            together.wait()  # every thread leaves before any checks what it found
            after = current_scope()
        seen[index] = (outer, inside, again, after_inner, after, current_scope())

    threads = [threading.Thread(target=work, args=(index,)) for index in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == {
        index: (None, "shared", "shared", "shared", f"own{index}", None) for index in range(8)
    }


def test_one_default_scope_object_is_shared_by_asyncio_tasks() -> None:
    shared = default_scope("shared")

    async def work(index: int, together: asyncio.Barrier) -> tuple[str | None, ...]:
        with default_scope(f"own{index}"):
            await together.wait()
            with shared:
                await together.wait()  # every task is inside the same object
                inside = current_scope()
            await together.wait()
            after = current_scope()
        return inside, after, current_scope()

    async def main() -> list[tuple[str | None, ...]]:
        together = asyncio.Barrier(8)
        return await asyncio.gather(*[work(index, together) for index in range(8)])

    assert asyncio.run(main()) == [("shared", f"own{index}", None) for index in range(8)]


def test_switch_scope_and_registry_yields_the_registry_of_the_scope(tree: Tree) -> None:
    with tree.cat.switch_scope_and_registry("hound") as registry:
        assert registry is tree.hound
        assert current_scope() == "hound"
        assert tree.root.build({"type": "BloodHound"}).registry is tree.hound
    assert current_scope() is None


def test_switch_scope_and_registry_yields_itself_for_a_scope_not_in_the_tree(
    tree: Tree, catalog: Any
) -> None:
    # A warning, as mmengine's, naming the closest scope and the caller's line.
    switch = tree.cat.switch_scope_and_registry("houndd")
    with pytest.warns(
        UserWarning, match=r"switch_scope_and_registry\('houndd'\): no registry"
    ) as seen:
        registry = switch.__enter__()
    try:
        assert registry is tree.cat
        assert current_scope() == "houndd"
    finally:
        switch.__exit__(None, None, None)
    assert "gets registry 'animal' (scope 'cat') itself. Did you mean scope 'hound'?" in str(
        seen[0].message
    )
    assert seen[0].filename == __file__
    other_root: Registry[Any] = Registry("optimizer", scope="elsewhere_root")
    Registry("optimizer", parent=other_root, scope="elsewhere")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # None, a scope of the tree or of another tree: no word
        with tree.cat.switch_scope_and_registry("hound"):
            pass
        with tree.cat.switch_scope_and_registry("elsewhere") as registry:
            assert registry is tree.cat
            assert current_scope() == "elsewhere"
        with tree.cat.switch_scope_and_registry(None) as registry:
            assert registry is tree.cat
            assert current_scope() is None
    with pytest.raises(ValueError, match=r"the scope to switch to must be a non-empty name"):
        tree.cat.switch_scope_and_registry("a.b").__enter__()
    assert current_scope() is None


def test_a_build_that_falls_back_from_the_default_scope_leaves_the_class_alone(
    tree: Tree,
) -> None:
    lion = tree.lion.get("Lion")
    before = dict(vars(lion))
    with default_scope("dog"):
        assert tree.lion.build({"type": "Lion"}).registry is tree.lion
    assert dict(vars(lion)) == before


def test_build_resolves_through_the_default_scope_first(tree: Tree) -> None:
    with default_scope("dog"):
        assert tree.root.build({"type": "Shared"}).registry is tree.dog
        assert tree.cat.build({"type": "Dog"}).registry is tree.dog
        assert tree.lion.build({"type": "Lion"}).registry is tree.lion  # falls back
        assert tree.root.build({"type": "Animal"}).registry is tree.root
        # Lookups by get() are not affected.
        assert tree.root.get("Shared").registry is tree.root  # type: ignore[union-attr]
    assert tree.root.build({"type": "Shared"}).registry is tree.root


def test_a_build_under_a_default_scope_of_the_tree_reads_no_entry_points(
    tree: Tree, catalog: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[object] = []
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **params: reads.append(params))
    with default_scope("cat"):
        assert type(tree.root.build({"type": "Cat"})).__name__ == "Cat"  # found there
        assert type(tree.dog.build({"type": "Dog"})).__name__ == "Dog"  # not there: found here
    assert reads == []


def test_a_default_scope_missing_from_the_tree_is_skipped(tree: Tree, catalog: Any) -> None:
    with default_scope("elsewhere"):
        assert tree.dog.build({"type": "Dog"}).registry is tree.dog


def test_a_miss_under_a_default_scope_names_both_registries(tree: Tree) -> None:
    with (
        default_scope("cat"),
        pytest.raises(
            NotRegisteredError,
            match=(
                r"'Hund' is not registered in registry 'animal' \(scope 'dog'\) nor in registry "
                r"'animal' \(scope 'cat'\), the default scope"
            ),
        ),
    ):
        tree.dog.build({"type": "Hund"})


def test_scope_key_applies_to_this_build_and_the_builds_nested_in_it(tree: Tree) -> None:
    seen: list[tuple[str | None, Any]] = []

    @tree.root.register_module()
    class Pair:
        def __init__(self, left: dict[str, Any], right: dict[str, Any]) -> None:
            seen.append((current_scope(), None))
            self.left = tree.root.build(left)
            self.right = tree.root.build(right)

    pair = tree.root.build(
        {
            "_scope_": "cat",
            "type": "Pair",
            "left": {"type": "Cat"},
            "right": {"type": "Shared", "_scope_": "dog"},
        }
    )
    assert seen == [("cat", None)]
    assert pair.left.registry is tree.cat
    assert pair.right.registry is tree.dog
    assert current_scope() is None


def test_scope_key_never_reaches_the_callable(tree: Tree) -> None:
    received: dict[str, Any] = {}

    def record(**kwargs: Any) -> dict[str, Any]:
        received.update(kwargs, scope=current_scope())
        return received

    tree.root.register_module(name="record", module=record)
    tree.root.build({"type": "record", "_scope_": "lion", "value": 1})
    assert received == {"value": 1, "scope": "lion"}


def test_scope_key_resolves_the_type_of_its_own_build(tree: Tree) -> None:
    assert tree.root.build({"type": "Lion", "_scope_": "lion"}).registry is tree.lion


def test_scope_key_from_default_args_applies(tree: Tree) -> None:
    built = tree.root.build({"type": "Shared"}, default_args={"_scope_": "dog"})
    assert built.registry is tree.dog


@pytest.mark.parametrize(("value", "error"), [(3, TypeError), ("a.b", ValueError)])
def test_a_bad_scope_key_is_rejected(
    registry: Registry[Any], value: object, error: type[Exception]
) -> None:
    registry.register_module(name="Thing", module=dict)
    with pytest.raises(error, match=r"the '_scope_' of a config must be"):
        registry.build({"type": "Thing", "_scope_": value})
