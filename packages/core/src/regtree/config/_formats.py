"""Config file formats: which extensions are read, and as what."""

from __future__ import annotations

import os

from ._errors import ConfigError

__all__ = ["SUPPORTED_SUFFIXES", "file_format"]

# Suffix -> format name. Parsers are imported only when a file of that format is read, so
# `import regtree` never pays for json, tomllib or yaml.
SUPPORTED_SUFFIXES: dict[str, str] = {
    ".json": "JSON",
    ".toml": "TOML",
    ".yaml": "YAML",
    ".yml": "YAML",
    ".py": "Python",  # OpenMMLab configs, read with ast and never run (_pyconfig)
}


def file_format(filename: str) -> str:
    """Return the format of a config file by its extension.

    Raises:
        ConfigError: The extension is not one of `SUPPORTED_SUFFIXES`.
    """
    suffix = os.path.splitext(filename)[1].lower()
    found = SUPPORTED_SUFFIXES.get(suffix)
    if found is None:
        shown = repr(suffix) if suffix else "no extension"
        raise ConfigError(
            filename,
            f"unsupported config file extension ({shown}); "
            f"use one of {', '.join(SUPPORTED_SUFFIXES)}",
        )
    return found
