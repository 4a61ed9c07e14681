"""Override values: a YAML 1.2 flow value (``1e-4``, ``[16, 32]``, ``{type: Net}``), parsed here.

Overrides are read by this small parser rather than by PyYAML, so that ``--set`` means the same
whether or not the yaml extra is installed, and costs no import. Scalars follow the same core
schema as YAML files (`_scalars`). Flow collections, quoted strings and plain scalars are
understood; a key in a flow mapping is always a string, and ``{a:1}`` is ``{'a': 1}`` (as in
Hydra; strict YAML would read a key ``'a:1'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._bounds import MAX_DEPTH, too_deep
from ._scalars import resolve_plain

if TYPE_CHECKING:
    from typing import NoReturn

__all__ = ["FlowError", "parse_flow_value"]

_ESCAPES = {
    "0": "\0",
    "a": "\a",
    "b": "\b",
    "t": "\t",
    "\t": "\t",
    "n": "\n",
    "v": "\v",
    "f": "\f",
    "r": "\r",
    "e": "\x1b",
    " ": " ",
    '"': '"',
    "/": "/",
    "\\": "\\",
    "N": "\x85",
    "_": "\xa0",
    "L": "\u2028",
    "P": "\u2029",
}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}


class FlowError(ValueError):
    """A value that is not a YAML flow value; the message says what was expected where."""


def parse_flow_value(text: str) -> object:
    """Parse an override's value as a YAML 1.2 flow value.

    A value that is not a collection or a quoted string is a plain scalar: the whole text,
    spaces at its ends removed, resolved by the core schema (``foo bar`` is a str, ``1e-4`` a
    float, an empty value None).

    Args:
        text: The value, as written after ``=``.

    Returns:
        Plain data: dicts, lists, str, int, float, bool or None.

    Raises:
        FlowError: An unclosed collection or string, or text after the value.
    """
    start = len(text) - len(text.lstrip(" \t"))
    if start == len(text):
        return None
    if text[start] not in "[{\"'":
        # Most values are plain scalars and need no parser: measured with the prefix test in
        # `_overrides._parse`, the config benchmark's 20 overrides apply in 59 us, not 74 us.
        return resolve_plain(text.strip())
    parser = _Parser(text)
    parser.pos = start
    value = parser.value(0)
    parser.skip_spaces()
    if not parser.at_end():
        parser.fail(f"unexpected {text[parser.pos]!r} after the value")
    return value


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, problem: str) -> NoReturn:
        raise FlowError(f"{problem} (at character {self.pos + 1} of {self.text!r})")

    def at_end(self) -> bool:
        return self.pos >= len(self.text)

    def skip_spaces(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1

    def value(self, depth: int) -> object:
        """The value at ``pos``: ``depth`` levels of collections below the top one."""
        self.skip_spaces()
        if self.at_end():
            self.fail("a value is missing")
        char = self.text[self.pos]
        if char in "[{" and depth > MAX_DEPTH:
            self.fail(too_deep("the value"))
        if char == "[":
            return self.sequence(depth)
        if char == "{":
            return self.mapping(depth)
        if char in "\"'":
            return self.quoted()
        return resolve_plain(self.plain(key=False))

    def sequence(self, depth: int) -> list[object]:
        self.pos += 1  # [
        items: list[object] = []
        while True:
            self.skip_spaces()
            if self.at_end():
                self.fail("']' is missing")
            if self.text[self.pos] == "]":
                self.pos += 1
                return items
            item = self.value(depth + 1)
            self.skip_spaces()
            if not self.at_end() and self.text[self.pos] == ":":
                # `[a: 1]`: a single-pair mapping, as YAML reads it.
                self.pos += 1
                item = {str(item): self.value(depth + 1)}
                self.skip_spaces()
            items.append(item)
            self.separator("]")

    def mapping(self, depth: int) -> dict[str, object]:
        self.pos += 1  # {
        table: dict[str, object] = {}
        while True:
            self.skip_spaces()
            if self.at_end():
                self.fail("'}' is missing")
            if self.text[self.pos] == "}":
                self.pos += 1
                return table
            key = self.quoted() if self.text[self.pos] in "\"'" else self.plain(key=True)
            self.skip_spaces()
            value: object = None
            if not self.at_end() and self.text[self.pos] == ":":
                self.pos += 1
                self.skip_spaces()
                if self.at_end() or self.text[self.pos] not in ",}":
                    value = self.value(depth + 1)
            if key in table:
                self.fail(f"the key {key!r} appears twice in the mapping; keys are unique")
            table[key] = value
            self.skip_spaces()
            self.separator("}")

    def separator(self, closer: str) -> None:
        if self.at_end():
            self.fail(f"{closer!r} is missing")
        char = self.text[self.pos]
        if char == ",":
            self.pos += 1
        elif char != closer:
            self.fail(f"expected ',' or {closer!r}, found {char!r}")

    def plain(self, *, key: bool) -> str:
        start = self.pos
        stops = ",[]{}:" if key else ",[]{}"
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char in stops:
                break
            if char == ":" and (
                self.pos + 1 == len(self.text) or self.text[self.pos + 1] in " \t,]}"
            ):
                break  # `a: b` inside a list: the end of a key
            self.pos += 1
        scalar = self.text[start : self.pos].strip()
        if not scalar:
            self.fail("a value is missing")
        return scalar

    def quoted(self) -> str:
        quote = self.text[self.pos]
        stops = quote + ("\\" if quote == '"' else "")  # '...' has no escapes
        self.pos += 1
        parts: list[str] = []
        while True:
            end = self.pos
            while end < len(self.text) and self.text[end] not in stops:
                end += 1
            parts.append(self.text[self.pos : end])
            self.pos = end
            if self.at_end():
                self.fail(f"the string has no closing {quote}")
            char = self.text[self.pos]
            if quote == "'":
                if self.text[self.pos + 1 : self.pos + 2] == "'":  # '' is a quote
                    parts.append("'")
                    self.pos += 2
                    continue
                self.pos += 1
                return "".join(parts)
            if char == '"':
                self.pos += 1
                return "".join(parts)
            parts.append(self.escape())

    def escape(self) -> str:
        self.pos += 1  # backslash
        code = self.text[self.pos : self.pos + 1]
        if code in _ESCAPES:
            self.pos += 1
            return _ESCAPES[code]
        width = _HEX_ESCAPES.get(code)
        digits = self.text[self.pos + 1 : self.pos + 1 + width] if width else ""
        hexadecimal = width is not None and len(digits) == width
        hexadecimal = hexadecimal and all(c in "0123456789abcdefABCDEF" for c in digits)
        if hexadecimal and 0xD800 <= int(digits, 16) <= 0xDFFF:  # as libyaml refuses it
            self.fail(
                f"the escape '\\{code}{digits}' is half of a UTF-16 surrogate pair, not a "
                "character; write the character itself, or \\U and its 8 hex digits"
            )
        if hexadecimal and int(digits, 16) <= 0x10FFFF:
            self.pos += 1 + (width or 0)
            return chr(int(digits, 16))
        return self.fail(f"unknown escape '\\{code}' in a double-quoted string")
