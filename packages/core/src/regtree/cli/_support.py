"""The plumbing that every regtree command line shares, ``regtree-optim``'s included.

``UsageError`` for input a command cannot act on, ``parse_command_line`` and ``run_command``
around argparse, ``read_config`` for config files, and how failures are printed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..config import ConfigError, load_config
from ..naming import closest

__all__ = [
    "UsageError",
    "add_set_option",
    "did_you_mean",
    "parse_command_line",
    "print_exception",
    "read_config",
    "run_command",
]


class UsageError(Exception):
    """A command line or input file that cannot be acted on: exit status 2, one line, no trace."""


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
    close = closest(word, choices, count=1, cutoff=cutoff)
    return f"; did you mean {close[0]!r}?" if close else ""


# --- reading a config file --------------------------------------------------------------------


def read_config(path: str, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """Load a config file, turning a file that cannot be read or parsed into a ``UsageError``.

    Args:
        path: The config file.
        overrides: ``--set`` texts (``'optimizer.lr=1e-3'``), applied after inheritance.

    Returns:
        The loaded config, as ``load_config`` returns it.

    Raises:
        UsageError: The file cannot be read, is not a valid config, or an override does not fit
            it; the message names the file.
    """
    try:
        return load_config(path, overrides)
    except ConfigError as exc:  # a file that cannot be opened included
        raise UsageError(str(exc)) from None


def add_set_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--set PATH=VALUE`` (repeatable, in order) to a command that reads a config file.

    The texts land in ``options.overrides``, ready for :func:`read_config`.
    """
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="PATH=VALUE",
        help=(
            "override a value after inheritance, in Hydra's grammar: a.b=1 replaces, +a.c=2 "
            "adds, ++a.d=3 adds or replaces, ~a.b deletes; an integer part indexes a list; the "
            "value is a YAML flow value (1e-4, [16, 32], {type: Net}); repeatable"
        ),
    )


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
