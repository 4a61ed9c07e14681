"""regtree_optim: optimizer registries and mmcv's DefaultOptimizerConstructor, fast and strict."""

from __future__ import annotations

from . import _zero  # noqa: F401  # registers ZeroRedundancyOptimizer in OPTIMIZERS
from ._builder import build_optimizer, build_optimizer_constructor
from ._constructor import DefaultOptimizerConstructor
from ._explain import Explanation, ParamRow
from ._module_kinds import register_dcn_type, register_norm_type, register_wrapper_type
from ._registries import OPTIMIZER_BUILDERS, OPTIMIZERS
from ._routed import RoutedOptimizer
from ._schedulers import SCHEDULERS, build_scheduler
from ._state import StateLoadReport, full_state_dict, load_state_dict_by_name

__all__ = [
    "OPTIMIZERS",
    "OPTIMIZER_BUILDERS",
    "SCHEDULERS",
    "DefaultOptimizerConstructor",
    "Explanation",
    "ParamRow",
    "RoutedOptimizer",
    "StateLoadReport",
    "build_optimizer",
    "build_optimizer_constructor",
    "build_scheduler",
    "full_state_dict",
    "load_state_dict_by_name",
    "register_dcn_type",
    "register_norm_type",
    "register_wrapper_type",
]
