"""``regtree doctor``: each installed plugin's import, its time, and names several scopes define."""

from __future__ import annotations

import json
from typing import Any

import pytest

from regtree import Registry, _plugins
from regtree.cli import main

from .conftest import PLUGIN_SOURCE, MakeDistribution, PluginHost

BROKEN_SOURCE = "import regtree_no_such_module\n"
# The test's own entry-point group: the distributions installed around the tests stay unseen.
GROUP = "regtree_test_doctor.scopes"


@pytest.fixture(autouse=True)
def own_group(monkeypatch: pytest.MonkeyPatch, catalog: _plugins.PluginCatalog) -> None:
    # After the shared fixture's fresh catalog, which reads the default group.
    monkeypatch.setattr(_plugins, "catalog", _plugins.PluginCatalog(GROUP))


def install(make: MakeDistribution, dist: str, scope: str, source: str = PLUGIN_SOURCE) -> None:
    make(dist, {scope: scope}, {scope: source}, group=GROUP)


def doctor(
    capsys: pytest.CaptureFixture[str], roots: list[Registry[Any]], *argv: str
) -> tuple[int, str, str]:
    status = main(["doctor", *argv], roots=roots)
    out, err = capsys.readouterr()
    return status, out, err


def test_every_plugin_is_imported_and_timed(
    capsys: pytest.CaptureFixture[str],
    make_distribution: MakeDistribution,
    plugin_host: PluginHost,
) -> None:
    install(make_distribution, "alpha-dist", "alpha", PLUGIN_SOURCE)
    install(make_distribution, "beta-dist", "beta", PLUGIN_SOURCE)
    status, out, err = doctor(capsys, [plugin_host.root])
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"plugins (entry point group {GROUP!r}): 2 scopes, all import"
    assert lines[1].split()[:3] == ["alpha", "alpha-dist", "ok"]
    assert lines[2].split()[:3] == ["beta", "beta-dist", "ok"]
    assert lines[1].split()[4] == "ms"
    assert plugin_host.imports == ["alpha", "beta"]


def test_a_failing_plugin_exits_1_naming_its_distribution_and_error(
    capsys: pytest.CaptureFixture[str],
    make_distribution: MakeDistribution,
    plugin_host: PluginHost,
) -> None:
    install(make_distribution, "alpha-dist", "alpha", PLUGIN_SOURCE)
    install(make_distribution, "broken-dist", "broken", BROKEN_SOURCE)
    status, out, err = doctor(capsys, [plugin_host.root])
    assert status == 1
    assert "2 scopes, 1 failed" in out
    assert "alpha-dist" in out  # the others are still reported
    broken = next(line for line in out.splitlines() if "broken-dist" in line)
    assert "FAILED" in broken
    assert "ModuleNotFoundError: No module named 'regtree_no_such_module'" in broken
    assert err == (
        "regtree: error: the plugin for scope 'broken' (distribution 'broken-dist') failed to "
        "import: ModuleNotFoundError: No module named 'regtree_no_such_module'\n"
    )


def test_a_name_in_several_scopes_says_what_each_default_scope_picks(
    capsys: pytest.CaptureFixture[str],
    make_distribution: MakeDistribution,
    plugin_host: PluginHost,
) -> None:
    install(make_distribution, "alpha-dist", "alpha", PLUGIN_SOURCE)
    install(make_distribution, "beta-dist", "beta", PLUGIN_SOURCE)
    status, out, _ = doctor(capsys, [plugin_host.root])
    assert status == 0
    assert out.splitlines()[-5:] == [
        "names defined in several scopes (1):",
        "  'Plugged' in registry 'model' (scope 'host')'s tree: scopes alpha, beta",
        "    not found under default scope host (write the scope: '<scope>.Plugged')",
        "    alpha.Plugged under default scope alpha",
        "    beta.Plugged under default scope beta",
    ]


def test_the_nearest_ancestor_picks_for_a_scope_without_the_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    root: Registry[Any] = Registry("animal", scope="animal")
    dog: Registry[Any] = Registry("animal", parent=root, scope="dog")
    Registry("animal", parent=dog, scope="hound")
    Registry("animal", parent=root, scope="cat")
    for registry in (root, dog):
        registry.register_module(module=type("Shared", (), {}))
    status, out, _ = doctor(capsys, [root], "--json")
    assert status == 0
    report = json.loads(out)
    assert report["plugins"] == []
    assert report["clashes"] == [
        {
            "registry": "animal",
            "name": "Shared",
            "scopes": ["animal", "dog"],
            "picks": {
                "animal": "animal.Shared",
                "cat": "animal.Shared",
                "dog": "dog.Shared",
                "hound": "dog.Shared",
            },
        }
    ]


def test_no_clash_and_no_plugin_say_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, _ = doctor(capsys, [Registry("thing", scope="lonely")])
    assert status == 0
    assert out == (
        "plugins: no installed distribution advertises a scope (entry point group "
        f"'{GROUP}')\n"
        "names: no name is defined in more than one scope of a registry tree\n"
    )
