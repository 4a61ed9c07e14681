"""Plugins imported from many threads at once (SPEC 2.4), each case in a fresh interpreter.

Fresh interpreters because a plugin is imported once per process and a deadlock cannot be undone:
each script runs its threads as daemons, waits for them with a limit, and prints how far every
thread got, so a hang fails the test with that report instead of hanging the run.
"""

from __future__ import annotations

from typing import Any

from .conftest import MakeDistribution, run_json_script

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
