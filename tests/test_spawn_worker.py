"""A spawned worker process finds other scopes by itself, with no explicit import."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conftest import RunPython

SCRIPT = """
import json, multiprocessing, sys

import demo_det


def build(key):
    import torch

    before = "demo_cls" in sys.modules
    model = demo_det.MODELS.build({"type": key})
    x = torch.arange(3.0)
    return {
        "demo_cls_before": before,
        "built": type(model).__module__.split(".")[0] + "." + type(model).__name__,
        "minus_input": (model(x) - x).tolist(),
    }


if __name__ == "__main__":
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        result = pool.apply(build, ("demo_cls.NetB",))
    result["parent_imported_demo_cls"] = "demo_cls" in sys.modules
    print(json.dumps(result))
"""


def test_spawned_worker_builds_a_model_of_another_scope(
    run_python: RunPython, tmp_path: Path
) -> None:
    script = tmp_path / "spawn_worker.py"
    script.write_text(SCRIPT)
    result = run_python(script=script)
    assert result == {
        "demo_cls_before": False,
        "built": "demo_cls.NetB",
        "minus_input": [1.0, 1.0, 1.0],
        "parent_imported_demo_cls": False,
    }
