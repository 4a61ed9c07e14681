"""Check one regtree distribution installed alone: ``python isolation_check.py DIST EXPECTED``.

``EXPECTED`` is the JSON list of the regtree distributions that installing ``DIST`` must bring
(``DIST`` and what it declares). The check imports the package, compares the installed regtree
distributions with ``EXPECTED``, makes sure the core pulled in nothing (no requirement, no torch),
builds the package's own demo model, and for demo_det without demo_cls checks that
``'demo_cls.NetB'`` fails with ``NotRegisteredError`` naming the missing scope.
Prints one line per check; exits 1 with the failures listed when any check fails.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
import re
import sys
import warnings
from collections.abc import Callable

IMPORT_NAMES = {
    "regtree": "regtree",
    "regtree-optim": "regtree_optim",
    "regtree-demo-cls": "demo_cls",
    "regtree-demo-det": "demo_det",
}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_distributions() -> set[str]:
    """Canonical names of every distribution in this environment."""
    return {_canonical(dist.metadata["Name"]) for dist in importlib.metadata.distributions()}


def check_regtree_distributions(dist: str, expected: list[str]) -> str:
    found = sorted(name for name in installed_distributions() if name.startswith("regtree"))
    if found != sorted(expected):
        raise AssertionError(
            f"installing {dist} alone should bring exactly {sorted(expected)}, "
            f"but the environment holds {found}"
        )
    return f"regtree distributions installed: {', '.join(found)}"


def requirement_closure(dist: str) -> set[str]:
    """Canonical names of ``dist`` and every installed distribution it requires, transitively."""
    seen: set[str] = set()
    pending = [_canonical(dist)]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        try:
            requirements = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue  # required only under markers that do not hold here
        seen.add(name)
        for requirement in requirements:
            if "extra ==" in requirement.partition(";")[2]:
                continue
            found = re.match(r"[A-Za-z0-9._-]+", requirement)
            if found:
                pending.append(_canonical(found.group()))
    return seen


def check_core_pulled_in_nothing() -> str:
    # The session's own tools (hatch, which built the wheels) share this environment, so what
    # regtree brought is read from the metadata: its requirements, transitively.
    pulled = sorted(requirement_closure("regtree") - {"regtree"})
    if pulled:
        raise AssertionError(f"regtree must require nothing, yet installing it brought {pulled}")
    if importlib.util.find_spec("torch") is not None:
        raise AssertionError("torch is importable in an environment holding only regtree")
    if "torch" in sys.modules:
        raise AssertionError("import regtree imported torch")
    return "regtree alone pulled in nothing: no requirements, no torch"


def check_own_model(module_name: str) -> str:
    module = importlib.import_module(module_name)
    name, delta = {"demo_cls": ("NetB", 1.0), "demo_det": ("NetA", 0.0)}[module_name]
    import torch

    model = module.MODELS.build({"type": name})
    x = torch.arange(3.0)
    if (model(x) - x).tolist() != [delta] * 3:
        raise AssertionError(f"{module_name}.MODELS built {model!r}, which is not {name}")
    return f"{module_name}.MODELS builds {name} unscoped"


def check_missing_scope_is_reported() -> str:
    import demo_det
    import regtree

    if importlib.util.find_spec("demo_cls") is not None:
        raise AssertionError("demo_cls is importable, though regtree-demo-det must not bring it")
    try:
        demo_det.MODELS.build({"type": "demo_cls.NetB"})
    except regtree.NotRegisteredError as exc:
        message = str(exc)
        if not re.search(
            r"no installed (distribution|package) provides scope '?demo_cls'?", message, re.I
        ):
            raise AssertionError(
                "NotRegisteredError for 'demo_cls.NetB' should say that no installed package "
                f"provides scope 'demo_cls'; it says: {message}"
            ) from exc
        return f"'demo_cls.NetB' without demo_cls raises NotRegisteredError: {message}"
    raise AssertionError("demo_det.MODELS built 'demo_cls.NetB' although demo_cls is not installed")


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in IMPORT_NAMES:
        print(f"usage: isolation_check.py {{{','.join(IMPORT_NAMES)}}} JSON_LIST", file=sys.stderr)
        return 2
    dist, expected = argv[0], json.loads(argv[1])
    module_name = IMPORT_NAMES[dist]
    # torch warns at import when NumPy is absent, which these environments leave out on purpose.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    checks: list[Callable[[], str]] = [
        lambda: f"import {importlib.import_module(module_name).__name__}: ok",
        lambda: check_regtree_distributions(dist, expected),
    ]
    if dist == "regtree":
        checks.append(check_core_pulled_in_nothing)
    if module_name in ("demo_cls", "demo_det"):
        checks.append(lambda: check_own_model(module_name))
    if dist == "regtree-demo-det":
        checks.append(check_missing_scope_is_reported)

    failures = []
    for check in checks:
        try:
            print(f"ok: {check()}")
        except Exception as exc:  # report every failed check, then exit 1
            failures.append(f"{type(exc).__name__}: {exc}")
            print(f"FAILED: {failures[-1]}", file=sys.stderr)
    if failures:
        print(f"isolation check of {dist} failed ({len(failures)} problem(s))", file=sys.stderr)
        return 1
    print(f"isolation check of {dist} passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
