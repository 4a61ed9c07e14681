"""demo_det: detection models in a child of ``regtree.MODELS`` with scope ``demo_det``.

Importing the package registers its models and its deformable conv type. demo_det neither
depends on nor imports demo_cls: a backbone config ``dict(type='demo_cls.SeparableConvNet')``
is resolved through the registry tree and the installed ``regtree.scopes`` entry points.
"""

from __future__ import annotations

from ._deform import DeformConv2d
from ._detector import DenseBranch, DetectorOutput, Scale, TinyDetector
from ._registry import MODELS
from ._synthetic import MAX_CLASSES, DetectionBatch, class_colour, synthetic_batch
from ._toy import NetA

__all__ = [
    "MAX_CLASSES",
    "MODELS",
    "DeformConv2d",
    "DenseBranch",
    "DetectionBatch",
    "DetectorOutput",
    "NetA",
    "Scale",
    "TinyDetector",
    "class_colour",
    "synthetic_batch",
]
