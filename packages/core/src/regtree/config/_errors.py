"""The error of config files: `ConfigError`, naming the file, the line and what would work."""

from __future__ import annotations

__all__ = ["ConfigError"]


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
