"""``regtree resolve``: print a config as it is after inheritance and overrides, with origins."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ..config import ConfigError, config_origins
from ._support import UsageError, add_set_option, read_config

if TYPE_CHECKING:
    import argparse

__all__ = ["add_resolve_parser", "default_format", "run_resolve"]

FORMATS = ("json", "toml", "yaml")


def default_format() -> str:
    """YAML where the yaml extra (PyYAML) is installed, to read the output back; else JSON."""
    from importlib.util import find_spec

    return "yaml" if find_spec("yaml") is not None else "json"


def add_resolve_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``resolve`` subcommand to ``regtree``'s parser."""
    resolve = commands.add_parser(
        "resolve",
        help="print a config after inheritance and overrides, optionally with origins",
        description=(
            "Print CONFIG as it is after its _base_ files are merged and the --set overrides "
            "applied. With --show-origin every value's line ends with the file (and line) or "
            "override that set it. No plugin is imported and nothing is built."
        ),
    )
    resolve.add_argument(
        "config", metavar="CONFIG", help="a .toml, .json, .yaml, .yml or .py config file"
    )
    add_set_option(resolve)
    resolve.add_argument(
        "--show-origin",
        action="store_true",
        help="end each value's line with '# file:line' (json: each value becomes "
        '{"value": ..., "origin": ...})',
    )
    resolve.add_argument(
        "--format",
        choices=FORMATS,
        help="output format (default: yaml where the yaml extra is installed, else json)",
    )


def run_resolve(options: argparse.Namespace) -> int:
    """Print the resolved config.

    Args:
        options: The parsed ``resolve`` options.

    Returns:
        The exit status: 0.

    Raises:
        UsageError: The file cannot be read, an override does not fit, or the format cannot hold
            a value (TOML has no null, JSON no NaN or Infinity).
    """
    from ..config import DumpError, dump_config

    path: str = options.config
    cfg = read_config(path, options.overrides)
    origins = None
    if options.show_origin:
        try:
            origins = config_origins(path, options.overrides)
        except ConfigError as exc:  # pragma: no cover - read_config met the same error first
            raise UsageError(str(exc)) from None
    file_format = options.format or default_format()
    try:
        text = dump_config(cfg, file_format, origins)
    except DumpError as exc:
        raise UsageError(f"{path}: cannot write the config as {file_format}: {exc}") from None
    sys.stdout.write(text)
    return 0
