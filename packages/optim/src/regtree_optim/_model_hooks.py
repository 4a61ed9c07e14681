"""``paramwise_cfg['model_hooks']`` (SPEC 3.3): the model's own no-weight-decay declarations.

timm's models declare ``no_weight_decay()`` (parameter names, or globs) and
``no_weight_decay_keywords()`` (words a name contains). They are read on the unwrapped model,
so a model under DDP keeps them (deit#39), and on every submodule that defines them, with the
submodule's path prefixed: a backbone's ``{'pos_embed'}`` names ``backbone.pos_embed``.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from typing import Final

from torch import nn

from regtree.naming import origin

from ._walk import walk_modules

__all__ = ["NoDecayHooks"]

_NAMES_HOOK: Final[str] = "no_weight_decay"
_KEYWORDS_HOOK: Final[str] = "no_weight_decay_keywords"
_GLOB_CHARS: Final[frozenset[str]] = frozenset("*?[")


def _declared(module: nn.Module, hook: str, path: str) -> list[str]:
    # Methods are class attributes: looking on the type skips nn.Module.__getattr__'s misses.
    if not callable(getattr(type(module), hook, None)):
        return []
    found = getattr(module, hook)()
    owner = f"{path or type(module).__name__}.{hook}() ({origin(type(module))})"
    if isinstance(found, (str, bytes)) or not isinstance(found, Iterable):
        raise TypeError(f"{owner} must return a set of str, got {found!r} ({type(found).__name__})")
    words = list(found)
    for word in words:
        if not isinstance(word, str) or not word:
            raise TypeError(f"{owner} must return non-empty str, got {word!r} in {found!r}")
    return words


class NoDecayHooks:
    """Every declaration of one model, and why a parameter gets no weight decay.

    Args:
        model: The unwrapped model.

    Raises:
        TypeError: a hook returns something other than a collection of str.
    """

    def __init__(self, model: nn.Module) -> None:
        self.names: dict[str, str] = {}  # full name -> rule label
        self._patterns: list[tuple[re.Pattern[str], str]] = []
        self._keywords: list[tuple[str, str, str]] = []  # (path prefix, keyword, rule label)
        # The walk's paths, not named_modules(): a wrapper inside the model (FSDP1 around a
        # block) must not show in the names a hook's entries are prefixed with.
        for path, module, _ in walk_modules(model):
            dotted = f"{path}." if path else ""
            names_label = f"{dotted}{_NAMES_HOOK}()"
            for entry in _declared(module, _NAMES_HOOK, path):
                full = f"{dotted}{entry}"
                if _GLOB_CHARS.intersection(entry):
                    self._patterns.append((re.compile(fnmatch.translate(full)), names_label))
                else:
                    self.names.setdefault(full, names_label)
            keywords_label = f"{dotted}{_KEYWORDS_HOOK}()"
            for keyword in _declared(module, _KEYWORDS_HOOK, path):
                self._keywords.append((dotted, keyword, keywords_label))

    def __bool__(self) -> bool:
        return bool(self.names or self._patterns or self._keywords)

    def reasons(self, names: list[str]) -> list[str | None]:
        """For each full name, in order, the hook that gives it no weight decay, or None."""
        return list(map(self._reason, names))

    def _reason(self, full_name: str) -> str | None:
        label = self.names.get(full_name)
        if label is not None:
            return label
        for pattern, label in self._patterns:
            if pattern.match(full_name):
                return label
        for prefix, keyword, label in self._keywords:
            if full_name.startswith(prefix) and keyword in full_name[len(prefix) :]:
                return label
        return None
