"""The libraries under test: regtree and its peers, loaded where installed, behind one interface.

Peers are imported by name at run time (they ship no type information), so each adapter exposes
only the few calls the benchmarks make: make a registry, construct an optimizer.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.metadata
import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

OURS = "regtree"
# Rows that are no library: the least a pure-Python implementation of the same work costs.
REFERENCE = "reference"
PEERS = ("mmcv", "mmengine")
LIBRARIES = (OURS, *PEERS)

# What each library's import statement is, for the import-time benchmark: the entry point a
# user needs to get at the registry.
REGISTRY_IMPORTS: dict[str, str] = {
    "regtree": "import regtree",
    "mmcv": "from mmcv.utils import Registry",
    "mmengine": "from mmengine.registry import Registry",
}
DISTRIBUTIONS: dict[str, str] = {
    "regtree": "regtree",
    "regtree_optim": "regtree-optim",
    "mmcv": "mmcv",
    "mmengine": "mmengine",
    "torch": "torch",
}

MakeRegistry = Callable[[str, str, Any], Any]
Construct = Callable[[torch.nn.Module, dict[str, Any], dict[str, Any]], torch.optim.Optimizer]


@dataclass
class Library:
    """One library's registry and optimizer-constructor entry points, or why they are missing."""

    name: str
    version: str | None = None
    make_registry: MakeRegistry | None = None
    # The library's root model registry (regtree.MODELS, mmcv.cnn.MODELS, mmengine's MODELS):
    # the parent users hang their model registries under, so builds take its build function.
    models_root: Any = None
    construct: Construct | None = None
    notes: list[str] = field(default_factory=list)


def version_of(distribution: str) -> str | None:
    """Installed version of a distribution, or None."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _imports_cleanly(module: str) -> bool:
    """Whether ``import module`` succeeds in a fresh interpreter (a broken one cannot be undone)."""
    done = subprocess.run(
        [sys.executable, "-c", f"import {module}"],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def install_torchvision_stand_in() -> str | None:
    """Put a stand-in ``torchvision`` first on the path when the real one cannot be imported.

    mmcv 1.x imports torchvision at the top of its checkpoint helpers, which ``mmcv.runner``
    imports; nothing benchmarked here calls into it. The index's torchvision is built against
    another torch and fails to load beside the pinned one, so a module with a version string and
    no ``ops`` stands in (no deformable-conv types, exactly as without torchvision). The folder
    also goes on PYTHONPATH for the fresh interpreters of the import benchmark.

    Returns:
        A note saying what was done, or None when the real torchvision imports.
    """
    if importlib.util.find_spec("torchvision") is not None and _imports_cleanly("torchvision"):
        return None
    folder = Path(tempfile.mkdtemp(prefix="regtree-bench-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    package = folder / "torchvision"
    (package / "models").mkdir(parents=True)
    (package / "__init__.py").write_text(
        '"""Stand-in for the benchmarks: mmcv.runner imports torchvision at import time."""\n'
        '__version__ = "0.0.0+stand.in"\n'
        "from . import models\n"
    )
    (package / "models" / "__init__.py").write_text('"""Empty: no model zoo."""\n')
    sys.path.insert(0, str(folder))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(folder), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    importlib.invalidate_caches()
    return (
        "torchvision: the installed one does not load beside this torch (or none is installed);"
        " a stand-in module without ops is on the path (mmcv.runner imports it, unused here)."
    )


def _registry_maker(registry_cls: Any) -> MakeRegistry:
    """Return ``make(name, scope, parent)`` for a library whose Registry takes those keywords."""

    def make(name: str, scope: str, parent: Any) -> Any:
        return registry_cls(name, scope=scope, parent=parent)

    return make


def _mmcv_style_constructor(constructor_cls: Any) -> Construct:
    """Return ``construct(model, optimizer_cfg, paramwise_cfg)`` for mmcv's constructor shape."""

    def construct(
        model: torch.nn.Module, optimizer_cfg: dict[str, Any], paramwise_cfg: dict[str, Any]
    ) -> torch.optim.Optimizer:
        optimizer: torch.optim.Optimizer = constructor_cls(optimizer_cfg, paramwise_cfg)(model)
        return optimizer

    return construct


def _load_regtree() -> Library:
    lib = Library(OURS, version_of("regtree"))
    try:
        regtree = importlib.import_module("regtree")
        registry_cls = regtree.Registry
    except (ImportError, AttributeError) as error:
        lib.notes.append(f"regtree.Registry unavailable: {error!r}")
    else:
        lib.make_registry = _registry_maker(registry_cls)
        lib.models_root = regtree.MODELS
    try:
        optim = importlib.import_module("regtree_optim")
        ours = optim.DefaultOptimizerConstructor
    except (ImportError, AttributeError) as error:
        lib.notes.append(f"regtree_optim.DefaultOptimizerConstructor unavailable: {error!r}")
    else:
        lib.construct = _mmcv_style_constructor(ours)
    return lib


def _load_mmcv() -> Library:
    lib = Library("mmcv", version_of("mmcv"))
    if lib.version is None:
        lib.notes.append("mmcv is not installed")
        return lib
    with warnings.catch_warnings():
        # mmcv 1.x announces its 2.0 rename at import.
        warnings.simplefilter("ignore")
        try:
            registry_cls = importlib.import_module("mmcv.utils").Registry
        except (ImportError, AttributeError) as error:
            lib.notes.append(f"mmcv.utils.Registry unavailable: {error!r}")
        else:
            lib.make_registry = _registry_maker(registry_cls)
        try:
            lib.models_root = importlib.import_module("mmcv.cnn").MODELS
        except (ImportError, AttributeError) as error:
            lib.notes.append(f"mmcv.cnn.MODELS unavailable: {error!r}")
        try:
            peer = importlib.import_module("mmcv.runner").DefaultOptimizerConstructor
        except (ImportError, AttributeError) as error:
            lib.notes.append(f"mmcv.runner.DefaultOptimizerConstructor unavailable: {error!r}")
        else:
            lib.construct = _mmcv_style_constructor(peer)
    return lib


def _load_mmengine() -> Library:
    lib = Library("mmengine", version_of("mmengine"))
    if lib.version is None:
        lib.notes.append("mmengine is not installed")
        return lib
    try:
        registry_cls = importlib.import_module("mmengine.registry").Registry
        logger_cls = importlib.import_module("mmengine.logging").MMLogger
    except (ImportError, AttributeError) as error:
        lib.notes.append(f"mmengine.registry.Registry unavailable: {error!r}")
        return lib
    # mmengine logs every parameter's settings at INFO and every registry hit at DEBUG; the
    # calls still run (and are timed), only the console output is cut.
    logger_cls.get_current_instance().setLevel(logging.ERROR)
    lib.make_registry = _registry_maker(registry_cls)
    lib.models_root = importlib.import_module("mmengine.registry").MODELS
    try:
        peer = importlib.import_module("mmengine.optim").DefaultOptimWrapperConstructor
    except (ImportError, AttributeError) as error:
        lib.notes.append(f"mmengine.optim.DefaultOptimWrapperConstructor unavailable: {error!r}")
    else:

        def construct(
            model: torch.nn.Module, optimizer_cfg: dict[str, Any], paramwise_cfg: dict[str, Any]
        ) -> torch.optim.Optimizer:
            wrapper = peer({"optimizer": optimizer_cfg}, paramwise_cfg)(model)
            optimizer: torch.optim.Optimizer = wrapper.optimizer
            return optimizer

        lib.construct = construct
    return lib


def load_libraries() -> tuple[dict[str, Library], list[str]]:
    """Import regtree and each peer that is installed; what fails is noted, never raised.

    Returns:
        The libraries by name (what failed to load is in each one's ``notes``) and notes on what
        was stood in for.
    """
    # regtree_optim first, so that it never sees the stand-in torchvision.
    libraries = {OURS: _load_regtree()}
    notes: list[str] = []
    if version_of("mmcv") is not None:
        stand_in = install_torchvision_stand_in()
        if stand_in:
            notes.append(stand_in)
    libraries["mmcv"] = _load_mmcv()
    libraries["mmengine"] = _load_mmengine()
    return libraries, notes


def versions() -> Mapping[str, str | None]:
    """Versions of everything the results depend on."""
    found: dict[str, str | None] = {name: version_of(dist) for name, dist in DISTRIBUTIONS.items()}
    found["python"] = sys.version.split()[0]
    return found
