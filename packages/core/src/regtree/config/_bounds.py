"""What every config keeps to, whatever its format: how deep its mappings and lists nest.

Each reader stops at the same depth with the same words: YAML's composer and the override
parser as they descend, the Python reader as it takes its values apart, and JSON and TOML (whose
standard-library parsers would go on until Python's recursion limit) in `check_nesting` after
parsing. Everything downstream (merging, overrides, writing) recurses over the tree, so the bound
keeps a load well inside Python's recursion limit (1000), whatever the file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._errors import ConfigError

if TYPE_CHECKING:
    from typing import Any

__all__ = ["MAX_DEPTH", "check_nesting", "may_nest_too_deeply", "too_deep"]

# Levels of mappings and lists below the top of a config (or of an override's value).
MAX_DEPTH = 200


def too_deep(what: str, remedy: str = "flatten it") -> str:
    """The problem of ``what`` (``'the file'``, ``'the value'``) nesting deeper than `MAX_DEPTH`."""
    return (
        f"{what} nests deeper than {MAX_DEPTH} levels of mappings and lists, the most a config "
        f"may hold ({remedy})"
    )


def may_nest_too_deeply(text: str, openers: str) -> bool:
    """Whether ``text`` holds more than `MAX_DEPTH` of the characters that open a level.

    A text with fewer cannot nest too deeply, so its data need not be walked: counting takes a
    few microseconds for a typical config, which rarely holds as many.
    """
    return sum(text.count(opener) for opener in openers) > MAX_DEPTH


def check_nesting(filename: str, data: object) -> None:
    """Refuse plain data (dicts, lists, values) of a file that nests deeper than `MAX_DEPTH`.

    Iterative, so that data as deep as Python's recursion limit is measured, not overflowed.

    Raises:
        ConfigError: It nests deeper.
    """
    stack: list[tuple[Any, int]] = [(data, 0)] if isinstance(data, dict | list) else []
    while stack:
        node, depth = stack.pop()
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, dict | list):
                if depth == MAX_DEPTH:
                    raise ConfigError(filename, too_deep("the file"))
                stack.append((child, depth + 1))
