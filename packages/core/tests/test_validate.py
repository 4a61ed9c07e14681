from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import pytest

from regtree import ConfigProblem, Registry, default_scope
from regtree.config import validate_config

BUILT: list[str] = []


class Backbone:
    """A backbone that needs a depth."""

    def __init__(self, depth: int, width: int = 8) -> None:
        BUILT.append("Backbone")


class Detector:
    """A detector that builds its backbone from a config."""

    def __init__(self, backbone: Mapping[str, Any], num_classes: int, head: Any = None) -> None:
        BUILT.append("Detector")


class Flexible:
    """Accepts any keyword."""

    def __init__(self, size: int, **options: Any) -> None:
        BUILT.append("Flexible")


def make_head(in_channels: int, *, num_classes: int = 3) -> dict[str, int]:
    BUILT.append("make_head")
    return {"in_channels": in_channels, "num_classes": num_classes}


def positional_only(x: int, /, y: int = 0) -> int:
    return x + y


class Tree(NamedTuple):
    root: Registry[Any]
    cls: Registry[Any]
    det: Registry[Any]


def make_tree() -> Tree:
    """A root with two children, as regtree.MODELS with two downstream packages."""
    root: Registry[Any] = Registry("model", scope="toyroot")
    cls: Registry[Any] = Registry("model", parent=root, scope="toycls")
    det: Registry[Any] = Registry("model", parent=root, scope="toydet")
    cls.register_module(module=Backbone)
    det.register_module(module=Detector)
    det.register_module(module=make_head, name="Head")
    root.register_module(module=Flexible)
    root.register_module(module=positional_only, name="PositionalOnly")
    return Tree(root, cls, det)


def sound_config() -> dict[str, Any]:
    return {
        "type": "toydet.Detector",
        "num_classes": 4,
        "backbone": {"type": "toycls.Backbone", "depth": 2},
        "head": [{"type": "toydet.Head", "in_channels": 8}],
    }


def paths(problems: list[ConfigProblem]) -> list[tuple[str, str]]:
    return [(problem.path, problem.kind) for problem in problems]


def test_a_sound_config_has_no_problems_and_nothing_is_built() -> None:
    tree = make_tree()
    BUILT.clear()
    assert tree.root.validate(sound_config()) == []
    assert BUILT == []


def test_registry_validate_delegates_to_validate_config() -> None:
    tree = make_tree()
    cfg = {"type": "toydet.Detector", "backbone": {}}
    assert tree.root.validate(cfg) == validate_config(tree.root, cfg)


def test_three_planted_mistakes_are_all_reported_with_paths() -> None:
    tree = make_tree()
    cfg = sound_config()
    cfg["type"] = "toydet.Detectr"
    cfg["backbone"] = {"type": "toycls.Backbone", "depth": 2, "widht": 4}
    cfg["head"] = [{"type": "toydet.Head"}]
    problems = tree.root.validate(cfg)
    assert paths(problems) == [
        ("type", "unknown-type"),
        ("backbone.widht", "unknown-keyword"),
        ("head[0].in_channels", "missing-keyword"),
    ]
    assert problems[0].suggestions == ("toydet.Detector",)
    assert problems[1].suggestions == ("width",)
    assert "did you mean 'width'?" in problems[1].message
    assert "'in_channels'" in problems[2].message


def test_an_unknown_type_says_which_registry_and_the_closest_names() -> None:
    tree = make_tree()
    (problem,) = tree.det.validate({"type": "Detectr", "num_classes": 1, "backbone": {}})
    assert problem.path == "type"
    assert "'Detectr' is not registered in registry 'model' (scope 'toydet')" in problem.message
    assert "'Detector'" in problem.message


def test_an_unknown_scope_lists_the_loaded_scopes() -> None:
    tree = make_tree()
    (problem,) = tree.root.validate({"type": "toyclss.Backbone", "depth": 1})
    assert problem.kind == "unknown-type"
    assert "scope 'toyclss'" in problem.message
    assert "toycls" in problem.message


def test_a_misspelt_required_keyword_is_one_problem() -> None:
    tree = make_tree()
    (problem,) = tree.cls.validate({"type": "Backbone", "dpeth": 3})
    assert (problem.path, problem.kind, problem.suggestions) == (
        "dpeth",
        "unknown-keyword",
        ("depth",),
    )
    assert "accepted: depth, width" in problem.message


def test_missing_required_keywords_are_each_reported() -> None:
    tree = make_tree()
    problems = tree.root.validate({"type": "toydet.Detector"})
    assert paths(problems) == [("backbone", "missing-keyword"), ("num_classes", "missing-keyword")]
    assert "'toydet.Detector'" in problems[0].message
    assert "needs 'backbone'" in problems[0].message


def test_default_args_count_as_given() -> None:
    tree = make_tree()
    problems = validate_config(tree.cls, {"type": "Backbone"}, default_args={"depth": 1})
    assert problems == []
    assert validate_config(tree.cls, {"depth": 1}, default_args={"type": "Backbone"}) == []


def test_a_callable_taking_kwargs_accepts_any_keyword() -> None:
    tree = make_tree()
    assert tree.root.validate({"type": "Flexible", "size": 1, "anything": 2}) == []
    (problem,) = tree.root.validate({"type": "Flexible", "anything": 2})
    assert (problem.path, problem.kind) == ("size", "missing-keyword")
    # **kwargs takes a misspelt keyword: the missing one's problem points at it.
    (problem,) = tree.root.validate({"type": "Flexible", "sise": 2})
    assert problem.message.endswith(
        "needs 'size', which the config does not give (the config gives 'sise'; did you mean "
        "'size'?)"
    )


def test_a_positional_only_parameter_cannot_come_from_a_config() -> None:
    tree = make_tree()
    problems = tree.root.validate({"type": "PositionalOnly", "x": 1})
    assert paths(problems) == [("x", "unknown-keyword"), ("x", "missing-keyword")]
    assert "positional-only" in problems[1].message


def test_a_type_given_as_a_class_is_checked_too() -> None:
    tree = make_tree()
    (problem,) = tree.root.validate({"type": Backbone, "depht": 1})
    assert problem.path == "depht"
    assert "test_validate:Backbone" in problem.message


def test_scope_key_resolves_as_build_does() -> None:
    tree = make_tree()
    cfg = {"_scope_": "toycls", "type": "Backbone", "depth": 1}
    assert tree.root.validate(cfg) == []
    (problem,) = tree.root.validate({"type": "Backbone", "depth": 1})
    assert problem.kind == "unknown-type"
    assert problem.suggestions == ("toycls.Backbone",)


def test_scope_key_applies_to_nested_configs() -> None:
    tree = make_tree()
    cfg = {
        "_scope_": "toydet",
        "type": "Detector",
        "num_classes": 2,
        "backbone": {"type": "toycls.Backbone", "depth": 2},
        "head": {"type": "Head", "in_channels": 4},
    }
    assert tree.root.validate(cfg) == []


def test_a_class_found_by_a_scoped_key_has_its_nested_configs_looked_up_in_its_scope() -> None:
    # toydet's Detector builds its backbone with toydet's registry, as the demo packages do: an
    # unscoped nested type resolves there, as a build of the Detector would resolve it (it was
    # reported unknown, with 'toydet.Head' as a suggestion), and its keywords are checked.
    tree = make_tree()
    cfg = {
        "type": "toydet.Detector",
        "num_classes": 2,
        "backbone": {"type": "Head", "in_chanels": 4},
        "head": {"type": "toycls.Backbone", "depth": 2},
    }
    assert paths(tree.root.validate(cfg)) == [("backbone.in_chanels", "unknown-keyword")]
    # The scope holds for that config's children only.
    listed = [cfg, {"type": "Head", "in_channels": 4}]
    assert paths(tree.root.validate(listed))[-1] == ("[1].type", "unknown-type")


def test_the_active_default_scope_applies() -> None:
    tree = make_tree()
    with default_scope("toycls"):
        assert tree.root.validate({"type": "Backbone", "depth": 1}) == []
    assert paths(tree.root.validate({"type": "Backbone", "depth": 1})) == [("type", "unknown-type")]


def test_an_invalid_scope_key_is_reported() -> None:
    tree = make_tree()
    problems = tree.root.validate({"_scope_": "a.b", "type": "Flexible", "size": 1})
    assert paths(problems) == [("_scope_", "invalid-scope")]
    assert "without '.'" in problems[0].message


def test_a_missing_or_invalid_type_is_reported() -> None:
    tree = make_tree()
    (missing,) = tree.root.validate({"depth": 1})
    assert (missing.path, missing.kind) == ("type", "missing-type")
    assert 'no "type" key' in missing.message
    (invalid,) = tree.root.validate({"type": 3})
    assert (invalid.path, invalid.kind) == ("type", "invalid-type")


def test_nested_configs_in_lists_get_indexed_paths() -> None:
    tree = make_tree()
    cfg = {
        "type": "Flexible",
        "size": 1,
        "stages": [{"type": "toycls.Backbone", "depth": 1}, {"type": "toycls.Backbone"}],
        "extra": {"plain": {"inner": [{"type": "toydet.Head", "in_chanels": 3}]}},
    }
    assert paths(tree.root.validate(cfg)) == [
        ("stages[1].depth", "missing-keyword"),
        ("extra.plain.inner[0].in_chanels", "unknown-keyword"),
    ]


def test_a_nested_type_of_another_registry_is_left_alone() -> None:
    tree = make_tree()
    cfg = {"type": "Flexible", "size": 1, "init_cfg": {"type": "Kaiming", "layer": "Conv2d"}}
    assert tree.root.validate(cfg) == []


def test_a_nested_type_close_to_a_registered_name_is_reported() -> None:
    tree = make_tree()
    cfg = {"type": "Flexible", "size": 1, "backbone": {"type": "toycls.Backbnoe"}}
    (problem,) = tree.root.validate(cfg)
    assert (problem.path, problem.kind) == ("backbone.type", "unknown-type")
    assert problem.suggestions == ("toycls.Backbone",)


def test_a_list_config_validates_each_item() -> None:
    tree = make_tree()
    cfg = [{"type": "toycls.Backbone", "depth": 1}, {"type": "toycls.Backbone"}, 3]
    assert paths(validate_config(tree.root, cfg)) == [
        ("[1].depth", "missing-keyword"),
        ("[2]", "invalid-type"),
    ]


def test_a_config_that_is_not_a_mapping_is_a_type_error() -> None:
    tree = make_tree()
    with pytest.raises(TypeError, match=r"a config is a mapping .* got 'Backbone'"):
        tree.root.validate("Backbone")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"registry must be a regtree\.Registry, got"):
        validate_config("model", {})  # type: ignore[arg-type]


def test_a_self_referencing_config_terminates() -> None:
    tree = make_tree()
    cfg: dict[str, Any] = {"type": "Flexible", "size": 1}
    cfg["again"] = cfg
    cfg["items"] = [cfg]
    assert tree.root.validate(cfg) == []


def test_the_config_is_not_changed() -> None:
    tree = make_tree()
    cfg = sound_config()
    cfg["_scope_"] = "toyroot"
    snapshot = repr(cfg)
    tree.root.validate(cfg)
    assert repr(cfg) == snapshot


def test_a_problem_prints_as_path_and_message_and_converts_to_json() -> None:
    tree = make_tree()
    (problem,) = tree.cls.validate({"type": "Backbone", "dpeth": 3})
    assert str(problem) == f"dpeth: {problem.message}"
    assert problem.as_dict() == {
        "path": "dpeth",
        "kind": "unknown-keyword",
        "message": problem.message,
        "suggestions": ["depth"],
    }
    assert problem == ConfigProblem(("dpeth",), problem.kind, problem.message, ("depth",))
    assert "dpeth" in repr(problem)
