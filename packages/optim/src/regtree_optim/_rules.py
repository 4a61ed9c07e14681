"""``paramwise_cfg['rules']`` (SPEC 3.3): each rule's selectors and effects, validated once.

A rule selects parameters by name (``match`` globs, a ``regex``, ``exclude`` globs), by the
module that owns them (``module``), by their ``ndim`` and by their own attribute ``name``; every
selector given must hold. What a rule does to the parameters it selects is applied elsewhere
(``_compose``); this module validates the rules and says which rules select a parameter.
"""

from __future__ import annotations

import fnmatch
import itertools
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from torch import nn

from regtree.naming import closest

from ._module_kinds import module_kind
from ._optimizer_types import OptimizerInfo
from ._value_checks import check_base, check_flag, check_multiplier, check_option

__all__ = [
    "GlobTest",
    "ModuleFacts",
    "ParamRule",
    "RuleSelector",
    "resolve_param_rules",
]

_SELECTORS: Final[tuple[str, ...]] = ("match", "regex", "exclude", "module", "ndim", "name")
_EFFECTS: Final[tuple[str, ...]] = ("lr_mult", "decay_mult", "freeze", "optimizer")
# The group's own keys, and the two bases a rule multiplies rather than sets.
_RESERVED: Final[dict[str, str]] = {
    "params": "parameters are chosen by the rule's selectors",
    "param_names": "parameter names are filled in by the constructor",
    "lr": "a rule multiplies the lr: use lr_mult",
    "weight_decay": "a rule multiplies the weight decay: use decay_mult",
}
_GLOB_SPECIALS: Final[frozenset[str]] = frozenset("*?[")
MODULE_KINDS: Final[tuple[str, ...]] = ("norm", "dwconv", "dcn", "conv", "linear", "embedding")
_EMBEDDING_TYPES: Final[tuple[type, ...]] = (nn.Embedding, nn.EmbeddingBag)


class GlobTest:
    """Globs over full names (``fnmatch`` syntax, case-sensitive, ``*`` crossing dots).

    Tested over many names at once (:meth:`column`). Where every glob is a prefix (its one
    wildcard a final ``*``, as ``'backbone.*'``) or every one a suffix (``'*.bias'``), the test
    is ``str.startswith`` or ``str.endswith`` of them all: 0.4 ms over 10,000 names against
    0.9 ms for the regex ``fnmatch.translate`` gives, which every other glob takes.

    Args:
        globs: The globs, any of which selects a name.
    """

    def __init__(self, globs: Sequence[str]) -> None:
        self._method: Callable[[str, tuple[str, ...]], bool] | None = None
        self._affixes: tuple[str, ...] = ()
        self._pattern: re.Pattern[str] | None = None
        if all(glob.endswith("*") and _is_literal(glob[:-1]) for glob in globs):
            self._method, self._affixes = str.startswith, tuple(g[:-1] for g in globs)
        elif all(glob.startswith("*") and _is_literal(glob[1:]) for glob in globs):
            self._method, self._affixes = str.endswith, tuple(g[1:] for g in globs)
        else:
            self._pattern = re.compile("|".join(f"(?:{fnmatch.translate(g)})" for g in globs))

    def column(self, names: list[str]) -> list[bool]:
        """Whether each name matches one of the globs, in order."""
        if self._pattern is None:
            assert self._method is not None
            return list(map(self._method, names, itertools.repeat(self._affixes)))
        return list(map(bool, map(self._pattern.match, names)))


def _is_literal(text: str) -> bool:
    # No fnmatch wildcard: '*', '?' and '[' are its only special characters.
    return not _GLOB_SPECIALS.intersection(text)


@dataclass(frozen=True, slots=True, eq=False)
class ParamRule:
    """One entry of ``paramwise_cfg['rules']``, validated.

    Attributes:
        index: Its position in the list.
        label: How ``explain`` and messages name it: ``'rules[2]'``.
        match: The ``match`` globs over the full name (None: not given).
        exclude: The ``exclude`` globs over the full name (None: not given).
        regex: ``re.search``-ed in the full name (None: not given).
        kinds: Module kinds (``'norm'``, ...) of which the owning module must be one.
        classes: Class names of which the owning module's class (or a base) must be one.
        ndim: Inclusive ``(min, max)`` of the parameter's ``ndim`` (None: not given).
        names: The parameter's own attribute names (None: not given).
        lr_mult: Multiplies the lr (None: not given).
        decay_mult: Multiplies the weight decay (None: not given).
        options: Optimizer options it sets (a later rule's value wins).
        freeze: Sets ``requires_grad=False`` on what it selects.
        optimizer: The sub-optimizer it routes its parameters to (SPEC 3.6), or None.
    """

    index: int
    label: str
    match: GlobTest | None = None
    exclude: GlobTest | None = None
    regex: re.Pattern[str] | None = None
    kinds: frozenset[str] = frozenset()
    classes: frozenset[str] = frozenset()
    ndim: tuple[int, int] | None = None
    names: frozenset[str] | None = None
    lr_mult: Any = None
    decay_mult: Any = None
    options: dict[str, Any] = field(default_factory=dict)
    freeze: bool = False
    optimizer: str | None = None

    @property
    def selects_by_name(self) -> bool:
        """Whether the full name takes part (``match``, ``regex`` or ``exclude``)."""
        return self.match is not None or self.exclude is not None or self.regex is not None

    def name_columns(self, names: list[str]) -> list[list[bool]]:
        """Each name test's result over all the names: ``match``, ``exclude``, ``regex``.

        Only those given, in that order; an ``exclude`` column says where its globs match
        (:meth:`selects_names` turns it round). Each test is mapped over all the names at once,
        with no Python call per name; combining them is left to :meth:`selects_names`, once
        per distinct combination rather than once per name. (Names a rule's ``match`` fails may
        still differ in its ``exclude``: more distinct keys, never more decisions or groups.)
        """
        columns: list[list[bool]] = []
        if self.match is not None:
            columns.append(self.match.column(names))
        if self.exclude is not None:
            columns.append(self.exclude.column(names))
        if self.regex is not None:
            columns.append(list(map(bool, map(self.regex.search, names))))
        return columns

    def selects_names(self, hits: Iterator[bool]) -> bool:
        """Whether the name selectors hold, from the next entries of :meth:`name_columns`.

        Takes one entry per column the rule has, whatever the outcome.
        """
        holds = True
        if self.match is not None:
            holds = next(hits)
        if self.exclude is not None:
            holds = not next(hits) and holds
        if self.regex is not None:
            holds = next(hits) and holds
        return holds

    def selects_facts(
        self, kinds: frozenset[str], classes: frozenset[str], name: str, ndim: int
    ) -> bool:
        """Whether the module, ``name`` and ``ndim`` selectors hold."""
        if (self.kinds or self.classes) and not (self.kinds & kinds or self.classes & classes):
            return False
        if self.names is not None and name not in self.names:
            return False
        return self.ndim is None or self.ndim[0] <= ndim <= self.ndim[1]


# What a ``module`` selector sees in a module: its kinds (``'dwconv'`` included where it is
# one) and the class names along its MRO.
ModuleFacts = tuple[frozenset[str], frozenset[str]]


class RuleSelector:
    """Which rules select a parameter: its name tests over all names at once, the rest per key.

    A selection is an int whose bit ``i`` stands for ``rules[i]``: a cheap dict key, turned into
    the rules with :meth:`rules_of` only once per distinct selection. The name selectors
    (``match``, ``exclude``, ``regex``) run over every name of a walk in one pass each
    (:meth:`name_columns`); :meth:`select` then combines a parameter's hits with what its module,
    attribute name and ``ndim`` decide, once per distinct combination. Which rules selected
    anything (for the warning about rules that select nothing) is for the caller to record with
    :meth:`mark_used`, once per distinct selection.
    """

    def __init__(self, rules: Sequence[ParamRule]) -> None:
        self.rules = tuple(rules)
        self.used: set[int] = set()
        # The rules with name selectors, in list order: a column per name test each.
        self._named = tuple(rule for rule in self.rules if rule.selects_by_name)
        # Per call, not global: register_norm_type may change what a type is between calls.
        self._by_type: dict[type, ModuleFacts] = {}
        self._rules_of: dict[int, tuple[ParamRule, ...]] = {}

    def module_facts(self, module_type: type, depthwise: bool) -> ModuleFacts:
        """What a ``module`` selector sees in a module of ``module_type``.

        Args:
            module_type: The module's class.
            depthwise: Whether the module is a depthwise conv (``is_depthwise``).
        """
        kinds, classes = self._type_facts(module_type)
        if depthwise:
            kinds = kinds | {"dwconv"}
        return kinds, classes

    def _type_facts(self, module_type: type) -> ModuleFacts:
        # The kinds that hold for every instance, and the class names along the MRO.
        found = self._by_type.get(module_type)
        if found is None:
            kind = module_kind(module_type)
            kinds = {
                "norm": kind.is_norm,
                "dcn": kind.is_dcn,
                "conv": kind.is_conv,
                "linear": issubclass(module_type, nn.Linear),
                "embedding": issubclass(module_type, _EMBEDDING_TYPES),
            }
            # A base's name counts, so FSDP2's FSDPLinear (a Linear subclass) is 'Linear' too.
            classes = frozenset(cls.__name__ for cls in module_type.__mro__)
            found = self._by_type[module_type] = (
                frozenset(name for name, holds in kinds.items() if holds),
                classes,
            )
        return found

    def name_columns(self, names: list[str]) -> list[list[bool]]:
        """The columns of every rule's name tests (:meth:`ParamRule.name_columns`), in order."""
        return [column for rule in self._named for column in rule.name_columns(names)]

    def select(self, facts: ModuleFacts, name: str, ndim: int, hits: tuple[bool, ...]) -> int:
        """The rules that select one parameter, as bits (see :meth:`rules_of`).

        Args:
            facts: Its module's :meth:`module_facts`.
            name: Its attribute name in the module.
            ndim: Its (original, unsharded) number of dimensions; any value where no rule has
                an ``ndim`` selector.
            hits: Its entry in each of :meth:`name_columns`.
        """
        kinds, classes = facts
        tests = iter(hits)
        selected = 0
        for position, rule in enumerate(self.rules):
            by_name = rule.selects_names(tests) if rule.selects_by_name else True
            if by_name and rule.selects_facts(kinds, classes, name, ndim):
                selected |= 1 << position
        return selected

    def rules_of(self, selected: int) -> tuple[ParamRule, ...]:
        """The rules of a :meth:`select` result, in list order."""
        found = self._rules_of.get(selected)
        if found is None:
            found = self._rules_of[selected] = tuple(
                rule for position, rule in enumerate(self.rules) if selected >> position & 1
            )
        return found

    def mark_used(self, selected: int) -> None:
        """Record that the rules of one :meth:`select` result selected a parameter."""
        self.used.update(rule.index for rule in self.rules_of(selected))


# -- validation -------------------------------------------------------------------------------


def _where(index: int) -> str:
    return f"paramwise_cfg['rules'][{index}]"


def _str_list(value: object, index: int, key: str, what: str) -> list[str]:
    items = [value] if isinstance(value, str) else value
    if (
        isinstance(items, (list, tuple))
        and items
        and all(isinstance(item, str) and item for item in items)
    ):
        return list(items)
    raise ValueError(
        f"{_where(index)}[{key!r}] must be {what} or a non-empty list of them, got {value!r} "
        f"({type(value).__name__})."
    )


def _globs(value: object, index: int, key: str) -> GlobTest:
    return GlobTest(
        _str_list(value, index, key, "a glob (a str such as 'backbone.*.norm*.weight')")
    )


def _regex(value: object, index: int) -> re.Pattern[str]:
    if not isinstance(value, str):
        raise ValueError(
            f"{_where(index)}['regex'] must be a regular expression (a str), got {value!r} "
            f"({type(value).__name__})."
        )
    try:
        return re.compile(value)
    except re.error as error:
        raise ValueError(
            f"{_where(index)}['regex'] {value!r} is not a valid regular expression: {error}."
        ) from None


def _modules(value: object, index: int) -> tuple[frozenset[str], frozenset[str]]:
    names = _str_list(
        value,
        index,
        "module",
        f"a module kind ({', '.join(map(repr, MODULE_KINDS))}) or a class name",
    )
    kinds = frozenset(name for name in names if name in MODULE_KINDS)
    return kinds, frozenset(names) - kinds


def _ndim(value: object, index: int) -> tuple[int, int]:
    def is_int(item: object) -> bool:
        return isinstance(item, int) and not isinstance(item, bool) and item >= 0

    if is_int(value):
        assert isinstance(value, int)
        return value, value
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(map(is_int, value)):
        low, high = value
        if low <= high:
            return low, high
    raise ValueError(
        f"{_where(index)}['ndim'] must be an int >= 0 or an inclusive [min, max] pair of them, "
        f"got {value!r}."
    )


def _resolve_one(
    index: int,
    entry: Mapping[Any, Any],
    base_lr: Any,
    base_wd: Any,
    optimizer: OptimizerInfo,
    routes: Collection[str] | None,
) -> ParamRule:
    where = _where(index)
    values, options = _sort_keys(index, entry, optimizer)
    kinds, classes = _modules(values["module"], index) if "module" in values else ((), ())
    lr_mult, decay_mult = _multipliers(index, values, base_lr, base_wd)
    freeze = values.get("freeze", False)
    check_flag(freeze, f"{where}['freeze']")
    route = _route(index, values.get("optimizer"), optimizer.name, routes)
    match = _globs(values["match"], index, "match") if "match" in values else None
    regex = _regex(values["regex"], index) if "regex" in values else None
    exclude = _globs(values["exclude"], index, "exclude") if "exclude" in values else None
    return ParamRule(
        index=index,
        label=f"rules[{index}]",
        match=match,
        exclude=exclude,
        regex=regex,
        kinds=frozenset(kinds),
        classes=frozenset(classes),
        ndim=_ndim(values["ndim"], index) if "ndim" in values else None,
        names=(
            frozenset(_str_list(values["name"], index, "name", "a parameter name such as 'bias'"))
            if "name" in values
            else None
        ),
        lr_mult=lr_mult,
        decay_mult=decay_mult,
        options=options,
        freeze=freeze,
        optimizer=route,
    )


def _sort_keys(
    index: int, entry: Mapping[Any, Any], optimizer: OptimizerInfo
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split a rule into its selectors and effects, and the optimizer options it sets."""
    where = _where(index)
    accepted_options = optimizer.options
    optimizer_name = optimizer.name
    values: dict[str, Any] = {}
    options: dict[str, Any] = {}
    for key, value in entry.items():
        if not isinstance(key, str):
            raise TypeError(f"{where} keys must be str, got {key!r} ({type(key).__name__}).")
        if key in _SELECTORS or key in _EFFECTS:
            values[key] = value
            continue
        if key in _RESERVED:
            raise ValueError(f"{where} sets {key!r}, which a rule may not set: {_RESERVED[key]}.")
        if accepted_options is not None and key not in accepted_options:
            # Only what a rule may set is offered; a near miss of what it may not (lr,
            # weight_decay) is told why not and what to use instead.
            settable = sorted(accepted_options.difference(_RESERVED))
            hint = closest(key, [*_SELECTORS, *_EFFECTS, *settable, *_RESERVED], count=1)
            if not hint:
                suggestion = "."
            elif hint[0] in _RESERVED:
                suggestion = (
                    f", and the closest, {hint[0]!r}, is one a rule may not set: "
                    f"{_RESERVED[hint[0]]}."
                )
            else:
                suggestion = f"; did you mean {hint[0]!r}?"
            raise ValueError(
                f"{where} has unknown key {key!r}{suggestion} A rule holds selectors "
                f"({', '.join(_SELECTORS)}), effects ({', '.join(_EFFECTS)}) and options "
                f"{optimizer_name} accepts: {', '.join(settable) or 'none a rule may set'}."
            )
        check_option(optimizer, key, value, where, group=True)
        options[key] = value
    if not any(key in values for key in _SELECTORS):
        raise ValueError(
            f"{where} has no selector, so it would apply to every parameter by accident; give at "
            f"least one of {', '.join(_SELECTORS)} (match='*' selects everything)."
        )
    return values, options


def _multipliers(
    index: int, values: Mapping[str, Any], base_lr: Any, base_wd: Any
) -> tuple[float | None, float | None]:
    """A rule's ``lr_mult`` and ``decay_mult`` (None where not given), each with its base.

    A multiplier of None is not given, as in the rest of ``paramwise_cfg``.
    """
    where = _where(index)
    lr_mult, decay_mult = values.get("lr_mult"), values.get("decay_mult")
    for key, mult in (("lr_mult", lr_mult), ("decay_mult", decay_mult)):
        if mult is not None:
            check_multiplier(where, key, mult)
    check_base(where, "lr_mult", lr_mult, "lr", base_lr)
    check_base(where, "decay_mult", decay_mult, "weight_decay", base_wd)
    return lr_mult, decay_mult


def _route(
    index: int, route: object, optimizer_name: str, routes: Collection[str] | None
) -> str | None:
    """A rule's ``optimizer`` (SPEC 3.6): one of the RoutedOptimizer's names, or None."""
    where = _where(index)
    if route is None:
        return None
    if not (isinstance(route, str) and route):
        raise TypeError(
            f"{where}['optimizer'] must name one of RoutedOptimizer's optimizers (a non-empty "
            f"str), got {route!r} ({type(route).__name__})."
        )
    if routes is None:
        raise ValueError(
            f"{where} routes its parameters to optimizer {route!r}, but {optimizer_name} "
            "has no optimizers to route to; use type='RoutedOptimizer' with optimizers={name: "
            "config, ...}, or drop 'optimizer' from the rule."
        )
    if route not in routes:
        hint = closest(route, routes, count=1)
        suggestion = f" Did you mean {hint[0]!r}?" if hint else ""
        raise ValueError(
            f"{where} routes its parameters to optimizer {route!r}, which is not one of "
            f"the optimizers: {', '.join(map(repr, routes))}.{suggestion}"
        )
    return route


def resolve_param_rules(
    rules: object,
    *,
    base_lr: Any,
    base_wd: Any,
    optimizer: OptimizerInfo,
    routes: Collection[str] | None = None,
) -> tuple[ParamRule, ...]:
    """Validate ``paramwise_cfg['rules']``.

    Args:
        rules: The list of rule mappings.
        base_lr: ``optimizer_cfg['lr']`` or None.
        base_wd: ``optimizer_cfg['weight_decay']`` or None.
        optimizer: What the optimizer accepts: its options and their annotations.
        routes: The names a rule's ``optimizer`` may route to (RoutedOptimizer's
            ``optimizers``), or None when the optimizer routes nowhere.

    Raises:
        TypeError: ``rules`` is not a list, an entry is not a mapping, or an effect has the
            wrong type.
        ValueError: a rule without a selector, a bad glob or regex, an unknown key (naming the
            closest), or a multiplier with nothing to multiply; each names the rule's index.
    """
    if isinstance(rules, (str, bytes, Mapping)) or not isinstance(rules, Sequence):
        raise TypeError(
            f"paramwise_cfg['rules'] must be a list of rule mappings, got {rules!r} "
            f"({type(rules).__name__})."
        )
    resolved = []
    for index, entry in enumerate(rules):
        if not isinstance(entry, Mapping):
            raise TypeError(
                f"{_where(index)} must be a mapping (a dict) of selectors and effects, got "
                f"{entry!r} ({type(entry).__name__})."
            )
        resolved.append(_resolve_one(index, entry, base_lr, base_wd, optimizer, routes))
    return tuple(resolved)
