"""What every config keeps to, whatever its format: how deep it nests, and text that is Unicode.

Each reader stops at the same depth with the same words: YAML's composer and the override
parser as they descend, the Python reader as it takes its values apart, and JSON and TOML (whose
standard-library parsers would go on until Python's recursion limit) in `check_tree` after
parsing. Everything downstream (merging, overrides, writing) recurses over the tree, so the bound
keeps a load well inside Python's recursion limit (1000), whatever the file. Likewise every str
is valid Unicode text (`not_unicode`), checked where a reader can make one that is not.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ._errors import ConfigError
from ._tree import leaf_value, line_of, origin_of

if TYPE_CHECKING:
    from typing import Any

__all__ = ["MAX_DEPTH", "check_tree", "may_nest_too_deeply", "not_unicode", "too_deep"]

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


def not_unicode(text: str) -> str | None:
    r"""Say why ``text`` is not valid Unicode text, or None when it is.

    A Python str may hold a lone surrogate (half of a UTF-16 pair), which no file can hold and
    no UTF-8 output can write: JSON's ``"\ud800"``, a Python config's ``'\ud800'`` and a
    command line's bytes that are not UTF-8 give one.
    """
    if text.isascii():
        return None
    found = _LONE_SURROGATE.search(text)
    if found is None:
        return None
    shown = repr(text) if len(text) <= 40 else repr(text[:37]) + "..."
    return (
        f"{shown} is not valid Unicode text: it holds U+{ord(found.group()):04X}, half of a "
        "UTF-16 surrogate pair without its other half; write the character itself"
    )


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def check_tree(filename: str, tree: object, *, nesting: bool, text: bool) -> None:
    """Refuse a file's tree (or plain data) too deep, or holding a str that is not Unicode text.

    The readers whose parsers do not check either themselves call this walk after parsing.
    Iterative, so that data as deep as Python's recursion limit is measured, not overflowed.

    Args:
        filename: The file, for the message.
        tree: Its top-level mapping, as `_tree` takes either form.
        nesting: Check the depth.
        text: Check the keys and str values.

    Raises:
        ConfigError: The first problem met, with its line where the tree has one.
    """
    stack: list[tuple[Any, int]] = [(tree, 0)] if isinstance(tree, dict | list) else []
    while stack:
        node, depth = stack.pop()
        for key, child in node.items() if isinstance(node, dict) else enumerate(node):
            problem = not_unicode(key) if text and type(key) is str else None
            if problem is not None:
                raise ConfigError(filename, f"the key {problem}", line_of(origin_of(child)))
            if isinstance(child, dict | list):
                if nesting and depth == MAX_DEPTH:
                    raise ConfigError(filename, too_deep("the file"))
                stack.append((child, depth + 1))
                continue
            value = leaf_value(child)
            problem = not_unicode(value) if text and isinstance(value, str) else None
            if problem is not None:
                raise ConfigError(filename, problem, line_of(origin_of(child)))
