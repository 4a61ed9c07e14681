"""``regtree schema``: a JSON Schema that accepts the configs validate accepts, and no others."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal, Optional

import jsonschema
import pytest

from regtree import Registry
from regtree.cli import annotation_schema, config_schema, main
from regtree.config import type_mismatch


class Backbone:
    """A small backbone.

    More text that the schema leaves out.
    """

    def __init__(self, depth: int, width: int = 8, mode: Literal["a", "b"] = "a") -> None:
        self.depth = depth


class Detector:
    """A detector that builds its backbone by name."""

    def __init__(
        self, backbone: dict[str, Any], num_classes: int, scales: tuple[float, float] = (1.0, 2.0)
    ) -> None:
        self.backbone = backbone


def loose(**kwargs: Any) -> dict[str, Any]:
    return kwargs


def make_roots() -> list[Registry[Any]]:
    thing: Registry[Any] = Registry("thing", scope="toyroot")
    cls: Registry[Any] = Registry("thing", parent=thing, scope="toycls")
    det: Registry[Any] = Registry("thing", parent=thing, scope="toydet")
    cls.register_module(module=Backbone)
    det.register_module(module=Detector)
    det.register_module(module=loose, name="Loose")
    return [thing, Registry("gadget", scope="toygadget")]


def schema_of(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["schema", "--registry", "thing", *argv], roots=make_roots()) == 0
    schema: dict[str, Any] = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def errors(schema: dict[str, Any], instance: object) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema)
    return sorted(error.message for error in validator.iter_errors(instance))


GOOD = {
    "model": {
        "type": "toydet.Detector",
        "num_classes": 3,
        "scales": [0.5, 1],
        "backbone": {"type": "toycls.Backbone", "depth": 2, "mode": "b"},
    },
    "train": {"anything": True},
}


def test_a_sound_config_file_validates(capsys: pytest.CaptureFixture[str]) -> None:
    schema = schema_of(capsys)
    assert errors(schema, GOOD) == []
    assert errors(schema, GOOD["model"]) == []  # a file that is a config itself
    assert errors(schema, {"model": [GOOD["model"], {"type": "toydet.Loose", "x": 1}]}) == []


def test_a_misspelt_type_is_an_error_listing_the_names(capsys: pytest.CaptureFixture[str]) -> None:
    schema = schema_of(capsys)
    found = errors(schema, {"model": {"type": "toydet.Detectr", "num_classes": 3}})
    assert len(found) == 1
    assert found[0].startswith("'toydet.Detectr' is not one of ['toycls.Backbone'")


def test_a_wrong_typed_value_and_an_unknown_keyword_are_errors(
    capsys: pytest.CaptureFixture[str],
) -> None:
    schema = schema_of(capsys)
    bad = {"type": "toydet.Detector", "num_classes": "3", "scales": [1.0], "backbone": {}}
    assert errors(schema, {"model": bad}) == [
        "'3' is not of type 'integer'",
        "[1.0] is too short",
    ]
    nested = {"type": "toycls.Backbone", "depth": 2, "dpeth": 2, "mode": "c"}
    assert errors(schema, {"model": {**GOOD["model"], "backbone": nested}}) == [
        "'c' is not one of ['a', 'b']",
        "Additional properties are not allowed ('dpeth' was unexpected)",
    ]


def test_a_file_with_a_base_may_leave_the_type_out(capsys: pytest.CaptureFixture[str]) -> None:
    schema = schema_of(capsys)
    assert errors(schema, {"_base_": "base.yaml", "model": {"num_classes": 4}}) == []
    assert errors(schema, {"model": {"num_classes": 4}}) == ["'type' is a required property"]


def test_entries_carry_keywords_defaults_and_the_first_docstring_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    entry = schema_of(capsys)["$defs"][f"{Backbone.__module__}:Backbone"]
    assert entry["title"] == "toycls.Backbone"
    assert entry["description"] == "A small backbone."
    assert entry["properties"]["width"] == {"type": "integer", "default": 8}
    assert entry["properties"]["mode"] == {"enum": ["a", "b"], "default": "a"}
    assert entry["additionalProperties"] is False


def test_a_scope_makes_its_names_and_its_ancestors_unscoped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    schema = schema_of(capsys, "--scope", "toycls", "--section", "net")
    names = schema["$defs"]["config"]["properties"]["type"]["enum"]
    assert names[0] == "Backbone"
    assert "Detector" not in names
    assert "toydet.Detector" in names
    assert errors(schema, {"net": {"type": "Backbone", "depth": 1}}) == []


def test_an_unknown_registry_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--registry", "thng"], roots=make_roots()) == 2
    assert "did you mean 'thing'?" in capsys.readouterr().err


ANNOTATED_VALUES: list[tuple[object, list[object]]] = [
    (int, [1, 1.5, True, "1", None]),
    (float, [1, 1.5, True, "1.5"]),
    (bool, [True, 0, "true"]),
    (str, ["x", 1, None]),
    (Optional[int], [None, 3, "3"]),  # noqa: UP045  # the typing form is checked too
    (int | str, [1, "a", 1.5, None]),
    (Literal["a", 2], ["a", 2, "b", 3]),
    (list[int], [[1, 2], [1, "2"], "12", 1]),
    (Sequence[str], [["a"], [1], "a"]),
    (tuple[float, ...], [[1.0, 2], [], ["x"]]),
    (tuple[int, str], [[1, "a"], [1], [1, "a", 2], ["a", 1]]),
    (dict[str, Any], [{"a": 1}, [1], "x"]),
    (Backbone, [{"type": "toycls.Backbone"}, 3]),
    (Any, [1, "x", None, [1]]),
]


@pytest.mark.parametrize(("annotation", "values"), ANNOTATED_VALUES)
def test_the_schema_of_an_annotation_agrees_with_the_value_check(
    annotation: object, values: list[object]
) -> None:
    # One rule (SPEC 5.4), two forms: what type_mismatch accepts, the schema accepts.
    schema = {"$defs": {"config": {}}, **annotation_schema(annotation)}
    for value in values:
        accepted = jsonschema.Draft202012Validator(schema).is_valid(value)
        assert accepted == (type_mismatch(value, annotation) is None), (annotation, value)


def test_config_schema_alone_describes_one_config() -> None:
    registry = make_roots()[0]
    schema = config_schema(registry, section=None)
    assert errors(schema, GOOD["model"]) == []
    assert errors(schema, GOOD) == ["'type' is a required property"]
