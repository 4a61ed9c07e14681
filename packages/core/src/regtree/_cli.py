"""The ``regtree`` command: look inside the registry trees and check a config before a run.

This module holds the command line (parser, ``main``) and the plumbing ``regtree-optim`` shares
(``UsageError``, ``parse_command_line``, ``run_command``, ``read_config``). The subcommands live
in ``_cli_commands``; finding and walking the registry trees, in ``_cli_roots``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from functools import partial

from ._cli_roots import find_root_registries, import_locations
from ._cli_roots import iter_tree as iter_tree
from ._config import ConfigError, load_config

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any

    from ._registry import Registry

__all__ = ["find_root_registries", "main"]

PROG = "regtree"
COMMANDS = ("tree", "list", "show", "validate", "build")
DEFAULT_TREE = "model"
DEFAULT_SECTION = "model"

_SECTION_HELP = (
    f"top-level key of the config to use (default: its {DEFAULT_SECTION!r} section when it has "
    "one, otherwise the whole file)"
)


class UsageError(Exception):
    """A command line or input file that cannot be acted on: exit status 2, one line, no trace."""


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
    if getattr(options, "config", None) is not None:
        # Read the file before importing plugins: a bad file fails at once, before torch loads.
        try:
            options.cfg, options.section = load_section(options.config, options.section)
        except UsageError as exc:
            print(f"{PROG}: error: {exc}", file=sys.stderr)
            return 2
    try:
        if roots is None:
            from ._plugins import load_plugins

            roots = find_root_registries(load_plugins())
        for root in roots:
            import_locations(root)
    except Exception as exc:
        # A broken plugin is an installation problem: say which one, without a traceback.
        print_exception(f"{PROG}: error: importing a plugin or a registry location failed:", exc)
        return 1
    handler: Callable[[argparse.Namespace, Sequence[Registry[Any]]], int] = options.handler
    return run_command(PROG, partial(handler, options, roots))


def parse_command_line(
    prog: str,
    parser: argparse.ArgumentParser,
    arguments: Sequence[str],
    commands: Sequence[str],
    *,
    hint_cutoff: float = 0.6,
) -> argparse.Namespace | int:
    """Parse a command line whose first word names one of ``commands``.

    An unknown command is reported in one line with the closest command, before argparse sees it.

    Args:
        prog: The program name, which starts the error line.
        parser: The program's argument parser.
        arguments: The arguments, without the program name.
        commands: The subcommands ``parser`` knows.
        hint_cutoff: How similar (0 to 1) an unknown command must be to a known one to be
            suggested.

    Returns:
        The parsed options, or the exit status when there is nothing to run: 0 after ``--help``,
        2 after a usage error (already printed).
    """
    try:
        _check_command(arguments, commands, hint_cutoff)
        return parser.parse_args(arguments)
    except UsageError as exc:
        parser.print_usage(sys.stderr)
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # argparse has printed the help or the error
        return exc.code if isinstance(exc.code, int) else 2


def run_command(prog: str, command: Callable[[], int]) -> int:
    """Run a parsed command and turn the failures every command shares into exit statuses.

    Args:
        prog: The program name, which starts the error line.
        command: Runs the command and returns its exit status; raises ``UsageError`` for an input
            it cannot act on.

    Returns:
        The command's exit status; 2 after a ``UsageError`` (printed in one line), 1 when the
        reader of stdout went away.
    """
    try:
        return command()
    except UsageError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, as other command-line tools do.
        _detach_stdout()
        return 1


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of ``regtree``, one subcommand per action."""
    # Imported here, not at the top: the commands import this module's UsageError and PROG.
    from ._cli_commands import run_build, run_list, run_show, run_tree, run_validate

    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Look inside the regtree registry trees and check config files before a run. "
            "Installed plugins are loaded first. validate and build act on a config file's "
            f"{DEFAULT_SECTION!r} section when it has one, otherwise on the whole file."
        ),
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

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
    return parser


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
    parser.add_argument("config", metavar="CONFIG", help="a .toml, .json, .yaml or .yml file")
    _add_registry_options(parser)
    parser.add_argument("--section", metavar="KEY", help=_SECTION_HELP)


def _check_command(arguments: Sequence[str], commands: Sequence[str], hint_cutoff: float) -> None:
    for argument in arguments:
        if argument.startswith("-"):
            continue  # the top-level parser has only flags (-h)
        if argument not in commands:
            raise UsageError(
                f"unknown command {argument!r}{did_you_mean(argument, commands, hint_cutoff)} "
                f"(commands: {', '.join(commands)})"
            )
        return


def did_you_mean(word: str, choices: Iterable[str], cutoff: float = 0.6) -> str:
    """Return ``"; did you mean 'x'?"`` for the choice closest to ``word``, or ``""`` if none is.

    Args:
        word: The word the user gave.
        choices: The words that would have worked.
        cutoff: How similar (0 to 1) a choice must be to ``word`` to be suggested.

    Returns:
        The hint, ready to append to an error message.
    """
    from difflib import get_close_matches

    close = get_close_matches(word, list(choices), n=1, cutoff=cutoff)
    return f"; did you mean {close[0]!r}?" if close else ""


# --- reading a config file --------------------------------------------------------------------


def read_config(path: str) -> dict[str, Any]:
    """Load a config file, turning a file that cannot be read or parsed into a ``UsageError``.

    Args:
        path: The config file.

    Returns:
        The loaded config, as ``load_config`` returns it.

    Raises:
        UsageError: The file cannot be read or is not a valid config; the message names the file.
    """
    try:
        return load_config(path)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise UsageError(f"{path}: cannot read the config file: {reason}") from None


def load_section(path: str, section: str | None) -> tuple[Any, str]:
    """Load a config file and pick the part to act on.

    Args:
        path: The config file.
        section: A top-level key to use; None picks the ``model`` section when the file has one,
            otherwise the whole file.

    Returns:
        The chosen value and its path in the file (``'model'``, or ``''`` for the whole file).

    Raises:
        UsageError: The file cannot be read, or the section is missing or not a config.
    """
    cfg = read_config(path)
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


# --- printing failures ------------------------------------------------------------------------


def print_exception(headline: str, exc: BaseException) -> None:
    """Print ``headline``, then the exception and its notes, without the traceback.

    Args:
        headline: The line that says what failed, printed first.
        exc: The exception to print in its one-line form, with its notes.
    """
    import traceback

    print(headline, file=sys.stderr)
    print("".join(traceback.format_exception_only(exc)).rstrip(), file=sys.stderr)


def _detach_stdout() -> None:
    """Point stdout at the null device, so the interpreter's final flush cannot fail again."""
    import os
    from contextlib import suppress

    with suppress(OSError, ValueError):  # stdout is not a real file (captured, closed)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
