"""One config file read into a tree of values with origins, the parser chosen by its extension."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._bounds import check_tree, may_nest_too_deeply, too_deep
from ._errors import ConfigError
from ._formats import SUPPORTED_SUFFIXES, file_format
from ._tree import from_plain, to_plain
from ._yaml import YamlProblem, parse_yaml

if TYPE_CHECKING:
    from typing import Any

__all__ = ["read_file", "read_tree", "why_unreadable"]


def read_file(filename: str) -> tuple[str, bytes]:
    """The format of a config file, by its extension, and its content.

    Raises:
        ConfigError: The extension is not supported (said before the file is opened).
        OSError: The file cannot be opened.
    """
    kind = file_format(filename)
    # Unbuffered: the whole file is read at once, and a buffered reader would only add its
    # set-up (an isatty call among it); measured, four small files read in 20 us, not 25 us.
    with open(filename, "rb", buffering=0) as stream:
        return kind, stream.read()


def why_unreadable(exc: OSError) -> str:
    """Say why a config file cannot be opened: the system's words, for a folder what to name."""
    reason = exc.strerror or str(exc)
    if isinstance(exc, IsADirectoryError):
        reason += f"; name a config file in it ({', '.join(SUPPORTED_SUFFIXES)})"
    return reason


def read_tree(filename: str, kind: str, data: bytes, *, plain: bool = False) -> Any:
    """Read one config file (no inheritance): a tree whose values know their origin, or plain data.

    Origins are ``filename:line`` for YAML and Python and ``filename`` for JSON and TOML, whose
    parsers give no positions of values. A Python config is parsed with ``ast`` and evaluated
    as data, never run (`_pyconfig`).

    Args:
        filename: The file, as origins and errors will name it.
        kind: Its format, as `read_file` gives it.
        data: Its content.
        plain: Read it as plain data (dicts, lists, values) instead, without origins.

    Returns:
        The file's top-level mapping: a `Table`, or a dict of plain data.

    Raises:
        ConfigError: The file is not UTF-8, its syntax is wrong, its top level is not a
            mapping, or it holds no settings.
    """
    text = _decode(filename, data)
    if not text.strip():
        raise ConfigError(filename, f"the file is empty; a config is a {kind} mapping")
    tree: object
    if kind in ("JSON", "TOML"):
        # Their parsers give plain data and no lines: a tree's values all come from the file.
        tree = (_parse_json if kind == "JSON" else _parse_toml)(filename, text)
        if not plain:
            tree = from_plain(tree, filename)
    elif kind == "Python":
        from ._pyconfig import parse_python

        tree = parse_python(filename, text)
        if plain:
            tree = to_plain(tree)
    else:
        tree = _parse_yaml(filename, text, plain)
    if tree is None or tree == {}:
        raise ConfigError(filename, "the file holds no settings")
    if not isinstance(tree, dict):
        shown = _describe(to_plain(tree))
        raise ConfigError(
            filename, f"the top level of a config must be a mapping of settings, not a {shown}"
        )
    return tree


def _decode(filename: str, data: bytes) -> str:
    try:
        # UTF-8 by the C decoder, not the utf-8-sig codec's Python function (a file 0.17 us, not
        # 0.62 us), whose error positions also leave out the byte-order mark.
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            filename, f"the file is not UTF-8 text (byte {exc.start} is invalid)", line
        ) from None
    # A byte-order mark, which some editors write and json rejects, is dropped.
    return text[1:] if text[:1] == "\ufeff" else text


def _parse_json(filename: str, text: str) -> object:
    import json

    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise ConfigError(filename, f"invalid JSON: {exc.msg}", exc.lineno, exc.colno) from None
    except _DuplicateKey as exc:
        raise ConfigError(
            filename,
            f"the key {exc.key!r} appears twice in one mapping; keys are unique in a config (json "
            "would keep the last one and hide the first): keep one",
        ) from None
    except RecursionError:  # far deeper than the bound: json recurses per level
        raise ConfigError(filename, too_deep("the file")) from None
    nesting = may_nest_too_deeply(text, "[{")
    if nesting or "\\u" in text:  # `"\ud800"`, which json reads as a lone surrogate
        check_tree(filename, data, nesting=nesting, text="\\u" in text)
    return data


def _parse_toml(filename: str, text: str) -> object:
    import re
    import tomllib

    try:
        data = tomllib.loads(text)
    except RecursionError:  # far deeper than the bound: tomllib recurses per level
        raise ConfigError(filename, too_deep("the file")) from None
    except tomllib.TOMLDecodeError as exc:
        # Python 3.14 gives the position as attributes; earlier versions only in the message.
        message = str(getattr(exc, "msg", exc))
        line: int | None = getattr(exc, "lineno", None)
        column: int | None = getattr(exc, "colno", None)
        position = re.search(r"\s*\(at line (\d+), column (\d+)\)\s*$", message)
        if position is not None:
            message = message[: position.start()]
            line, column = int(position.group(1)), int(position.group(2))
        elif message.endswith("(at end of document)"):
            message = message.removesuffix("(at end of document)").rstrip()
            line = text.count("\n") + 1
        raise ConfigError(filename, f"invalid TOML: {message}", line, column) from None
    if may_nest_too_deeply(text, "[{."):  # `a.b.c = 1` nests too (tomllib refuses surrogates)
        check_tree(filename, data, nesting=True, text=False)
    _dates_as_text(data)
    return data


class _DuplicateKey(Exception):
    """A key written twice in one JSON object, raised out of json's parser."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's mapping, refusing a key written twice (json would keep the last)."""
    table = dict(pairs)
    if len(table) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return table


def _dates_as_text(container: dict[str, Any] | list[Any]) -> None:
    """Replace each TOML date, time or date-time in ``container`` by its ISO 8601 text, in place.

    A config is plain data (SPEC 5), which a datetime is not (nor JSON, for ``regtree resolve``);
    so it is read as a YAML date is, as a str. In place and by type, without rebuilding the
    containers: 6 us for configs/demo.toml, against 18 us rebuilt and 19 us for a regex scan of
    the text that would have said whether it holds one.
    """
    import datetime

    dates = (datetime.date, datetime.time, datetime.datetime)
    items = container.items() if isinstance(container, dict) else enumerate(container)
    for key, value in items:
        kind = type(value)
        if kind is dict or kind is list:
            _dates_as_text(value)
        elif kind in dates:
            container[key] = value.isoformat()  # type: ignore[index]  # a key of this container


def _parse_yaml(filename: str, text: str, plain: bool) -> object:
    try:
        import yaml  # noqa: F401  (the optional extra: say how to get it)
    except ImportError:
        raise ConfigError(
            filename,
            "reading YAML needs PyYAML, which is not installed; "
            "install it with: pip install 'regtree[yaml]'",
        ) from None
    try:
        tree = parse_yaml(filename, text, plain=plain)
    except YamlProblem as exc:
        problem = f"invalid YAML: {exc.problem}" if exc.invalid else exc.problem
        raise ConfigError(filename, problem, exc.line, exc.column) from None
    if "\\" in text:  # `"\ud800"`: libyaml refuses it, PyYAML's Python parser does not
        check_tree(filename, tree, nesting=False, text=True)
    return tree


def _describe(value: object) -> str:
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    return type(value).__name__
