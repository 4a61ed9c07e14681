"""Security with every package installed: real plugins make no config string more powerful.

With demo_cls, demo_det and regtree_optim installed (each advertising its scope), a hostile
``type`` may at most import an advertised plugin; it never reaches torch, the standard library or
anything else importable, not even through a real scope prefix such as ``'demo_cls.os.system'``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conftest import RunPython

HOSTILE_THROUGH_REAL_SCOPES = [
    "os.system",
    "torch.load",
    "torch.nn.Linear",
    "numpy.load",
    "builtins.eval",
    "demo_cls.os.system",
    "demo_cls.torch.nn.Linear",
    "demo_det.subprocess.Popen",
    "demo_det.demo_cls.builtins.eval",
    "regtree.os.system",
    "regtree_optim.os.system",
    "regtree_optim.SGD",  # a real optimizer, but in another tree than the models
    "demo_cls._registry.MODELS",  # a real module path inside a real plugin
    "demo_cls.__init__",
    "demo_cls.NetB.__init__",
]

_SCRIPT = """
import json
import sys

import demo_det
from regtree import NotRegisteredError

hostile = json.loads(sys.argv[1])
advertised = {"demo_cls", "demo_det", "regtree_optim"}
top_level_before = {name.partition(".")[0] for name in sys.modules}
outcomes = {}
for key in hostile:
    try:
        demo_det.MODELS.build({"type": key})
        outcomes[key] = "built"
    except NotRegisteredError as error:
        outcomes[key] = "NotRegisteredError" if key in str(error) else str(error)
new_top_level = {name.partition(".")[0] for name in sys.modules} - top_level_before
net = demo_det.MODELS.build({"type": "demo_cls.NetB"})
print(json.dumps({
    "outcomes": outcomes,
    "new_top_level": sorted(new_top_level - advertised),
    "legit": type(net).__name__,
}))
"""


def test_hostile_types_reach_no_module_even_with_every_plugin_installed(
    run_python: RunPython,
) -> None:
    report = run_python(_SCRIPT, args=[json.dumps(HOSTILE_THROUGH_REAL_SCOPES)])

    assert report["outcomes"] == dict.fromkeys(HOSTILE_THROUGH_REAL_SCOPES, "NotRegisteredError")
    assert report["new_top_level"] == []
    assert report["legit"] == "NetB"
