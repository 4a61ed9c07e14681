"""Config files: loading, merging and overriding them, and validating them against a registry tree.

The tools layer of regtree (SPEC 1): it builds on the registry layer, never the other way round,
except ``Registry.validate``, which calls :func:`validate_config`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._load import SUPPORTED_SUFFIXES, ConfigError, config_origins, load_config
from ._types import describe_annotation, type_mismatch
from ._validate import PROBLEM_KINDS, ConfigProblem, format_path, validate_config

if TYPE_CHECKING:
    from ._dump import DUMP_FORMATS, DumpError, dump_config

__all__ = [
    "DUMP_FORMATS",
    "PROBLEM_KINDS",
    "SUPPORTED_SUFFIXES",
    "ConfigError",
    "ConfigProblem",
    "DumpError",
    "config_origins",
    "describe_annotation",
    "dump_config",
    "format_path",
    "load_config",
    "type_mismatch",
    "validate_config",
]

# The writer is imported on first use: it needs `json`, whose import (1.5-5 ms measured here)
# every `import regtree` would otherwise pay; only `regtree resolve` writes configs.
_WRITER_NAMES = frozenset({"DUMP_FORMATS", "DumpError", "dump_config"})


def __getattr__(name: str) -> object:
    if name not in _WRITER_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import _dump

    return getattr(_dump, name)
