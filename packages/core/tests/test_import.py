"""What ``import regtree`` does and does not do, checked in fresh interpreters."""

from __future__ import annotations

import json
import subprocess
import sys

import regtree

CHECK = """
import json, sys
before = set(sys.modules)
import regtree
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def _modules_imported_by_regtree() -> set[str]:
    result = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, check=True
    )
    return set(json.loads(result.stdout))


def test_import_loads_neither_torch_nor_entry_points_nor_slow_helpers() -> None:
    loaded = _modules_imported_by_regtree()
    assert "regtree" in loaded
    heavy = {"torch", "importlib.metadata", "inspect", "difflib"}
    assert loaded & heavy == set()


def test_the_public_names() -> None:
    expected = {
        "MODELS",
        "AlreadyRegisteredError",
        "NotRegisteredError",
        "Registry",
        "RegistryError",
        "ScopeConflictError",
        "build_from_cfg",
        "build_model_from_cfg",
        "current_scope",
        "default_scope",
        "load_plugins",
    }
    assert expected <= set(regtree.__all__)
    assert all(hasattr(regtree, name) for name in regtree.__all__)
