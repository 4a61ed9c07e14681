"""``regtree-optim explain``: the per-parameter table of a config, as build_optimizer sees it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from regtree import Registry, load_config
from regtree.cli import read_config
from regtree_optim import DefaultOptimizerConstructor, _cli, build_optimizer
from regtree_optim._cli import main


class SmallNet(nn.Module):
    """A conv with a bias, a BatchNorm, and a head that shares the conv (bypass_duplicate)."""

    def __init__(self, channels: int = 4, frozen_head: bool = False) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, channels, 3, bias=True)
        self.bn = nn.BatchNorm2d(channels)
        self.head = nn.Linear(channels, 2)
        if frozen_head:
            self.head.requires_grad_(False)


def broken(reason: str) -> nn.Module:
    raise ValueError(f"no model: {reason}")


def make_models() -> Registry[Any]:
    models: Registry[Any] = Registry("model", scope="optim_cli_test")
    models.register_module(module=SmallNet)
    models.register_module(module=broken, name="Broken")
    return models


CONFIG = """\
[model]
type = "SmallNet"
channels = 4
frozen_head = true

[optimizer]
type = "SGD"
lr = 0.1
momentum = 0.9
weight_decay = 0.001

[optimizer.paramwise_cfg]
bias_lr_mult = 2.0
norm_decay_mult = 0.0
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def explain(
    capsys: pytest.CaptureFixture[str], *argv: str, models: Registry[Any] | None = None
) -> tuple[int, str, str]:
    status = main(list(argv), models=models or make_models())
    out, err = capsys.readouterr()
    return status, out, err


def test_explain_agrees_with_build_optimizer(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "cfg.toml", CONFIG)
    status, out, _ = explain(capsys, "explain", str(path), "--json")
    report = json.loads(out)
    cfg = load_config(path)
    torch.manual_seed(0)
    model = make_models().build(cfg["model"])
    optimizer = build_optimizer(model, cfg["optimizer"])
    params = dict(model.named_parameters())
    assert status == 0
    assert [row["name"] for row in report["parameters"]] == list(params)
    for row in report["parameters"]:
        group = optimizer.param_groups[row["group"]]
        assert row["name"] in group["param_names"]
        assert (row["lr"], row["weight_decay"]) == (group["lr"], group["weight_decay"])
        assert row["shape"] == list(params[row["name"]].shape)
    assert report["summary"]["groups"] == len(optimizer.param_groups)
    assert report["summary"]["parameters"] == len(params)


def test_json_rows_carry_the_multipliers_explain_s_rows_carry(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # SPEC 3.3: explain rows carry lr_mult and decay_mult; the JSON rows are those rows.
    path = write(tmp_path, "cfg.toml", CONFIG)
    status, out, _ = explain(capsys, "explain", str(path), "--json")
    rows = {row["name"]: row for row in json.loads(out)["parameters"]}
    cfg = load_config(path)
    model = make_models().build(cfg["model"])
    expected = DefaultOptimizerConstructor(
        {k: v for k, v in cfg["optimizer"].items() if k != "paramwise_cfg"},
        cfg["optimizer"]["paramwise_cfg"],
    ).explain(model)
    assert status == 0
    for want in expected:
        row = rows[want.name]
        assert (row["lr_mult"], row["decay_mult"]) == (want.lr_mult, want.decay_mult), want.name
    assert (rows["conv.bias"]["lr_mult"], rows["bn.weight"]["decay_mult"]) == (2.0, 0.0)


def test_explain_prints_the_table_then_a_summary(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "cfg.toml", CONFIG)
    status, out, err = explain(capsys, "explain", str(path))
    table, summary = out.split("\n\n")
    header = table.splitlines()[0].split()
    rows = {line.split()[1]: line.split() for line in table.splitlines()[2:]}
    assert (status, err) == (0, "")
    assert sorted(header) == sorted(["group", "name", "shape", "lr", "weight_decay", "rule"])
    assert set(rows) == {
        "conv.weight",
        "conv.bias",
        "bn.weight",
        "bn.bias",
        "head.weight",
        "head.bias",
    }
    assert {"0.2", "0.001", "bias_lr_mult"} <= set(rows["conv.bias"])
    summary_lines = summary.splitlines()
    cfg = load_config(path)
    groups = build_optimizer(make_models().build(cfg["model"]), cfg["optimizer"]).param_groups
    assert summary_lines[0] == f"6 parameters in {len(groups)} groups; parameters per rule:"
    counts = {" ".join(line.split()[:-1]): int(line.split()[-1]) for line in summary_lines[1:]}
    assert counts == {
        "frozen (optimizer defaults)": 2,
        "norm_decay_mult": 2,
        "default": 1,
        "bias_lr_mult": 1,
    }


def test_json_output_diffs_two_configs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    first = write(tmp_path, "a.toml", CONFIG)
    second = write(tmp_path, "b.toml", CONFIG.replace("bias_lr_mult = 2.0", "bias_lr_mult = 3.0"))
    rows_a = json.loads(explain(capsys, "explain", str(first), "--json")[1])["parameters"]
    rows_b = json.loads(explain(capsys, "explain", str(second), "--json")[1])["parameters"]
    changed = [a["name"] for a, b in zip(rows_a, rows_b, strict=True) if a != b]
    assert changed == ["conv.bias"]


def test_warnings_are_reported_in_one_line_each(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = CONFIG + "\n[optimizer.paramwise_cfg.custom_keys.backbone]\nlr_mult = 0.1\n"
    path = write(tmp_path, "cfg.toml", text)
    status, _, err = explain(capsys, "explain", str(path))
    assert status == 0
    assert err.startswith("regtree-optim: warning: ")
    assert "'backbone'" in err


def test_a_model_that_fails_to_build_exits_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = CONFIG.replace(
        'type = "SmallNet"\nchannels = 4\nfrozen_head = true', 'type = "Broken"\nreason = "why"'
    )
    path = write(tmp_path, "cfg.toml", text)
    status, out, err = explain(capsys, "explain", str(path))
    assert (status, out) == (1, "")
    assert "ValueError: no model: why" in err
    assert "Traceback" not in err


def test_an_invalid_paramwise_cfg_exits_1_with_the_closest_key(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "cfg.toml", CONFIG.replace("norm_decay_mult", "norm_decay_mul"))
    status, _, err = explain(capsys, "explain", str(path))
    assert status == 1
    assert "norm_decay_mult" in err


@pytest.mark.parametrize("missing", ["model", "optimizer"])
def test_a_config_without_model_or_optimizer_is_exit_status_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, missing: str
) -> None:
    cfg = load_config(write(tmp_path, "full.toml", CONFIG))
    del cfg[missing]
    path = write(tmp_path, "cfg.json", json.dumps(cfg))
    status, out, err = explain(capsys, "explain", str(path))
    assert (status, out) == (2, "")
    assert f"the config has no {missing!r} section" in err


BAD_FILES = {
    "empty.toml": ("", "the file is empty"),
    "broken.toml": ("[model\n", "invalid TOML"),
    "config.cfg": ("[model]\n", "unsupported config file extension"),
}


@pytest.mark.parametrize("name", [*BAD_FILES, "missing.toml"])
def test_a_bad_file_is_one_line_and_exit_status_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str
) -> None:
    if name in BAD_FILES:
        text, expected = BAD_FILES[name]
        path = write(tmp_path, name, text)
    else:
        path, expected = tmp_path / name, "No such file or directory"
    status, out, err = explain(capsys, "explain", str(path))
    assert (status, out) == (2, "")
    assert err.count("\n") == 1
    assert err.startswith(f"regtree-optim: error: {path}")
    assert expected in err


def test_set_overrides_the_config_before_explaining(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "cfg.toml", CONFIG)
    status, out, _ = explain(
        capsys,
        "explain",
        str(path),
        "--json",
        "--set",
        "optimizer.lr=0.5",
        "--set",
        "~model.frozen_head",
    )
    assert status == 0
    rows = {row["name"]: row for row in json.loads(out)["parameters"]}
    assert rows["head.weight"]["lr"] == 0.5  # trainable again, at the overridden lr
    status, out, err = explain(capsys, "explain", str(path), "--set", "optimizer.lrr=0.5")
    assert (status, out) == (2, "")
    assert "no key 'optimizer.lrr' (did you mean 'optimizer.lr'?)" in err


def test_an_unknown_command_gets_a_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = explain(capsys, "explian", "cfg.toml")
    assert status == 2
    assert "unknown command 'explian'; did you mean 'explain'?" in err


def test_help_describes_explain(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = explain(capsys, "explain", "--help")
    assert status == 0
    assert "'model' section" in out
    assert "--json" in out


SCHEDULE = """
[[scheduler]]
type = "LinearLR"
start_factor = 0.1
end = 100

[[scheduler]]
type = "CosineAnnealingLR"
eta_min_ratio = 0.01
end = 1000
"""


def test_at_adds_one_lr_column_per_step_of_the_scheduler_section(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "cfg.toml", CONFIG + SCHEDULE)
    status, out, err = explain(capsys, "explain", str(path), "--at", "0,500,-1")
    assert (status, err) == (0, "")
    header = out.splitlines()[0].split()
    assert header[header.index("lr") + 1 :][:3] == ["lr@0", "lr@500", "lr@-1"]

    status, out, _ = explain(capsys, "explain", str(path), "--at", "0,500,-1", "--json")
    cfg = load_config(path)
    model = make_models().build(cfg["model"])
    expected = DefaultOptimizerConstructor(
        {k: v for k, v in cfg["optimizer"].items() if k != "paramwise_cfg"},
        cfg["optimizer"]["paramwise_cfg"],
    ).explain(model, scheduler=cfg["scheduler"], at=[0, 500, -1])
    report = json.loads(out)["parameters"]
    assert status == 0
    for row, want in zip(report, expected, strict=True):
        assert row["lr_at"] == {str(step): lr for step, lr in want.lr_at.items()}


def test_at_reads_the_config_file_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The model, optimizer and scheduler sections come from one reading (and parse) of the file.
    path = write(tmp_path, "cfg.toml", CONFIG + SCHEDULE)
    reads: list[tuple[Any, ...]] = []

    def counted(*args: Any) -> Any:
        reads.append(args)
        return read_config(*args)

    monkeypatch.setattr(_cli, "read_config", counted)
    status, _, err = explain(capsys, "explain", str(path), "--at", "0,-1")
    assert (status, err) == (0, "")
    assert len(reads) == 1


@pytest.mark.parametrize("at", [["--at", "-1,0"], ["--at=-1,0"], ["--at", "-1"]])
def test_at_takes_a_first_step_that_is_negative(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, at: list[str]
) -> None:
    # argparse takes "-1,0" for an option; the space form works as the = form does.
    path = write(tmp_path, "cfg.toml", CONFIG + SCHEDULE)
    status, out, err = explain(capsys, "explain", str(path), *at)
    assert (status, err) == (0, "")
    steps = at[-1].removeprefix("--at=").split(",")
    header = out.splitlines()[0].split()
    assert header[header.index("lr") + 1 :][: len(steps)] == [f"lr@{step}" for step in steps]


def test_at_without_its_steps_is_still_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = explain(capsys, "explain", "cfg.toml", "--at", "--json")
    assert status == 2
    assert "argument --at: expected one argument" in err


def test_at_without_a_scheduler_section_is_exit_status_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "cfg.toml", CONFIG)
    status, out, err = explain(capsys, "explain", str(path), "--at", "0,10")
    assert (status, out) == (2, "")
    assert "the config has no 'scheduler' section, which --at steps through" in err


def test_at_that_is_not_a_list_of_steps_is_exit_status_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "cfg.toml", CONFIG + SCHEDULE)
    status, _, err = explain(capsys, "explain", str(path), "--at", "0,ten")
    assert status == 2
    assert "is not a comma-separated list of step numbers" in err


def test_a_negative_step_of_an_open_schedule_is_exit_status_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # A step the schedule has not is a command line that cannot be acted on: one line, no build.
    open_ended = '\n[scheduler]\ntype = "ExponentialLR"\ngamma = 0.9\n'
    path = write(tmp_path, "cfg.toml", CONFIG + open_ended)
    status, out, err = explain(capsys, "explain", str(path), "--at", "-1")
    assert (status, out) == (2, "")
    assert f"{path}: --at -1: step -1 counts back from the end of the schedule" in err
    assert len(err.strip().splitlines()) == 1


def test_a_metric_driven_scheduler_stepped_is_exit_status_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    plateau = '\n[scheduler]\ntype = "ReduceLROnPlateau"\n'
    path = write(tmp_path, "cfg.toml", CONFIG + plateau)
    status, out, err = explain(capsys, "explain", str(path), "--at", "0,3")
    assert (status, out) == (2, "")
    assert f"{path}: --at 0,3: ReduceLROnPlateau sets the lr from a metric" in err
    assert len(err.strip().splitlines()) == 1
    status, out, err = explain(capsys, "explain", str(path), "--at", "0")
    assert (status, err) == (0, "")
    assert "lr@0" in out.splitlines()[0]


def test_a_device_this_torch_cannot_use_is_exit_status_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # No CUDA here, or no hundredth GPU there: either way a device this torch cannot use.
    path = write(tmp_path, "cfg.toml", CONFIG)
    status, out, err = explain(capsys, "explain", str(path), "--device", "cuda:99")
    assert (status, out) == (2, "")
    assert "'cuda:99' is a torch device this machine's torch cannot use" in err


def test_a_schedule_that_cannot_be_built_is_exit_status_1_not_a_bad_at(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Phases that do not meet are the config's problem, reported as a failed explain.
    gap = SCHEDULE.replace("end = 100", "end = 90") + "begin = 100\n"
    path = write(tmp_path, "cfg.toml", CONFIG + gap)
    status, out, err = explain(capsys, "explain", str(path), "--at", "0")
    assert (status, out) == (1, "")
    assert f"explaining {path} failed:" in err
    assert "the phases of the schedule must be contiguous" in err
    assert "--at" not in err
