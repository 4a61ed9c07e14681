"""Medians of the core's hot paths beside their floors, interleaved in one process.

Not a test and not the ``bench`` session: a quick check while working on the core.
Run: ``python benchmarks/micro_core.py``.
"""

from __future__ import annotations

import statistics
import timeit

from regtree import Registry, build_from_cfg  # noqa: F401 - used by the timed statements

ROOT: Registry[object] = Registry("model", scope="bench_root")
LEFT: Registry[object] = Registry("model", parent=ROOT, scope="bench_left")
RIGHT: Registry[object] = Registry("model", parent=ROOT, scope="bench_right")


@LEFT.register_module()
class Trivial:
    """A class with nothing to do."""


@LEFT.register_module()
class WithInit:
    """A class that stores one argument."""

    def __init__(self, value: int = 0) -> None:
        self.value = value


RIGHT.register_module(name="Other", module=Trivial)
PLAIN = {"Trivial": Trivial}
CFG = {"type": "Trivial"}
CFG_INIT = {"type": "WithInit", "value": 1}
CLASSES = [type(f"C{i}", (), {}) for i in range(10_000)]


def register_all() -> None:
    registry: Registry[object] = Registry("model", scope="bench_register")
    for cls in CLASSES:
        registry.register_module()(cls)


def median_ns(stmt: str, number: int) -> float:
    timer = timeit.Timer(stmt, globals=globals())
    return min(timer.repeat(repeat=3, number=number)) / number * 1e9


CASES = {
    "dict.get": ("PLAIN.get('Trivial')", 200_000),
    "local get": ("LEFT.get('Trivial')", 200_000),
    "cross get (child->sibling)": ("LEFT.get('bench_right.Other')", 200_000),
    "cross get (root->child)": ("ROOT.get('bench_left.Trivial')", 200_000),
    "miss": ("LEFT.get('Missing')", 200_000),
    "direct call Trivial()": ("Trivial()", 200_000),
    "R.build trivial": ("LEFT.build(CFG)", 100_000),
    "build_from_cfg trivial": ("build_from_cfg(CFG, LEFT)", 100_000),
    "direct call WithInit(value=1)": ("WithInit(value=1)", 200_000),
    "R.build WithInit": ("LEFT.build(CFG_INIT)", 100_000),
    "register 10,000 (per class)": ("register_all()", 1),
}


def main() -> None:
    samples: dict[str, list[float]] = {name: [] for name in CASES}
    for _ in range(9):  # interleaved rounds, so drift hits every case alike
        for name, (stmt, number) in CASES.items():
            value = median_ns(stmt, number)
            if name.startswith("register"):
                value /= len(CLASSES)
            samples[name].append(value)
    result = {name: statistics.median(values) for name, values in samples.items()}
    for name, value in result.items():
        print(f"{name:32s} {value:9.1f} ns")
    print()
    print(f"local get / dict.get        {result['local get'] / result['dict.get']:.2f}x")
    for cross in ("cross get (child->sibling)", "cross get (root->child)"):
        print(f"{cross} / local get  {result[cross] / result['local get']:.2f}x")
    print(f"miss / dict.get             {result['miss'] / result['dict.get']:.2f}x")
    trivial = result["direct call Trivial()"]
    print(f"R.build / direct (trivial)  {result['R.build trivial'] / trivial:.2f}x")
    print(f"build_from_cfg / direct     {result['build_from_cfg trivial'] / trivial:.2f}x")
    with_init = result["direct call WithInit(value=1)"]
    print(f"R.build / direct (WithInit) {result['R.build WithInit'] / with_init:.2f}x")


if __name__ == "__main__":
    main()
