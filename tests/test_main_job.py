"""The main job, examples/train.py, end to end on a few steps."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import torch


def test_main_job_trains_checkpoints_and_resumes(repo_root: Path, tmp_path: Path) -> None:
    work_dir = tmp_path / "work"
    result = subprocess.run(
        [
            sys.executable,
            str(repo_root / "examples" / "train.py"),
            str(repo_root / "configs" / "demo.toml"),
            "--work-dir",
            str(work_dir),
            "--steps",
            "4",
            "--resume-steps",
            "3",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "resumed from step 4" in result.stdout
    assert "into 5 merged groups, by parameter name" in result.stdout
    # The 14 frozen tensors (the backbone's norms) never took a step: no saved state, so new.
    assert "loaded by name: 23 parameters; 14 new, starting fresh (" in result.stdout
    assert "; 0 dropped" in result.stdout
    assert "the resumed run and the uninterrupted one are equal" in result.stdout
    assert "lr@0" in result.stdout  # the schedule, shown before training
    checkpoint = torch.load(work_dir / "checkpoint.pth", weights_only=True)
    assert checkpoint["step"] == 4
    assert checkpoint["optimizer"]["state"]
    # mmcv's layout: one group per parameter, each named.
    groups = checkpoint["optimizer"]["param_groups"]
    assert all(len(group["param_names"]) == 1 for group in groups)
    names = {name for group in groups for name in group["param_names"]}
    assert len(groups) == len(names) > 5
    final = torch.load(work_dir / "final.pth", weights_only=True)
    assert final["step"] == 7
    assert final["model"].keys() == checkpoint["model"].keys()
