"""Importing regtree_optim is quiet and cheap: no warnings, no torch.distributed.optim."""

from __future__ import annotations

import subprocess
import sys

import regtree_optim


def test_public_names() -> None:
    assert set(regtree_optim.__all__) == {
        "OPTIMIZERS",
        "OPTIMIZER_BUILDERS",
        "DefaultOptimizerConstructor",
        "Explanation",
        "ParamRow",
        "build_optimizer",
        "build_optimizer_constructor",
        "register_dcn_type",
        "register_norm_type",
        "register_wrapper_type",
    }
    assert all(hasattr(regtree_optim, name) for name in regtree_optim.__all__)


def test_import_warns_nothing_and_defers_zero_redundancy_optimizer() -> None:
    code = (
        "import sys, regtree_optim; "
        "assert 'torch.distributed.optim' not in sys.modules, 'imported torch.distributed.optim'; "
        "assert 'torchvision' not in sys.modules, 'imported torchvision'; "
        "assert 'ZeroRedundancyOptimizer' in regtree_optim.OPTIMIZERS"
    )
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
