from __future__ import annotations

import subprocess
import sys
from importlib.metadata import requires

import torch

import demo_det
import regtree


def test_models_is_the_demo_det_child_of_the_root() -> None:
    assert demo_det.MODELS.scope == "demo_det"
    assert demo_det.MODELS.parent is regtree.MODELS
    assert regtree.MODELS.children["demo_det"] is demo_det.MODELS


def test_importing_the_package_registers_every_model() -> None:
    assert set(demo_det.MODELS) == {"NetA", "DeformConv2d", "TinyDetector"}


def test_neta_returns_its_input() -> None:
    net = demo_det.MODELS.build({"type": "NetA"})
    x = torch.arange(3.0)
    assert net(x) is x


def test_demo_det_neither_requires_nor_imports_demo_cls() -> None:
    assert not any(req.startswith("regtree-demo-cls") for req in requires("regtree-demo-det") or [])
    code = "import sys, demo_det; print('demo_cls' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == "False"
