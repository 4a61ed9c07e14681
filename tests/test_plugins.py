"""Scopes come from the `regtree.scopes` entry points, loaded lazily."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conftest import RunPython


def test_load_plugins_lists_and_attaches_both_demo_scopes(run_python: RunPython) -> None:
    result = run_python(
        """
        import json, regtree
        scopes = regtree.load_plugins()
        print(json.dumps({"scopes": list(scopes), "children": sorted(regtree.MODELS.children)}))
        """
    )
    assert {"demo_cls", "demo_det"} <= set(result["scopes"])
    assert {"demo_cls", "demo_det"} <= set(result["children"])


def test_importing_regtree_loads_no_plugin_and_no_torch(run_python: RunPython) -> None:
    result = run_python(
        """
        import json, sys, regtree
        names = ("torch", "regtree_optim", "demo_cls", "demo_det")
        print(json.dumps([name for name in names if name in sys.modules]))
        """
    )
    assert result == []


def test_importing_demo_det_does_not_import_demo_cls(run_python: RunPython) -> None:
    result = run_python(
        """
        import json, sys, demo_det
        print(json.dumps(["demo_cls" in sys.modules, "regtree_optim" in sys.modules]))
        """
    )
    assert result == [False, True]
