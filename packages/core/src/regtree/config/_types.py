"""Value checks against annotations (SPEC 5.4): does a config value fit a parameter's type?"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping, Sequence

__all__ = ["describe_annotation", "type_mismatch"]

_UNION_ORIGINS: tuple[object, ...] = (typing.Union, types.UnionType)
_SEQUENCE_ORIGINS: tuple[object, ...] = (Sequence, typing.Sequence)
_NONE_TYPE = type(None)


def type_mismatch(value: object, annotation: object) -> str | None:
    """Say whether ``value`` fits ``annotation``, the way a config value is checked.

    Understood: ``int``, ``float`` (an int is accepted), ``bool``, ``str``, ``None``,
    ``X | None`` / ``Optional[X]``, ``Literal[...]``, ``list[X]``, ``tuple[X, ...]``,
    ``tuple[X, Y]`` (the length is checked), ``Sequence[X]`` and unions of these. A bool is not
    an int here, and a str is not a sequence: in a config both are mistakes. Lists and tuples
    stand for each other (a config file has only lists). Any other class accepts its instances
    and any mapping (a nested config that builds one); any other annotation (``Any``, a
    ``Callable``, a ``TypeVar``, other generics, an annotation left as a string) accepts anything.

    Args:
        value: The value a config gives.
        annotation: The annotation of the parameter it goes to.

    Returns:
        None when the value fits; otherwise the expected type as text, such as
        ``'tuple[float, float]'``.
    """
    return None if _fits(value, annotation) else describe_annotation(annotation)


def describe_annotation(annotation: object, hide: tuple[type, ...] = ()) -> str:
    """Write an annotation as a user reads it: ``'int | None'``, ``'tuple[float, float]'``.

    Args:
        annotation: A type or a ``typing`` form.
        hide: Classes left out of every union that has other members, for text about values a
            config file writes: torch's ``float | Tensor`` reads as ``float``.

    Returns:
        The annotation as text, without module prefixes.
    """
    if annotation is None or annotation is _NONE_TYPE:
        return "None"
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in _UNION_ORIGINS:
        shown_args = [arg for arg in args if arg not in hide] or list(args)
        return " | ".join(describe_annotation(arg, hide) for arg in shown_args)
    if origin is typing.Literal:
        return f"Literal[{', '.join(repr(arg) for arg in args)}]"
    if origin is not None and args:
        name = getattr(origin, "__name__", None) or str(origin).removeprefix("typing.")
        shown = ["..." if arg is Ellipsis else describe_annotation(arg, hide) for arg in args]
        return f"{name}[{', '.join(shown)}]"
    if isinstance(annotation, type):
        return annotation.__qualname__
    return str(annotation).removeprefix("typing.")


def _fits(value: object, annotation: object) -> bool:
    if annotation is None or annotation is _NONE_TYPE:
        return value is None
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if annotation is str:
        return isinstance(value, str)
    origin = typing.get_origin(annotation)
    if origin is None:
        if annotation in (list, tuple, Sequence, typing.Sequence):
            return _is_sequence(value)
        if isinstance(annotation, type):
            try:
                return isinstance(value, (annotation, Mapping))
            except TypeError:  # a class that refuses isinstance (a non-runtime Protocol)
                return True
        return True  # Any, a TypeVar, a string left unevaluated
    args = typing.get_args(annotation)
    if origin in _UNION_ORIGINS:
        return any(_fits(value, arg) for arg in args)
    if origin is typing.Literal:
        # 1 == True in Python; a config that gives True for Literal[1] is still wrong.
        return any(type(value) is type(arg) and value == arg for arg in args)
    if origin in (list, *_SEQUENCE_ORIGINS):
        return _is_sequence(value) and (
            not args or all(_fits(item, args[0]) for item in value)  # type: ignore[attr-defined]
        )
    if origin is tuple:
        if not _is_sequence(value):
            return False
        items: Sequence[object] = value  # type: ignore[assignment]
        if not args:
            return True
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_fits(item, args[0]) for item in items)
        if args == ((),):  # tuple[()]: the empty tuple
            return len(items) == 0
        return len(items) == len(args) and all(map(_fits, items, args))
    return True  # other generics: dict[str, X], Callable[...], Iterable[X]


def _is_sequence(value: object) -> bool:
    return isinstance(value, list | tuple)
