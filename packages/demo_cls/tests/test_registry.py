from __future__ import annotations

import demo_cls
import regtree


def test_models_is_the_demo_cls_child_of_the_root() -> None:
    assert demo_cls.MODELS.scope == "demo_cls"
    assert demo_cls.MODELS.parent is regtree.MODELS
    assert regtree.MODELS.children["demo_cls"] is demo_cls.MODELS


def test_importing_the_package_registers_every_model() -> None:
    assert set(demo_cls.MODELS) == {"NetB", "SeparableConvNet", "TinyClassifier", "TinyViT"}
    assert demo_cls.MODELS.get("SeparableConvNet") is demo_cls.SeparableConvNet


def test_models_resolve_through_the_root_by_scoped_name() -> None:
    assert regtree.MODELS.get("demo_cls.TinyClassifier") is demo_cls.TinyClassifier
