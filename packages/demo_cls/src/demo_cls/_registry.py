"""The demo_cls child of ``regtree.MODELS``."""

from __future__ import annotations

from typing import Any, Final

import regtree

# A child of the root model registry: `regtree.MODELS.build(dict(type='demo_cls.NetB'))` reaches
# it, and so does any sibling such as demo_det, through the `regtree.scopes` entry point.
MODELS: Final[regtree.Registry[Any]] = regtree.Registry(
    "model", parent=regtree.MODELS, scope="demo_cls"
)
