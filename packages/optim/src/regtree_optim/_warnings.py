"""Warnings that point at the user's line: the first caller outside ``regtree_optim``."""

from __future__ import annotations

import sys
import warnings

__all__ = ["caller_level", "warn_caller"]

_PACKAGE = __name__.rpartition(".")[0]


def caller_level() -> int:
    """The ``stacklevel`` at which a warning its caller issues names the user's line.

    That is the first frame outside this package. One fixed level fits one call path only, and
    the same warning arrives through ``constructor(model)``, ``constructor.explain(model)``,
    ``build_optimizer(model, cfg)`` and an mmcv-era ``add_params`` override at different depths.
    """
    level = 1  # the caller
    frame = sys._getframe(1)
    while frame.f_back is not None and _inside(frame.f_globals.get("__name__", "")):
        frame = frame.f_back
        level += 1
    return level


def warn_caller(message: str) -> None:
    """Warn with a ``UserWarning`` at the first frame outside this package."""
    warnings.warn(message, UserWarning, stacklevel=caller_level())


def _inside(module: object) -> bool:
    return isinstance(module, str) and (module == _PACKAGE or module.startswith(f"{_PACKAGE}."))
