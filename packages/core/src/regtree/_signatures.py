"""What a callable takes from a config: its signature as checks read it, and how keys fit it.

One reading of a class or callable's parameters for everything that compares a config with them:
validation (`regtree.config`'s ``validate``), the note on a failed build, and the CLI's schema.
``inspect`` is imported at the first call, so ``import regtree`` stays light.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Final, NamedTuple, get_args

from .naming import closest

if TYPE_CHECKING:
    from inspect import Parameter, Signature

__all__ = ["KeywordFit", "fit_keywords", "signature_of"]


# Initializers that take (*args, **kwargs) only to refuse any: torch's nn.Module.__init__, which a
# module without an __init__ of its own inherits (unless it sets call_super_init). Named, not
# imported: the core imports no torch.
_REFUSING_INITS: Final = frozenset({("torch.nn.modules.module", "Module.__init__")})


def signature_of(target: Callable[..., object]) -> Signature | None:
    """Return the signature a config is checked against, annotations evaluated where they can be.

    Annotations are evaluated parameter by parameter: one that names what only the type checker
    sees (a class imported under ``TYPE_CHECKING``, with ``from __future__ import annotations``)
    stays a string, which accepts anything, and the others are still checked.

    Args:
        target: The class or callable a config names.

    Returns:
        Its signature, or None where it has none (some builtins and extension types).
    """
    from inspect import Signature, signature

    init = getattr(target, "__init__", None)
    refusing = (getattr(init, "__module__", None), getattr(init, "__qualname__", None))
    if isinstance(target, type) and refusing in _REFUSING_INITS:
        if not getattr(target, "call_super_init", False):
            return Signature()  # what the class takes is what it refuses: nothing
        # nn.Module.__init__ passes what it is given on to the next __init__ of the MRO.
        mro = target.__mro__
        start = next(i for i, cls in enumerate(mro) if vars(cls).get("__init__") is init)
        following = next(cls for cls in mro[start + 1 :] if "__init__" in vars(cls))
        return Signature() if following is object else signature_of(following)
    try:
        written = signature(target)
    except (TypeError, ValueError):  # builtins and some extension types have none
        return None
    # Each name that no namespace has stands for an _Unresolved, and evaluation is tried again,
    # so one such name (a loop, bounded by the names the annotations hold) spoils no other check.
    unresolved: dict[str, _Unresolved] = {}
    while True:
        try:
            evaluated = signature(target, eval_str=True, locals=unresolved)
        except NameError as exc:
            if not exc.name or exc.name in unresolved:
                return written
            unresolved[exc.name] = _Unresolved()
        except Exception:  # an annotation that fails otherwise: keep the strings, check nothing
            return written
        else:
            break
    if not unresolved:
        return evaluated
    parameters = [
        parameter.replace(annotation=written.parameters[name].annotation)
        if _mentions_unresolved(parameter.annotation)
        else parameter
        for name, parameter in evaluated.parameters.items()
    ]
    returned = evaluated.return_annotation
    if _mentions_unresolved(returned):
        returned = written.return_annotation
    return evaluated.replace(parameters=parameters, return_annotation=returned)


class _Unresolved:
    """A name in an annotation that only the type checker sees: whatever is built on it is it."""

    def __getattr__(self, name: str) -> _Unresolved:
        if name.startswith("__"):  # typing probes dunders; this is no typing object
            raise AttributeError(name)
        return self

    def __getitem__(self, item: object) -> _Unresolved:
        return self

    def __call__(self, *args: object, **kwargs: object) -> _Unresolved:
        return self

    def __or__(self, other: object) -> _Unresolved:
        return self

    __ror__ = __or__


def _mentions_unresolved(annotation: object) -> bool:
    if isinstance(annotation, _Unresolved):
        return True
    if isinstance(annotation, list | tuple):  # Callable[[X], Y] holds a list
        return any(_mentions_unresolved(arg) for arg in annotation)
    return any(_mentions_unresolved(arg) for arg in get_args(annotation))


# A NamedTuple, not a dataclass: dataclasses imports inspect, which `import regtree` never does.
class KeywordFit(NamedTuple):
    """How the keys of a config fit the parameters of what it builds (see `fit_keywords`).

    Attributes:
        accepted: The parameters a keyword can set, in order.
        var_keyword: The name of the ``**kwargs`` parameter, or None where there is none.
        not_str: Given keys that are not str, so no keyword.
        unknown: ``(key, closest accepted name or None)`` for each given key that names no
            parameter; empty where ``**kwargs`` takes any keyword.
        positional_only: Given keys that name a positional-only parameter.
        missing: ``(name, closest given key that names no parameter, or None)`` for each
            required keyword parameter not given.
        missing_positional_only: Required positional-only parameters, which no config can give
            (given or not).
    """

    accepted: tuple[Parameter, ...]
    var_keyword: str | None
    not_str: tuple[object, ...]
    unknown: tuple[tuple[str, str | None], ...]
    positional_only: tuple[str, ...]
    missing: tuple[tuple[str, str | None], ...]
    missing_positional_only: tuple[str, ...]


def fit_keywords(signature: Signature, given: Iterable[object]) -> KeywordFit:
    """Tell how the keys ``given`` (a config's, less ``type``) fit ``signature``'s parameters."""
    from inspect import Parameter

    parameters = signature.parameters
    accepted = {
        name: parameter
        for name, parameter in parameters.items()
        if parameter.kind in (Parameter.POSITIONAL_OR_KEYWORD, Parameter.KEYWORD_ONLY)
    }
    positional = {
        name: parameter
        for name, parameter in parameters.items()
        if parameter.kind is Parameter.POSITIONAL_ONLY
    }
    var_keyword = next(
        (p.name for p in parameters.values() if p.kind is Parameter.VAR_KEYWORD), None
    )
    keys = list(given)
    named = [key for key in keys if isinstance(key, str)]
    strays = [key for key in named if key not in accepted and key not in positional]
    unknown = (
        ()
        if var_keyword is not None
        else tuple((key, next(iter(closest(key, accepted, count=1)), None)) for key in strays)
    )
    missing = tuple(
        (name, next(iter(closest(name, strays, count=1)), None))
        for name, parameter in accepted.items()
        if parameter.default is Parameter.empty and name not in named
    )
    return KeywordFit(
        accepted=tuple(accepted.values()),
        var_keyword=var_keyword,
        not_str=tuple(key for key in keys if not isinstance(key, str)),
        unknown=unknown,
        positional_only=tuple(key for key in named if key in positional),
        missing=missing,
        missing_positional_only=tuple(
            name for name, parameter in positional.items() if parameter.default is Parameter.empty
        ),
    )
