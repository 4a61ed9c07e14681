"""``regtree resolve`` and ``--set`` on the commands that read a config file."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from regtree import Registry
from regtree.cli import main

BASE = '[model]\ntype = "Net"\ndepth = 2\nwidths = [4, 8]\n[train]\nlr = 0.1\n'
CHILD = "_base_: base.toml\nmodel:\n  depth: 3\ntrain:\n  lr: 1e-4\n  note: null\n"


class Net:
    def __init__(self, depth: int, widths: tuple[int, int] = (4, 8)) -> None:
        self.depth = depth
        self.widths = widths

    def __repr__(self) -> str:
        return f"Net(depth={self.depth}, widths={list(self.widths)})"


def make_roots() -> list[Registry[Any]]:
    registry: Registry[Any] = Registry("model", scope="resolvetest")
    registry.register_module(module=Net)
    return [registry]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv), roots=make_roots())
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def child(tmp_path: Path) -> Path:
    pytest.importorskip("yaml")
    (tmp_path / "base.toml").write_text(BASE, encoding="utf-8")
    path = tmp_path / "child.yaml"
    path.write_text(CHILD, encoding="utf-8")
    return path


def test_resolve_prints_the_merged_config_as_yaml_by_default(
    capsys: pytest.CaptureFixture[str], child: Path
) -> None:
    from regtree.config import load_config

    status, out, err = run(capsys, "resolve", str(child))
    assert (status, err) == (0, "")
    written = child.parent / "out.yaml"
    written.write_text(out, encoding="utf-8")
    assert load_config(written) == {
        "model": {"type": "Net", "depth": 3, "widths": [4, 8]},
        "train": {"lr": 1e-4, "note": None},
    }


def test_resolve_defaults_to_json_without_pyyaml(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    path = tmp_path / "cfg.toml"
    path.write_text(BASE, encoding="utf-8")
    status, out, _ = run(capsys, "resolve", str(path))
    assert status == 0
    assert json.loads(out)["model"]["depth"] == 2


def test_show_origin_ends_each_yaml_line_with_file_and_line(
    capsys: pytest.CaptureFixture[str], child: Path
) -> None:
    status, out, _ = run(
        capsys, "resolve", str(child), "--show-origin", "--set", "model.widths.1=16"
    )
    base = child.parent / "base.toml"
    assert status == 0
    assert out.splitlines() == [
        "model:",
        f"  type: Net  # {base}",
        f"  depth: 3  # {child}:3",
        "  widths:",
        f"    - 4  # {base}",
        "    - 16  # override 'model.widths.1=16'",
        "train:",
        f"  lr: 0.0001  # {child}:5",
        f"  note: null  # {child}:6",
    ]


def test_show_origin_in_json_wraps_each_value(
    capsys: pytest.CaptureFixture[str], child: Path
) -> None:
    status, out, _ = run(capsys, "resolve", str(child), "--show-origin", "--format", "json")
    assert status == 0
    data = json.loads(out)
    assert data["model"]["depth"] == {"value": 3, "origin": f"{child}:3"}
    assert data["model"]["widths"][0] == {"value": 4, "origin": str(child.parent / "base.toml")}


def test_toml_output_reads_back_and_carries_origins_as_comments(
    capsys: pytest.CaptureFixture[str], child: Path
) -> None:
    status, out, _ = run(
        capsys, "resolve", str(child), "--format", "toml", "--set", "~train.note", "--show-origin"
    )
    assert status == 0
    assert tomllib.loads(out) == {
        "model": {"type": "Net", "depth": 3, "widths": [4, 8]},
        "train": {"lr": 1e-4},
    }
    assert f"depth = 3  # {child}:3" in out


def test_a_null_under_toml_is_exit_status_2_saying_toml_has_no_null(
    capsys: pytest.CaptureFixture[str], child: Path
) -> None:
    status, out, err = run(capsys, "resolve", str(child), "--format", "toml")
    assert (status, out) == (2, "")
    assert err.count("\n") == 1
    assert "'train.note' is null, and TOML has no null" in err


@pytest.mark.parametrize("show_origin", [[], ["--show-origin"]])
def test_a_nan_under_json_is_exit_status_2_saying_json_has_no_nan(
    capsys: pytest.CaptureFixture[str], child: Path, show_origin: list[str]
) -> None:
    status, out, err = run(
        capsys, "resolve", str(child), "--format", "json", "--set", "train.lr=.nan", *show_origin
    )
    assert (status, out) == (2, "")
    assert err.count("\n") == 1
    assert f"{child}: cannot write the config as json: 'train.lr' is nan, and JSON has" in err
    assert "write the config as yaml or toml" in err


def test_set_applies_to_validate_and_build(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "cfg.toml"
    path.write_text(BASE, encoding="utf-8")
    status, out, _ = run(
        capsys, "build", str(path), "--set", "model.depth=5", "--set", "~model.widths"
    )
    assert (status, out) == (0, "Net(depth=5, widths=[4, 8])\n")
    status, out, _ = run(capsys, "validate", str(path), "--set", "model.depth='5'")
    assert status == 1
    assert "model.depth: expected int, got '5'" in out


@pytest.mark.parametrize("command", ["resolve", "validate", "build"])
def test_a_bad_override_is_one_line_and_exit_status_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    path = tmp_path / "cfg.toml"
    path.write_text(BASE, encoding="utf-8")
    status, out, err = run(capsys, command, str(path), "--set", "model.dpth=3")
    assert (status, out) == (2, "")
    assert err.count("\n") == 1
    assert "did you mean 'model.depth'?" in err


BAD_FILES = {
    "empty.yaml": ("", "the file is empty"),
    "broken.yaml": ("model: [1\n", "invalid YAML"),
    "broken.toml": ("[model\n", "line 1"),
    "config.ini": ("[model]\n", "unsupported config file extension"),
    "deep.json": ('{"a":' * 2000 + "1" + "}" * 2000, "nests deeper than 200 levels"),
    "deep.toml": ("a = " + "[" * 600 + "]" * 600 + "\n", "nests deeper than 200 levels"),
    "surrogate.json": ('{"s": "\\ud800"}', "is not valid Unicode text"),
}


@pytest.mark.parametrize("command", ["resolve", "validate", "build"])
@pytest.mark.parametrize("name", [*BAD_FILES, "missing.yaml", "folder.yaml"])
def test_a_bad_file_is_one_line_and_exit_status_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, name: str
) -> None:
    pytest.importorskip("yaml")
    path = tmp_path / name
    if name == "missing.yaml":
        expected = "cannot read the config file: No such file or directory"
    elif name == "folder.yaml":
        path.mkdir()
        expected = "cannot read the config file: Is a directory; name a config file in it"
    else:
        text, expected = BAD_FILES[name]
        path.write_text(text, encoding="utf-8")
    status, out, err = run(capsys, command, str(path))
    assert (status, out) == (2, "")
    assert err.count("\n") == 1
    assert err.startswith(f"regtree: error: {path}")
    assert expected in err


def test_a_bad_base_is_one_line_and_exit_status_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "cfg.json"
    path.write_text('{"_base_": "gone.toml"}', encoding="utf-8")
    status, _, err = run(capsys, "resolve", str(path))
    assert status == 2
    assert err.count("\n") == 1
    assert "cannot read its base 'gone.toml'" in err
