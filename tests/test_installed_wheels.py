"""Guard: these tests mean something only against the installed wheels, never the checkout."""

from __future__ import annotations

import importlib
import json
import sysconfig
from importlib.metadata import distribution
from pathlib import Path

import pytest

# The four import names and the distributions that provide them.
PACKAGES = {
    "regtree": "regtree",
    "regtree_optim": "regtree-optim",
    "demo_cls": "regtree-demo-cls",
    "demo_det": "regtree-demo-det",
}


@pytest.mark.parametrize("name", sorted(PACKAGES))
def test_package_is_imported_from_site_packages(name: str, repo_root: Path) -> None:
    module = importlib.import_module(name)
    assert module.__file__ is not None
    path = Path(module.__file__).resolve()
    paths = sysconfig.get_paths()
    site_dirs = {Path(paths[key]).resolve() for key in ("purelib", "platlib")}
    assert any(path.is_relative_to(site) for site in site_dirs), (
        f"{name} was imported from {path}, outside this environment's site-packages "
        f"{sorted(map(str, site_dirs))}: run these tests with `nox -s installed`"
    )
    assert not path.is_relative_to(repo_root / "packages"), f"{name} comes from the checkout"


@pytest.mark.parametrize("dist", sorted(PACKAGES.values()))
def test_distribution_is_a_wheel_install_not_editable(dist: str) -> None:
    direct_url = distribution(dist).read_text("direct_url.json")
    if direct_url is not None:  # installed from a local file: it must be a wheel, not a folder
        origin = json.loads(direct_url)
        assert not origin.get("dir_info", {}).get("editable", False), f"{dist} is editable"
        assert origin["url"].endswith(".whl"), f"{dist} was installed from {origin['url']}"
