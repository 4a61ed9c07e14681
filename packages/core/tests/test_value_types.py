"""Value checks against annotations (SPEC 5.4), alone and in ``Registry.validate``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Optional, TypeVar

import pytest

from regtree import Registry
from regtree.config import type_mismatch

if TYPE_CHECKING:  # a name only the type checker sees: its annotations stay strings
    from fractions import Fraction as OnlyTyped

T = TypeVar("T")


class Tensor:
    """Stands for a class such as torch.Tensor."""


@pytest.mark.parametrize(
    ("value", "annotation"),
    [
        (3, int),
        (3, float),
        (0.5, float),
        (True, bool),
        ("a", str),
        (None, None),
        (None, type(None)),
        (None, int | None),
        (2, Optional[int]),  # noqa: UP045 (the typing form is checked too)
        ("sgd", Literal["sgd", "adam"]),
        ([1, 2], list[int]),
        ((1, 2), list[int]),
        ([], list[str]),
        ([0.9, 0.99], tuple[float, float]),
        ([1, 2, 3], tuple[int, ...]),
        (["a"], Sequence[str]),
        (1.5, int | float),
        ("x", int | str),
        (Tensor(), Tensor),
        ({"type": "Net"}, Tensor),
        ([1, "a"], list),
        ({"anything": 1}, dict[str, int]),
        (object(), Any),
        (object(), T),
        (object(), "int"),  # an annotation left as a string: accepted
    ],
)
def test_a_value_that_fits_has_no_mismatch(value: object, annotation: object) -> None:
    assert type_mismatch(value, annotation) is None


@pytest.mark.parametrize(
    ("value", "annotation", "expected"),
    [
        ("50", int, "int"),
        (True, int, "int"),
        (1.0, int, "int"),
        (False, float, "float"),
        ("1e-4", float, "float"),
        (1, bool, "bool"),
        (1, str, "str"),
        (0, None, "None"),
        ("x", int | None, "int | None"),
        ("x", Optional[int], "int | None"),  # noqa: UP045
        ("rmsprop", Literal["sgd", "adam"], "Literal['sgd', 'adam']"),
        (True, Literal[1], "Literal[1]"),
        ([1, "a"], list[int], "list[int]"),
        ("ab", list[str], "list[str]"),
        ([0.9], tuple[float, float], "tuple[float, float]"),
        ([0.9, "x"], tuple[float, float], "tuple[float, float]"),
        ([1, "a"], tuple[int, ...], "tuple[int, ...]"),
        ("ab", Sequence[str], "Sequence[str]"),
        ([1], Sequence[str], "Sequence[str]"),
        ("x", int | float, "int | float"),
        (3, Tensor, "Tensor"),
        (3, tuple[float | Tensor, float | Tensor], "tuple[float | Tensor, float | Tensor]"),
    ],
)
def test_a_value_that_does_not_fit_names_the_expected_type(
    value: object, annotation: object, expected: str
) -> None:
    assert type_mismatch(value, annotation) == expected


class Backbone:
    def __init__(
        self,
        depth: int,
        widths: tuple[int, int] = (8, 16),
        norm: Literal["bn", "ln"] = "bn",
        dropout: float | None = None,
        block: Tensor | None = None,
    ) -> None:
        self.depth = depth


class Detector:
    def __init__(
        self, backbone: Backbone, num_classes: int, names: list[str] | None = None
    ) -> None:
        self.backbone = backbone


def make_registry() -> Registry[Any]:
    registry: Registry[Any] = Registry("model", scope="typed")
    registry.register_module(module=Backbone)
    registry.register_module(module=Detector)
    return registry


def test_validate_reports_path_expected_type_and_value() -> None:
    cfg = {
        "type": "Detector",
        "num_classes": "3",
        "names": ["a", 2],
        "backbone": {"type": "Backbone", "depth": "50", "widths": [8], "norm": "gn"},
    }
    problems = [str(problem) for problem in make_registry().validate(cfg)]
    assert problems == [
        "num_classes: expected int, got '3'",
        "names: expected list[str] | None, got ['a', 2]",
        "backbone.depth: expected int, got '50'",
        "backbone.widths: expected tuple[int, int], got [8]",
        "backbone.norm: expected Literal['bn', 'ln'], got 'gn'",
    ]
    assert {problem.kind for problem in make_registry().validate(cfg)} == {"wrong-type"}


def test_validate_finds_no_problem_in_values_that_fit() -> None:
    cfg = {
        "type": "Detector",
        "num_classes": 3,
        "backbone": {"type": "Backbone", "depth": 50, "widths": [8, 16], "dropout": 0},
    }
    assert make_registry().validate(cfg) == []
    assert make_registry().validate({**cfg, "names": None}) == []


class WithTypeOnlyNames:
    def __init__(
        self,
        depth: int,
        weight: OnlyTyped | None = None,
        steps: list[OnlyTyped] | None = None,
        hook: Callable[[OnlyTyped], int] | None = None,
        names: list[str] | None = None,
    ) -> None:
        self.depth = depth


def test_an_annotation_that_cannot_be_evaluated_leaves_the_other_checks_on() -> None:
    registry: Registry[Any] = Registry("model", scope="typed_only")
    registry.register_module(module=WithTypeOnlyNames)
    cfg = {
        "type": "WithTypeOnlyNames",
        "depth": "50",
        "weight": "anything",
        "steps": 3,
        "hook": "any",
        "names": ["a", 2],
    }
    assert [str(problem) for problem in registry.validate(cfg)] == [
        "depth: expected int, got '50'",
        "names: expected list[str] | None, got ['a', 2]",
    ]
