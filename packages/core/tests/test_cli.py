from __future__ import annotations

import inspect
import io
import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest

import regtree
from regtree import Registry
from regtree.cli import find_root_registries, main


class Backbone:
    """A small backbone.

    More text that `show` leaves out.
    """

    def __init__(self, depth: int, width: int = 8) -> None:
        self.depth = depth
        self.width = width

    def __repr__(self) -> str:
        return f"Backbone(depth={self.depth}, width={self.width})"


class Detector:
    """A detector that builds its backbone by name."""

    def __init__(self, backbone: dict[str, Any], num_classes: int, neck: Any = None) -> None:
        self.backbone = backbone
        self.num_classes = num_classes

    def __repr__(self) -> str:
        return f"Detector(num_classes={self.num_classes})"


def failing(reason: str) -> None:
    raise RuntimeError(f"cannot build: {reason}")


def make_roots() -> list[Registry[Any]]:
    """Two trees: 'thing' (root + children 'toycls' and 'toydet') and 'gadget'."""
    thing: Registry[Any] = Registry("thing", scope="toyroot")
    cls: Registry[Any] = Registry("thing", parent=thing, scope="toycls")
    det: Registry[Any] = Registry("thing", parent=thing, scope="toydet")
    cls.register_module(module=Backbone)
    cls.register_module(module=Backbone, name="Body")
    det.register_module(module=Detector)
    det.register_module(module=Backbone, name="DetBackbone")
    det.register_module(module=failing, name="Failing")
    gadget: Registry[Any] = Registry("gadget", scope="toygadget")
    gadget.register_module(module=Detector, name="Widget")
    return [thing, gadget]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv), roots=make_roots())
    out, err = capsys.readouterr()
    return status, out, err


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


GOOD = """\
[model]
type = "toydet.Detector"
num_classes = 3

[model.backbone]
depth = 2

[train]
epochs = 1
"""

BAD = """\
[model]
type = "toydet.Detector"

[model.backbone]
type = "toycls.Backbone"
dpeth = 2

[model.neck]
type = "toycls.Bdy"
"""


def test_tree_shows_every_tree_with_scopes_and_counts(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "tree")
    assert status == 0
    assert out.splitlines() == [
        "thing [scope toyroot, 0 entries]",
        "|-- thing [scope toycls, 2 entries]",
        "`-- thing [scope toydet, 3 entries]",
        "gadget [scope toygadget, 1 entry]",
    ]


def test_tree_json_nests_children(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "tree", "--registry", "thing", "--json")
    (tree,) = json.loads(out)
    assert status == 0
    assert (tree["name"], tree["scope"], tree["entries"]) == ("thing", "toyroot", 0)
    assert [child["scope"] for child in tree["children"]] == ["toycls", "toydet"]


def test_list_shows_scoped_keys_and_where_each_is_defined(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, _ = run(capsys, "list", "--registry", "thing")
    origin = f"{__name__}:Backbone"
    assert status == 0
    assert [line.split() for line in out.splitlines()] == [
        ["toycls.Backbone", origin],
        ["toycls.Body", origin],
        ["toydet.Detector", f"{__name__}:Detector"],
        ["toydet.DetBackbone", origin],
        ["toydet.Failing", f"{__name__}:failing"],
    ]


def test_list_defaults_to_the_model_tree(capsys: pytest.CaptureFixture[str]) -> None:
    models: Registry[Any] = Registry("model", scope="toymodels")
    models.register_module(module=Backbone)
    status = main(["list"], roots=[*make_roots(), models])
    assert status == 0
    assert capsys.readouterr().out.split() == ["toymodels.Backbone", f"{__name__}:Backbone"]


def test_list_of_an_empty_tree_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["list"], roots=[Registry("model", scope="toymodels")])
    out, err = capsys.readouterr()
    assert (status, out) == (0, "")
    assert err == "regtree: registry 'model' (scope 'toymodels') has no entries\n"


@pytest.mark.parametrize(
    ("pattern", "keys"),
    [
        ("*backbone", ["toycls.Backbone", "toydet.DetBackbone"]),
        ("toydet.*", ["toydet.Detector", "toydet.DetBackbone", "toydet.Failing"]),
        ("B?dy", ["toycls.Body"]),
    ],
)
def test_list_filters_by_a_glob_ignoring_case(
    capsys: pytest.CaptureFixture[str], pattern: str, keys: list[str]
) -> None:
    status, out, _ = run(capsys, "list", pattern, "--registry", "thing", "--json")
    assert status == 0
    assert [row["key"] for row in json.loads(out)] == keys


def test_list_with_a_scope_shows_that_registry_only(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "list", "--registry", "thing", "--scope", "toycls", "--json")
    assert status == 0
    assert [(row["name"], row["scope"]) for row in json.loads(out)] == [
        ("Backbone", "toycls"),
        ("Body", "toycls"),
    ]


def test_list_without_a_match_exits_1_with_a_suggestion(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, err = run(capsys, "list", "toycls.Backbon", "--registry", "thing")
    assert (status, out) == (1, "")
    assert "did you mean 'toycls.Backbone'?" in err


def test_show_gives_file_line_signature_and_summary(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "show", "toycls.Backbone", "--registry", "thing")
    line = inspect.getsourcelines(Backbone)[1]
    assert status == 0
    assert out.splitlines()[0] == "toycls.Backbone  (registry 'thing', scope 'toycls')"
    assert f"{__file__}, line {line}" in out
    assert "(depth: int, width: int = 8) -> None" in out
    assert "A small backbone." in out
    assert "More text" not in out
    assert "also as     toycls.Body" in out


def test_show_json(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "show", "toydet.Failing", "--registry", "thing", "--json")
    details = json.loads(out)
    assert status == 0
    assert details["key"] == "toydet.Failing"
    assert details["file"] == __file__
    assert details["line"] == inspect.getsourcelines(failing)[1]
    assert details["signature"] == "(reason: str) -> None"
    assert details["summary"] is None


def test_show_finds_an_unscoped_key_in_the_only_scope_holding_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, _ = run(capsys, "show", "Detector", "--registry", "thing")
    assert status == 0
    assert out.startswith("toydet.Detector  (registry 'thing', scope 'toydet')")


def test_show_an_unknown_key_suggests_the_closest(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "show", "Detectr", "--registry", "thing")
    assert (status, out) == (2, "")
    assert err.strip() == (
        "regtree: error: 'Detectr' is not registered in registry 'thing' (scope 'toyroot') "
        "or its tree; did you mean 'toydet.Detector'?"
    )


def test_show_a_key_close_only_to_a_bare_name_suggests_it_with_its_scope(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, _, err = run(capsys, "show", "Bdy", "--registry", "thing")
    assert status == 2
    assert err.strip().endswith("or its tree; did you mean 'toycls.Body'?")


def test_show_an_ambiguous_key_lists_the_scoped_keys(capsys: pytest.CaptureFixture[str]) -> None:
    roots = make_roots()
    roots[0].children["toycls"].register_module(module=Detector)
    status = main(["show", "Detector", "--registry", "thing"], roots=roots)
    err = capsys.readouterr().err
    assert status == 2
    assert "give one of: toycls.Detector, toydet.Detector" in err


def test_an_unknown_command_gets_a_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "lst")
    assert (status, out) == (2, "")
    assert "regtree: error: unknown command 'lst'; did you mean 'list'?" in err


def test_an_unknown_registry_or_scope_gets_a_did_you_mean(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, _, err = run(capsys, "list", "--registry", "thnig")
    assert status == 2
    assert "no registry tree named 'thnig'; did you mean 'thing'? (trees: 'thing', 'gadget')" in err
    status, _, err = run(capsys, "list", "--registry", "thing", "--scope", "toydte")
    assert status == 2
    assert "has no registry with scope 'toydte'; did you mean 'toydet'?" in err


def test_help_lists_the_commands_and_the_model_section(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "--help")
    assert status == 0
    for command in ("tree", "list", "show", "validate", "build"):
        assert command in out
    status, out, _ = run(capsys, "validate", "--help")
    assert status == 0
    assert "'model' section when it has one, otherwise on the whole file" in " ".join(out.split())


def test_validate_a_sound_config_exits_0(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(
        tmp_path, "good.toml", GOOD.replace("depth = 2", "type = 'toycls.Backbone'\ndepth = 2")
    )
    status, out, _ = run(capsys, "validate", str(path), "--registry", "thing")
    assert status == 0
    expected = f"{path} [model]: no problems (checked with registry 'thing' (scope 'toyroot'))"
    assert out.strip() == expected


def test_validate_reports_every_problem_with_its_path_and_exits_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "bad.toml", BAD)
    status, out, _ = run(capsys, "validate", str(path), "--registry", "thing")
    lines = out.splitlines()
    assert status == 1
    assert [line.split(":")[0] for line in lines[:-1]] == [
        "model.num_classes",
        "model.backbone.dpeth",
        "model.neck.type",
    ]
    assert "did you mean 'depth'?" in lines[1]
    assert "'Bdy'" in lines[2]
    assert "Did you mean 'toycls.Body'?" in lines[2]
    assert lines[-1] == f"{path} [model]: 3 problems"


def test_validate_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, "bad.toml", BAD)
    status, out, _ = run(capsys, "validate", str(path), "--registry", "thing", "--json")
    report = json.loads(out)
    assert status == 1
    assert (report["section"], report["registry"], report["scope"]) == ("model", "thing", "toyroot")
    assert [p["path"] for p in report["problems"]] == [
        "model.num_classes",
        "model.backbone.dpeth",
        "model.neck.type",
    ]
    assert [p["suggestions"] for p in report["problems"]] == [[], ["depth"], ["toycls.Body"]]


def test_validate_acts_on_the_whole_file_without_a_model_section(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "widget.json", json.dumps({"type": "Widget", "num_class": 2}))
    status, out, _ = run(capsys, "validate", str(path), "--registry", "gadget")
    assert status == 1
    assert out.splitlines()[0].startswith("num_class: ")


def test_validate_a_named_section(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, "cfg.toml", GOOD + '\n[other]\ntype = "toycls.Backbone"\n')
    status, out, _ = run(capsys, "validate", str(path), "--registry", "thing", "--section", "other")
    assert status == 1
    assert out.splitlines()[0].startswith("other.depth: ")
    status, _, err = run(capsys, "validate", str(path), "--registry", "thing", "--section", "othr")
    assert status == 2
    assert "has no 'othr' section; did you mean 'other'?" in err


def test_build_prints_the_object(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, "cfg.json", json.dumps({"type": "toycls.Backbone", "depth": 3}))
    status, out, _ = run(capsys, "build", str(path), "--registry", "thing")
    assert (status, out.strip()) == (0, "Backbone(depth=3, width=8)")


def test_build_with_a_scope_resolves_unscoped_names_there(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "cfg.json", json.dumps({"type": "Body", "depth": 1}))
    status, out, _ = run(capsys, "build", str(path), "--registry", "thing", "--scope", "toycls")
    assert (status, out.strip()) == (0, "Backbone(depth=1, width=8)")


def test_a_failing_build_exits_1_with_the_error_and_its_note(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "cfg.json", json.dumps({"type": "toydet.Failing", "reason": "why"}))
    status, out, err = run(capsys, "build", str(path), "--registry", "thing")
    assert (status, out) == (1, "")
    assert "RuntimeError: cannot build: why" in err
    assert "regtree: while building 'toydet.Failing'" in err
    assert "Traceback" not in err


BAD_FILES = {
    "empty.toml": ("", "the file is empty"),
    "broken.toml": ("[model\n", "line 1"),
    "broken.json": ('{"model": }', "invalid JSON"),
    "config.ini": ("[model]\n", "unsupported config file extension"),
    "config.py": ("import os\nmodel = dict()\n", "Python configs are read without being run"),
}


@pytest.mark.parametrize("command", ["validate", "build"])
@pytest.mark.parametrize("name", [*BAD_FILES, "missing.toml"])
def test_a_bad_file_is_one_line_and_exit_status_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, name: str
) -> None:
    if name == "missing.toml":
        path, expected = tmp_path / name, "cannot read the config file: No such file or directory"
    else:
        text, expected = BAD_FILES[name]
        path = write(tmp_path, name, text)
    status, out, err = run(capsys, command, str(path), "--registry", "thing")
    assert (status, out) == (2, "")
    assert err.count("\n") == 1
    assert err.startswith(f"regtree: error: {path}")
    assert expected in err


def test_find_root_registries_scans_regtree_and_plugin_modules(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plugin = types.ModuleType("toyplugin")
    submodule = types.ModuleType("toyplugin.registries")
    tools: Registry[Any] = Registry("tool", scope="toyplugin")
    widgets: Registry[Any] = Registry("widget", scope="toywidgets")
    plugin.TOOLS = tools  # type: ignore[attr-defined]
    submodule.WIDGETS = Registry("widget", parent=widgets, scope="toyplugin")  # type: ignore[attr-defined]
    submodule.AGAIN = tools  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "toyplugin", plugin)
    monkeypatch.setitem(sys.modules, "toyplugin.registries", submodule)
    roots = find_root_registries(["toyplugin"])
    assert roots[0] is regtree.MODELS
    assert roots[1:] == [tools, widgets]
    assert find_root_registries([]) == [regtree.MODELS]


def test_main_loads_plugins_and_finds_the_model_tree(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["tree", "--registry", "model", "--json"])
    out, err = capsys.readouterr()
    assert status == 0, err
    (tree,) = json.loads(out)
    assert (tree["name"], tree["scope"]) == ("model", "regtree")


def test_lazily_filled_registries_are_filled_before_listing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = types.ModuleType("regtree_cli_test_host")
    host.LAZY = Registry("lazy", scope="toylazy", locations=["regtree_cli_test_location"])  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, host.__name__, host)
    write(
        tmp_path,
        "regtree_cli_test_location.py",
        "import regtree_cli_test_host\n\n"
        "@regtree_cli_test_host.LAZY.register_module()\n"
        "class Lazy:\n    pass\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        status = main(["tree", "--registry", "lazy"], roots=[host.LAZY])
    finally:
        sys.modules.pop("regtree_cli_test_location", None)
    assert status == 0
    assert capsys.readouterr().out == "lazy [scope toylazy, 1 entry]\n"


def test_a_location_that_fails_to_import_exits_1_without_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    broken: Registry[Any] = Registry("lazy", scope="toylazy", locations=["regtree_cli_no_such"])
    status = main(["tree"], roots=[broken])
    err = capsys.readouterr().err
    assert status == 1
    assert "ModuleNotFoundError: No module named 'regtree_cli_no_such'" in err
    assert "regtree: while importing location 'regtree_cli_no_such'" in err
    assert "Traceback" not in err


class ClosedPipe(io.StringIO):
    """A stdout whose reader has gone away, as with ``regtree list | head -1``."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_closed_pipe_stops_quietly(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    status = main(["list", "--registry", "thing"], roots=make_roots())
    assert status == 1
    assert capsys.readouterr().err == ""
