"""Concurrency (SPEC 2): registries shared by threads, default scopes private to threads and tasks.

Every worker starts at one barrier and the interpreter switches threads every microsecond, so
registrations, forced replacements, new child registries, lookups and builds interleave as
densely as CPython allows. Plugins are raced in a fresh interpreter, where the entry points of a
throwaway distribution (conftest's ``make_distribution``) are read for the first time.
"""

from __future__ import annotations

import asyncio
import functools
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest

from regtree import (
    AlreadyRegisteredError,
    NotRegisteredError,
    Registry,
    ScopeConflictError,
    current_scope,
    default_scope,
)

from .conftest import MakeDistribution, run_json_script

R = TypeVar("R")
THREADS = 8
NAMES_PER_THREAD = 300
CHILDREN = 60


def _labelled(label: str) -> Callable[..., str]:
    """Return a distinct registrable callable that returns ``label``."""

    def entry(**kwargs: object) -> str:
        return label

    entry.__name__ = entry.__qualname__ = label
    return entry


def _run_together(workers: Sequence[Callable[[], R]]) -> list[R]:
    """Start every worker at one barrier; return their results, re-raising any worker's error."""
    barrier = threading.Barrier(len(workers))

    def start(work: Callable[[], R]) -> R:
        barrier.wait()
        return work()

    with ThreadPoolExecutor(max_workers=len(workers)) as pool:
        futures = [pool.submit(start, work) for work in workers]
        return [future.result() for future in futures]


@pytest.mark.usefixtures("dense_switching")
def test_register_lookup_build_force_and_new_children_at_once() -> None:
    root: Registry[Any] = Registry("stress", scope="stress_root")
    hot = [_labelled("hot_a"), _labelled("hot_b")]
    root.register_module(module=hot[0], name="hot")
    planned = {
        f"t{t}_{i}": _labelled(f"t{t}_{i}") for t in range(THREADS) for i in range(NAMES_PER_THREAD)
    }
    child_entries = {f"stress_c{k}": _labelled(f"child_{k}") for k in range(CHILDREN)}
    done = threading.Event()

    def register(thread: int) -> list[str]:
        names = [f"t{thread}_{i}" for i in range(NAMES_PER_THREAD)]
        for name in names:
            assert root.register_module(module=planned[name], name=name) is planned[name]
        return names

    def force_replace() -> int:
        swaps = 0
        while not done.is_set():
            root.register_module(module=hot[swaps % 2], name="hot", force=True)
            swaps += 1
        return swaps

    def grow_children() -> list[str]:
        for scope, entry in child_entries.items():
            child: Registry[Any] = Registry(scope, parent=root, scope=scope)
            child.register_module(module=entry, name="Leaf")
        return list(child_entries)

    def look_up_and_build() -> int:
        seen: set[str] = set()
        checks = 0
        while not done.is_set() or checks == 0:
            for name, entry in planned.items():
                found = root.get(name)
                # Never a wrong object, and never lost once seen.
                assert found is entry or (found is None and name not in seen), name
                if found is not None:
                    seen.add(name)
                    assert root.build({"type": name}) == name
                checks += 1
                if name.endswith("_0"):
                    assert root.get("hot") in hot
            for scope, entry in child_entries.items():
                found = root.get(f"{scope}.Leaf")
                assert found is entry or (found is None and scope not in seen), scope
                if found is not None:
                    seen.add(scope)
        return checks

    writers: list[Callable[[], object]] = [
        *(functools.partial(register, t) for t in range(THREADS - 3)),
        grow_children,
    ]
    readers: list[Callable[[], object]] = [force_replace, look_up_and_build, look_up_and_build]

    registered_by_thread: list[list[str]] = []

    def writers_then_stop() -> int:
        try:
            names = _run_together(writers)
        finally:
            done.set()
        registered_by_thread.extend(n for n in names[:-1] if isinstance(n, list))
        return len(names)

    _run_together([writers_then_stop, *readers])
    assert len(registered_by_thread) == THREADS - 3

    assert len(root) == 1 + sum(len(names) for names in registered_by_thread)
    order = list(root)
    assert order[0] == "hot"  # forced replacements keep the position
    assert root.get("hot") in hot
    for names in registered_by_thread:
        positions = [order.index(name) for name in names]
        assert positions == sorted(positions)  # each thread's names in its own order
        assert all(root.get(name) is planned[name] for name in names)
    assert list(root.children) == list(child_entries)
    assert all(root.get(f"{scope}.Leaf") is entry for scope, entry in child_entries.items())


@pytest.mark.usefixtures("dense_switching")
def test_racing_registrations_of_one_name_leave_exactly_one_winner() -> None:
    registry: Registry[Any] = Registry("race", scope="stress_race")
    contenders = [_labelled(f"contender_{i}") for i in range(THREADS)]

    def claim(entry: Callable[..., str]) -> Callable[[], object]:
        def attempt() -> object:
            try:
                return registry.register_module(module=entry, name="Prize")
            except AlreadyRegisteredError as error:
                return error

        return attempt

    outcomes = _run_together([claim(entry) for entry in contenders])

    winners = [outcome for outcome in outcomes if not isinstance(outcome, Exception)]
    assert len(winners) == 1
    assert registry.get("Prize") is winners[0]
    assert list(registry) == ["Prize"]
    losers = [outcome for outcome in outcomes if isinstance(outcome, AlreadyRegisteredError)]
    assert len(losers) == THREADS - 1
    assert all("Prize" in str(error) for error in losers)


@pytest.mark.usefixtures("dense_switching")
def test_racing_children_with_one_scope_leave_exactly_one() -> None:
    root: Registry[Any] = Registry("race root", scope="stress_scopes")

    def create(index: int) -> Callable[[], object]:
        def attempt() -> object:
            try:
                return Registry(f"contender {index}", parent=root, scope="contested")
            except ScopeConflictError as error:
                return error

        return attempt

    outcomes = _run_together([create(i) for i in range(THREADS)])

    made = [outcome for outcome in outcomes if isinstance(outcome, Registry)]
    assert len(made) == 1
    assert dict(root.children) == {"contested": made[0]}
    errors = [outcome for outcome in outcomes if isinstance(outcome, ScopeConflictError)]
    assert len(errors) == THREADS - 1
    assert all("contested" in str(error) for error in errors)


def _scoped_tree(count: int) -> tuple[Registry[Any], list[str]]:
    """A root with ``count`` children, each registering ``Who`` as a callable naming its scope."""
    root: Registry[Any] = Registry("isolation root", scope="iso_root")
    scopes = [f"iso{i}" for i in range(count)]
    for scope in scopes:
        Registry(scope, parent=root, scope=scope).register_module(
            module=_labelled(scope), name="Who"
        )
    root.register_module(module=_labelled("iso_root"), name="Who")
    return root, scopes


@pytest.mark.usefixtures("dense_switching")
def test_default_scope_is_private_to_each_thread() -> None:
    root, scopes = _scoped_tree(THREADS)
    middle = threading.Barrier(THREADS)

    def work(scope: str) -> Callable[[], list[object]]:
        def run() -> list[object]:
            seen: list[object] = [current_scope()]
            with default_scope(scope):
                middle.wait()  # every thread is inside its own block now
                for _ in range(200):
                    seen.append(current_scope())
                    seen.append(root.build({"type": "Who"}))
            seen.append(current_scope())
            return seen

        return run

    with default_scope("iso0"):
        results = _run_together([work(scope) for scope in scopes])
        assert current_scope() == "iso0"  # the main thread's own scope is untouched

    # A new thread starts from an empty context (Python 3.14 can opt in to inheriting one).
    first = "iso0" if getattr(sys.flags, "thread_inherit_context", 0) else None
    for scope, seen in zip(scopes, results, strict=True):
        assert seen[0] == first
        assert set(seen[1:-1]) == {scope}
        assert seen[-1] is None
    assert current_scope() is None


def test_default_scope_is_private_to_each_asyncio_task() -> None:
    root, scopes = _scoped_tree(THREADS)

    async def task(scope: str, barrier: asyncio.Barrier) -> list[object]:
        inherited = current_scope()
        seen: list[object] = []
        with default_scope(scope):
            await barrier.wait()
            for _ in range(50):
                seen.append(current_scope())
                seen.append(root.build({"type": "Who"}))
                await asyncio.sleep(0)
        return [inherited, *seen, current_scope()]

    async def main() -> list[list[object]]:
        barrier = asyncio.Barrier(len(scopes))
        with default_scope("iso_root"):
            # A task starts from a copy of its creator's context, then changes only its own.
            results = await asyncio.gather(*(task(scope, barrier) for scope in scopes))
            assert current_scope() == "iso_root"
        return results

    results = asyncio.run(main())

    for scope, seen in zip(scopes, results, strict=True):
        assert seen[0] == "iso_root"
        assert set(seen[1:-1]) == {scope}
        assert seen[-1] == "iso_root"
    assert current_scope() is None


# -- plugins raced in a fresh interpreter -------------------------------------------------------

_RACE_ROOT = """
from regtree import Registry

ROOT = Registry("race root", scope="race_root")
"""
_RACE_PLUGIN = """
import time
from pathlib import Path

with Path(__file__).with_name("imports.log").open("a") as log:
    log.write("imported\\n")
time.sleep(0.2)  # hold the import open while the other threads arrive

from regtree import Registry

import race_root

MODELS = Registry("race models", parent=race_root.ROOT, scope="race_plugin")


@MODELS.register_module()
class Thing:
    pass
"""
_RACE_SCRIPT = """
import json
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import race_root

barrier = threading.Barrier(THREADS)


def look_up(index):
    barrier.wait()
    if index % 2:
        found = race_root.ROOT.get("race_plugin.Thing")
    else:
        found = race_root.ROOT.build({"type": "race_plugin.Thing"}).__class__
    return found.__qualname__ if found is not None else None


sys.setswitchinterval(1e-6)
with ThreadPoolExecutor(THREADS) as pool:
    results = list(pool.map(look_up, range(THREADS)))
print(json.dumps(results))
"""


def test_plugin_loading_raced_from_threads_imports_it_once(
    make_distribution: MakeDistribution,
) -> None:
    site = make_distribution(
        "race-plugin-dist",
        {"race_plugin": "race_plugin"},
        {"race_root": _RACE_ROOT, "race_plugin": _RACE_PLUGIN},
    ).parent
    script = _RACE_SCRIPT.replace("THREADS", str(THREADS))

    assert run_json_script(script, cwd=site, pythonpath=str(site)) == ["Thing"] * THREADS
    assert (site / "imports.log").read_text().splitlines() == ["imported"]


def test_did_you_mean_text_is_written_while_other_threads_register(dense_switching: None) -> None:
    root: Registry[Any] = Registry("stress", scope="dym_root")
    child: Registry[Any] = Registry("stress", parent=root, scope="dym_child")
    for index in range(50):
        child.register_module(name=f"Seed{index}", module=type(f"Seed{index}", (), {}))
    stop = threading.Event()

    def register(prefix: str) -> None:
        index = 0
        while not stop.is_set() and index < 1_500:
            target = root if index % 2 else child
            target.register_module(name=f"{prefix}{index}", module=type("Made", (), {}))
            if index % 50 == 0:
                Registry("stress", parent=child, scope=f"{prefix}_sub{index}")
            index += 1

    threads = [threading.Thread(target=register, args=(f"T{n}x",)) for n in range(3)]
    for thread in threads:
        thread.start()
    try:
        for _ in range(40):
            with pytest.raises(NotRegisteredError, match=r"Did you mean 'Seed1'"):
                child.build({"type": "Sed1"})
            with pytest.raises(NotRegisteredError, match=r"No registry in its tree has scope"):
                root.build({"type": "nowhere_scope.Seed1"})
    finally:
        stop.set()
        for thread in threads:
            thread.join()
