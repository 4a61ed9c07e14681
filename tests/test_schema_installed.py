"""``regtree schema`` on the installed demo packages, checked with a JSON Schema validator."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml


def schema(*args: str, cwd: Path) -> dict[str, Any]:
    script = shutil.which("regtree", path=str(Path(sys.executable).parent))
    assert script is not None, f"the regtree console script is not next to {sys.executable}"
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run(
        [script, "schema", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    jsonschema.Draft202012Validator.check_schema(result)
    return result


@pytest.fixture(scope="module")
def model_schema(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return schema(cwd=tmp_path_factory.mktemp("schema"))


def messages(schema: dict[str, Any], instance: object) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema)
    return [error.message for error in validator.iter_errors(instance)]


def demo(repo_root: Path) -> dict[str, Any]:
    return tomllib.loads((repo_root / "configs" / "demo.toml").read_text(encoding="utf-8"))


def test_the_demo_configs_validate(model_schema: dict[str, Any], repo_root: Path) -> None:
    assert messages(model_schema, demo(repo_root)) == []
    for path in sorted((repo_root / "configs").glob("*.yaml")):  # inherit: partial sections
        assert messages(model_schema, yaml.safe_load(path.read_text(encoding="utf-8"))) == []


def test_a_misspelt_type_does_not_validate(model_schema: dict[str, Any], repo_root: Path) -> None:
    config = demo(repo_root)
    config["model"]["backbone"]["type"] = "demo_cls.SeparableConvNt"
    (message,) = messages(model_schema, config)
    assert message.startswith("'demo_cls.SeparableConvNt' is not one of [")
    assert "'demo_cls.SeparableConvNet'" in message


def test_a_wrong_typed_value_does_not_validate(
    model_schema: dict[str, Any], repo_root: Path
) -> None:
    config = demo(repo_root)
    wrong = copy.deepcopy(config)
    wrong["model"]["num_classes"] = "3"
    wrong["model"]["backbone"]["widths"] = [16, "32"]
    assert sorted(messages(model_schema, wrong)) == [
        "'3' is not of type 'integer'",
        "'32' is not of type 'integer'",
    ]


def test_entries_name_their_keywords_defaults_and_summary(model_schema: dict[str, Any]) -> None:
    entry = model_schema["$defs"]["demo_det._detector:TinyDetector"]
    assert entry["title"] == "demo_det.TinyDetector"
    assert entry["description"].startswith("Backbone (built from a config)")
    assert entry["properties"]["num_classes"] == {"type": "integer", "default": 3}


def test_the_optimizer_tree_lists_torch_optimizers(tmp_path: Path) -> None:
    optimizers = schema("--registry", "optimizer", "--section", "optimizer", cwd=tmp_path)
    names = optimizers["$defs"]["config"]["properties"]["type"]["enum"]
    assert {"SGD", "AdamW", "regtree_optim.SGD"} <= set(names)
