"""Property-based tests of the core registry (SPEC 2): hostile input never corrupts a registry.

Generated keys, configs, registration sequences and child registries are thrown at small registry
trees that each test builds for itself. The invariants: only the documented exceptions, with
messages that name the offending value; after any failure the registry's entries, their order and
its children are exactly as before; a config is never mutated and its values reach the callable as
the same objects; a lookup never imports a module.

The example budget comes from the environment variable ``REGTREE_HYPOTHESIS_PROFILE``:
``default`` (a few thousand examples over the whole module, for CI) or ``fuzz`` (the ``fuzz`` nox
session: at least 100,000). The profiles are applied test by test, so loading this module changes
no other module's hypothesis settings.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import types
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from regtree import (
    AlreadyRegisteredError,
    NotRegisteredError,
    Registry,
    RegistryError,
    ScopeConflictError,
    build_from_cfg,
    current_scope,
    default_scope,
)

PROFILE_ENV = "REGTREE_HYPOTHESIS_PROFILE"
# Examples per property test; this module has 8 of them.
_EXAMPLES_PER_TEST = {"default": 350, "fuzz": 15_000}
for _profile, _examples in _EXAMPLES_PER_TEST.items():
    settings.register_profile(
        f"regtree-{_profile}",
        max_examples=_examples,
        # No timing in tests: a slow shared CI machine must not turn into a failure.
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        print_blob=True,
    )
_PROFILE_NAME = os.environ.get(PROFILE_ENV, "default")
if _PROFILE_NAME not in _EXAMPLES_PER_TEST:
    raise RuntimeError(
        f"{PROFILE_ENV}={_PROFILE_NAME!r} is not a known profile; use one of "
        f"{sorted(_EXAMPLES_PER_TEST)}"
    )
PROFILE = settings.get_profile(f"regtree-{_PROFILE_NAME}")

# Scopes that an installed distribution advertises may legitimately be imported by a lookup;
# generated keys stay away from them.
ADVERTISED_SCOPES = frozenset(ep.name for ep in entry_points(group="regtree.scopes"))
DOCUMENTED_ERRORS = (TypeError, ValueError, KeyError)


# -- helpers ------------------------------------------------------------------------------------


def _labelled(label: str) -> Callable[..., str]:
    """Return a distinct registrable callable that returns ``label`` whatever it is given."""

    def entry(*args: object, **kwargs: object) -> str:
        return label

    entry.__name__ = entry.__qualname__ = label
    return entry


@dataclass
class TreeNode:
    """A model of one registry of a tree: its own entries and children, as the SPEC defines."""

    registry: Registry[Any]
    entries: dict[str, object]
    children: dict[str, TreeNode]
    parent: TreeNode | None = None


def _build_tree() -> dict[str, TreeNode]:
    """Build a 3-level, 2-branch registry tree with overlapping names; return its nodes by scope.

    proot: A, B, shared
      pa: A, C, shared
        pa1: D, A
      pb: E
    """
    layout: list[tuple[str, str | None, list[str]]] = [
        ("proot", None, ["A", "B", "shared"]),
        ("pa", "proot", ["A", "C", "shared"]),
        ("pa1", "pa", ["D", "A"]),
        ("pb", "proot", ["E"]),
    ]
    nodes: dict[str, TreeNode] = {}
    for scope, parent_scope, names in layout:
        parent = nodes[parent_scope] if parent_scope else None
        registry: Registry[Any] = Registry(
            f"{scope} registry", parent=parent.registry if parent else None, scope=scope
        )
        node = TreeNode(registry, {}, {}, parent)
        for name in names:
            entry = _labelled(f"{scope}_{name}")
            registry.register_module(module=entry, name=name)
            node.entries[name] = entry
        if parent is not None:
            parent.children[scope] = node
        nodes[scope] = node
    return nodes


def _model_lookup(node: TreeNode, key: str, nodes: Mapping[str, TreeNode]) -> object | None:
    """Resolve ``key`` from ``node`` following SPEC 2 ``get``, steps 2 to 5 and 7."""
    scope, dot, rest = key.partition(".")
    if not dot:
        current: TreeNode | None = node
        while current is not None:
            if key in current.entries:
                return current.entries[key]
            current = current.parent
        return None
    if scope == node.registry.scope:
        return _model_lookup(node, rest, nodes)
    if scope in node.children:
        return _model_lookup(node.children[scope], rest, nodes)
    if scope in nodes:
        return _model_lookup(nodes[scope], rest, nodes)
    return None


def _snapshot(nodes: Mapping[str, TreeNode]) -> list[tuple[str, list[tuple[str, int]], list[str]]]:
    """Capture every registry's entries (name and identity, in order) and children."""
    return [
        (
            scope,
            [(name, id(obj)) for name, obj in node.registry.module_dict.items()],
            list(node.registry.children),
        )
        for scope, node in nodes.items()
    ]


@dataclass(frozen=True)
class ValueOrType:
    """An offending value that a message may name by its repr or by its type, even a str."""

    value: object


def _names_value(value: object, message: str) -> bool:
    """Tell whether an error message names ``value`` (a non-str may be named by its type)."""
    if isinstance(value, ValueOrType):
        return repr(value.value) in message or type(value.value).__name__ in message
    if isinstance(value, str):
        return value in message or repr(value) in message
    return repr(value) in message or type(value).__name__ in message


def _outcome(call: Callable[[], object]) -> tuple[object, Exception | None]:
    """Call ``call``; return its result, or the documented error it raised."""
    try:
        return call(), None
    except DOCUMENTED_ERRORS as error:
        return None, error


_LAZY_IMPORTS_DONE: list[bool] = []


def _warm_up_lazy_imports() -> None:
    """Run each error path once, so its lazy standard-library imports happen before measuring."""
    if _LAZY_IMPORTS_DONE:
        return
    registry: Registry[Any] = Registry("warm up", scope="pwarmup")

    @registry.register_module()
    def takes_x(x: int) -> int:
        return x

    registry.get("no_such_scope_for_warm_up.X")
    for cfg in ({"type": "takes_y"}, {"type": "takes_x", "y": 1}, {"type": "no_scope.takes_x"}):
        with pytest.raises(DOCUMENTED_ERRORS):
            registry.build(cfg)
    _LAZY_IMPORTS_DONE.append(True)


def _tree_and_module_snapshot() -> tuple[dict[str, TreeNode], set[str]]:
    _warm_up_lazy_imports()
    return _build_tree(), set(sys.modules)


# -- strategies ---------------------------------------------------------------------------------

TREE_SCOPES = ["proot", "pa", "pa1", "pb"]
TREE_NAMES = ["A", "B", "C", "D", "E", "shared"]

_key_part = st.one_of(
    st.sampled_from([*TREE_SCOPES, *TREE_NAMES, "", "zz", "ü", "名前", "\x00", "\n", " A"]),
    st.text(max_size=12),
    st.integers(min_value=1_000, max_value=20_000).map(lambda n: "x" * n),
)
KEYS = st.one_of(
    st.lists(_key_part, min_size=1, max_size=5).map(".".join),
    st.text(),
    st.text(alphabet=".A", max_size=20),
).filter(lambda key: key.partition(".")[0] not in ADVERTISED_SCOPES)

NON_STR_KEYS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.binary(),
    st.lists(st.text(max_size=3), max_size=3),
    st.tuples(st.text(max_size=3)),
    st.builds(object),
)

_leaf_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=10),
    st.binary(max_size=10),
    st.builds(bytearray, st.binary(max_size=4)),
    st.builds(object),
)
CONFIG_VALUES = st.recursive(
    _leaf_values,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.tuples(children, children),
        st.dictionaries(st.text(max_size=6), children, max_size=4),
        st.sets(st.integers(), max_size=3),
    ),
    max_leaves=12,
)
_cfg_keys = st.one_of(st.text(max_size=8), st.sampled_from(["x", "y", "type"])).filter(
    lambda key: key != "_scope_"
)


# -- split_scope_key ----------------------------------------------------------------------------


@PROFILE
@given(key=st.one_of(KEYS, st.text()))
def test_split_scope_key_properties(key: str) -> None:
    scope, rest = Registry.split_scope_key(key)
    if "." in key:
        assert scope is not None
        assert "." not in scope
        assert f"{scope}.{rest}" == key
    else:
        assert (scope, rest) == (None, key)


# -- lookups ------------------------------------------------------------------------------------


@PROFILE
@given(key=KEYS, where=st.sampled_from(TREE_SCOPES))
def test_lookup_properties(key: str, where: str) -> None:
    nodes, modules_before = _tree_and_module_snapshot()
    before = _snapshot(nodes)
    registry = nodes[where].registry

    found = registry.get(key)

    assert found is _model_lookup(nodes[where], key, nodes)
    assert (key in registry) is (found is not None)
    assert _snapshot(nodes) == before
    assert set(sys.modules) - modules_before == set()


@PROFILE
@given(key=NON_STR_KEYS, where=st.sampled_from(TREE_SCOPES))
def test_lookup_non_str_key_properties(key: object, where: str) -> None:
    nodes, modules_before = _tree_and_module_snapshot()
    before = _snapshot(nodes)
    registry = nodes[where].registry

    with pytest.raises(TypeError) as excinfo:
        registry.get(key)  # type: ignore[arg-type]

    assert _names_value(key, str(excinfo.value))
    assert key not in registry
    assert _snapshot(nodes) == before
    assert set(sys.modules) - modules_before == set()


# -- builds -------------------------------------------------------------------------------------


class ReadOnlyConfig(Mapping[object, object]):
    """A Mapping that is not a dict and cannot be written: any write attempt would fail loudly."""

    def __init__(self, data: Mapping[object, object]) -> None:
        self._data = dict(data)

    def __getitem__(self, key: object) -> object:
        return self._data[key]

    def __iter__(self) -> Iterator[object]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


class Point:
    """A registered class with a fixed signature, so unexpected keywords happen."""

    def __init__(self, x: object = None, y: object = None) -> None:
        self.x = x
        self.y = y


def record(**kwargs: object) -> dict[str, object]:
    """A registered callable that hands back exactly what it was called with."""
    return kwargs


def unregistered_record(**kwargs: object) -> dict[str, object]:
    """A callable used directly as ``type`` without being registered."""
    return kwargs


_NOT_CALLABLE_TYPES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.binary(max_size=4),
    st.lists(st.text(max_size=3), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.builds(object),
)
TYPE_VALUES = st.one_of(
    st.sampled_from(["record", "Point", "proot.record", "Point.x", "recorder", "", "."]),
    KEYS,
    st.sampled_from([record, Point, unregistered_record, functools.partial(record, fixed=1)]),
    _NOT_CALLABLE_TYPES,
)


# Config keys are mostly str; a config read from YAML or JSON-like sources may hold others.
_ANY_CFG_KEYS = st.one_of(_cfg_keys, _cfg_keys, st.integers())


def _configs(with_type: bool) -> st.SearchStrategy[dict[object, object]]:
    base: st.SearchStrategy[dict[object, object]] = st.dictionaries(
        _ANY_CFG_KEYS, CONFIG_VALUES, max_size=5
    )
    if not with_type:
        return base
    return st.builds(lambda cfg, type_: {**cfg, "type": type_}, base, TYPE_VALUES)


CONFIGS = st.one_of(
    _configs(with_type=True),
    _configs(with_type=False),
    st.fixed_dictionaries({"type": st.just("record"), "_scope_": st.sampled_from(["proot", "zz"])}),
)
DEFAULT_ARGS = st.one_of(
    st.none(),
    st.dictionaries(_ANY_CFG_KEYS, CONFIG_VALUES, max_size=4),
    st.integers(min_value=0, max_value=5_000).map(lambda n: {f"arg{i}": i for i in range(n)}),
    st.builds(lambda t: {"type": t}, TYPE_VALUES),
    st.one_of(st.lists(st.integers(), max_size=2), st.text(max_size=3), st.integers()),
)
CFG_CONTAINERS: list[Callable[[dict[object, object]], object]] = [
    dict,
    OrderedDict,
    types.MappingProxyType,
    ReadOnlyConfig,
    list,  # not a Mapping: a TypeError
    lambda cfg: json.dumps(sorted(map(str, cfg))),  # a str is not a Mapping either
]


def _identities(value: object) -> list[tuple[int, type[object]]]:
    """Identity and type of ``value`` and of everything nested in it, in a fixed walk order."""
    found = [(id(value), type(value))]
    if isinstance(value, Mapping):
        for key, item in value.items():
            found += _identities(key) + _identities(item)
    elif isinstance(value, list | tuple):
        for item in value:
            found += _identities(item)
    return found


def _expected_build(
    cfg: object, default_args: object, nodes: Mapping[str, TreeNode]
) -> tuple[type[BaseException] | tuple[type[BaseException], ...], object] | tuple[None, object]:
    """Predict ``build_from_cfg`` per SPEC 2: (error type, value to name) or (None, call)."""
    # A value of the wrong container type may be named by its repr or by its type.
    if not isinstance(cfg, Mapping):
        return TypeError, ValueOrType(cfg)
    if default_args is not None and not isinstance(default_args, Mapping):
        return TypeError, ValueOrType(default_args)
    defaults: Mapping[object, object] = default_args or {}
    if "type" in cfg:
        type_ = cfg["type"]
    elif "type" in defaults:
        type_ = defaults["type"]
    else:
        return KeyError, "type"
    if isinstance(type_, str):
        scope = cfg.get("_scope_")
        target = None
        if isinstance(scope, str) and scope in nodes:
            target = _model_lookup(nodes[scope], type_, nodes)
        if target is None:
            target = _model_lookup(nodes["pa"], type_, nodes)
        if target is None:
            return NotRegisteredError, type_
        type_ = target
    elif not callable(type_):
        return TypeError, type_
    kwargs = {k: v for k, v in defaults.items() if k != "type"}
    kwargs.update((k, v) for k, v in cfg.items() if k not in ("type", "_scope_"))
    if not all(isinstance(k, str) for k in kwargs):
        # Python refuses non-str keywords before the callable runs.
        return TypeError, None
    if type_ is Point and not set(kwargs) <= {"x", "y"}:
        return TypeError, frozenset(kwargs) - {"x", "y"}
    return None, (type_, kwargs)


def _register_build_targets(nodes: Mapping[str, TreeNode]) -> None:
    for registry_scope in ("proot", "pa"):
        node = nodes[registry_scope]
        for entry in (record, Point):
            node.registry.register_module(module=entry)
            node.entries[entry.__name__] = entry


@PROFILE
@given(
    cfg=CONFIGS,
    default_args=DEFAULT_ARGS,
    container=st.sampled_from(CFG_CONTAINERS),
)
def test_build_properties(
    cfg: dict[object, object],
    default_args: object,
    container: Callable[[dict[object, object]], object],
) -> None:
    nodes, modules_before = _tree_and_module_snapshot()
    _register_build_targets(nodes)
    registry = nodes["pa"].registry
    wrapped = container(cfg)
    cfg_ids = _identities(wrapped)
    defaults_ids = _identities(default_args)
    cfg_before = repr(wrapped)
    defaults_before = repr(default_args)
    before = _snapshot(nodes)
    expected_error, detail = _expected_build(wrapped, default_args, nodes)

    outcome, error = _outcome(
        lambda: build_from_cfg(wrapped, registry, default_args)  # type: ignore[arg-type]
    )

    # Neither the config nor the defaults changed: same repr, same objects all the way down.
    assert repr(wrapped) == cfg_before
    assert repr(default_args) == defaults_before
    assert _identities(wrapped) == cfg_ids
    assert _identities(default_args) == defaults_ids
    assert _snapshot(nodes) == before
    assert set(sys.modules) - modules_before == set()
    assert current_scope() is None

    if expected_error is None:
        assert error is None, f"unexpected {error!r}"
        assert isinstance(detail, tuple)
        type_, kwargs = detail
        if type_ is Point:
            assert isinstance(outcome, Point)
            assert outcome.x is kwargs.get("x")
            assert outcome.y is kwargs.get("y")
        elif isinstance(type_, functools.partial):
            assert outcome == {"fixed": 1, **kwargs}
        elif type_ not in (record, unregistered_record):
            assert outcome == type_.__name__  # an entry of the tree: it returns its label
        else:
            assert isinstance(outcome, dict)
            assert outcome.keys() == kwargs.keys()
            assert all(outcome[k] is v for k, v in kwargs.items())
        return
    assert isinstance(error, expected_error), f"expected {expected_error}, got {error!r}"
    if expected_error is NotRegisteredError:
        assert isinstance(error, RegistryError)
    message = str(error) + "\n".join(getattr(error, "__notes__", []))
    if isinstance(detail, frozenset):
        assert any(repr(name) in message for name in detail), f"{message!r} names none of {detail}"
    elif detail is not None:
        assert _names_value(detail, message), f"{message!r} does not name {detail!r}"


@PROFILE
@given(
    key=st.one_of(st.sampled_from(TREE_NAMES), KEYS),
    where=st.sampled_from(TREE_SCOPES),
    scope=st.sampled_from([*TREE_SCOPES, "zz", "pwarmup"]),
    through_cfg=st.booleans(),
)
def test_default_scope_properties(key: str, where: str, scope: str, through_cfg: bool) -> None:
    nodes, modules_before = _tree_and_module_snapshot()
    registry = nodes[where].registry
    expected = None
    if scope in nodes:
        expected = _model_lookup(nodes[scope], key, nodes)
    if expected is None:
        expected = _model_lookup(nodes[where], key, nodes)

    def build() -> object:
        if through_cfg:
            return registry.build({"type": key, "_scope_": scope})
        with default_scope(scope):
            return registry.build({"type": key})

    built, error = _outcome(build)

    if expected is None:
        assert isinstance(error, NotRegisteredError), f"expected NotRegisteredError, got {error!r}"
        assert _names_value(key, str(error))
    else:
        assert error is None, f"unexpected {error!r}"
        assert built == expected.__name__  # type: ignore[attr-defined]
    assert current_scope() is None
    assert set(sys.modules) - modules_before == set()


# -- registration sequences ---------------------------------------------------------------------


class Widget:
    pass


class Gadget:
    pass


def tool() -> None:
    """A registrable function."""


def other_tool() -> None:
    """Another registrable function."""


_NAME_POOL = ["a", "b", "c", "Widget", "tool", "ünï", "x" * 300]
_VALID_OBJECTS: list[object] = [
    Widget,
    Gadget,
    tool,
    other_tool,
    len,
    lambda: None,
    functools.partial(tool),  # no __name__: needs an explicit name
]
# None is left out: `module=None` is the decorator form, not a wrong module.
_INVALID_OBJECTS: list[object] = [3, "Widget", object(), b"tool", [Widget]]
NAMES_ARGS = st.one_of(
    st.none(),
    st.sampled_from(_NAME_POOL),
    st.lists(st.sampled_from(_NAME_POOL), min_size=1, max_size=3),
    st.lists(st.sampled_from(_NAME_POOL), min_size=1, max_size=3).map(tuple),
    # Invalid: dotted names, empty or repeated lists, non-str names, containers that are not
    # sequences. The SPEC says nothing of "": it may be accepted or refused with a ValueError.
    st.sampled_from(["a.b", ".", "scope.Widget", "", [], (), ["a", "a.b"], ["a", "a"], [""]]),
    st.sampled_from([3, b"ab", [1], ["a", None], {"a"}, {"a": 1}]),
)
FORCES = st.one_of(st.booleans(), st.sampled_from([0, 1, None, "yes"]))
_SHAPE_ERRORS = (TypeError, ValueError)


@dataclass
class RegisterOp:
    """One call of ``register_module`` with everything a caller could get wrong."""

    names: object
    obj: object
    force: object
    as_decorator: bool


@dataclass
class Fault:
    """A reason an op must fail: the documented error types and the value the message names."""

    kinds: tuple[type[Exception], ...]
    value: object
    # The SPEC leaves this case open: refusing it is allowed, accepting it too.
    optional: bool = False


REGISTER_OPS = st.builds(
    RegisterOp,
    names=NAMES_ARGS,
    obj=st.sampled_from(_VALID_OBJECTS + _INVALID_OBJECTS),
    force=FORCES,
    as_decorator=st.booleans(),
)


def _expected_names(op: RegisterOp) -> tuple[list[str] | None, list[Fault]]:
    """The names a valid op binds, or the faults that make it fail."""
    faults: list[Fault] = []
    if not isinstance(op.force, bool):
        faults.append(Fault((TypeError,), op.force))
    if not callable(op.obj):
        faults.append(Fault((TypeError,), op.obj))
    names: list[str] | None = None
    if op.names is None:
        if callable(op.obj) and not hasattr(op.obj, "__name__"):
            faults.append(Fault(_SHAPE_ERRORS, op.obj))
        elif callable(op.obj):
            names = [op.obj.__name__]  # type: ignore[attr-defined]
    elif isinstance(op.names, str):
        names = [op.names]
    elif isinstance(op.names, list | tuple):
        odd = [n for n in op.names if not isinstance(n, str)]
        if not op.names:
            faults.append(Fault(_SHAPE_ERRORS, op.names))
        elif odd:
            faults.append(Fault((TypeError,), odd[0]))
        elif len(set(op.names)) != len(op.names):
            faults.append(Fault(_SHAPE_ERRORS, op.names[0]))
        else:
            names = list(op.names)
    else:
        faults.append(Fault((TypeError,), op.names))
    for name in names or []:
        if "." in name:
            faults.append(Fault((ValueError,), name))
        elif not name:
            faults.append(Fault((ValueError,), name, optional=True))
    if any(not fault.optional for fault in faults):
        names = None
    return names, faults


def _register(registry: Registry[Any], op: RegisterOp) -> object:
    if op.as_decorator:
        decorator = registry.register_module(name=op.names, force=op.force)  # type: ignore[call-overload]
        return decorator(op.obj)
    return registry.register_module(name=op.names, force=op.force, module=op.obj)  # type: ignore[call-overload]


def _provenance(obj: object) -> str | None:
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    return f"{module}:{qualname}" if module and qualname else None


def _check_refused(
    registry: Registry[Any],
    op: RegisterOp,
    error: Exception,
    names: list[str] | None,
    faults: list[Fault],
    model: Mapping[str, object],
) -> None:
    """A refused op raised the documented error, with a message naming what was wrong."""
    message = str(error)
    if faults:
        kinds = tuple(kind for fault in faults for kind in fault.kinds)
        assert isinstance(error, kinds), (op, error)
        if len(faults) == 1 and faults[0].value not in ("", [], ()):
            assert _names_value(faults[0].value, message), (op, message)
        return
    # A valid op fails only on a conflict: a name bound to another object, without force.
    assert names is not None
    assert isinstance(error, AlreadyRegisteredError), (op, error)
    assert isinstance(error, RegistryError)
    assert op.force is False
    clashes = [n for n in names if n in model and model[n] is not op.obj]
    assert clashes, (op, error)
    assert any(name in message for name in clashes), message
    assert registry.name in message
    assert registry.scope in message
    where = _provenance(model[clashes[0]])
    if where is not None and len(clashes) == 1:
        assert where in message, message


def _check_lookups(
    registry: Registry[Any], child: Registry[Any], model: Mapping[str, object]
) -> None:
    """Every pool name resolves as the model says: own, from a child, and scoped."""
    for name in _NAME_POOL:
        expected = model.get(name)
        assert registry.get(name) is expected
        assert child.get(name) is expected  # the parent fallback sees every change
        assert child.get(f"pseq.{name}") is expected
        # The child holds nothing of its own: its lookup falls back to this registry.
        assert registry.get(f"pseqchild.{name}") is expected


@PROFILE
@given(ops=st.lists(REGISTER_OPS, max_size=12))
def test_registration_sequence_properties(ops: list[RegisterOp]) -> None:
    registry: Registry[Any] = Registry("sequence", scope="pseq")
    child: Registry[Any] = Registry("sequence child", parent=registry, scope="pseqchild")
    model: dict[str, object] = {}
    for op in ops:
        # Lookups before and after each op: a cached answer must never outlive a change.
        _check_lookups(registry, child, model)
        names, faults = _expected_names(op)
        returned, error = _outcome(functools.partial(_register, registry, op))
        if error is not None:
            # All names or none: the entries and their order are exactly as before.
            assert list(registry) == list(model)
            assert all(registry.module_dict[n] is obj for n, obj in model.items())
            _check_refused(registry, op, error, names, faults, model)
            continue
        assert all(fault.optional for fault in faults), (op, faults)
        assert names is not None
        assert returned is op.obj
        assert op.force or all(model.get(n, op.obj) is op.obj for n in names)
        for name in names:
            model[name] = op.obj  # force replaces in place: the position is kept
        assert list(registry) == list(model)
        assert len(registry) == len(model)
        assert all(registry.get(n) is obj for n, obj in model.items() if n)
    _check_lookups(registry, child, model)


# -- child registries ---------------------------------------------------------------------------

SCOPE_ARGS = st.one_of(
    st.text(min_size=1, max_size=10).filter(lambda s: "." not in s and s not in ADVERTISED_SCOPES),
    st.sampled_from(["pa", "pb", "c1", "c1", "", ".", "a.b", "ü"]),
    st.sampled_from([None, 3, b"pa", ["pa"]]),
)
PARENT_ARGS: st.SearchStrategy[object] = st.sampled_from(
    ["root", "child", None, "not a registry", 0, {}]
)
# What `scope=None` infers for a registry created in this module.
INFERRED_SCOPE = Registry("probe for the inferred scope").scope


def _child_faults(
    scope: object, parent: object, expected: Mapping[int, Mapping[str, object]]
) -> list[Fault]:
    faults: list[Fault] = []
    if parent is not None and not isinstance(parent, Registry):
        faults.append(Fault((TypeError,), parent))
    if scope is not None and not isinstance(scope, str):
        faults.append(Fault((TypeError,), scope))
    elif isinstance(scope, str) and (not scope or "." in scope):
        faults.append(Fault((ValueError,), scope))
    elif isinstance(parent, Registry) and (scope or INFERRED_SCOPE) in expected[id(parent)]:
        faults.append(Fault((ScopeConflictError,), scope or INFERRED_SCOPE))
    return faults


@PROFILE
@given(attempts=st.lists(st.tuples(SCOPE_ARGS, PARENT_ARGS), min_size=1, max_size=8))
def test_child_registry_properties(attempts: list[tuple[object, object]]) -> None:
    root: Registry[Any] = Registry("children root", scope="pchildren")
    child: Registry[Any] = Registry("first child", parent=root, scope="pa")
    expected: dict[int, dict[str, Registry[Any]]] = {id(root): {"pa": child}, id(child): {}}
    parents: dict[object, object] = {"root": root, "child": child}
    tree_scopes = {"pchildren", "pa"}
    for scope, parent_arg in attempts:
        parent = parents.get(parent_arg, parent_arg) if isinstance(parent_arg, str) else parent_arg
        faults = _child_faults(scope, parent, expected)
        target = f"{scope or INFERRED_SCOPE}.Target"
        new_scope = isinstance(scope, str | None) and (scope or INFERRED_SCOPE) not in tree_scopes
        if new_scope:
            assert child.get(target) is None  # a miss, which the registry may remember
        made, error = _outcome(
            lambda: Registry("made", parent=parent, scope=scope)  # type: ignore[arg-type]  # noqa: B023
        )
        if error is not None:
            assert faults, (scope, parent_arg, error)
            assert isinstance(error, tuple(k for f in faults for k in f.kinds)), (scope, error)
            if len(faults) == 1 and faults[0].value != "":
                assert _names_value(faults[0].value, str(error)), str(error)
        else:
            assert isinstance(made, Registry)
            assert not faults, (scope, parent_arg)
            if isinstance(parent, Registry):
                assert parent.children[made.scope] is made
                expected[id(parent)][made.scope] = made
                assert made.parent is parent
                assert made.root is root
                assert made.build_func is parent.build_func
                if new_scope:
                    # A new scope is reachable at once from anywhere in the tree, even after a miss.
                    entry = made.register_module(module=_labelled("Target"))
                    assert child.get(target) is entry
                    assert root.get(target) is entry
                    tree_scopes.add(made.scope)
            expected[id(made)] = {}
        for registry in (root, child):
            assert dict(registry.children) == expected[id(registry)]


# -- untrusted configs --------------------------------------------------------------------------

_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8))
JSON_DOCUMENTS = st.recursive(
    st.one_of(_json_leaf, st.fixed_dictionaries({"type": st.one_of(KEYS, _json_leaf)})),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.sampled_from(["type", "child", "children", "x"]), children, max_size=3),
    ),
    max_leaves=10,
).map(json.dumps)


@PROFILE
@given(document=JSON_DOCUMENTS, type_=st.one_of(KEYS, st.sampled_from(["Node", "pa.Node"])))
def test_json_config_properties(document: str, type_: str) -> None:
    """A config read from an untrusted file reaches registered names and nothing else."""
    _warm_up_lazy_imports()
    modules_before = set(sys.modules)
    registry: Registry[Any] = Registry("json", scope="pjson")

    @registry.register_module()
    class Node:
        def __init__(self, **kwargs: object) -> None:
            self.children = [
                registry.build(value)
                for value in kwargs.values()
                if isinstance(value, dict) and "type" in value
            ]

    cfg = {"type": type_, "child": json.loads(document)}
    built, error = _outcome(lambda: registry.build(cfg))

    if error is None:
        assert isinstance(built, Node)
        pending = [built]
        while pending:  # everything built anywhere in the tree is a registered Node
            node = pending.pop()
            assert isinstance(node, Node)
            pending += node.children
    else:
        assert isinstance(error, NotRegisteredError | TypeError), repr(error)
    assert set(sys.modules) - modules_before == set()


# -- regressions found by the properties above --------------------------------------------------


def test_missing_type_with_keys_of_mixed_types_is_a_key_error() -> None:
    registry: Registry[Any] = Registry("mixed keys", scope="pmixed")

    with pytest.raises(KeyError, match='"type"'):
        build_from_cfg({"": None, 0: None}, registry)  # type: ignore[dict-item]


def test_non_str_key_for_a_class_keeps_python_s_type_error() -> None:
    registry: Registry[Any] = Registry("non-str keys", scope="pnonstr")
    registry.register_module(module=Point)

    with pytest.raises(TypeError, match="keywords must be strings") as excinfo:
        registry.build({"type": "Point", 0: None})

    assert excinfo.value.__notes__[-1].startswith("regtree: while building 'Point'")
