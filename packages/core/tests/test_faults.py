"""Faults (SPEC 2, 2.4): what a user sees when a plugin or a constructor fails, and what remains.

Plugins fail in a fresh interpreter, where the entry points of a throwaway distribution
(conftest's ``make_distribution``) are read for the first time; the script prints what it
observed as JSON and the test asserts on it. Constructors fail in-process, inside builds nested
three levels deep.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

from regtree import NotRegisteredError, Registry, current_scope

from .conftest import MakeDistribution, run_json_script

# -- plugins that fail --------------------------------------------------------------------------

_OBSERVE = """
import json
import sys

from regtree import NotRegisteredError, Registry

ROOT = Registry("fault root", scope="fault_root")


def attempt(call):
    try:
        found = call()
    except BaseException as error:
        return {
            "raised": type(error).__name__,
            "message": str(error),
            "notes": getattr(error, "__notes__", []),
            "cause": type(error.__cause__).__name__ if error.__cause__ else None,
            "not_registered": isinstance(error, NotRegisteredError),
        }
    return {"returned": getattr(found, "__qualname__", repr(found))}


report = {
    "first_get": attempt(lambda: ROOT.get("SCOPE.First")),
    "second_get": attempt(lambda: ROOT.get("SCOPE.First")),
    "build": attempt(lambda: ROOT.build({"type": "SCOPE.Second"})),
    "children": {scope: list(child) for scope, child in ROOT.children.items()},
    "module_imported": "MODULE" in sys.modules,
}
print(json.dumps(report))
"""


def _observe_plugin(
    make_distribution: MakeDistribution, scope: str, module: str, source: str
) -> dict[str, Any]:
    """Install a one-module plugin for ``scope``; report how lookups through it went."""
    dist = f"{module.replace('_', '-')}-dist"
    site = make_distribution(dist, {scope: module}, {module: source}).parent
    script = _OBSERVE.replace("SCOPE", scope).replace("MODULE", module)
    report: dict[str, Any] = run_json_script(script, cwd=site, pythonpath=str(site))
    return report


@pytest.mark.parametrize(
    ("source", "raised", "message"),
    [
        (
            "import regtree_no_such_dependency\n",
            "ModuleNotFoundError",
            "No module named 'regtree_no_such_dependency'",
        ),
        ("raise ImportError('plugin needs libfoo')\n", "ImportError", "plugin needs libfoo"),
        ("raise RuntimeError('plugin exploded')\n", "RuntimeError", "plugin exploded"),
    ],
)
def test_plugin_whose_import_raises_surfaces_that_error(
    make_distribution: MakeDistribution, source: str, raised: str, message: str
) -> None:
    report = _observe_plugin(make_distribution, "broken_scope", "broken_plugin", source)

    # The first lookup through the scope raises the plugin's own error, named as it is.
    first = report["first_get"]
    assert (first["raised"], first["message"], first["cause"]) == (raised, message, None)
    # Later lookups do not run the plugin again: an ImportError chained from the first error.
    for attempt in ("second_get", "build"):
        outcome = report[attempt]
        assert outcome["raised"] == "ImportError", outcome
        assert outcome["cause"] == raised
        assert f"{raised}: {message}" in outcome["message"]
        assert "failed to import earlier in this process" in outcome["message"]
    for attempt in ("first_get", "second_get", "build"):
        outcome = report[attempt]
        assert not outcome["not_registered"]  # never reported as a miss
        notes = "\n".join(outcome["notes"])
        assert "broken-plugin-dist" in notes  # the distribution to blame
        assert "broken_scope" in notes
    assert report["children"] == {}
    assert report["module_imported"] is False


_HALF_PLUGIN = """
from regtree import Registry

import __main__

MODELS = Registry("half models", parent=__main__.ROOT, scope="half_scope")


@MODELS.register_module()
class First:
    pass


raise RuntimeError("plugin failed after registering First")


@MODELS.register_module()
class Second:
    pass
"""


def test_plugin_that_registers_half_then_raises(make_distribution: MakeDistribution) -> None:
    report = _observe_plugin(make_distribution, "half_scope", "half_plugin", _HALF_PLUGIN)

    # The user sees the plugin's error, with a note naming the distribution and the scope.
    first = report["first_get"]
    assert first["raised"] == "RuntimeError"
    assert first["message"] == "plugin failed after registering First"
    assert any("half-plugin-dist" in note for note in first["notes"])
    # Python dropped the module, and the child registry it made before failing left the tree
    # with it: the tree is as the import found it.
    assert report["module_imported"] is False
    assert report["children"] == {}
    # That half-filled registry is never served: every later lookup under the scope raises an
    # ImportError chained from the plugin's error, neither a miss nor the half-registered entry.
    for attempt in ("second_get", "build"):
        outcome = report[attempt]
        assert outcome["raised"] == "ImportError", outcome
        assert outcome["cause"] == "RuntimeError"
        assert "RuntimeError: plugin failed after registering First" in outcome["message"]
        assert not outcome["not_registered"]


# -- constructors that fail inside nested builds ------------------------------------------------


class ConstructorError(Exception):
    """A custom error whose ``__init__`` takes two arguments and keeps them as attributes."""

    def __init__(self, code: int, detail: str) -> None:
        super().__init__(code, detail)
        self.code = code
        self.detail = detail


def _nested_registries(
    raise_in_leaf: BaseException,
) -> tuple[Registry[Any], list[BaseException]]:
    """Three registries in a tree; ``Outer`` builds ``Middle`` builds ``Leaf``, which raises."""
    root: Registry[Any] = Registry("outer models", scope="fault_outer")
    middle_registry: Registry[Any] = Registry("middle models", parent=root, scope="fault_mid")
    leaf_registry: Registry[Any] = Registry(
        "leaf models", parent=middle_registry, scope="fault_leaf"
    )
    raised: list[BaseException] = []

    @leaf_registry.register_module()
    class Leaf:
        def __init__(self, size: int) -> None:
            raised.append(raise_in_leaf)
            raise raise_in_leaf

    @middle_registry.register_module()
    class Middle:
        def __init__(self, leaf: dict[str, Any]) -> None:
            self.leaf = leaf_registry.build(leaf)

    @root.register_module()
    class Outer:
        def __init__(self, middle: dict[str, Any]) -> None:
            self.middle = middle_registry.build(middle)

    return root, raised


_NESTED_CFG = {
    "type": "Outer",
    "middle": {"type": "fault_mid.Middle", "leaf": {"type": "fault_leaf.Leaf", "size": 3}},
}


def _innermost_frame(tb: TracebackType | None) -> str:
    assert tb is not None
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_qualname


def test_constructor_error_in_three_level_build_keeps_the_object_and_adds_one_note_per_level() -> (
    None
):
    root, raised = _nested_registries(ConstructorError(7, "leaf refused size 3"))

    with pytest.raises(ConstructorError) as excinfo:
        root.build(_NESTED_CFG)

    error = excinfo.value
    assert error is raised[0]  # the same object, not a copy or a wrapper
    assert type(error) is ConstructorError
    assert error.args == (7, "leaf refused size 3")
    assert (error.code, error.detail) == (7, "leaf refused size 3")
    assert error.__cause__ is None
    # One note per level, innermost first, each naming the key and the registry.
    notes = error.__notes__
    assert len(notes) == 3
    for note, key, registry in zip(
        notes,
        ["fault_leaf.Leaf", "fault_mid.Middle", "Outer"],
        ["leaf models", "middle models", "outer models"],
        strict=True,
    ):
        assert key in note
        assert registry in note
    # The original traceback comes first: its innermost frame is still the constructor's.
    assert _innermost_frame(error.__traceback__).endswith("Leaf.__init__")
    printed = "".join(traceback.format_exception(error))
    assert printed.index("ConstructorError: (7, 'leaf refused size 3')") < printed.index(notes[0])


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_interrupt_during_a_nested_build_is_never_swallowed_or_wrapped(
    interrupt: type[BaseException],
) -> None:
    root, raised = _nested_registries(interrupt())

    with pytest.raises(interrupt) as excinfo:
        root.build({**_NESTED_CFG, "_scope_": "fault_mid"})

    assert excinfo.value is raised[0]
    assert type(excinfo.value) is interrupt
    assert excinfo.value.__cause__ is None
    assert _innermost_frame(excinfo.value.__traceback__).endswith("Leaf.__init__")
    assert current_scope() is None  # the `_scope_` of the failed build is undone
    assert list(root) == ["Outer"]


def test_interrupt_while_importing_a_location_propagates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "fault_interrupting_location.py").write_text("raise KeyboardInterrupt\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry: Registry[Any] = Registry(
        "interrupted", scope="fault_loc", locations=["fault_interrupting_location"]
    )

    with pytest.raises(KeyboardInterrupt):
        registry.get("Anything")

    assert "fault_interrupting_location" not in sys.modules


def test_failed_build_leaves_the_registry_usable() -> None:
    root, raised = _nested_registries(ConstructorError(1, "boom"))

    for _ in range(3):
        with pytest.raises(ConstructorError, match="boom"):
            root.build(_NESTED_CFG)
    with pytest.raises(NotRegisteredError, match="Missing"):
        root.build({"type": "Missing"})

    assert len(raised) == 3
    assert list(root) == ["Outer"]
    assert root.get("fault_mid.Middle") is not None
