"""SPEC 4: every registry builds NetA and NetB by name, each case in a fresh interpreter."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import RunPython

# (package imported, default scope or None, key) -> the package whose model must come back.
CASES = [
    ("demo_det", None, "NetA", "demo_det"),
    ("demo_det", None, "demo_det.NetA", "demo_det"),
    ("demo_det", None, "demo_cls.NetB", "demo_cls"),
    ("demo_cls", None, "NetB", "demo_cls"),
    ("demo_cls", None, "demo_cls.NetB", "demo_cls"),
    ("demo_cls", None, "demo_det.NetA", "demo_det"),
    ("regtree", None, "demo_det.NetA", "demo_det"),
    ("regtree", None, "demo_cls.NetB", "demo_cls"),
    ("regtree", "demo_cls", "NetB", "demo_cls"),
    ("regtree", "demo_det", "NetA", "demo_det"),
    ("demo_det", "demo_cls", "NetB", "demo_cls"),
    ("demo_cls", "demo_det", "NetA", "demo_det"),
]

BUILD = """
import contextlib, json, sys
import {package}
loaded_before = sorted(name for name in ("demo_cls", "demo_det") if name in sys.modules)
import regtree, torch
scope = regtree.default_scope({scope!r}) if {scope!r} else contextlib.nullcontext()
with scope:
    model = {package}.MODELS.build({{"type": {key!r}}})
x = torch.arange(3.0)
print(json.dumps({{
    "loaded_before": loaded_before,
    "built": type(model).__module__.split(".")[0] + "." + type(model).__name__,
    "minus_input": (model(x) - x).tolist(),
}}))
"""


@pytest.mark.parametrize(("package", "scope", "key", "provider"), CASES)
def test_registry_builds_by_name_from_a_fresh_interpreter(
    run_python: RunPython, package: str, scope: str | None, key: str, provider: str
) -> None:
    result = run_python(BUILD.format(package=package, scope=scope, key=key))
    # Only the package building was imported; the other scope arrived through the registry.
    assert result["loaded_before"] == ([package] if package != "regtree" else [])
    name = key.rpartition(".")[2]
    assert result["built"] == f"{provider}.{name}"
    # NetB returns x + 1 and NetA returns x.
    assert result["minus_input"] == [1.0 if name == "NetB" else 0.0] * 3


def test_unscoped_names_stay_in_their_own_scope(run_python: RunPython) -> None:
    result = run_python(
        """
        import json, sys, demo_det
        found = demo_det.MODELS.get("NetB")
        print(json.dumps({"found": repr(found), "demo_cls": "demo_cls" in sys.modules}))
        """
    )
    assert result == {"found": "None", "demo_cls": False}


def test_an_unknown_scope_names_the_missing_distribution(run_python: RunPython) -> None:
    result = run_python(
        """
        import json, regtree
        try:
            regtree.MODELS.build({"type": "demo_nowhere.NetB"})
        except regtree.NotRegisteredError as exc:
            print(json.dumps(str(exc)))
        """
    )
    assert "'demo_nowhere'" in result
    assert "no installed package provides scope 'demo_nowhere'" in result.lower()
