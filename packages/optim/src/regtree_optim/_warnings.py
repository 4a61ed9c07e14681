"""Warnings that point at the user's line: the first caller outside ``regtree_optim``."""

from __future__ import annotations

import sys
import warnings

__all__ = ["warn_caller"]

_PACKAGE = __name__.rpartition(".")[0]


def warn_caller(message: str) -> None:
    """Warn with a ``UserWarning`` at the first frame outside this package.

    One fixed ``stacklevel`` fits one call path only, and the same warning arrives through
    ``constructor(model)``, ``constructor.explain(model)``, ``build_optimizer(model, cfg)`` and an
    mmcv-era ``add_params`` override at different depths.
    """
    level = 2  # the caller of this function
    frame = sys._getframe(1)
    while frame.f_back is not None and _inside(frame.f_globals.get("__name__", "")):
        frame = frame.f_back
        level += 1
    warnings.warn(message, UserWarning, stacklevel=level)


def _inside(module: object) -> bool:
    return isinstance(module, str) and (module == _PACKAGE or module.startswith(f"{_PACKAGE}."))
