"""The ``regtree`` command line: its parser and ``main``.

The subcommands live in ``_commands``; the plumbing shared with ``regtree-optim`` in
``_support``; finding and walking the registry trees in ``_roots``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from .._registry import Registry
from ._commands import (
    DEFAULT_SECTION,
    PROG,
    run_build,
    run_list,
    run_show,
    run_tree,
    run_validate,
)
from ._doctor import add_doctor_command
from ._resolve import add_resolve_parser, run_resolve
from ._roots import find_root_registries, import_locations
from ._schema import add_schema_command
from ._support import (
    UsageError,
    add_set_option,
    did_you_mean,
    parse_command_line,
    print_exception,
    read_config,
    run_command,
)

__all__ = ["COMMANDS", "build_parser", "load_section", "main"]

COMMANDS = ("tree", "list", "show", "validate", "build", "resolve", "schema", "doctor")
DEFAULT_TREE = "model"

_SECTION_HELP = (
    f"top-level key of the config to use (default: its {DEFAULT_SECTION!r} section when it has "
    "one, otherwise the whole file)"
)


def main(argv: Sequence[str] | None = None, *, roots: Sequence[Registry[Any]] | None = None) -> int:
    """Run the ``regtree`` command.

    Args:
        argv: The arguments, without the program name; ``sys.argv[1:]`` when None.
        roots: The root registries to show; when None, every installed plugin is imported and the
            roots are found in ``regtree`` and the plugins' modules.

    Returns:
        The exit status: 0 on success, 1 when a config has problems or a build fails, 2 for a bad
        command line or an unreadable config file.
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    options = parse_command_line(PROG, build_parser(), arguments, COMMANDS)
    if isinstance(options, int):
        return options
    if options.command == "resolve":  # a config alone: no plugin is imported
        return run_command(PROG, partial(run_resolve, options))
    if getattr(options, "config", None) is not None:
        # Read the file before importing plugins: a bad file fails at once, before torch loads.
        try:
            options.cfg, options.section = load_section(
                options.config, options.section, options.overrides
            )
        except UsageError as exc:
            print(f"{PROG}: error: {exc}", file=sys.stderr)
            return 2
    if getattr(options, "imports_plugins", False):  # doctor imports them one by one itself
        return run_command(PROG, partial(options.handler, options, roots))
    try:
        if roots is None:
            from .._plugins import load_plugins

            roots = find_root_registries(load_plugins())
        for root in roots:
            import_locations(root)
    except Exception as exc:
        # A broken plugin is an installation problem: say which one, without a traceback.
        print_exception(f"{PROG}: error: importing a plugin or a registry location failed:", exc)
        return 1
    handler: Callable[[argparse.Namespace, Sequence[Registry[Any]]], int] = options.handler
    return run_command(PROG, partial(handler, options, roots))


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of ``regtree``, one subcommand per action."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Look inside the regtree registry trees and check config files before a run. "
            "Installed plugins are loaded first. validate and build act on a config file's "
            f"{DEFAULT_SECTION!r} section when it has one, otherwise on the whole file."
        ),
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_lookup_commands(commands)
    _add_config_commands(commands)
    add_resolve_parser(commands)
    add_schema_command(commands)
    add_doctor_command(commands)
    return parser


def _add_lookup_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``tree``, ``list`` and ``show``: what the registry trees hold."""
    tree = commands.add_parser("tree", help="every registry tree: name, scope, entry count")
    tree.add_argument(
        "--registry", metavar="NAME", help="only the tree with this root name (default: all)"
    )
    tree.add_argument("--json", action="store_true", help="print JSON")
    tree.set_defaults(handler=run_tree)

    listing = commands.add_parser(
        "list", help="registered names matching a glob, with where each is defined"
    )
    listing.add_argument(
        "pattern", nargs="?", metavar="PATTERN", help="a glob such as '*Net*' (default: all)"
    )
    _add_registry_options(listing)
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(handler=run_list)

    show = commands.add_parser(
        "show", help="where a key is defined (file and line), its signature and summary"
    )
    show.add_argument("key", metavar="KEY", help="a registered name, scoped or not")
    _add_registry_options(show)
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(handler=run_show)


def _add_config_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``validate`` and ``build``: a config file checked against a tree, or built from it."""
    validate = commands.add_parser(
        "validate",
        help="every problem in a config without building it (exit status 1 if any)",
        description=(
            "Report every problem a build of CONFIG would meet, without building anything. "
            f"Acts on the config's {DEFAULT_SECTION!r} section when it has one, otherwise on the "
            "whole file."
        ),
    )
    _add_config_options(validate)
    validate.add_argument("--json", action="store_true", help="print JSON")
    validate.set_defaults(handler=run_validate)

    build = commands.add_parser(
        "build",
        help="build a config and print the object",
        description=(
            f"Build CONFIG and print the object. Acts on the config's {DEFAULT_SECTION!r} section "
            "when it has one, otherwise on the whole file."
        ),
    )
    _add_config_options(build)
    build.set_defaults(handler=run_build)


def _add_registry_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--registry",
        metavar="NAME",
        default=DEFAULT_TREE,
        help=f"root name of the registry tree (default: {DEFAULT_TREE!r})",
    )
    parser.add_argument(
        "--scope",
        metavar="SCOPE",
        help="the registry of this scope in the tree (default: the root)",
    )


def _add_config_options(parser: argparse.ArgumentParser) -> None:
    """Add what a command acting on a config file takes: the file, the tree and the section."""
    parser.add_argument(
        "config", metavar="CONFIG", help="a .toml, .json, .yaml, .yml or .py config file"
    )
    _add_registry_options(parser)
    parser.add_argument("--section", metavar="KEY", help=_SECTION_HELP)
    add_set_option(parser)


def load_section(path: str, section: str | None, overrides: Sequence[str] = ()) -> tuple[Any, str]:
    """Load a config file and pick the part to act on.

    Args:
        path: The config file.
        section: A top-level key to use; None picks the ``model`` section when the file has one,
            otherwise the whole file.
        overrides: ``--set`` texts, applied to the whole config before the section is taken.

    Returns:
        The chosen value and its path in the file (``'model'``, or ``''`` for the whole file).

    Raises:
        UsageError: The file cannot be read, or the section is missing or not a config.
    """
    cfg = read_config(path, overrides)
    if section is None:
        if DEFAULT_SECTION not in cfg:
            return cfg, ""
        section = DEFAULT_SECTION
    if section not in cfg:
        raise UsageError(
            f"{path}: the config has no {section!r} section{did_you_mean(section, cfg)} "
            f"(sections: {', '.join(map(str, cfg))})"
        )
    chosen = cfg[section]
    if not isinstance(chosen, Mapping | list):
        raise UsageError(
            f"{path}: the {section!r} section must be a table of settings, "
            f"not {type(chosen).__name__}"
        )
    return chosen, section
