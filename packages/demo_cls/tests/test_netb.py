from __future__ import annotations

import pytest
import torch

import demo_cls
import regtree


@pytest.mark.parametrize(
    ("registry", "key"),
    [
        (demo_cls.MODELS, "NetB"),
        (demo_cls.MODELS, "demo_cls.NetB"),
        (regtree.MODELS, "demo_cls.NetB"),
    ],
)
def test_netb_built_by_name_adds_one(registry: regtree.Registry[object], key: str) -> None:
    net = registry.build({"type": key})
    x = torch.arange(4.0)
    assert isinstance(net, demo_cls.NetB)
    torch.testing.assert_close(net(x), x + 1)


def test_netb_is_found_unscoped_under_its_default_scope() -> None:
    with regtree.default_scope("demo_cls"):
        net = regtree.MODELS.build({"type": "NetB"})
    assert isinstance(net, demo_cls.NetB)
