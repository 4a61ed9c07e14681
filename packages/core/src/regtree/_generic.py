"""A runtime stand-in for ``typing.Generic``.

Importing ``typing`` costs more than all of regtree together, so the interpreter uses this
while the type checker reads the real name (see the ``TYPE_CHECKING`` blocks that import it).
"""

from __future__ import annotations

__all__ = ["Generic"]

from types import GenericAlias


class Generic:
    """Subscriptable base class: ``Registry[Model]`` works at runtime as with ``typing.Generic``."""

    __slots__ = ()

    def __class_getitem__(cls, item: object) -> object:
        return GenericAlias(cls, item)
