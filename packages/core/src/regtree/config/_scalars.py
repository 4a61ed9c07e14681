"""YAML 1.2 core schema: what an unquoted scalar means (SPEC 5.1), for files and overrides alike.

PyYAML follows YAML 1.1, where ``1e-4`` is a string (a float needs a dot) and ``yes``/``on`` are
booleans. The core schema of YAML 1.2 fixes both; the YAML reader and the override parser take
their scalars from here, so a value means the same in a file and on the command line.
"""

from __future__ import annotations

import re

__all__ = [
    "BASE_REFERENCE",
    "NOT_A_REFERENCE",
    "REFERENCE_LIKE",
    "resolve_plain",
    "tagged_scalar",
    "to_float",
    "to_int",
]

# A value of the merged bases, `{{ _base_.a.b }}` (mmcv's syntax, spaces allowed in the braces):
# a string value in any format, or an expression in a Python config. A part is a key or a list
# index, `-1` the last item (mmcv's pattern, `[\w.]+`, has no `-`: such a text stayed a string),
# or in brackets as overrides write one (`custom_keys[backbone.layer1]`, `l[0]`; see
# _tree.split_dotted: a bracket ends at the `]` before a `.`, a `[` or the closing braces).
_BRACKETED = r"\[[^{}]*?\](?=[.\[\s}])"
BASE_REFERENCE = re.compile(
    rf"\{{\{{\s*_base_\.((?:[\w-]+|{_BRACKETED})(?:\.[\w-]+|\.?{_BRACKETED})*)\s*\}}\}}"
)
# What starts like a reference: where it is not one, it is refused, never kept as a string.
REFERENCE_LIKE = re.compile(r"\{\{\s*_base_")
NOT_A_REFERENCE = (
    "is not a reference, which is written {{_base_.a.b}}: keys and list indices (-1 for the "
    "last item) joined by dots, a key that holds a dot in brackets ({{_base_.a[b.c].d}}), with "
    "spaces only next to the braces"
)

# The core schema of YAML 1.2.2 (10.3.2): the words that are null or a bool, then the patterns of
# the numbers. Words are looked up and only a scalar that starts like a number meets a pattern:
# measured on the 339 plain scalars of the config benchmark's YAML files, 0.15 us a scalar,
# where trying a pattern per kind took 0.29 us.
_WORDS: dict[str, object] = {
    "": None,  # an empty value
    "~": None,
    **dict.fromkeys(("null", "Null", "NULL"), None),
    **dict.fromkeys(("true", "True", "TRUE"), True),
    **dict.fromkeys(("false", "False", "FALSE"), False),
}
_NUMBER_STARTS = frozenset("-+.0123456789")
_INT = re.compile(r"(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)\Z")
_FLOAT = re.compile(
    r"(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))\Z"
)


def resolve_plain(text: str) -> object:
    """Return the value of an unquoted scalar under the YAML 1.2 core schema.

    Args:
        text: The scalar as written, without surrounding spaces.

    Returns:
        None, a bool, an int, a float, or ``text`` itself (a date, ``yes`` and ``on`` included).
    """
    if text in _WORDS:
        return _WORDS[text]
    # An index, not `text[:1]` (the empty scalar is a word): measured, the config benchmark's
    # four YAML files become trees in 125 us instead of 133 us.
    if text[0] in _NUMBER_STARTS:
        # The commonest numbers, `256` and `0.5`, without a pattern: measured on the config
        # benchmark's 339 plain scalars, 0.10 us a scalar instead of 0.15 us.
        if text.isascii():
            if text.isdigit():
                return int(text)
            if text.replace(".", "", 1).isdigit():  # digits and a dot: 0.5, .5, 5.
                return float(text)
        if _INT.match(text):
            return to_int(text)
        if _FLOAT.match(text):
            return to_float(text)
    return text


def to_int(text: str) -> int:
    """Convert a core-schema int (``12``, ``-3``, ``0o17``, ``0x1f``); ``012`` is twelve."""
    if text[1:2] == "o":
        return int(text[2:], 8)
    if text[1:2] == "x":
        return int(text[2:], 16)
    return int(text, 10)


def to_float(text: str) -> float:
    """Convert a core-schema float (``1e-4``, ``.5``, ``-.inf``, ``.nan``)."""
    lowered = text.lower()
    if lowered.endswith((".inf", ".nan")):
        return float(lowered.replace(".", ""))
    return float(text)


# What each core-schema tag of a scalar takes, for the message when its text is none of them.
_TAKES: dict[str, str] = {
    "int": "an integer such as 12, -3, 0o17 or 0x1f",
    "float": "a number such as 0.5, 1e-4, .inf or .nan",
    "bool": "true or false (or True, TRUE, False, FALSE)",
    "null": "null, Null, NULL, ~ or nothing",
}


def tagged_scalar(kind: str, text: str) -> object:
    """Return the value of a scalar tagged ``!!int``, ``!!float``, ``!!bool`` or ``!!null``.

    Args:
        kind: The tag's name: ``'int'``, ``'float'``, ``'bool'`` or ``'null'``.
        text: The scalar as written.

    Raises:
        ValueError: the text is none of the core schema's forms of that kind (``!!int abc``,
            ``!!bool yes``).
    """
    if kind == "int" and _INT.match(text):
        return to_int(text)
    if kind == "float" and _FLOAT.match(text):
        return to_float(text)
    word = _WORDS.get(text, text)
    if (kind == "bool" and isinstance(word, bool)) or (kind == "null" and word is None):
        return word
    raise ValueError(f"!!{kind} takes {_TAKES[kind]}, not {text!r}")
