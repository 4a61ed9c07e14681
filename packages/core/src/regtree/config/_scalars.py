"""YAML 1.2 core schema: what an unquoted scalar means (SPEC 5.1), for files and overrides alike.

PyYAML follows YAML 1.1, where ``1e-4`` is a string (a float needs a dot) and ``yes``/``on`` are
booleans. The core schema of YAML 1.2 fixes both; the YAML reader and the override parser take
their scalars from here, so a value means the same in a file and on the command line.
"""

from __future__ import annotations

import re

__all__ = ["BASE_REFERENCE", "CORE_SCHEMA", "resolve_plain", "to_float", "to_int"]

# A value of the merged bases, `{{ _base_.a.b }}` (mmcv's syntax, spaces allowed in the braces):
# a string value in any format, or an expression in a Python config.
BASE_REFERENCE = re.compile(r"\{\{\s*_base_\.([\w.]+)\s*\}\}")

# Tag -> (pattern of the whole scalar, characters it can start with), as in YAML 1.2.2 10.3.2.
CORE_SCHEMA: dict[str, tuple[re.Pattern[str], str]] = {
    "null": (re.compile(r"(?:null|Null|NULL|~)?\Z"), "nN~"),
    "bool": (re.compile(r"(?:true|True|TRUE|false|False|FALSE)\Z"), "tTfF"),
    "int": (
        re.compile(r"(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)\Z"),
        "-+0123456789",
    ),
    "float": (
        re.compile(
            r"(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
            r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))\Z"
        ),
        "-+.0123456789",
    ),
}


def resolve_plain(text: str) -> object:
    """Return the value of an unquoted scalar under the YAML 1.2 core schema.

    Args:
        text: The scalar as written, without surrounding spaces.

    Returns:
        None, a bool, an int, a float, or ``text`` itself (a date, ``yes`` and ``on`` included).
    """
    if CORE_SCHEMA["null"][0].match(text):
        return None
    first = text[0]
    if first in "tTfF" and CORE_SCHEMA["bool"][0].match(text):
        return first in "tT"
    if first in "-+.0123456789":
        if CORE_SCHEMA["int"][0].match(text):
            return to_int(text)
        if CORE_SCHEMA["float"][0].match(text):
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
