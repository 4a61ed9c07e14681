"""Import time of each library's registry in a fresh interpreter, over a bare interpreter."""

from __future__ import annotations

import random
import re
import resource
import subprocess
import sys

from _libs import OURS, REGISTRY_IMPORTS, Library
from _report import Row, Target
from _timing import Samples

TABLE = "import"
BARE = "bare interpreter"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(statement: str) -> float:
    """CPU time (user + system) of one fresh interpreter running ``statement``.

    CPU time, not wall time: other tenants of a shared machine stretch a child's wall time by
    whole scheduler slices, not the CPU time it spends.
    """
    start = _children_cpu()
    subprocess.run([sys.executable, "-c", statement], check=True, capture_output=True)
    return _children_cpu() - start


def _import_times(statement: str) -> dict[str, float]:
    """Cumulative import time (``-X importtime``, wall clock) of each module, in seconds."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement],
        check=True,
        capture_output=True,
        text=True,
    )
    found: dict[str, float] = {}
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|\s*(\S+)", line)
        if match:
            found[match.group(3)] = int(match.group(2)) / 1e6
    return found


def heaviest_imports(statement: str, top: int = 10) -> list[tuple[str, float]]:
    """The modules that ``statement`` imports beyond a bare interpreter, heaviest first."""
    bare = _import_times("pass")
    extra = {name: s for name, s in _import_times(statement).items() if name not in bare}
    return sorted(extra.items(), key=lambda item: -item[1])[:top]


def run(
    libraries: dict[str, Library], rounds: int = 15, peer_rounds: int = 3
) -> tuple[list[Row], dict[str, Samples], dict[str, list[tuple[str, float]]]]:
    """Best-of-N CPU time of ``python -c <import>`` minus that of ``python -c pass``, interleaved.

    Peers import torch and take seconds, so they run in the first ``peer_rounds`` rounds only.

    Returns:
        Rows, raw samples (seconds per interpreter run) and, for regtree, the heaviest modules
        its import pulls in.
    """
    statements = {BARE: "pass"}
    statements |= {
        name: REGISTRY_IMPORTS[name]
        for name, lib in libraries.items()
        if lib.make_registry is not None
    }
    for label, statement in list(statements.items()):  # warm-up: write the .pyc files
        try:
            _run(statement)
        except subprocess.CalledProcessError as error:
            if label == BARE:
                raise
            message = error.stderr.decode(errors="replace").strip().splitlines()[-1:]
            libraries[label].notes.append(f"{label}: `{statement}` failed: {message}")
            del statements[label]
    samples = {label: Samples(label) for label in statements}
    rng = random.Random(1)
    for round_index in range(rounds):
        labels = [
            label for label in statements if label in (BARE, OURS) or round_index < peer_rounds
        ]
        rng.shuffle(labels)
        for label in labels:
            samples[label].by_round[round_index] = _run(statements[label])
    bare = min(samples[BARE].values)
    rows = []
    for label in statements:
        if label == BARE:
            continue
        best = min(samples[label].values)
        rows.append(
            Row(
                TABLE,
                f"`{statements[label]}` (best of {len(samples[label].values)})",
                label,
                best - bare,
                "bare interpreter",
                bare,
                None,
                Target(0.015, "value") if label == OURS else None,
                note="value = CPU time over a bare `python -c pass`",
                samples=samples[label].values,
            )
        )
    details = {OURS: heaviest_imports(statements[OURS])} if OURS in statements else {}
    return rows, samples, details
