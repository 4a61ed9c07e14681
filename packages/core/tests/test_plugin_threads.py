"""Plugins imported from many threads at once (SPEC 2.4).

The first cases run in a fresh interpreter, where the entry points are read for the first time
and a deadlock cannot outlive the test: each script runs its threads as daemons, waits for them
with a limit, and prints how far every thread got, so a hang fails the test with that report
instead of hanging the run. The cases after them run the same code in this process (throwaway
distributions, a fresh catalog), with the threads put in one order by events, so that each
interleaving under test happens every time; their threads are daemons joined with a limit too.
"""

from __future__ import annotations

import importlib
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from regtree import Registry, _plugins

from .conftest import PLUGIN_HOST, MakeDistribution, PluginHost, run_json_script

# How long a thread of the in-process cases may take to reach its next step, in seconds. A
# thread that does not get there is stuck (the test fails, naming the step); none waits this long
# when the code is right.
LIMIT = 30.0

_HOST = """
import threading

from regtree import Registry

ROOT = Registry("model", scope="pt_host")
a_started = threading.Event()
b_started = threading.Event()
"""

# Each plugin, while being imported, looks the other one's scope up before it has a registry of
# its own: with a lock held across the import, the two threads waited for each other forever.
_PLUGIN = """
import pt_host
from regtree import Registry

pt_host.MINE_started.set()
pt_host.OTHER_started.wait(30)
SAW = pt_host.ROOT.get("pt_plugin_OTHER.Thing")

MODELS = Registry("model", parent=pt_host.ROOT, scope="pt_plugin_MINE")


@MODELS.register_module()
class Thing:
    pass
"""

_DEADLOCK_SCRIPT = """
import importlib
import json
import os
import sys
import threading

import pt_host
from regtree import _plugins

progress = {"lookup": "started", "import": "started"}


def look_up():
    found = pt_host.ROOT.get("pt_plugin_a.Thing")
    progress["lookup"] = "done: " + (found.__module__ if found is not None else "None")


def plain_import():
    module = importlib.import_module("pt_plugin_b")
    progress["import"] = "done: " + module.__name__


threads = [
    threading.Thread(target=look_up, daemon=True),
    threading.Thread(target=plain_import, daemon=True),
]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join(30)


def saw(module_name):
    found = getattr(sys.modules.get(module_name), "SAW", None)
    return None if found is None else found.__module__


report = {
    "progress": progress,
    "a_saw": saw("pt_plugin_a"),
    "b_saw": saw("pt_plugin_b"),
    "failed": sorted(_plugins.catalog.failed),
}
if all(value.startswith("done") for value in progress.values()):
    # Both plugins are whole now: their scopes answer from any thread.
    report["after"] = [
        pt_host.ROOT.get(key).__module__ for key in ("pt_plugin_a.Thing", "pt_plugin_b.Thing")
    ]
print(json.dumps(report), flush=True)
os._exit(0)  # a deadlocked daemon thread must not keep the interpreter alive
"""


def _plugin(mine: str, other: str) -> str:
    return _PLUGIN.replace("MINE", mine).replace("OTHER", other)


def test_two_plugins_looking_each_other_up_from_two_threads_both_finish(
    make_distribution: MakeDistribution,
) -> None:
    site = make_distribution(
        "pt-plugins",
        {"pt_plugin_a": "pt_plugin_a", "pt_plugin_b": "pt_plugin_b"},
        {"pt_host": _HOST, "pt_plugin_a": _plugin("a", "b"), "pt_plugin_b": _plugin("b", "a")},
    ).parent

    report: dict[str, Any] = run_json_script(_DEADLOCK_SCRIPT, cwd=site, pythonpath=str(site))

    assert report["progress"] == {"lookup": "done: pt_plugin_a", "import": "done: pt_plugin_b"}
    # Thread 1 waited for plugin b, which did not wait on it; thread 2 would have waited for
    # plugin a, which was waiting on thread 2, so it saw scope pt_plugin_a as it was: empty.
    assert (report["a_saw"], report["b_saw"]) == ("pt_plugin_b", None)
    assert report["failed"] == []  # a cycle between threads is nobody's failure
    assert report["after"] == ["pt_plugin_a", "pt_plugin_b"]


_FAILING_PLUGIN = """
import time
from pathlib import Path

with Path(__file__).with_name("imports.log").open("a") as log:
    log.write("imported\\n")
time.sleep(0.2)  # hold the import open while the other threads arrive
raise ImportError("pt_failing needs libfoo")
"""

_RACE_SCRIPT = """
import json
import os
import threading

import pt_host

THREADS = 6
barrier = threading.Barrier(THREADS, timeout=60)
outcomes = [None] * THREADS


def look_up(index):
    barrier.wait()
    try:
        pt_host.ROOT.get("pt_failing.Thing")
    except BaseException as error:
        outcomes[index] = [type(error).__name__, isinstance(error, ImportError), str(error)]
    else:
        outcomes[index] = ["returned", False, ""]


threads = [threading.Thread(target=look_up, args=(i,), daemon=True) for i in range(THREADS)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join(60)
print(json.dumps(outcomes), flush=True)
os._exit(0)
"""


def test_a_failing_plugin_raced_by_six_threads_runs_once_and_fails_in_each(
    make_distribution: MakeDistribution,
) -> None:
    site = make_distribution(
        "pt-failing-dist",
        {"pt_failing": "pt_failing"},
        {"pt_host": _HOST, "pt_failing": _FAILING_PLUGIN},
    ).parent

    outcomes: list[Any] = run_json_script(_RACE_SCRIPT, cwd=site, pythonpath=str(site))

    assert (site / "imports.log").read_text().splitlines() == ["imported"]
    assert all(outcome is not None for outcome in outcomes), outcomes  # no thread is stuck
    assert [is_import_error for _, is_import_error, _ in outcomes] == [True] * 6, outcomes
    messages = [message for _, _, message in outcomes]
    # One thread ran the plugin and got its error; the five that waited get the remembered one.
    assert messages.count("pt_failing needs libfoo") == 1, messages
    remembered = "failed to import earlier in this process: ImportError: pt_failing needs libfoo"
    assert sum(remembered in message for message in messages) == 5, messages


# -- the same code in this process, each interleaving forced by events ---------------------------


def _wait_until(condition: Callable[[], bool], what: str) -> None:
    """Return once ``condition()`` holds; fail the test naming ``what`` after LIMIT seconds."""
    deadline = time.monotonic() + LIMIT
    pause = threading.Event()  # never set: a pause that no clock adjustment can stretch
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        pause.wait(0.001)


def _start(target: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def _join(*threads: threading.Thread) -> None:
    for thread in threads:
        thread.join(LIMIT)
    assert not any(thread.is_alive() for thread in threads), "a thread is stuck"


def _events(host: PluginHost, *names: str) -> None:
    host.events.update({name: threading.Event() for name in names})


def _look_up(
    host: PluginHost, key: str, outcomes: dict[str, str], label: str
) -> Callable[[], None]:
    """Return a thread body that looks ``key`` up and records how it went under ``label``."""

    def body() -> None:
        try:
            found = host.root.get(key)
        except BaseException as error:  # recorded for the test, which checks every outcome
            outcomes[label] = f"{type(error).__name__}: {error}"
        else:
            outcomes[label] = "None" if found is None else f"found in {found.__module__}"

    return body


# A plugin that holds its import open until the test releases it, then registers Thing (or fails).
_HELD_PLUGIN = f"""
from {PLUGIN_HOST} import host
from regtree import Registry

host.imports.append(__name__)
host.events["started"].set()
host.events["release"].wait({LIMIT})
if host.events.get("fail") is not None:
    raise ImportError(__name__ + " needs libfoo")
MODELS = Registry("model", parent=host.root)


@MODELS.register_module()
class Thing:
    pass
"""


def _race(
    make_distribution: MakeDistribution,
    host: PluginHost,
    catalog: _plugins.PluginCatalog,
    scope: str,
    threads: int,
) -> dict[str, str]:
    """Look ``scope.Thing`` up from ``threads`` threads; all but the first wait for its import."""
    make_distribution(f"{scope}-dist", {scope: scope}, {scope: _HELD_PLUGIN})
    outcomes: dict[str, str] = {}
    first = _start(_look_up(host, f"{scope}.Thing", outcomes, "first"))
    assert host.events["started"].wait(LIMIT), "the first thread never started the import"
    others = [
        _start(_look_up(host, f"{scope}.Thing", outcomes, f"waiter {index}"))
        for index in range(1, threads)
    ]
    try:
        _wait_until(
            lambda: len(catalog._waiting) == threads - 1,
            f"{threads - 1} threads wait for the import",
        )
    finally:
        host.events["release"].set()
    _join(first, *others)
    return outcomes


def test_threads_that_wait_for_a_plugin_import_all_find_its_registry(
    make_distribution: MakeDistribution,
    plugin_host: PluginHost,
    catalog: _plugins.PluginCatalog,
) -> None:
    _events(plugin_host, "started", "release")
    outcomes = _race(make_distribution, plugin_host, catalog, "pt_in_held", threads=4)
    assert outcomes == dict.fromkeys(
        ["first", "waiter 1", "waiter 2", "waiter 3"], "found in pt_in_held"
    )
    assert plugin_host.imports == ["pt_in_held"]


# A plugin that makes its registry at once, then holds its import open before filling it.
_FILLING_PLUGIN = f"""
from {PLUGIN_HOST} import host
from regtree import Registry

MODELS = Registry("model", parent=host.root)
host.events["made"].set()
host.events["release"].wait({LIMIT})


@MODELS.register_module()
class Thing:
    pass
"""


def test_a_lookup_waits_for_a_plugin_that_made_its_registry_and_is_filling_it(
    make_distribution: MakeDistribution,
    plugin_host: PluginHost,
    catalog: _plugins.PluginCatalog,
) -> None:
    # SPEC 2.4: only a wait that would close an import cycle sees the scope as it is; here
    # the scope's registry is in the tree already, half-filled, and the lookup still waits.
    _events(plugin_host, "made", "release")
    make_distribution(
        "pt-filling-dist", {"pt_filling": "pt_filling"}, {"pt_filling": _FILLING_PLUGIN}
    )
    outcomes: dict[str, str] = {}
    first = _start(_look_up(plugin_host, "pt_filling.Thing", outcomes, "first"))
    assert plugin_host.events["made"].wait(LIMIT), "the plugin never made its registry"
    second = _start(_look_up(plugin_host, "pt_filling.Thing", outcomes, "second"))
    try:
        _wait_until(lambda: len(catalog._waiting) == 1, "the second thread waits for the import")
    finally:
        plugin_host.events["release"].set()
    _join(first, second)
    assert outcomes == {"first": "found in pt_filling", "second": "found in pt_filling"}


def test_a_location_import_does_not_wait_for_a_plugin_that_needs_its_registry(
    make_distribution: MakeDistribution,
    plugin_host: PluginHost,
    catalog: _plugins.PluginCatalog,
    module_dir: Path,
) -> None:
    # A location module (its registry's lock held) looks the plugin's scope up while the plugin,
    # in another thread, has made its registry and goes on to look the location's registry up:
    # waiting for the plugin there would hang both threads, so the location sees it as it is.
    _events(plugin_host, "made", "in_location")
    found: dict[str, object] = {}
    plugin_host.found = found  # type: ignore[attr-defined]
    locations = Registry("model", parent=plugin_host.root, scope="pt_locs", locations=["pt_locmod"])
    plugin_host.locations = locations  # type: ignore[attr-defined]
    (module_dir / "pt_locmod.py").write_text(
        f"from {PLUGIN_HOST} import host\n"
        f"host.events['made'].wait({LIMIT})\n"
        "host.events['in_location'].set()\n"
        "host.found['location'] = host.root.get('pt_needs_locs.Thing')\n"
        "@host.locations.register_module()\nclass Backbone:\n    pass\n"
    )
    plugin = (
        f"from {PLUGIN_HOST} import host\n"
        "from regtree import Registry\n"
        "MODELS = Registry('model', parent=host.root)\n"
        "@MODELS.register_module()\nclass Thing:\n    pass\n"
        "host.events['made'].set()\n"
        f"host.events['in_location'].wait({LIMIT})\n"
        "host.found['plugin'] = host.root.get('pt_locs.Backbone')\n"
    )
    make_distribution(
        "pt-needs-locs", {"pt_needs_locs": "pt_needs_locs"}, {"pt_needs_locs": plugin}
    )
    outcomes: dict[str, str] = {}
    importer = _start(_look_up(plugin_host, "pt_needs_locs.Thing", outcomes, "plugin"))
    assert plugin_host.events["made"].wait(LIMIT), "the plugin never made its registry"
    location = _start(_look_up(plugin_host, "pt_locs.Backbone", outcomes, "location"))
    _join(importer, location)
    assert outcomes == {"plugin": "found in pt_needs_locs", "location": "found in pt_locmod"}
    assert type(found["location"]).__name__ == "type"
    assert found["plugin"] is sys.modules["pt_locmod"].Backbone


def test_a_lookup_that_finds_the_scope_as_its_plugin_fails_gets_the_import_error(
    monkeypatch: pytest.MonkeyPatch, plugin_host: PluginHost, catalog: _plugins.PluginCatalog
) -> None:
    # The lookup finds the scope's registry, then the plugin fails and its import ends before
    # the lookup asks whether it is still importing: the failure is read after that question.
    scoped = Registry("model", parent=plugin_host.root, scope="pt_failing_late")
    scoped.register_module(name="Half", module=dict)
    failure = ImportError("pt_failing_late needs libfoo")

    def fails_meanwhile(self: _plugins.PluginCatalog, scope: str) -> bool:
        self.failed[scope] = ("pt-failing-late", failure)
        return False

    monkeypatch.setattr(_plugins.PluginCatalog, "importing", fails_meanwhile)
    with pytest.raises(ImportError, match="plugin for scope 'pt_failing_late'") as caught:
        plugin_host.root.get("pt_failing_late.Half")
    assert caught.value.__cause__ is failure


def test_threads_that_wait_for_a_failing_plugin_each_get_an_import_error(
    make_distribution: MakeDistribution,
    plugin_host: PluginHost,
    catalog: _plugins.PluginCatalog,
) -> None:
    _events(plugin_host, "started", "release", "fail")
    outcomes = _race(make_distribution, plugin_host, catalog, "pt_in_failing", threads=6)
    assert plugin_host.imports == ["pt_in_failing"]  # the plugin ran once
    assert outcomes.pop("first") == "ImportError: pt_in_failing needs libfoo"
    remembered = (
        "ImportError: the plugin for scope 'pt_in_failing' (distribution 'pt_in_failing-dist') "
        "failed to import earlier in this process: ImportError: pt_in_failing needs libfoo; fix "
        "or reinstall it and start a new process (plugins are imported once)"
    )
    assert outcomes == {f"waiter {index}": remembered for index in range(1, 6)}


# Plugin a looks plugin b up while it is imported, once the test lets it; plugin b looks a up.
_LOOKING_PLUGIN = f"""
from {PLUGIN_HOST} import host
from regtree import Registry

host.events["MINE started"].set()
host.events["MINE may look up"].wait({LIMIT})
SAW = host.root.get("OTHER.Thing")
MODELS = Registry("model", parent=host.root)


@MODELS.register_module()
class Thing:
    pass
"""


def _looking(mine: str, other: str) -> str:
    return _LOOKING_PLUGIN.replace("MINE", mine).replace("OTHER", other)


def _looking_plugins(
    make_distribution: MakeDistribution,
    host: PluginHost,
    a: str,
    b: str,
    b_files: dict[str, str] | None = None,
    b_entry: str | None = None,
) -> None:
    """Install plugins ``a`` and ``b`` (its code in ``b_files``, its entry point ``b_entry``)."""
    _events(host, *[f"{name} {step}" for name in (a, b) for step in ("started", "may look up")])
    files = {a: _looking(a, b), **(b_files or {b: _looking(b, a)})}
    make_distribution(f"{a}-dist", {a: a, b: b_entry or b}, files)


def _saw(module: str) -> str:
    found = importlib.import_module(module).SAW
    return "None" if found is None else f"found in {found.__module__}"


def _look_up_beside_a_plain_import(
    host: PluginHost, catalog: _plugins.PluginCatalog, a: str, b: str, imported: str
) -> dict[str, str]:
    """Thread 1 looks ``a.Thing`` up; thread 2 imports ``imported`` (plugin b's code) itself.

    Thread 2 asks for scope ``a`` and waits for thread 1 before plugin ``a`` asks for ``b``.
    """
    events = host.events
    events[f"{b} may look up"].set()
    outcomes: dict[str, str] = {}
    lookup = _start(_look_up(host, f"{a}.Thing", outcomes, "lookup"))
    assert events[f"{a} started"].wait(LIMIT), f"thread 1 never started importing plugin {a}"

    def plain_import() -> None:
        outcomes["import"] = importlib.import_module(imported).__name__

    importer = _start(plain_import)
    try:
        _wait_until(lambda: importer.ident in catalog._waiting, f"thread 2 waits for plugin {a}")
    finally:
        events[f"{a} may look up"].set()
    _join(lookup, importer)
    return outcomes


def test_a_lookup_that_would_close_a_cycle_with_a_plain_import_sees_the_scope_as_it_is(
    make_distribution: MakeDistribution,
    plugin_host: PluginHost,
    catalog: _plugins.PluginCatalog,
) -> None:
    # Thread 2 imports plugin b itself and waits for scope a; then a asks for b and the import
    # system makes thread 1 wait for thread 2, which runs b: thread 2 must stop waiting and see
    # scope a without a registry.
    _looking_plugins(make_distribution, plugin_host, "pt_in_a", "pt_in_b")
    outcomes = _look_up_beside_a_plain_import(plugin_host, catalog, "pt_in_a", "pt_in_b", "pt_in_b")
    assert outcomes == {"lookup": "found in pt_in_a", "import": "pt_in_b"}
    assert (_saw("pt_in_a"), _saw("pt_in_b")) == ("found in pt_in_b", "None")
    assert catalog.failed == {}  # a cycle between threads is nobody's failure
    found = [plugin_host.root.get(f"{scope}.Thing") for scope in ("pt_in_a", "pt_in_b")]
    assert [thing.__module__ for thing in found] == ["pt_in_a", "pt_in_b"]


def test_a_plugin_module_in_a_package_another_thread_imports_never_waits_for_the_package(
    make_distribution: MakeDistribution,
    plugin_host: PluginHost,
    catalog: _plugins.PluginCatalog,
    module_dir: Path,
) -> None:
    # As above, but scope pt_in_pkg's entry point is the module pt_in_pkg.sub.plugin, and thread
    # 2 imports the package pt_in_pkg.sub (whose __init__ looks scope pt_in_e up, and waits for
    # it). The import system does not make thread 1 wait for a package that is running already:
    # it imports the plugin module, sees no registry of scope pt_in_pkg yet, and thread 2's wait
    # ends when thread 1 is done. So only a module itself, never a package above it, can close a
    # cycle between threads.
    (module_dir / "pt_in_pkg" / "sub").mkdir(parents=True)
    package = {
        "pt_in_pkg/__init__": "",
        "pt_in_pkg/sub/__init__": _looking("pt_in_pkg", "pt_in_e"),
        "pt_in_pkg/sub/plugin": "",
    }
    _looking_plugins(
        make_distribution, plugin_host, "pt_in_e", "pt_in_pkg", package, "pt_in_pkg.sub.plugin"
    )
    outcomes = _look_up_beside_a_plain_import(
        plugin_host, catalog, "pt_in_e", "pt_in_pkg", "pt_in_pkg.sub"
    )
    assert outcomes == {"lookup": "found in pt_in_e", "import": "pt_in_pkg.sub"}
    assert (_saw("pt_in_e"), _saw("pt_in_pkg.sub")) == ("None", "found in pt_in_e")
    assert catalog.failed == {}


def test_two_plugin_imports_waiting_on_each_other_both_finish(
    make_distribution: MakeDistribution,
    plugin_host: PluginHost,
    catalog: _plugins.PluginCatalog,
) -> None:
    # Thread 2 imports plugin d, thread 1 plugin c, both through lookups; c asks for d and waits
    # for thread 2; then d asks for c, which would close the cycle: one of the two threads sees
    # the other's scope without a registry, and both finish.
    _looking_plugins(make_distribution, plugin_host, "pt_in_c", "pt_in_d")
    events = plugin_host.events
    events["pt_in_c may look up"].set()
    outcomes: dict[str, str] = {}
    second = _start(_look_up(plugin_host, "pt_in_d.Thing", outcomes, "d"))
    assert events["pt_in_d started"].wait(LIMIT), "thread 2 never started importing plugin d"
    first = _start(_look_up(plugin_host, "pt_in_c.Thing", outcomes, "c"))
    try:
        _wait_until(lambda: first.ident in catalog._waiting, "thread 1 waits for plugin d")
    finally:
        events["pt_in_d may look up"].set()
    _join(first, second)

    assert outcomes == {"c": "found in pt_in_c", "d": "found in pt_in_d"}
    # Thread 2 finds thread 1 waiting on it; thread 1 may see thread 2 waiting first, in the
    # instant between two of its own checks: either way exactly one of them saw the other empty.
    assert sorted([_saw("pt_in_c"), _saw("pt_in_d")]) in (
        ["None", "found in pt_in_d"],
        ["None", "found in pt_in_c"],
    )
    assert catalog.failed == {}


_HOLDING_MODULE = f"""
from {PLUGIN_HOST} import host

host.events["pt_in_mx running"].set()
host.events["pt_in_mx release"].wait({LIMIT})
"""


def test_a_thread_outside_a_cycle_of_other_threads_waits_for_it_to_break(
    make_distribution: MakeDistribution,
    plugin_host: PluginHost,
    catalog: _plugins.PluginCatalog,
) -> None:
    # Thread 1 imports pt_in_ma itself, thread 2 pt_in_mb; mb looks scope pt_in_ma up, so thread
    # 2 imports ma for it and the import system makes it wait for thread 1. Then ma looks scope
    # pt_in_mb up, whose entry points are pt_in_mx (which holds until released) and pt_in_mb
    # (which thread 2 runs): thread 1 and thread 2 now wait on each other. Thread 3, asking for
    # pt_in_ma, is in no cycle: it waits. On release, the import system breaks the cycle with
    # its deadlock error in thread 1, and every thread finishes.
    steps = ("started", "may look up")
    _events(plugin_host, *[f"{name} {step}" for name in ("pt_in_ma", "pt_in_mb") for step in steps])
    _events(plugin_host, "pt_in_mx running", "pt_in_mx release")
    events = plugin_host.events
    events["pt_in_mb may look up"].set()
    info = make_distribution(
        "pt-in-cycle-dist",
        {"pt_in_ma": "pt_in_ma", "pt_in_mb": "pt_in_mx"},
        {
            "pt_in_ma": _looking("pt_in_ma", "pt_in_mb"),
            "pt_in_mb": _looking("pt_in_mb", "pt_in_ma"),
            "pt_in_mx": _HOLDING_MODULE,
        },
    )
    with (info / "entry_points.txt").open("a") as entry_points:
        entry_points.write("pt_in_mb = pt_in_mb\n")  # a second entry point for the scope
    outcomes: dict[str, str] = {}

    def plain_import(module: str) -> Callable[[], None]:
        def body() -> None:
            outcomes[module] = importlib.import_module(module).__name__

        return body

    first = _start(plain_import("pt_in_ma"))
    assert events["pt_in_ma started"].wait(LIMIT), "thread 1 never started importing pt_in_ma"
    second = _start(plain_import("pt_in_mb"))
    try:
        _wait_until(lambda: "pt_in_ma" in catalog._imports, "thread 2 imports plugin pt_in_ma")
    finally:
        events["pt_in_ma may look up"].set()
    assert events["pt_in_mx running"].wait(LIMIT), "thread 1 never imported pt_in_mx"
    third = _start(_look_up(plugin_host, "pt_in_ma.Thing", outcomes, "third"))
    try:
        _wait_until(lambda: third.ident in catalog._waiting, "thread 3 waits for plugin pt_in_ma")
    finally:
        events["pt_in_mx release"].set()
    _join(first, second, third)

    assert outcomes == {
        "pt_in_ma": "pt_in_ma",
        "pt_in_mb": "pt_in_mb",
        "third": "found in pt_in_ma",
    }
    assert (_saw("pt_in_ma"), _saw("pt_in_mb")) == ("None", "found in pt_in_ma")
    assert catalog.failed == {}
