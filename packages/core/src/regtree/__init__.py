"""regtree: a registry tree that builds any installed package's class by scoped name."""

from __future__ import annotations

from ._build import build_from_cfg
from ._errors import AlreadyRegisteredError, NotRegisteredError, RegistryError, ScopeConflictError
from ._miss import LookupMiss
from ._models import MODELS, build_model_from_cfg
from ._plugins import load_plugins
from ._registry import Registry
from ._scope import current_scope, default_scope
from .config import ConfigError, ConfigProblem, load_config

__all__ = [
    "MODELS",
    "AlreadyRegisteredError",
    "ConfigError",
    "ConfigProblem",
    "LookupMiss",
    "NotRegisteredError",
    "Registry",
    "RegistryError",
    "ScopeConflictError",
    "build_from_cfg",
    "build_model_from_cfg",
    "current_scope",
    "default_scope",
    "load_config",
    "load_plugins",
]
