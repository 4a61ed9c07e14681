"""Config files: loading, merging and overriding them, and validating them against a registry tree.

The tools layer of regtree (SPEC 1): it builds on the registry layer, never the other way round,
except ``Registry.validate``, which calls :func:`validate_config`.
"""

from __future__ import annotations

from ._load import SUPPORTED_SUFFIXES, ConfigError, config_origins, load_config
from ._validate import PROBLEM_KINDS, ConfigProblem, format_path, validate_config

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._dump import DUMP_FORMATS, DumpError, dump_config
    from ._types import type_mismatch

__all__ = [
    "DUMP_FORMATS",
    "PROBLEM_KINDS",
    "SUPPORTED_SUFFIXES",
    "ConfigError",
    "ConfigProblem",
    "DumpError",
    "config_origins",
    "dump_config",
    "format_path",
    "load_config",
    "type_mismatch",
    "validate_config",
]

# Imported on first use: they need `typing` and `re`, which `import regtree` never loads.
_LAZY = {
    "type_mismatch": "._types",
    "dump_config": "._dump",
    "DumpError": "._dump",
    "DUMP_FORMATS": "._dump",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value
