"""Origins (SPEC 5.2): where each value of the merged config was set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from regtree.config import config_origins


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_yaml_gives_lines_json_and_toml_the_file_overrides_their_text(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    toml = write(tmp_path, "model.toml", '[model]\ntype = "Det"\ndepth = 50\n')
    json_file = write(tmp_path, "data.json", json.dumps({"data": {"root": "/d", "sizes": [1, 2]}}))
    cfg = write(
        tmp_path,
        "cfg.yaml",
        "_base_: [model.toml, data.json]\nmodel:\n  depth: 18\ndata:\n  sizes:\n    - 3\n    - 4\n",
    )
    origins = config_origins(cfg, ["data.sizes.1=5", "+extra={}"])
    assert origins == {
        "model.type": str(toml),
        "model.depth": f"{cfg}:3",
        "data.root": str(json_file),
        "data.sizes.0": f"{cfg}:6",
        "data.sizes.1": "override 'data.sizes.1=5'",
        "extra": "override '+extra={}'",
    }


def test_a_base_reference_takes_the_origin_of_the_reference(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    write(tmp_path, "base.json", '{"a": {"b": 1}}')
    cfg = write(tmp_path, "cfg.yaml", "_base_: base.json\nc: '{{_base_.a.b}}'\n")
    assert config_origins(cfg) == {"a.b": str(tmp_path / "base.json"), "c": f"{cfg}:2"}


def test_origins_name_bases_by_their_path_from_the_given_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "configs").mkdir()
    write(tmp_path, "configs/base.json", '{"a": 1}')
    write(tmp_path, "configs/cfg.json", '{"_base_": "base.json", "b": 2}')
    monkeypatch.chdir(tmp_path)
    assert config_origins("configs/cfg.json") == {
        "a": "configs/base.json",
        "b": "configs/cfg.json",
    }
