"""``explain``'s result: one row per parameter, printable as a table."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import torch

__all__ = ["Explanation", "ParamRow"]

_COLUMNS = ("group", "name", "shape", "lr", "weight_decay", "rule")


@dataclass(frozen=True, slots=True)
class ParamRow:
    """How one parameter is optimized.

    Attributes:
        name: Its name in the unwrapped model.
        shape: Its shape.
        lr: The learning rate its group gets (None when the optimizer has none).
        weight_decay: The weight decay its group gets (None when the optimizer has none).
        rule: What decided them: every rule that applied, in order (a custom key, a paramwise
            multiplier, ``rules[2]``, ``layer_decay[3/14]``, ...), or ``frozen ...``, ``default``.
        group: Index of its group in the optimizer's ``param_groups``.
        lr_mult: The product of the lr multipliers applied, layer decay included (1 where none).
        decay_mult: The product of the weight-decay multipliers applied (1 where none).
        lr_at: With ``explain(model, scheduler=..., at=...)``: each step of ``at`` (as given)
            mapped to the lr the optimizer holds after that many ``scheduler.step()`` calls;
            empty otherwise.
        optimizer: The sub-optimizer of a ``RoutedOptimizer`` that steps it; None otherwise.
    """

    name: str
    shape: tuple[int, ...]
    lr: Any
    weight_decay: Any
    rule: str
    group: int
    lr_mult: Any = 1.0
    decay_mult: Any = 1.0
    lr_at: Mapping[int, Any] = field(default_factory=dict)
    optimizer: str | None = None


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, torch.Tensor) and value.numel() == 1 and not value.is_meta:
        # A tensor lr as the float it holds, exactly, as a float lr prints (str() rounds it).
        return repr(value.item())
    return str(value)


class Explanation(Sequence[ParamRow]):
    """The rows of ``DefaultOptimizerConstructor.explain``, in model order.

    A read-only sequence of :class:`ParamRow`; ``str()`` (and so ``print``) renders a table.
    """

    __slots__ = ("_rows",)

    def __init__(self, rows: Sequence[ParamRow]) -> None:
        self._rows = tuple(rows)

    @overload
    def __getitem__(self, index: int) -> ParamRow: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[ParamRow]: ...

    def __getitem__(self, index: int | slice) -> ParamRow | Sequence[ParamRow]:
        return self._rows[index]

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[ParamRow]:
        return iter(self._rows)

    def __repr__(self) -> str:
        return f"Explanation({len(self._rows)} parameters)\n{self}"

    def __str__(self) -> str:
        # With a schedule, one lr column per step asked for, after the lr the group starts with.
        steps = list(self._rows[0].lr_at) if self._rows else []
        lr_index = _COLUMNS.index("lr") + 1
        header = [*_COLUMNS[:lr_index], *(f"lr@{step}" for step in steps), *_COLUMNS[lr_index:]]
        # A RoutedOptimizer's rows say which sub-optimizer steps them, after the group.
        routed = any(row.optimizer is not None for row in self._rows)
        if routed:
            header.insert(1, "optimizer")
        table = [header]
        for row in self._rows:
            cells = [_cell(getattr(row, column)) for column in _COLUMNS]
            cells[lr_index:lr_index] = [_cell(row.lr_at.get(step)) for step in steps]
            if routed:
                cells.insert(1, _cell(row.optimizer))
            table.append(cells)
        widths = [max(len(line[i]) for line in table) for i in range(len(header))]
        lines = [
            "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True))
            for line in table
        ]
        lines.insert(1, "  ".join("-" * width for width in widths))
        return "\n".join(line.rstrip() for line in lines)
