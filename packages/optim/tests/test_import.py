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
        "RoutedOptimizer",
        "build_optimizer",
        "build_optimizer_constructor",
        "register_dcn_type",
        "register_norm_type",
        "register_wrapper_type",
        "SCHEDULERS",
        "StateLoadReport",
        "build_scheduler",
        "full_state_dict",
        "load_state_dict_by_name",
    }
    assert all(hasattr(regtree_optim, name) for name in regtree_optim.__all__)


def test_import_warns_nothing_and_registers_a_deferred_zero_redundancy_optimizer() -> None:
    code = (
        "import sys, regtree_optim; "
        "assert 'torch.distributed.optim' not in sys.modules, 'imported torch.distributed.optim'; "
        "assert 'torchvision' not in sys.modules, 'imported torchvision'; "
        "zero = regtree_optim.OPTIMIZERS.get('ZeroRedundancyOptimizer'); "
        "import inspect, torch; "
        "assert inspect.isclass(zero) and issubclass(zero, torch.optim.Optimizer); "
        "assert zero.__name__ == zero.__qualname__ == 'ZeroRedundancyOptimizer'; "
        "assert not isinstance(torch.optim.SGD([torch.zeros(1)]), zero); "
        "assert not issubclass(torch.optim.SGD, zero); "
        "assert list(inspect.signature(zero).parameters)[:2] == ['params', 'optimizer_type']; "
        "assert 'torch.distributed.optim' not in sys.modules, 'the checks imported it'"
    )
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
