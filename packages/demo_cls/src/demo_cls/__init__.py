"""demo_cls: classification models in a child of ``regtree.MODELS`` with scope ``demo_cls``.

Importing the package registers its models; the ``regtree.scopes`` entry point lets any package
build them by scoped name (``'demo_cls.NetB'``) without importing this one.
"""

from __future__ import annotations

from ._backbone import SeparableBlock, SeparableConvNet
from ._classifier import TinyClassifier
from ._registry import MODELS
from ._toy import NetB
from ._vit import TinyViT

__all__ = ["MODELS", "NetB", "SeparableBlock", "SeparableConvNet", "TinyClassifier", "TinyViT"]
