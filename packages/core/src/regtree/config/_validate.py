"""Config validation: every problem a build would meet, found without building anything."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .._miss import LookupMiss, RegistryNode, check_registry
from .._scope import check_scope, current_scope, default_scope
from .._signatures import fit_keywords, signature_of
from ..naming import origin, registry_label

if TYPE_CHECKING:  # inspect is imported by a check that needs it: `import regtree` stays light
    from inspect import Signature

__all__ = [
    "PROBLEM_KINDS",
    "ConfigProblem",
    "format_path",
    "signature_of",
    "validate_config",
]

# Every kind a ConfigProblem can have, for tools that switch on it.
PROBLEM_KINDS: tuple[str, ...] = (
    "missing-type",
    "invalid-type",
    "unknown-type",
    "invalid-scope",
    "unknown-keyword",
    "missing-keyword",
    "wrong-type",
    "invalid-value",  # a value the builder refuses (regtree_optim: a bad paramwise_cfg)
)

# Keys that build_from_cfg consumes itself and never passes on.
_RESERVED_KEYS = frozenset({"type", "_scope_"})
_MISSING = object()


class ConfigProblem:
    """One problem in a config: where it is, what kind it is, and what would work.

    ``str(problem)`` is ``'path: message'``; ``problem.path`` the dotted path
    (``'backbone.depth'``, ``'stages[1].type'``).

    Args:
        path: The keys (str) and list indices (int) leading to the problem; kept as ``parts``.
        kind: One of `PROBLEM_KINDS`.
        message: A sentence a user can act on.
        suggestions: The closest valid names (types or keywords), best first.
    """

    __slots__ = ("kind", "message", "parts", "suggestions")

    def __init__(
        self,
        path: tuple[str | int, ...],
        kind: str,
        message: str,
        suggestions: tuple[str, ...] = (),
    ) -> None:
        self.parts = path
        self.kind = kind
        self.message = message
        self.suggestions = suggestions

    @property
    def path(self) -> str:
        """The dotted path of the problem in the config: ``'backbone.depth'``, ``'layers[1]'``."""
        return format_path(self.parts)

    def as_dict(self) -> dict[str, object]:
        """Return the problem as plain JSON-ready values."""
        return {
            "path": self.path,
            "kind": self.kind,
            "message": self.message,
            "suggestions": list(self.suggestions),
        }

    def __str__(self) -> str:
        return f"{self.path or '<config>'}: {self.message}"

    def __repr__(self) -> str:
        return f"ConfigProblem(path={self.path!r}, kind={self.kind!r}, message={self.message!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConfigProblem):
            return NotImplemented
        return (self.parts, self.kind, self.message, self.suggestions) == (
            other.parts,
            other.kind,
            other.message,
            other.suggestions,
        )

    def __hash__(self) -> int:
        return hash((self.parts, self.kind, self.message, self.suggestions))


def format_path(parts: tuple[str | int, ...], prefix: str = "") -> str:
    """Join keys and list indices into a path: ``('neck', 0, 'depth')`` -> ``'neck[0].depth'``.

    Args:
        parts: Keys (str) and list indices (int).
        prefix: A path the result continues, such as the config section ``'model'``.

    Returns:
        The path.
    """
    text = prefix
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def validate_config(
    registry: RegistryNode,
    cfg: object,
    *,
    default_args: Mapping[str, object] | None = None,
) -> list[ConfigProblem]:
    """Return every problem that building ``cfg`` with ``registry`` would meet.

    Nothing is built and nothing is imported that a build would not import. Checked: the ``type``
    of the config (missing, not a name or callable, not registered: with the closest names), its
    keywords against the resolved callable's signature (unknown ones, with the closest parameter,
    unless it takes ``**kwargs``; missing required ones) and the same, recursively, for every nested
    mapping (in mappings and lists) whose ``type`` resolves in the registry's tree. A nested type
    that resolves nowhere is reported only when something in the tree is close to it (or its scope
    is known); otherwise it is taken for a config of another registry (an initializer, a loss of
    another package) and left alone. Keys resolve as in ``build``: ``_scope_`` and the active
    default scope apply.

    Args:
        registry: The registry that would build ``cfg``.
        cfg: A config mapping, or a list of them (the model registry builds a list into a
            ``Sequential``).
        default_args: Arguments the build would receive besides ``cfg`` (they fill missing keys,
            ``type`` included).

    Returns:
        The problems, in the order of the config; empty when the config is sound.

    Raises:
        TypeError: ``cfg`` is neither a mapping nor a list, or ``default_args`` is not a mapping.
    """
    check_registry(registry)
    if default_args is not None and not isinstance(default_args, Mapping):
        raise TypeError(f"default_args must be a mapping or None, got {default_args!r}")
    checker = _Checker(registry)
    if isinstance(cfg, Mapping):
        checker.check_config(cfg, (), default_args or {}, top_level=True)
    elif isinstance(cfg, list | tuple):
        for index, item in enumerate(cfg):
            if isinstance(item, Mapping):
                checker.check_config(item, (index,), default_args or {}, top_level=True)
            else:
                checker.add(
                    (index,),
                    "invalid-type",
                    f"a list config holds configs (mappings), found {_describe(item)}",
                )
    else:
        raise TypeError(
            f"a config is a mapping (or a list of mappings) with a 'type' key, got {cfg!r}"
        )
    return checker.problems


class _Checker:
    """One validation run: the registry, the problems found so far, the containers on the path."""

    def __init__(self, registry: RegistryNode) -> None:
        self.registry = registry
        self.problems: list[ConfigProblem] = []
        self._open: set[int] = set()  # ids of containers being walked, against cycles

    def add(
        self,
        path: tuple[str | int, ...],
        kind: str,
        message: str,
        suggestions: tuple[str, ...] = (),
    ) -> None:
        self.problems.append(ConfigProblem(path, kind, message, suggestions))

    def walk(self, value: object, path: tuple[str | int, ...]) -> None:
        """Find the configs inside ``value`` (a nested mapping with a ``type``) and check them."""
        children: Iterable[tuple[Any, object]]
        if isinstance(value, Mapping):
            if "type" in value:
                self.check_config(value, path, {}, top_level=False)  # it skips a cycle itself
                return
            children = value.items()
        elif isinstance(value, list | tuple):
            children = enumerate(value)
        else:
            return
        if id(value) in self._open:
            return
        self._open.add(id(value))
        try:
            for key, item in children:
                self.walk(item, (*path, key))
        finally:
            self._open.discard(id(value))

    def check_config(
        self,
        cfg: Mapping[Any, object],
        path: tuple[str | int, ...],
        default_args: Mapping[str, object],
        *,
        top_level: bool,
    ) -> None:
        """Check one config mapping and everything nested in it."""
        if id(cfg) in self._open:
            return
        self._open.add(id(cfg))
        try:
            scope = self._scope_of(cfg, path)
            if scope is None:
                self._check_under_scope(cfg, path, default_args, top_level=top_level)
            else:
                with default_scope(scope):
                    self._check_under_scope(cfg, path, default_args, top_level=top_level)
        finally:
            self._open.discard(id(cfg))

    def _scope_of(self, cfg: Mapping[Any, object], path: tuple[str | int, ...]) -> str | None:
        if "_scope_" not in cfg:
            return None
        scope = cfg["_scope_"]
        try:
            return check_scope(scope, "_scope_")
        except (TypeError, ValueError) as exc:
            self.add((*path, "_scope_"), "invalid-scope", str(exc))
            return None

    def _check_under_scope(
        self,
        cfg: Mapping[Any, object],
        path: tuple[str | int, ...],
        default_args: Mapping[str, object],
        *,
        top_level: bool,
    ) -> None:
        type_value: object = _MISSING
        if "type" in cfg:
            type_value = cfg["type"]
        elif "type" in default_args:
            type_value = default_args["type"]
        else:
            self.add(
                (*path, "type"),
                "missing-type",
                f'the config has no "type" key, so {registry_label(self.registry)} '
                "cannot tell what to build",
            )
        target = None
        if type_value is not _MISSING:
            target = self._resolve(type_value, (*path, "type"), top_level=top_level)
        if target is not None:
            given = {key: value for key, value in cfg.items() if key not in _RESERVED_KEYS}
            for key, value in default_args.items():
                if key not in _RESERVED_KEYS and key not in cfg:
                    given[key] = value
            self._check_keywords(target, type_value, given, path)
        # A class found by a scoped key builds its nested configs from its own package's
        # registry (demo_cls's TinyClassifier builds an unscoped backbone with demo_cls.MODELS),
        # so they are looked up there, as its build looks them up (and its messages read so).
        found = _scoped_registry(self.registry, type_value) if target is not None else None
        if found is None or found is self.registry:
            self._walk_children(cfg, path)
            return
        caller, self.registry = self.registry, found
        try:
            self._walk_children(cfg, path)
        finally:
            self.registry = caller

    def _walk_children(self, cfg: Mapping[Any, object], path: tuple[str | int, ...]) -> None:
        for key, value in cfg.items():
            if key not in _RESERVED_KEYS:
                self.walk(value, (*path, key))

    def _resolve(
        self, type_value: object, path: tuple[str | int, ...], *, top_level: bool
    ) -> Callable[..., object] | None:
        if isinstance(type_value, str):
            found = self.registry.resolve(type_value, current_scope())
            if not isinstance(found, LookupMiss):
                return found
            from .._diagnostics import describe_miss, suggest_keys  # error texts: on problems only

            suggestions = suggest_keys(found)
            # A nested config of another registry (an initializer, another package's loss) is
            # left alone unless something in this tree comes close or its scope was found.
            scope_found = "." in type_value and found.reached is not found.registry
            if top_level or suggestions or scope_found:
                self.add(path, "unknown-type", describe_miss(found), suggestions)
            return None
        if callable(type_value):
            return type_value
        if top_level:
            self.add(
                path,
                "invalid-type",
                f'"type" must be a registered name (str) or a class or callable, '
                f"got {type_value!r}",
            )
        return None

    def _check_keywords(
        self,
        target: Callable[..., object],
        type_value: object,
        given: Mapping[Any, object],
        path: tuple[str | int, ...],
    ) -> None:
        signature = signature_of(target)
        if signature is None:
            return
        fit = fit_keywords(signature, given)
        shown = _describe_target(type_value, target)
        keywords = [parameter.name for parameter in fit.accepted]
        accepted = ", ".join(keywords) or "none"
        for key in fit.not_str:
            self.add(
                (*path, str(key)),
                "unknown-keyword",
                f"keyword {key!r} of {shown} is not a str; keywords are names",
            )
        for key in fit.positional_only:
            self.add(
                (*path, key),
                "unknown-keyword",
                f"{shown} takes {key!r} only by position, which a config cannot give "
                f"(accepted: {accepted})",
            )
        for key, near in fit.unknown:
            hint = f"; did you mean {near!r}?" if near else ""
            self.add(
                (*path, key),
                "unknown-keyword",
                f"{shown} takes no keyword {key!r}{hint} (accepted: {accepted})",
                () if near is None else (near,),
            )
        self._check_values(signature, given, path)
        # A misspelt required keyword is one mistake: reported as the misspelling, not again.
        corrected = {near for _, near in fit.unknown}
        for name, near in fit.missing:
            if name in corrected:
                continue
            hint = f" (the config gives {near!r}; did you mean {name!r}?)" if near else ""
            self.add(
                (*path, name),
                "missing-keyword",
                f"{shown} needs {name!r}, which the config does not give{hint}",
            )
        for name in fit.missing_positional_only:
            self.add(
                (*path, name),
                "missing-keyword",
                f"{shown} needs the positional-only argument {name!r}, which a config cannot give",
            )

    def _check_values(
        self, signature: Signature, given: Mapping[Any, object], path: tuple[str | int, ...]
    ) -> None:
        """Check each value against the annotation of the parameter it goes to (SPEC 5.4)."""
        from inspect import Parameter

        from ._types import type_mismatch

        for key, value in given.items():
            parameter = signature.parameters.get(key) if isinstance(key, str) else None
            if parameter is None or parameter.annotation is Parameter.empty:
                continue
            if parameter.kind in (Parameter.VAR_POSITIONAL, Parameter.VAR_KEYWORD):
                continue
            expected = type_mismatch(value, parameter.annotation)
            if expected is not None:
                self.add((*path, key), "wrong-type", f"expected {expected}, got {_shown(value)}")


def _scoped_registry(registry: RegistryNode, type_value: object) -> RegistryNode | None:
    """The registry a scoped key's scopes name from ``registry``, as a lookup goes them.

    ``'a.b.X'``: ``a`` from ``registry``, then ``b`` from there. None for an unscoped key or a
    scope that names none.
    """
    if not isinstance(type_value, str):
        return None
    node: RegistryNode | None = None
    *scopes, _ = type_value.split(".")
    for scope in scopes:
        node = (registry if node is None else node)._scoped(scope)
        if node is None:
            return None
    return node


def _describe_target(type_value: object, target: Callable[..., object]) -> str:
    where = origin(target)
    if isinstance(type_value, str):
        return f"{type_value!r} ({where})"
    return where


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _describe(value: object) -> str:
    return f"{type(value).__name__} {value!r}"
