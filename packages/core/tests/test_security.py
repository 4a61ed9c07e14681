"""Security (SPEC 2, 2.4): a config string reaches registered names and nothing else.

A ``type`` string is a key in a registry tree, never a dotted import path: hostile strings miss,
raise ``NotRegisteredError`` when built, and import nothing. Only entry points in group
``regtree.scopes`` are ever loaded. The checks that need a pristine interpreter run in one that
sees nothing but the standard library, a copy of regtree and the distributions a test writes, with
an audit hook (PEP 578) that records every import, exec, compile and process launch.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import regtree
from regtree import NotRegisteredError, Registry, default_scope

from .conftest import MakeDistribution, Tree, run_json_script

HOSTILE_TYPES = [
    # Callables that would run code or commands.
    "os.system",
    "os.popen",
    "subprocess.Popen",
    "subprocess.run",
    "builtins.eval",
    "builtins.exec",
    "builtins.__import__",
    "builtins.open",
    "__import__",
    "eval",
    "exec",
    "compile",
    "getattr",
    "open",
    # Dotted paths to real functions and classes of the standard library and of regtree.
    "os.path.join",
    "shutil.rmtree",
    "importlib.import_module",
    "pickle.loads",
    "marshal.loads",
    "ctypes.CDLL",
    "socket.socket",
    "sys.exit",
    "regtree.Registry",
    "regtree._registry.Registry",
    # Modules that do something when imported, and modules no test has imported yet.
    "antigravity.fly",
    "this.s",
    "webbrowser.open",
    "smtplib.SMTP",
    "xmlrpc.client.ServerProxy",
    "http.server.test",
    "pty.spawn",
    "tkinter.Tk",
    # Attributes of the registry object itself.
    "__class__",
    "__dict__",
    "__init__",
    "get",
    "build",
    "register_module",
    "module_dict",
    "_module_dict",
    "children",
    # Null bytes, newlines, separators and code.
    "os.system\x00",
    "os\x00.system",
    "\x00",
    "os.sys\ntem",
    "\nos.system",
    "os.system\n",
    "os.system; echo pwned",
    "os.system('echo pwned')",
    "__import__('os').system('echo pwned')",
    "../os.system",
    "os/system",
    "os:system",
    " os.system",
    "OS.SYSTEM",
    "..",
    ".os.system",
]
# Modules that no lookup may import; some of them act on import (a browser, a poem).
NEVER_IMPORTED = ["antigravity", "this", "webbrowser", "smtplib", "xmlrpc.client", "pty", "tkinter"]


@pytest.fixture
def warmed_up() -> None:
    """Take the lazy standard-library imports of the error paths before a test measures imports."""
    registry: Registry[Any] = Registry("warm up", scope="security_warm_up")
    registry.get("security_unknown_scope.X")
    with pytest.raises(NotRegisteredError):
        registry.build({"type": "security_unknown_scope.X"})


@pytest.fixture
def no_new_modules(warmed_up: None) -> Iterator[None]:
    """Fail the test if it leaves a module in ``sys.modules`` that was not there before."""
    before = set(sys.modules)
    yield
    assert set(sys.modules) - before == set()


def _names_key(key: str, message: str) -> bool:
    return key in message or repr(key) in message


@pytest.mark.usefixtures("no_new_modules")
@pytest.mark.parametrize("key", HOSTILE_TYPES)
def test_hostile_type_string_is_not_registered_and_imports_nothing(tree: Tree, key: str) -> None:
    never_before = [name for name in NEVER_IMPORTED if name not in sys.modules]

    for registry in (tree.root, tree.hound, tree.lion):
        assert registry.get(key) is None
        assert key not in registry
        with pytest.raises(NotRegisteredError) as excinfo:
            registry.build({"type": key, "command": "echo pwned"})
        assert _names_key(key, str(excinfo.value))
        with default_scope("hound"), pytest.raises(NotRegisteredError):
            registry.build({"type": key})

    assert [name for name in never_before if name in sys.modules] == []


@pytest.mark.usefixtures("no_new_modules")
@pytest.mark.parametrize(
    ("scope", "name"),
    [
        ("os", "system"),
        ("subprocess", "Popen"),
        ("builtins", "eval"),
        ("importlib", "import_module"),
        ("sys", "exit"),
        ("antigravity", "fly"),
    ],
)
def test_hostile_default_scope_reaches_nothing(tree: Tree, scope: str, name: str) -> None:
    with pytest.raises(NotRegisteredError, match=re.escape(repr(name))):
        tree.root.build({"type": name, "_scope_": scope})
    with default_scope(scope), pytest.raises(NotRegisteredError, match=re.escape(repr(name))):
        tree.hound.build({"type": name})


def test_config_from_an_untrusted_file_reaches_registered_names_only(
    tree: Tree, tmp_path: Path, no_new_modules: None
) -> None:
    built: list[str] = []

    @tree.dog.register_module()
    class Pipeline:
        def __init__(self, steps: list[dict[str, Any]]) -> None:
            built.append("Pipeline")
            self.steps = [tree.dog.build(step) for step in steps]

    trusted = {"type": "dog.Pipeline", "steps": [{"type": "Dog"}, {"type": "cat.Cat"}]}
    pipeline = tree.root.build(json.loads(json.dumps(trusted)))
    assert [type(step).__name__ for step in pipeline.steps] == ["Dog", "Cat"]

    marker = tmp_path / "pwned"
    hostile_documents = [
        {"type": "dog.Pipeline", "steps": [{"type": "Dog"}, {"type": "os.system"}]},
        {"type": "dog.Pipeline", "steps": [{"type": "subprocess.run", "args": ["touch", "x"]}]},
        {"type": "dog.Pipeline", "_scope_": "os", "steps": [{"type": "system"}]},
        {"type": "builtins.eval", "source": "__import__('os').system('touch pwned')"},
        {"type": "dog.Pipeline", "steps": [{"type": "dog.Pipeline.__init__", "steps": []}]},
    ]
    for document in hostile_documents:
        path = tmp_path / "untrusted.json"
        path.write_text(json.dumps(document).replace("pwned", str(marker)))
        cfg = json.loads(path.read_text())
        with pytest.raises(NotRegisteredError):
            tree.root.build(cfg)

    assert not marker.exists()
    assert set(built) == {"Pipeline"}


# -- a pristine interpreter ---------------------------------------------------------------------

_DANGEROUS_EVENTS = [
    "import",
    "exec",
    "compile",
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.fork",
    "subprocess.Popen",
    "ctypes.dlopen",
    "socket.connect",
    "webbrowser.open",
    "pickle.find_class",
    "marshal.loads",
    "os.remove",
    "shutil.rmtree",
]
_AUDITED_LOOKUPS = """
import json
import sys

import regtree
from regtree import NotRegisteredError, Registry, default_scope

HOSTILE_TYPES = json.loads(sys.argv[1])
DANGEROUS = set(json.loads(sys.argv[2]))
root = Registry("audited", scope="audited")
child = Registry("audited child", parent=root, scope="audited_child")

# The error paths import difflib and importlib.metadata once; take that before listening.
root.get("warm_up_scope.X")
try:
    root.build({"type": "warm_up_scope.X"})
except NotRegisteredError:
    pass

events = []
sys.addaudithook(lambda event, args: events.append(event) if event in DANGEROUS else None)
outcomes = {}
for key in HOSTILE_TYPES:
    for registry in (regtree.MODELS, root, child):
        assert registry.get(key) is None
        for scope in (None, "audited_child"):
            try:
                with default_scope(scope):
                    registry.build({"type": key})
                outcome = "built"
            except BaseException as error:
                outcome = type(error).__name__
            outcomes.setdefault(key, set()).add(outcome)
events_seen = list(events)
outcomes = {key: sorted(seen) for key, seen in outcomes.items()}
print(json.dumps({"events": events_seen, "outcomes": outcomes}))
"""


def _pristine_python(tmp_path: Path, site: Path, script: str, *args: str) -> dict[str, Any]:
    """Run ``script`` where only the stdlib, a copy of regtree and ``site`` are importable."""
    lib = tmp_path / "pristine_lib"
    if not lib.exists():
        shutil.copytree(Path(regtree.__file__).parent, lib / "regtree")
    # no_site: no site-packages, so no installed distribution advertises anything.
    report: dict[str, Any] = run_json_script(
        script,
        cwd=tmp_path,
        pythonpath=os.pathsep.join([str(site), str(lib)]),
        args=args,
        no_site=True,
    )
    return report


def test_hostile_type_strings_trigger_no_import_exec_or_process(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()

    report = _pristine_python(
        tmp_path, site, _AUDITED_LOOKUPS, json.dumps(HOSTILE_TYPES), json.dumps(_DANGEROUS_EVENTS)
    )

    assert report["events"] == []
    assert report["outcomes"] == {key: ["NotRegisteredError"] for key in HOSTILE_TYPES}


_GOOD_PLUGIN = """
import __main__
from regtree import Registry

MODELS = Registry("good models", parent=__main__.ROOT, scope="sec_good")


@MODELS.register_module()
class Thing:
    pass
"""
_MARKING_PLUGIN = """
from pathlib import Path

Path(__file__).with_name(__name__ + ".imported").write_text("imported")
"""
_OTHER_GROUPS_SCRIPT = """
import json
import sys

import regtree
from regtree import NotRegisteredError, Registry

ROOT = Registry("security root", scope="sec_root")
report = {"evil_get": repr(ROOT.get("sec_evil.Thing"))}
try:
    ROOT.build({"type": "sec_evil.Thing"})
except NotRegisteredError as error:
    report["evil_build"] = str(error)
report["good_get"] = ROOT.get("sec_good.Thing").__qualname__
report["imported_after_lookups"] = sorted(m for m in sys.modules if m.startswith("sec_"))
report["load_plugins"] = regtree.load_plugins()
report["imported_after_load_plugins"] = sorted(m for m in sys.modules if m.startswith("sec_"))
print(json.dumps(report))
"""


def test_entry_points_outside_the_regtree_scopes_group_are_never_loaded(
    tmp_path: Path, make_distribution: MakeDistribution
) -> None:
    for index, group in enumerate(
        [
            "console_scripts",
            "regtree.plugins",
            "regtree_scopes",
            "regtree.scopes.extra",
            "REGTREE.SCOPES",
            "mmengine.registry",
        ]
    ):
        site = make_distribution(
            f"evil-{index}", {"sec_evil": "sec_evil_plugin"}, {}, group=group
        ).parent
    make_distribution(
        "good-dist",
        {"sec_good": "sec_good_plugin", "sec_other": "sec_other_plugin"},
        {
            "sec_good_plugin": _GOOD_PLUGIN,
            "sec_other_plugin": _MARKING_PLUGIN,
            "sec_evil_plugin": _MARKING_PLUGIN,
        },
    )

    report = _pristine_python(tmp_path, site, _OTHER_GROUPS_SCRIPT)

    assert report["evil_get"] == "None"
    assert "'sec_evil.Thing' is not registered" in report["evil_build"]
    # ...and says that no installed distribution provides that scope.
    assert "'sec_evil'" in report["evil_build"]
    assert re.search(r"(?i)\bno (installed )?distribution\b", report["evil_build"])
    assert report["good_get"] == "Thing"
    # A lookup imports the plugin of the scope it asked for, and no other.
    assert report["imported_after_lookups"] == ["sec_good_plugin"]
    assert report["load_plugins"] == ["sec_good", "sec_other"]
    assert report["imported_after_load_plugins"] == ["sec_good_plugin", "sec_other_plugin"]
    assert not (site / "sec_evil_plugin.imported").exists()
