"""Config files: read JSON, TOML and YAML into plain dicts; refuse formats that run code."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["SUPPORTED_SUFFIXES", "ConfigError", "load_config"]

# Suffix -> format name. Parsers are imported only when a file of that format is read, so
# `import regtree` never pays for json, tomllib or yaml.
SUPPORTED_SUFFIXES: dict[str, str] = {
    ".json": "JSON",
    ".toml": "TOML",
    ".yaml": "YAML",
    ".yml": "YAML",
}


class ConfigError(ValueError):
    """A config file that cannot be read: unsupported format, bad syntax or no settings.

    The message is one line: the file, the line (and column) where the parser gives one, then the
    problem. The parts are kept as attributes for tools.

    Attributes:
        path: The file, as given to `load_config`.
        problem: What is wrong, without the file and position.
        line: 1-based line the parser pointed at, or None.
        column: 1-based column the parser pointed at, or None.
    """

    def __init__(
        self, path: str, problem: str, line: int | None = None, column: int | None = None
    ) -> None:
        self.path = path
        self.problem = problem
        self.line = line
        self.column = column
        where = path
        if line is not None:
            where += f", line {line}"
            if column is not None:
                where += f", column {column}"
        super().__init__(f"{where}: {problem}")

    def __reduce__(self) -> tuple[type[ConfigError], tuple[str, str, int | None, int | None]]:
        return type(self), (self.path, self.problem, self.line, self.column)


def load_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a config file into a dict, choosing the parser by the file's extension.

    JSON (``.json``) and TOML (``.toml``) use the standard library; YAML (``.yaml``, ``.yml``)
    needs PyYAML (``pip install 'regtree[yaml]'``) and is read with its safe loader. Python files
    are refused: loading one would execute it.

    Args:
        path: The config file.

    Returns:
        The file's top-level mapping, as a new dict of plain values.

    Raises:
        ConfigError: The extension is not supported, the file is not UTF-8, its syntax is wrong,
            its top level is not a mapping, or it holds no settings.
        OSError: The file cannot be opened (missing, a directory, no permission).
    """
    filename = os.fspath(path)
    suffix = os.path.splitext(filename)[1].lower()
    if suffix == ".py":
        raise ConfigError(
            filename,
            "Python config files are not loaded, because reading one would execute its code; "
            "write the config as TOML, JSON or YAML instead",
        )
    file_format = SUPPORTED_SUFFIXES.get(suffix)
    if file_format is None:
        shown = repr(suffix) if suffix else "no extension"
        raise ConfigError(
            filename,
            f"unsupported config file extension ({shown}); "
            f"use one of {', '.join(SUPPORTED_SUFFIXES)}",
        )
    with open(filename, "rb") as stream:
        data = stream.read()
    text = _decode(filename, data)
    if not text.strip():
        raise ConfigError(filename, f"the file is empty; a config is a {file_format} mapping")
    if file_format == "JSON":
        loaded = _parse_json(filename, text)
    elif file_format == "TOML":
        loaded = _parse_toml(filename, text)
    else:
        loaded = _parse_yaml(filename, text)
    if loaded is None or loaded == {}:
        raise ConfigError(filename, "the file holds no settings")
    if not isinstance(loaded, dict):
        raise ConfigError(
            filename,
            f"the top level of a config must be a mapping of settings, not a {_describe(loaded)}",
        )
    return loaded


def _decode(filename: str, data: bytes) -> str:
    try:
        # utf-8-sig drops a byte-order mark, which some editors write and json rejects.
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            filename, f"the file is not UTF-8 text (byte {exc.start} is invalid)", line
        ) from None


def _parse_json(filename: str, text: str) -> object:
    import json

    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(filename, f"invalid JSON: {exc.msg}", exc.lineno, exc.colno) from None


def _parse_toml(filename: str, text: str) -> object:
    import re
    import tomllib

    try:
        return tomllib.loads(text)
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


def _parse_yaml(filename: str, text: str) -> object:
    try:
        import yaml
    except ImportError:
        raise ConfigError(
            filename,
            "reading YAML needs PyYAML, which is not installed; "
            "install it with: pip install 'regtree[yaml]'",
        ) from None
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        parts = [part for part in (exc.context, exc.problem) if part]
        problem = "; ".join(parts) or "syntax error"
        line = None if mark is None else mark.line + 1
        column = None if mark is None else mark.column + 1
        raise ConfigError(filename, f"invalid YAML: {problem}", line, column) from None
    except yaml.YAMLError as exc:
        raise ConfigError(filename, f"invalid YAML: {_one_line(str(exc))}") from None


def _describe(value: object) -> str:
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


def _one_line(message: str) -> str:
    return " ".join(message.split())
