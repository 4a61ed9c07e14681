"""Write a config as JSON, TOML or YAML text, optionally with each value's origin as a comment.

The writers are our own: the standard library has no TOML writer, and PyYAML writes YAML 1.1,
where ``1e-4`` needs no quotes because it is a string there; read back under YAML 1.2 it would
be a float. Strings are quoted wherever the core schema would read them as something else, and
in quotes every character that is not printable is escaped: each format refuses some control
characters raw, and YAML folds line breaks such as U+0085 into spaces.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping

from ._bounds import not_unicode
from ._scalars import resolve_plain
from ._tree import format_dotted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any, Final

__all__ = ["DUMP_FORMATS", "DumpError", "dump_config"]

DUMP_FORMATS = ("json", "toml", "yaml")
_TOML_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+\Z")
# A plain YAML scalar may not start with an indicator, nor hold `: ` or ` #`.
_YAML_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")
# What YAML 1.1 (PyYAML, which mmcv and mmengine read configs with) would read as a bool
# (yes, no, on, off, y, n in any case it allows), or as a number, a date or a sexagesimal (any
# text of digits, signs, dots, colons, underscores and the letters of bases and exponents that
# starts like a number), a date with a time, or as its value key `=`: written plain they read as
# text under YAML 1.2 but not there, so they are quoted.
_YAML11_SCALAR = re.compile(
    r"(?:y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF|=)"
    r"|[-+]?\.?[0-9][0-9a-fA-FxXoObB_.:eE+-]*"
    r"|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt \t].*)?"  # a date-time: 2024-01-01T10:00:00Z
)
# YAML reads a key longer than 1024 characters only as an explicit key (`? key`).
_YAML_LONGEST_KEY = 1024
# The escapes that YAML's and TOML's double-quoted strings share, for the characters they name;
# any other character that is not printable is written by its code (`\u0085`, `\U000e0001`).
_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}
# A comment keeps quotes and backslashes as they are: only characters that are not printable
# (a line break would start a line of data) are escaped there.
_COMMENT_ESCAPES = {char: code for char, code in _SHORT_ESCAPES.items() if char not in '"\\'}


class DumpError(ValueError):
    """A config that the chosen format cannot hold (``None`` in TOML, NaN in JSON)."""


def dump_config(
    cfg: Mapping[str, object], file_format: str, origins: Mapping[str, str] | None = None
) -> str:
    """Write a config as text in one of `DUMP_FORMATS`, which reads back to the same data.

    Args:
        cfg: Plain config data, as `load_config` returns it.
        file_format: ``'json'``, ``'toml'`` or ``'yaml'``.
        origins: Where each value came from, as `config_origins` returns it; when given, every
            value's line ends with ``# origin`` (TOML, YAML), or every value becomes
            ``{"value": ..., "origin": ...}`` (JSON, which has no comments).

    Returns:
        The text, ending with a newline.

    Raises:
        DumpError: The format cannot hold a value: None in TOML (which has no null) or an int
            beyond its 64 bits, NaN or an infinity in JSON (which has neither); in any, a key
            that is not a str, a value that is not plain data (a set, bytes, another object; a
            tuple is written as a list) or a key or str that is not Unicode text (a lone
            surrogate); or the config nests too deeply to write.
        TypeError: ``cfg`` is not a mapping.
        ValueError: ``file_format`` is not one of `DUMP_FORMATS`.
    """
    if file_format not in DUMP_FORMATS:
        raise ValueError(f"unknown format {file_format!r}; use one of {', '.join(DUMP_FORMATS)}")
    try:
        return _dump(cfg, file_format, origins)
    except RecursionError:
        # A loaded config nests at most a few hundred levels, which {{_base_...}} references
        # stacking values can pass; a config made in Python may nest deeper still.
        raise DumpError(
            f"the config nests too deeply to write as {file_format} (more levels of mappings "
            "and lists than Python can recurse into); flatten it"
        ) from None


def _dump(cfg: Mapping[str, object], file_format: str, origins: Mapping[str, str] | None) -> str:
    if isinstance(cfg, Mapping) and not isinstance(cfg, dict):
        cfg = dict(cfg)
    if not isinstance(cfg, dict):
        raise TypeError(
            f"dump_config writes a config, a dict at the top, got {type(cfg).__name__}; pass "
            "what load_config returns, or wrap the value in a dict"
        )
    cfg = _writable((), cfg, file_format)
    if file_format == "json":
        data = cfg if origins is None else _with_origins(cfg, (), origins)
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if file_format == "toml":
        lines: list[str] = []
        _toml_table(lines, (), cfg, origins)
        return "\n".join(lines).lstrip("\n") + "\n"
    lines = []
    _yaml_block(lines, 0, (), cfg, origins)
    return "\n".join(lines) + "\n"


def _writable(path: tuple[str | int, ...], value: object, file_format: str) -> Any:
    """The value with its tuples as lists; refuse the first part, in order, the format can't hold.

    Every format reads back only plain data (dicts with str keys, lists, str, int, float, bool,
    None), so anything else would come back as something else: a tuple comes back as a list,
    as SPEC 5.3 reads a Python config's tuples; a set or another object is refused.
    """
    if isinstance(value, Mapping):  # a read-only mapping too: written as the dict it holds
        where = repr(format_dotted(path)) if path else "the top level"
        for key in value:
            if not isinstance(key, str):
                raise DumpError(
                    f"a key of {where} is {key!r} ({type(key).__name__}); a config's keys are "
                    f"str, which {file_format} reads back; write it as {str(key)!r}"
                )
            problem = not_unicode(key)
            if problem is not None:
                raise DumpError(f"a key of {where}: {problem}")
        return {key: _writable((*path, key), item, file_format) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_writable((*path, index), item, file_format) for index, item in enumerate(value)]
    if value is not None and not isinstance(value, str | int | float):  # bool is an int
        raise DumpError(
            f"{format_dotted(path)!r} is {value!r} ({type(value).__name__}), which {file_format} "
            "cannot hold and read back; a config holds dicts, lists, str, int, float, bool and "
            "None: convert it to one of them"
        )
    if type(value) not in _PLAIN:
        # A subclass (a str Enum, an IntEnum) as the plain value it holds: each writer would
        # otherwise write it by its own str() ('S.X', where JSON wrote 'x').
        value = next(plain(value) for kind, plain in _PLAIN.items() if isinstance(value, kind))
    problem = _unwritable(format_dotted(path), value, file_format)
    if problem is not None:
        raise DumpError(problem)
    return value


# The leaf types every format reads back, each with what gives a subclass's plain value (bool
# first, before int, its base; str's own __str__, not the subclass's).
_PLAIN: Final[dict[type, Callable[[Any], object]]] = {
    type(None): lambda value: value,
    bool: bool,
    int: int,
    float: float,
    str: str.__str__,
}


def _unwritable(dotted: str, value: object, file_format: str) -> str | None:
    """Say why ``file_format`` cannot hold the value at ``dotted``, or None when it can."""
    if value is None and file_format == "toml":
        return (
            f"{dotted!r} is null, and TOML has no null; remove it, or write the config as json "
            "or yaml"
        )
    if (
        file_format == "toml"
        and isinstance(value, int)
        and not isinstance(value, bool)
        and not -(2**63) <= value < 2**63
    ):
        return (
            f"{dotted!r} is {value}, beyond TOML's 64-bit integers (a reader must refuse it); "
            "write the config as json or yaml, or the value as a str"
        )
    if isinstance(value, float) and not math.isfinite(value) and file_format == "json":
        return (
            f"{dotted!r} is {value!r}, and JSON has no NaN or Infinity; write the config as yaml "
            "or toml, which have them"
        )
    problem = not_unicode(value) if isinstance(value, str) else None
    return None if problem is None else f"{dotted!r}: {problem}"


def _is_leaf(value: object) -> bool:
    return not isinstance(value, dict | list) or not value


def _with_origins(value: object, path: tuple[str | int, ...], origins: Mapping[str, str]) -> object:
    if _is_leaf(value):
        return {"value": value, "origin": origins.get(format_dotted(path))}
    if isinstance(value, dict):
        return {k: _with_origins(v, (*path, k), origins) for k, v in value.items()}
    assert isinstance(value, list)
    return [_with_origins(v, (*path, i), origins) for i, v in enumerate(value)]


def _comment(path: tuple[str | int, ...], origins: Mapping[str, str] | None) -> str:
    if origins is None:
        return ""
    origin = origins.get(format_dotted(path))
    return f"  # {_escaped(origin)}" if origin else ""


# --- YAML -------------------------------------------------------------------------------------


def _yaml_block(
    lines: list[str],
    indent: int,
    path: tuple[str | int, ...],
    value: object,
    origins: Mapping[str, str] | None,
    first_prefix: str | None = None,
) -> None:
    """Write a non-empty mapping or list as block YAML; ``first_prefix`` starts its first line."""
    pad = " " * indent
    entries: Iterable[tuple[object, object]]
    entries = value.items() if isinstance(value, dict) else enumerate(value)  # type: ignore[arg-type]
    for position, (key, item) in enumerate(entries):
        lead = pad if position or first_prefix is None else first_prefix
        if isinstance(value, list):
            head = f"{lead}- "
        else:
            written = _yaml_str(str(key))
            # An explicit key, then its value on the next line, under the `?`.
            long = len(written) > _YAML_LONGEST_KEY
            head = f"{lead}? {written}\n{pad}:" if long else f"{lead}{written}:"
        here = (*path, key)
        if _is_leaf(item):
            space = "" if isinstance(value, list) else " "
            lines.append(f"{head}{space}{_yaml_scalar(item)}{_comment(here, origins)}")
        elif isinstance(value, list) and isinstance(item, dict):
            # `- key: value` then the item's other keys under the first.
            _yaml_block(lines, indent + 2, here, item, origins, first_prefix=f"{lead}- ")
        else:
            lines.append(head.rstrip())
            _yaml_block(lines, indent + 2, here, item, origins)


def _yaml_scalar(value: object) -> str:
    if value is None:
        return "null"
    number = _number_text(value, special_prefix=".")
    if number is not None:
        if isinstance(value, float) and "e" in number and "." not in number:
            # 1e-05 is a float in YAML 1.2 but text in YAML 1.1, which wants a dot: 1.0e-05.
            mantissa, exponent = number.split("e")
            return f"{mantissa}.0e{exponent}"
        return number
    if isinstance(value, str):
        return _yaml_str(value)
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return _yaml_str(str(value))


def _number_text(value: object, special_prefix: str) -> str | None:
    """Return a bool or a number as both YAML and TOML write it, or None for anything else.

    The two differ only in NaN and infinity: YAML writes ``.nan``, TOML ``nan``.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return f"{special_prefix}nan"
        if math.isinf(value):
            return f"{special_prefix}inf" if value > 0 else f"-{special_prefix}inf"
        return repr(value)
    return None


def _yaml_str(text: str) -> str:
    plain = (
        text
        and text == text.strip()
        and text[0] not in _YAML_INDICATORS
        and ": " not in text
        and " #" not in text
        and not text.endswith(":")
        and text.isprintable()
        and text != "<<"  # a merge key
        and resolve_plain(text) == text
        and _YAML11_SCALAR.fullmatch(text) is None
    )
    return text if plain else _quoted(text)


def _quoted(text: str) -> str:
    """A double-quoted string that YAML 1.2 and TOML both read back as ``text``."""
    return f'"{_escaped(text, _SHORT_ESCAPES)}"'


def _escaped(text: str, escapes: Mapping[str, str] = _COMMENT_ESCAPES) -> str:
    """``text`` with the characters of ``escapes`` and every character not printable escaped.

    In quotes, the quote and the backslash too; in a comment (an origin, which holds a path),
    only what would end the comment's line or be read as other than text.
    """
    if text.isprintable() and not any(char in text for char in escapes):
        return text
    parts = []
    for char in text:
        if char in escapes:
            parts.append(escapes[char])
        elif char.isprintable():
            parts.append(char)
        else:
            code = ord(char)
            parts.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
    return "".join(parts)


# --- TOML -------------------------------------------------------------------------------------


def _toml_table(
    lines: list[str],
    path: tuple[str | int, ...],
    table: Mapping[str, object],
    origins: Mapping[str, str] | None,
    header: str | None = None,
) -> None:
    """Write a table: its values, then its sub-tables, then its arrays of tables."""
    if header is not None:
        lines.extend(["", header])
    tables: list[tuple[str, dict[str, object]]] = []
    arrays: list[tuple[str, list[dict[str, object]]]] = []
    for key, value in table.items():
        here = (*path, key)
        if isinstance(value, dict) and value:
            tables.append((key, value))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            arrays.append((key, value))
        elif isinstance(value, list) and value and origins is not None:
            lines.append(f"{_toml_key(key)} = [")
            for index, item in enumerate(value):
                text = _toml_value(item)
                lines.append(f"  {text},{_inline_comment((*here, index), item, origins)}")
            lines.append("]")
        else:
            lines.append(f"{_toml_key(key)} = {_toml_value(value)}{_comment(here, origins)}")
    for key, value in tables:
        _toml_table(lines, (*path, key), value, origins, f"[{_toml_header((*path, key))}]")
    for key, items in arrays:
        header = f"[[{_toml_header((*path, key))}]]"
        for index, item in enumerate(items):
            _toml_table(lines, (*path, key, index), item, origins, header)


def _toml_header(path: tuple[str | int, ...]) -> str:
    """Return a table header's dotted keys: an array of tables' index is not part of it."""
    return ".".join(_toml_key(part) for part in path if isinstance(part, str))


def _inline_comment(path: tuple[str | int, ...], value: object, origins: Mapping[str, str]) -> str:
    """The origins of an item written on one line (an inline table holds several values)."""
    if _is_leaf(value):
        return _comment(path, origins)
    base = format_dotted(path)
    found = dict.fromkeys(o for p, o in origins.items() if p.startswith((f"{base}.", f"{base}[")))
    return f"  # {_escaped(', '.join(found))}" if found else ""


def _toml_key(key: str) -> str:
    return key if _TOML_BARE_KEY.match(key) else _quoted(key)


def _toml_value(value: object) -> str:
    number = _number_text(value, special_prefix="")
    if number is not None:
        return number
    if isinstance(value, str):
        return _quoted(value)
    if isinstance(value, dict):
        inner = ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items())
        return f"{{{inner}}}" if inner else "{}"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return _quoted(str(value))
