"""The root model registry and build_model_from_cfg (SPEC 2.2)."""

from __future__ import annotations

import sys
from typing import Any

import pytest

import regtree
from regtree import Registry, build_from_cfg, build_model_from_cfg


@pytest.fixture
def models() -> Registry[Any]:
    """A private registry built the way regtree.MODELS is."""
    registry: Registry[Any] = Registry("model", build_func=build_model_from_cfg, scope="models")

    @registry.register_module()
    class Scale:
        def __init__(self, factor: float = 1.0) -> None:
            self.factor = factor

    return registry


def test_models_is_the_root_model_registry() -> None:
    assert isinstance(regtree.MODELS, Registry)
    assert (regtree.MODELS.name, regtree.MODELS.scope) == ("model", "regtree")
    assert regtree.MODELS.parent is None
    assert regtree.MODELS.build_func is build_model_from_cfg


def test_a_child_of_models_inherits_its_build_function() -> None:
    # A throwaway root of the same make stands in for MODELS, which no test changes.
    root: Registry[Any] = Registry("model", build_func=build_model_from_cfg, scope="models_root")
    child: Registry[Any] = Registry("model", parent=root, scope="models_child")
    assert child.build_func is build_model_from_cfg


def test_a_mapping_builds_as_with_build_from_cfg(models: Registry[Any]) -> None:
    built = models.build({"type": "Scale", "factor": 2.0})
    assert built.factor == 2.0
    assert type(built) is type(build_from_cfg({"type": "Scale"}, models))


def test_default_args_reach_a_mapping_build(models: Registry[Any]) -> None:
    assert models.build({"type": "Scale"}, default_args={"factor": 3.0}).factor == 3.0


def test_a_list_without_torch_is_a_clear_import_error(
    models: Registry[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # makes ``import torch`` fail
    with pytest.raises(
        ImportError,
        match=(
            r"building a list of 2 configs with registry 'model' \(scope 'models'\) makes a "
            r"torch\.nn\.Sequential, which needs torch: pip install torch"
        ),
    ):
        models.build([{"type": "Scale"}, {"type": "Scale"}])


def test_a_list_builds_a_sequential_in_order() -> None:
    torch = pytest.importorskip("torch")
    registry: Registry[Any] = Registry("model", build_func=build_model_from_cfg, scope="seq")
    registry.register_module(name="Linear", module=torch.nn.Linear)
    registry.register_module(name="ReLU", module=torch.nn.ReLU)
    cfg = [
        {"type": "Linear", "in_features": 4, "out_features": 3},
        {"type": "ReLU"},
        {"type": "Linear", "in_features": 3, "out_features": 2},
    ]
    model = registry.build(cfg)
    assert isinstance(model, torch.nn.Sequential)
    assert [type(layer).__name__ for layer in model] == ["Linear", "ReLU", "Linear"]
    assert (model[0].out_features, model[2].out_features) == (3, 2)
    assert model(torch.zeros(1, 4)).shape == (1, 2)
    assert cfg[1] == {"type": "ReLU"}


def test_default_args_reach_every_item_of_a_list() -> None:
    torch = pytest.importorskip("torch")
    registry: Registry[Any] = Registry("model", build_func=build_model_from_cfg, scope="seq_args")
    registry.register_module(name="Linear", module=torch.nn.Linear)
    model = registry.build(
        [{"type": "Linear", "in_features": 4}, {"type": "Linear", "in_features": 3}],
        default_args={"out_features": 5, "bias": False},
    )
    assert [(layer.out_features, layer.bias) for layer in model] == [(5, None), (5, None)]


def test_a_list_checks_its_registry_and_default_args_even_when_empty(
    models: Registry[Any],
) -> None:
    with pytest.raises(TypeError, match=r"registry must be a regtree\.Registry, got NoneType"):
        build_model_from_cfg([], None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="default_args must be a mapping or None, got 5"):
        build_model_from_cfg([], models, default_args=5)  # type: ignore[arg-type]


def test_a_tuple_of_configs_is_refused_saying_to_write_a_list(models: Registry[Any]) -> None:
    with pytest.raises(
        TypeError, match=r"or a list of them .* got a tuple of 1: write it as a list"
    ):
        models.build(({"type": "Scale"},))  # type: ignore[arg-type]


def test_an_item_of_a_list_that_fails_is_named_by_its_index() -> None:
    torch = pytest.importorskip("torch")
    registry: Registry[Any] = Registry("model", build_func=build_model_from_cfg, scope="seq_bad")
    registry.register_module(name="Linear", module=torch.nn.Linear)
    cfg = [{"type": "Linear", "in_features": 4, "out_features": 3}, {"type": "Lineer"}]
    with pytest.raises(regtree.NotRegisteredError, match="Did you mean 'Linear'") as caught:
        registry.build(cfg)
    assert caught.value.__notes__ == ["regtree: while building item 1 of a list of 2 configs"]
