"""Failures of a build (SPEC 2): the same exception object with notes, and error texts.

One note per build level, keyword diagnostics, and NotRegisteredError's did-you-mean text.
"""

from __future__ import annotations

import functools
import re
import traceback
from typing import Any

import pytest

from regtree import NotRegisteredError, Registry, _plugins, build_from_cfg

from .conftest import Tree


class DeviceError(Exception):
    """An exception whose __init__ takes two arguments: rebuilding it from a message fails."""

    def __init__(self, device: str, code: int) -> None:
        super().__init__(device, code)
        self.device = device
        self.code = code


@pytest.fixture
def nested() -> tuple[Registry[Any], list[BaseException]]:
    """A registry whose 'Outer' builds 'Middle' which builds 'Inner', which raises."""
    registry: Registry[Any] = Registry("layer", scope="nested")
    raised: list[BaseException] = []

    @registry.register_module()
    class Inner:
        def __init__(self, device: str) -> None:
            error = DeviceError(device, 7)
            raised.append(error)
            raise error

    @registry.register_module()
    class Middle:
        def __init__(self, inner: dict[str, Any]) -> None:
            self.inner = registry.build(inner)

    @registry.register_module()
    class Outer:
        def __init__(self, middle: dict[str, Any], depth: int = 1) -> None:
            self.middle = registry.build(middle)

    return registry, raised


def test_the_same_exception_object_arrives_with_one_note_per_level(
    nested: tuple[Registry[Any], list[BaseException]],
) -> None:
    registry, raised = nested
    cfg = {"type": "Outer", "middle": {"type": "Middle", "inner": {"type": "Inner", "device": "x"}}}
    with pytest.raises(DeviceError) as caught:
        registry.build(cfg)
    error = caught.value
    assert error is raised[0]
    assert (error.args, error.device, error.code) == (("x", 7), "x", 7)
    label = "registry 'layer' (scope 'nested')"
    assert error.__notes__ == [
        f"regtree: while building 'Inner' with {label}",
        f"regtree: while building 'Middle' with {label}",
        f"regtree: while building 'Outer' with {label}",
    ]
    frames = [frame.name for frame in traceback.extract_tb(error.__traceback__)]
    # The original traceback is intact: the constructor's frame last, each build level above it.
    assert frames[-1] == "__init__"
    assert frames.count("__init__") == 3
    assert frames.count("build_from_cfg") == 3


def test_a_not_registered_error_inside_a_nested_build_gets_the_outer_notes(
    nested: tuple[Registry[Any], list[BaseException]],
) -> None:
    registry, _ = nested
    cfg = {"type": "Outer", "middle": {"type": "Middle", "inner": {"type": "Innr"}}}
    with pytest.raises(NotRegisteredError, match=r"'Innr' is not registered.*'Inner'") as caught:
        registry.build(cfg)
    assert [note.split(" with ")[0] for note in caught.value.__notes__] == [
        "regtree: while building 'Middle'",
        "regtree: while building 'Outer'",
    ]


def test_an_unexpected_keyword_note_lists_the_accepted_parameters_and_closest(
    nested: tuple[Registry[Any], list[BaseException]],
) -> None:
    registry, _ = nested
    with pytest.raises(TypeError, match="unexpected keyword argument 'dept'") as caught:
        registry.build({"type": "Outer", "middle": {}, "dept": 3})
    assert caught.value.__notes__ == [
        "regtree: while building 'Outer' with registry 'layer' (scope 'nested'): unexpected "
        "keyword 'dept' (closest match: 'depth'); accepted parameters: middle, depth=1"
    ]


def test_a_missing_keyword_note_names_it(nested: tuple[Registry[Any], list[BaseException]]) -> None:
    registry, _ = nested
    with pytest.raises(TypeError, match="missing 1 required positional argument") as caught:
        registry.build({"type": "Outer", "depth": 2})
    (note,) = caught.value.__notes__
    assert note.endswith("missing required keyword 'middle'; accepted parameters: middle, depth=1")


def test_a_function_type_given_directly_gets_a_note_with_its_qualified_name() -> None:
    registry: Registry[Any] = Registry("layer", scope="direct")

    def takes_nothing() -> None:
        return None

    with pytest.raises(TypeError) as caught:
        build_from_cfg({"type": takes_nothing, "extra": 1}, registry)
    (note,) = caught.value.__notes__
    assert re.fullmatch(
        r"regtree: while building .*takes_nothing with registry 'layer' \(scope 'direct'\): "
        r"unexpected keyword 'extra'; accepted parameters: none",
        note,
    )


def test_a_type_error_from_inside_the_constructor_gets_a_plain_note() -> None:
    registry: Registry[Any] = Registry("layer", scope="inside")

    @registry.register_module()
    def adds(value: int) -> int:
        return value + "1"  # type: ignore[operator, no-any-return]

    with pytest.raises(TypeError, match="unsupported operand") as caught:
        registry.build({"type": "adds", "value": 1})
    assert caught.value.__notes__ == [
        "regtree: while building 'adds' with registry 'layer' (scope 'inside')"
    ]


def test_a_callable_taking_any_keyword_gets_a_plain_note() -> None:
    registry: Registry[Any] = Registry("layer", scope="anykw")

    @registry.register_module()
    def anything(**kwargs: Any) -> None:
        raise TypeError("refused")

    with pytest.raises(TypeError, match="refused") as caught:
        registry.build({"type": "anything", "x": 1})
    assert caught.value.__notes__ == [
        "regtree: while building 'anything' with registry 'layer' (scope 'anykw')"
    ]


def test_a_missing_keyword_is_named_even_where_the_callable_takes_any_keyword() -> None:
    registry: Registry[Any] = Registry("layer", scope="varkw")

    @registry.register_module()
    def net(depth: int, **options: Any) -> int:
        return depth

    with pytest.raises(TypeError, match="missing 1 required positional argument") as caught:
        registry.build({"type": "net", "dpeth": 3})
    assert caught.value.__notes__ == [
        "regtree: while building 'net' with registry 'layer' (scope 'varkw'): missing required "
        "keyword 'depth' (closest match: 'dpeth'); accepted parameters: depth, **options"
    ]


def test_a_type_error_inside_a_wrapped_callable_gets_a_plain_note() -> None:
    # functools.wraps lends the wrapper net's signature, which has no 'device'; the wrapper
    # takes it, and the error is the body's own, so no parameter is blamed.
    registry: Registry[Any] = Registry("layer", scope="wrapped")

    def net(depth: int) -> int:
        if not isinstance(depth, int):
            raise TypeError(f"depth must be an int, got {type(depth).__name__}")
        return depth

    @functools.wraps(net)
    def on_device(*args: Any, device: str = "cpu", **kwargs: Any) -> int:
        return net(*args, **kwargs)

    registry.register_module(name="net", module=on_device)
    with pytest.raises(TypeError, match="depth must be an int") as caught:
        registry.build({"type": "net", "depth": "3", "device": "cuda"})
    assert caught.value.__notes__ == [
        "regtree: while building 'net' with registry 'layer' (scope 'wrapped')"
    ]
    # A keyword the wrapper passes on to net is still told against net's parameters.
    with pytest.raises(TypeError, match="unexpected keyword argument 'dpeth'") as caught:
        registry.build({"type": "net", "dpeth": 3})
    (note,) = caught.value.__notes__
    assert note.endswith(
        "unexpected keyword 'dpeth' (closest match: 'depth'); missing required keyword 'depth'; "
        "accepted parameters: depth"
    )


def test_a_module_without_an_init_of_its_own_is_told_as_validation_tells_it() -> None:
    # nn.Module's own __init__ takes (*args, **kwargs) only to refuse them: the note reads the
    # parameters as validation does (no keyword at all), not as that signature says.
    torch = pytest.importorskip("torch")
    registry: Registry[Any] = Registry("layer", scope="noinit")

    @registry.register_module()
    class Plain(torch.nn.Module):
        pass

    with pytest.raises(TypeError, match="unexpected keyword argument 'width'") as caught:
        registry.build({"type": "Plain", "width": 3})
    (note,) = caught.value.__notes__
    assert note.endswith("unexpected keyword 'width'; accepted parameters: none")
    assert [problem.kind for problem in registry.validate({"type": "Plain", "width": 3})] == [
        "unknown-keyword"
    ]


def test_a_positional_only_parameter_is_named_as_one_a_config_cannot_set() -> None:
    registry: Registry[Any] = Registry("layer", scope="posonly")

    @registry.register_module()
    def scaled(x: int, /, factor: int = 1) -> int:
        return x * factor

    with pytest.raises(TypeError, match="positional-only") as caught:
        registry.build({"type": "scaled", "x": 2})
    (note,) = caught.value.__notes__
    assert note.endswith(
        "'x' is a positional-only parameter, which a config cannot set (a build passes keywords "
        "only); accepted parameters: factor=1"
    )
    with pytest.raises(TypeError, match="missing 1 required positional argument") as caught:
        registry.build({"type": "scaled"})
    (note,) = caught.value.__notes__
    assert note.endswith(
        "required positional-only parameter 'x' cannot be given by a config; accepted "
        "parameters: factor=1"
    )


def test_not_registered_says_did_you_mean_across_the_tree(tree: Tree) -> None:
    with pytest.raises(
        NotRegisteredError,
        match=(
            r"^'Lino' is not registered in registry 'animal' \(scope 'dog'\) or its ancestors\. "
            r"Did you mean 'lion\.Lion'\?$"
        ),
    ):
        tree.dog.build({"type": "Lino"})


def test_did_you_mean_ignores_case_and_prefers_reachable_names(tree: Tree) -> None:
    with pytest.raises(NotRegisteredError, match=r"Did you mean 'Dog'\?$"):
        tree.hound.build({"type": "dog"})
    # dog's Shared shadows the root's, which stays reachable by its scoped key.
    with pytest.raises(NotRegisteredError, match=r"Did you mean 'Shared', 'animal\.Shared'\?$"):
        tree.little.build({"type": "shard"})


def test_did_you_mean_finds_a_name_written_in_another_case(registry: Registry[Any]) -> None:
    registry.register_module(name="ResNet", module=type("ResNet", (), {}))
    registry.register_module(name="ViT", module=type("ViT", (), {}))
    with pytest.raises(NotRegisteredError, match=r"'RESNET' is .* Did you mean 'ResNet'\?$"):
        registry.build({"type": "RESNET"})


def test_not_registered_lists_the_entries_when_nothing_is_close(tree: Tree) -> None:
    # Every name the lookup reaches from there: its own, then its ancestors' (nearest first).
    with pytest.raises(
        NotRegisteredError, match=r"Registered there: 'Lion', 'Cat', 'Animal', 'Shared'\.$"
    ):
        tree.lion.build({"type": "Xyzzy"})


def test_a_scoped_miss_lists_what_that_scope_reaches_written_as_keys(tree: Tree) -> None:
    # The entries of the registry the key's scope reached, not of the one looked in.
    with pytest.raises(
        NotRegisteredError,
        match=(
            r"^'lion\.Xyzzy' is not registered in registry 'animal' \(scope 'animal'\): registry "
            r"'animal' \(scope 'lion'\) has no 'Xyzzy'\. Registered there: 'lion\.Lion', "
            r"'lion\.Cat', 'lion\.Animal', 'lion\.Shared'\.$"
        ),
    ):
        tree.root.build({"type": "lion.Xyzzy"})


def test_did_you_mean_offers_only_keys_that_resolve_from_the_registry_looked_in() -> None:
    root: Registry[Any] = Registry("model", scope="top")
    first: Registry[Any] = Registry("model", parent=root, scope="left")
    Registry("model", parent=first, scope="dup")  # 'dup' resolves to this one, breadth first
    second: Registry[Any] = Registry("model", parent=root, scope="right")
    hidden: Registry[Any] = Registry("model", parent=second, scope="dup")
    hidden.register_module(name="Zonly", module=type("Zonly", (), {}))
    same: Registry[Any] = Registry("model", parent=root, scope="top")  # its parent's scope
    same.register_module(name="Deep", module=type("Deep", (), {}))
    assert root.get("dup.Zonly") is None
    assert root.get("top.Deep") is None
    with pytest.raises(NotRegisteredError) as caught:
        root.build({"type": "Zonlyy"})
    assert "Did you mean" not in str(caught.value)
    with pytest.raises(NotRegisteredError) as caught:
        root.build({"type": "Deepp"})
    assert "Did you mean" not in str(caught.value)
    # From the branch that does reach it, the key is offered.
    with pytest.raises(NotRegisteredError, match=r"Did you mean 'dup\.Zonly'\?$"):
        second.build({"type": "dup.Zonlyy"})


def test_not_registered_in_a_known_scope_names_that_registry(tree: Tree) -> None:
    with pytest.raises(
        NotRegisteredError,
        match=(
            r"^'cat\.Lino' is not registered in registry 'animal' \(scope 'dog'\): "
            r"registry 'animal' \(scope 'cat'\) has no 'Lino'\. Did you mean 'lion\.Lion'\?$"
        ),
    ):
        tree.dog.build({"type": "cat.Lino"})


def test_an_unknown_scope_lists_loaded_scopes_and_says_no_distribution_provides_it(
    tree: Tree, catalog: _plugins.PluginCatalog
) -> None:
    with pytest.raises(NotRegisteredError) as caught:
        tree.dog.build({"type": "lino.Lion"})
    assert str(caught.value) == (
        "'lino.Lion' is not registered in registry 'animal' (scope 'dog'). No registry in its "
        "tree has scope 'lino' (loaded scopes: animal, cat, dog, hound, lion, little_hound). "
        "No installed package provides scope 'lino': no distribution advertises it in entry "
        "point group 'regtree.scopes'; install the package that defines it. "
        "Did you mean scope 'lion'?"
    )


def test_an_unknown_nested_scope_names_the_registry_it_was_missing_from(
    tree: Tree, catalog: _plugins.PluginCatalog
) -> None:
    with pytest.raises(NotRegisteredError, match=r"No registry in its tree has scope 'wolf'"):
        tree.root.build({"type": "dog.wolf.Wolf"})


def test_not_registered_is_a_key_error_printing_without_quotes(tree: Tree) -> None:
    with pytest.raises(KeyError) as caught:
        tree.dog.build({"type": "Nope"})
    assert str(caught.value).startswith("'Nope' is not registered")


def test_a_non_str_config_key_is_named_in_the_note(registry: Registry[Any]) -> None:
    registry.register_module(name="pair", module=lambda a=1: a)
    with pytest.raises(TypeError, match="keywords must be strings") as caught:
        build_from_cfg({"type": "pair", 0: None}, registry)  # type: ignore[dict-item]
    (note,) = caught.value.__notes__
    assert "config key 0 is not a str, so it cannot be a keyword; accepted parameters: a=1" in note


def test_a_default_scope_naming_no_registry_is_said_in_the_miss(
    tree: Tree, catalog: _plugins.PluginCatalog
) -> None:
    # SPEC 2.1 searches the default scope's registry only where one exists; the message says
    # that the scope given named none, and which scope comes close.
    with pytest.raises(NotRegisteredError) as caught:
        tree.root.build({"type": "Lion", "_scope_": "lino"})
    assert str(caught.value) == (
        "'Lion' is not registered in registry 'animal' (scope 'animal'). Did you mean "
        "'lion.Lion'? The default scope 'lino' (from '_scope_' or default_scope) names no "
        "registry in this tree, so it was not searched (loaded scopes: animal, cat, dog, hound, "
        "lion, little_hound). Did you mean scope 'lion'?"
    )
