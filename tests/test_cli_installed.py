"""The ``regtree`` and ``regtree-optim`` console scripts on the demo packages, as installed."""

from __future__ import annotations

import inspect
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

BAD_CONFIG = """\
# Three planted mistakes: a misspelt type, a misspelt keyword in the nested backbone, and a
# missing required argument of the backbone.
[model]
type = "demo_det.TinyDetectr"
num_classes = 3

[model.backbone]
type = "demo_det.DeformConv2d"
in_channels = 3
kernal_size = 3
"""


def run_script(name: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run an installed console script of this environment in ``cwd``."""
    script = shutil.which(name, path=str(Path(sys.executable).parent))
    assert script is not None, f"console script {name!r} is not installed next to {sys.executable}"
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run(
        [script, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def demo_config(repo_root: Path) -> Path:
    return repo_root / "configs" / "demo.toml"


def test_tree_shows_the_demo_scopes_under_model(tmp_path: Path) -> None:
    result = run_script("regtree", "tree", cwd=tmp_path)
    lines = result.stdout.splitlines()
    assert result.returncode == 0, result.stderr
    start = next(i for i, line in enumerate(lines) if line.startswith("model [scope regtree,"))
    children = []
    for line in lines[start + 1 :]:
        if not line.startswith(("|", "`")):
            break
        children.append(line)
    assert [line.split("[scope ")[1].split(",")[0] for line in children] == [
        "demo_cls",
        "demo_det",
    ]
    assert any(line.startswith("optimizer [scope regtree_optim,") for line in lines)
    assert any(line.startswith("optimizer builder [scope regtree_optim,") for line in lines)


def test_list_names_each_demo_entry_and_where_it_is_defined(tmp_path: Path) -> None:
    import demo_cls
    import demo_det

    result = run_script("regtree", "list", "demo_*", "--json", cwd=tmp_path)
    rows = {row["key"]: row["defined_in"] for row in json.loads(result.stdout)}
    expected = {
        f"{package.MODELS.scope}.{name}": f"{obj.__module__}:{obj.__qualname__}"
        for package in (demo_cls, demo_det)
        for name, obj in package.MODELS.module_dict.items()
    }
    assert result.returncode == 0, result.stderr
    assert rows == expected
    text = run_script("regtree", "list", "*NetB", cwd=tmp_path).stdout
    assert text.split() == ["demo_cls.NetB", expected["demo_cls.NetB"]]


def test_show_gives_the_file_line_and_signature(tmp_path: Path) -> None:
    from demo_cls import SeparableConvNet

    result = run_script("regtree", "show", "demo_cls.SeparableConvNet", "--json", cwd=tmp_path)
    details = json.loads(result.stdout)
    assert result.returncode == 0, result.stderr
    assert details["file"] == inspect.getsourcefile(SeparableConvNet)
    assert details["line"] == inspect.getsourcelines(SeparableConvNet)[1]
    assert details["signature"].startswith("(in_channels: int = 3")
    assert details["summary"] == inspect.cleandoc(SeparableConvNet.__doc__ or "").splitlines()[0]


def test_show_suggests_the_closest_key(tmp_path: Path) -> None:
    result = run_script("regtree", "show", "SeparableConvNte", cwd=tmp_path)
    assert result.returncode == 2
    assert "did you mean 'demo_cls.SeparableConvNet'?" in result.stderr


def test_validate_passes_the_demo_config(tmp_path: Path, repo_root: Path) -> None:
    result = run_script("regtree", "validate", str(demo_config(repo_root)), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no problems" in result.stdout


def test_validate_reports_the_three_planted_mistakes(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(BAD_CONFIG, encoding="utf-8")
    result = run_script("regtree", "validate", str(path), cwd=tmp_path)
    lines = result.stdout.splitlines()
    assert result.returncode == 1
    assert [line.split(": ")[0] for line in lines[:-1]] == [
        "model.type",
        "model.backbone.kernal_size",
        "model.backbone.out_channels",
    ]
    assert "'TinyDetectr'" in lines[0]
    assert "Did you mean 'demo_det.TinyDetector'?" in lines[0]
    assert "did you mean 'kernel_size'?" in lines[1]
    assert "needs 'out_channels'" in lines[2]
    assert lines[-1] == f"{path} [model]: 3 problems"
    report = json.loads(run_script("regtree", "validate", str(path), "--json", cwd=tmp_path).stdout)
    assert [(p["path"], p["kind"], p["suggestions"]) for p in report["problems"]] == [
        ("model.type", "unknown-type", ["demo_det.TinyDetector"]),
        ("model.backbone.kernal_size", "unknown-keyword", ["kernel_size"]),
        ("model.backbone.out_channels", "missing-keyword", []),
    ]


def test_validate_reports_a_keyword_that_a_module_without_an_init_refuses(
    tmp_path: Path,
) -> None:
    # NetB has no __init__ of its own: nn.Module's takes (*args, **kwargs) only to refuse them,
    # so validate must report what build would fail on.
    path = tmp_path / "netb.json"
    path.write_text(json.dumps({"model": {"type": "demo_cls.NetB", "bogus": 1}}), encoding="utf-8")
    result = run_script("regtree", "validate", str(path), cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "model.bogus: 'demo_cls.NetB' (demo_cls._toy:NetB) takes no keyword 'bogus'" in (
        result.stdout
    )
    assert run_script("regtree", "build", str(path), cwd=tmp_path).returncode == 1


def test_validate_takes_what_call_super_init_passes_on() -> None:
    # With call_super_init, nn.Module.__init__ hands its keywords to the next __init__.
    from torch import nn

    from regtree import Registry

    class Configured:
        def __init__(self, width: int = 1) -> None:
            self.width = width

    class Net(nn.Module, Configured):
        call_super_init = True

    class Plain(nn.Module):
        pass

    class PlainPassingOn(nn.Module):
        call_super_init = True  # on to object.__init__, which takes nothing

    registry: Registry[Any] = Registry("model", scope="test_call_super_init")
    registry.register_module(module=Net)
    registry.register_module(module=Plain)
    assert registry.validate({"type": "Net", "width": 4}) == []
    assert registry.build({"type": "Net", "width": 4}).width == 4
    registry.register_module(module=PlainPassingOn)
    for name in ("Plain", "PlainPassingOn"):
        problems = registry.validate({"type": name, "width": 4})
        assert [problem.kind for problem in problems] == ["unknown-keyword"], name


def test_build_builds_the_demo_model(tmp_path: Path, repo_root: Path) -> None:
    import torch

    from regtree import MODELS, load_config

    result = run_script("regtree", "build", str(demo_config(repo_root)), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    model = MODELS.build(load_config(demo_config(repo_root))["model"])
    assert isinstance(model, torch.nn.Module)
    assert result.stdout.strip() == repr(model)


def test_explain_agrees_with_build_optimizer(tmp_path: Path, repo_root: Path) -> None:
    from regtree import MODELS, load_config
    from regtree_optim import build_optimizer

    config = demo_config(repo_root)
    result = run_script("regtree-optim", "explain", str(config), "--json", cwd=tmp_path)
    report: dict[str, Any] = json.loads(result.stdout)
    cfg = load_config(config)
    model = MODELS.build(cfg["model"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the demo's shared tower: bypass_duplicate warns
        optimizer = build_optimizer(model, cfg["optimizer"])
    placed = {name for group in optimizer.param_groups for name in group["param_names"]}
    frozen = {name for name, p in model.named_parameters() if not p.requires_grad}
    assert result.returncode == 0, result.stderr
    assert {row["name"] for row in report["parameters"]} == placed
    assert placed - frozen, "the demo config trains something"
    for row in report["parameters"]:
        group = optimizer.param_groups[row["group"]]
        assert row["name"] in group["param_names"]
        assert (row["lr"], row["weight_decay"]) == (group["lr"], group["weight_decay"])
    assert report["summary"]["groups"] == len(optimizer.param_groups)
    assert report["summary"]["rules"]["custom_keys['backbone']"] == sum(
        row["rule"] == "custom_keys['backbone']" for row in report["parameters"]
    )
    text = run_script("regtree-optim", "explain", str(config), cwd=tmp_path)
    assert text.returncode == 0
    assert f"parameters in {len(optimizer.param_groups)} groups" in text.stdout
    assert text.stderr.startswith("regtree-optim: warning: Parameter 'box_branch.tower.")


BAD_FILES = {
    "empty": ("empty.toml", ""),
    "malformed": ("broken.toml", "[model]\ntype = \n"),
    "unsupported extension": ("config.ini", "[model]\ntype = demo_cls.NetB\n"),
    "missing": ("absent.toml", None),
}


@pytest.mark.parametrize("kind", list(BAD_FILES))
@pytest.mark.parametrize(
    "command", [("regtree", "validate"), ("regtree", "build"), ("regtree-optim", "explain")]
)
def test_a_bad_file_is_a_one_line_error_with_exit_status_2(
    tmp_path: Path, kind: str, command: tuple[str, str]
) -> None:
    name, text = BAD_FILES[kind]
    path = tmp_path / name
    if text is not None:
        path.write_text(text, encoding="utf-8")
    result = run_script(*command, str(path), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"{command[0]}: error: {path}")
    assert "Traceback" not in result.stderr


def test_an_unknown_command_gets_a_did_you_mean(tmp_path: Path) -> None:
    result = run_script("regtree", "valdiate", "x.toml", cwd=tmp_path)
    assert result.returncode == 2
    assert "unknown command 'valdiate'; did you mean 'validate'?" in result.stderr


# --- the demo configs: inheritance, origins, value checks, --set (issue 14) ---------------


@pytest.fixture
def small_config(repo_root: Path) -> Path:
    pytest.importorskip("yaml")
    return repo_root / "configs" / "demo_small.yaml"


@pytest.mark.parametrize("name", ["demo.toml", "demo_small.yaml"])
def test_validate_finds_no_problem_in_the_demo_configs(
    tmp_path: Path, repo_root: Path, name: str
) -> None:
    if name.endswith(".yaml"):
        pytest.importorskip("yaml")
    config = repo_root / "configs" / name
    result = run_script("regtree", "validate", str(config), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no problems" in result.stdout


def test_the_small_config_inherits_the_demo_and_changes_a_few_values(
    tmp_path: Path, small_config: Path
) -> None:
    from regtree import load_config

    base = load_config(small_config.parent / "demo.toml")
    small = load_config(small_config)
    assert small["optimizer"]["lr"] == 1e-2  # a float under YAML 1.2 (a str under PyYAML alone)
    assert small["model"]["backbone"]["widths"] == [8, 16, 16]
    assert small["optimizer"]["paramwise_cfg"] == base["optimizer"]["paramwise_cfg"]
    assert small["train"]["steps"] < base["train"]["steps"]
    # Its schedule ends where its own run ends, as demo.toml's does.
    train = small["train"]
    assert small["scheduler"][-1]["end"] == train["steps"] + train["resume_steps"]
    assert base["scheduler"][-1]["end"] == base["train"]["steps"] + base["train"]["resume_steps"]


def test_resolve_shows_where_each_value_of_the_small_config_comes_from(
    tmp_path: Path, small_config: Path
) -> None:
    result = run_script(
        "regtree", "resolve", str(small_config), "--show-origin", "--format", "json", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    resolved = json.loads(result.stdout)
    assert resolved["optimizer"]["lr"]["origin"] == f"{small_config}:15"
    assert resolved["optimizer"]["momentum"]["origin"] == str(small_config.parent / "demo.toml")


def test_validate_with_a_wrong_value_names_path_type_and_value(
    tmp_path: Path, small_config: Path
) -> None:
    result = run_script(
        "regtree", "validate", str(small_config), "--set", "model.num_classes='3'", cwd=tmp_path
    )
    assert result.returncode == 1
    assert "model.num_classes: expected int, got '3'" in result.stdout


def test_explain_takes_set(tmp_path: Path, small_config: Path) -> None:
    result = run_script(
        "regtree-optim",
        "explain",
        str(small_config),
        "--json",
        "--set",
        "optimizer.lr=0.2",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    lrs = {row["lr"] for row in json.loads(result.stdout)["parameters"]}
    assert 0.2 in lrs
