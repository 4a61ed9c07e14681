"""Config files: loading them (JSON, TOML, YAML) and validating them against a registry tree.

The tools layer of regtree (SPEC 1): it builds on the registry layer, never the other way round,
except ``Registry.validate``, which calls :func:`validate_config`.
"""

from __future__ import annotations

from ._load import SUPPORTED_SUFFIXES, ConfigError, load_config
from ._validate import PROBLEM_KINDS, ConfigProblem, format_path, validate_config

__all__ = [
    "PROBLEM_KINDS",
    "SUPPORTED_SUFFIXES",
    "ConfigError",
    "ConfigProblem",
    "format_path",
    "load_config",
    "validate_config",
]
