"""Write a config as JSON, TOML or YAML text, optionally with each value's origin as a comment.

The writers are our own: the standard library has no TOML writer, and PyYAML writes YAML 1.1,
where ``1e-4`` needs no quotes because it is a string there; read back under YAML 1.2 it would
be a float. Strings are quoted wherever the core schema would read them as something else.
"""

from __future__ import annotations

import json
import math
import re

from ._scalars import resolve_plain

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["DUMP_FORMATS", "DumpError", "dump_config"]

DUMP_FORMATS = ("json", "toml", "yaml")
_TOML_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+\Z")
# A plain YAML scalar may not start with an indicator, nor hold `: ` or ` #`.
_YAML_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")


class DumpError(ValueError):
    """A config that the chosen format cannot hold (``None`` in TOML)."""


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
        DumpError: A value is None and the format is TOML (TOML has no null).
        ValueError: ``file_format`` is not one of `DUMP_FORMATS`.
    """
    if file_format == "json":
        data = cfg if origins is None else _with_origins(cfg, (), origins)
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if file_format == "toml":
        lines: list[str] = []
        _toml_table(lines, (), cfg, origins)
        return "\n".join(lines).lstrip("\n") + "\n"
    if file_format == "yaml":
        lines = []
        _yaml_block(lines, 0, (), cfg, origins)
        return "\n".join(lines) + "\n"
    raise ValueError(f"unknown format {file_format!r}; use one of {', '.join(DUMP_FORMATS)}")


def _dotted(path: tuple[str | int, ...]) -> str:
    return ".".join(map(str, path))


def _is_leaf(value: object) -> bool:
    return not isinstance(value, dict | list) or not value


def _with_origins(value: object, path: tuple[str | int, ...], origins: Mapping[str, str]) -> object:
    if _is_leaf(value):
        return {"value": value, "origin": origins.get(_dotted(path))}
    if isinstance(value, dict):
        return {k: _with_origins(v, (*path, k), origins) for k, v in value.items()}
    assert isinstance(value, list)
    return [_with_origins(v, (*path, i), origins) for i, v in enumerate(value)]


def _comment(path: tuple[str | int, ...], origins: Mapping[str, str] | None) -> str:
    if origins is None:
        return ""
    origin = origins.get(_dotted(path))
    return f"  # {origin}" if origin else ""


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
        head = f"{lead}- " if isinstance(value, list) else f"{lead}{_yaml_str(str(key))}:"
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
        and resolve_plain(text) == text
    )
    return text if plain else json.dumps(text, ensure_ascii=False)


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
                text = _toml_value(item, (*here, index))
                lines.append(f"  {text},{_inline_comment((*here, index), item, origins)}")
            lines.append("]")
        else:
            lines.append(f"{_toml_key(key)} = {_toml_value(value, here)}{_comment(here, origins)}")
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
    prefix = _dotted(path) + "."
    found = dict.fromkeys(o for p, o in origins.items() if p.startswith(prefix))
    return f"  # {', '.join(found)}" if found else ""


def _toml_key(key: str) -> str:
    return key if _TOML_BARE_KEY.match(key) else json.dumps(key, ensure_ascii=False)


def _toml_value(value: object, path: tuple[str | int, ...]) -> str:
    if value is None:
        raise DumpError(
            f"{_dotted(path)!r} is null, and TOML has no null; remove it, or write the config "
            "as json or yaml"
        )
    number = _number_text(value, special_prefix="")
    if number is not None:
        return number
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        inner = ", ".join(
            f"{_toml_key(k)} = {_toml_value(v, (*path, k))}" for k, v in value.items()
        )
        return f"{{{inner}}}" if inner else "{}"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v, (*path, i)) for i, v in enumerate(value)) + "]"
    return json.dumps(str(value), ensure_ascii=False)
