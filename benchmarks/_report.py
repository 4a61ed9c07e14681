"""Results: rows beside their floors, targets checked, written as Markdown and raw JSON."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal


@dataclass(frozen=True)
class Target:
    """A claim: ``ratio`` (value/floor) or the ``value`` itself at most ``limit``."""

    limit: float
    on: Literal["ratio", "value"] = "ratio"

    def text(self, unit: str) -> str:
        """How the target reads in the table."""
        if self.on == "ratio":
            return f"<= {self.limit:g}x"
        return f"<= {format_value(self.limit, unit)}"


@dataclass
class Row:
    """One measured value beside the floor it is compared to."""

    table: str
    benchmark: str
    library: str
    value: float | None
    floor_label: str = ""
    floor: float | None = None
    ratio: float | None = None
    target: Target | None = None
    unit: str = "s"
    note: str = ""
    samples: list[float] = field(default_factory=list)

    @property
    def met(self) -> bool | None:
        """Whether the target holds; None where there is no target or no value."""
        if self.target is None:
            return None
        measured = self.ratio if self.target.on == "ratio" else self.value
        if measured is None or math.isnan(measured):
            return None
        return measured <= self.target.limit


def format_value(value: float | None, unit: str) -> str:
    """A time in s, ms, us or ns with three significant digits; other units as they are."""
    if value is None or math.isnan(value):
        return "—"
    if unit == "count":
        return f"{value:,.0f}"
    if unit != "s":
        return f"{value:.3g}{unit}"
    for scale, suffix in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
        if abs(value) >= scale or suffix == "ns":
            return f"{value / scale:.3g} {suffix}"
    raise AssertionError("unreachable")


def _status(row: Row) -> str:
    met = row.met
    if row.target is None:
        return ""
    if met is None:
        return "not measured"
    return "met" if met else "**missed**"


def _cells(row: Row) -> list[str]:
    return [
        row.benchmark,
        row.library,
        format_value(row.value, row.unit),
        row.floor_label,
        format_value(row.floor, row.unit),
        "—" if row.ratio is None else f"{row.ratio:.2f}x",
        "" if row.target is None else row.target.text(row.unit),
        _status(row),
        row.note,
    ]


HEADER = [
    "benchmark",
    "library",
    "value",
    "floor",
    "floor value",
    "ratio",
    "target",
    "status",
    "note",
]


def table(rows: Iterable[Row]) -> str:
    """A Markdown table of rows."""
    lines = [
        "| " + " | ".join(HEADER) + " |",
        "|" + "|".join("---" for _ in HEADER) + "|",
    ]
    lines += ["| " + " | ".join(_cells(row)) + " |" for row in rows]
    return "\n".join(lines)


def markdown(
    rows: Sequence[Row],
    sections: Mapping[str, str],
    meta: Mapping[str, Any],
    notes: Sequence[str],
    method: str,
) -> str:
    """The whole results page: machine, versions, targets summary, one table per section.

    Args:
        rows: Every row measured.
        sections: Table id -> heading, in page order.
        meta: Date, machine, versions, run time.
        notes: Skipped peers and benchmarks, stand-ins, anything a reader must know.
        method: How the numbers were taken.

    Returns:
        Markdown text.
    """
    out = ["# regtree benchmarks", ""]
    out += [f"- **{key}**: {value}" for key, value in meta.items()]
    out += ["", method, ""]
    targeted = [row for row in rows if row.target is not None]
    out += ["## Targets", "", table(targeted), ""]
    for section, heading in sections.items():
        chosen = [row for row in rows if row.table == section]
        if chosen:
            out += [f"## {heading}", "", table(chosen), ""]
    if notes:
        out += ["## Notes", ""]
        out += [f"- {note}" for note in notes]
        out.append("")
    return "\n".join(out)


def write_json(
    path: Path,
    rows: Sequence[Row],
    meta: Mapping[str, Any],
    notes: Sequence[str],
    samples: Mapping[str, Mapping[int, float]],
) -> None:
    """Every derived number and the raw samples of every case (floors included), by round."""
    payload = {
        "meta": dict(meta),
        "notes": list(notes),
        "rows": [{**asdict(row), "met": row.met} for row in rows],
        "samples_by_round": {key: dict(by_round) for key, by_round in samples.items()},
    }
    path.write_text(json.dumps(payload, indent=1, default=str) + "\n")
