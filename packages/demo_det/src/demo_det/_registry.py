"""The demo_det child of ``regtree.MODELS``."""

from __future__ import annotations

from typing import Any, Final

import regtree

# demo_det never imports demo_cls: `MODELS.build(dict(type='demo_cls.X'))` finds that scope
# through the registry tree, which asks the installed `regtree.scopes` entry points.
MODELS: Final[regtree.Registry[Any]] = regtree.Registry(
    "model", parent=regtree.MODELS, scope="demo_det"
)
