"""Fixtures for the cross-package tests, which run against the installed wheels."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

RunPython = Callable[..., Any]


def _child_env() -> dict[str, str]:
    # Nothing from the checkout may reach the child: no PYTHONPATH, and it runs in an empty folder.
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


@pytest.fixture
def repo_root() -> Path:
    """The checkout, for its examples and configs (never for the packages' code)."""
    return REPO_ROOT


@pytest.fixture
def run_python(tmp_path: Path) -> RunPython:
    """Run code or a script in a fresh interpreter; return the JSON its last line prints.

    Call it as ``run_python(code)`` or ``run_python(script=path, args=[...])``. A non-zero exit
    fails the test with the child's output.
    """

    def run(
        code: str | None = None, *, script: Path | None = None, args: Sequence[str] = ()
    ) -> Any:
        command = [sys.executable]
        command += [str(script)] if script is not None else ["-c", textwrap.dedent(code or "")]
        result = subprocess.run(
            [*command, *args],
            cwd=tmp_path,
            env=_child_env(),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if result.returncode != 0:
            pytest.fail(
                f"the fresh interpreter exited with {result.returncode}\n--- command ---\n"
                f"{' '.join(command)}\n--- stdout ---\n{result.stdout}\n--- stderr ---\n"
                f"{result.stderr}",
                pytrace=False,
            )
        last_line = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else "null"
        return json.loads(last_line)

    return run
