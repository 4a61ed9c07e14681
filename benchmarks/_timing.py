"""Interleaved timing: every case of a benchmark is sampled in turn, round after round.

Absolute times on a shared machine drift by tens of percent within a minute, so a case and its
floor are always sampled next to each other and compared round by round (paired ratios).
"""

from __future__ import annotations

import gc
import random
import statistics
import time
import timeit
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

# CPU time of this process, not wall time: on a shared machine the other tenants' load stretches
# wall time by whole scheduler slices, but not the CPU time this process itself spends.
CLOCK = time.process_time

# Statements are repeated this many times per loop iteration so that the loop's own cost
# (a few ns) is spread over many operations instead of inflating the cheapest floors.
UNROLL = 20


@dataclass
class Case:
    """One thing to time: ``sample()`` returns the seconds one operation took, one sample."""

    key: str
    sample: Callable[[], float]
    # At most this many samples; expensive peer cases are sampled less than cheap ones.
    max_samples: int = 1_000_000
    # An untimed first sample; off for cases too slow to run twice.
    warmup: bool = True


@dataclass
class Samples:
    """The raw samples of one case, indexed by round so that ratios can be paired."""

    key: str
    by_round: dict[int, float] = field(default_factory=dict)
    # Wall time each sample took, set-up included: what the run's time budget pays.
    wall_by_round: dict[int, float] = field(default_factory=dict)
    # What the case raised, if it did; it is then sampled no more.
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the case has samples and never failed."""
        return self.error is None and bool(self.by_round)

    @property
    def values(self) -> list[float]:
        """Samples in round order."""
        return [self.by_round[r] for r in sorted(self.by_round)]

    @property
    def median(self) -> float:
        """Median seconds per operation."""
        return statistics.median(self.values)

    @property
    def wall(self) -> float:
        """Median wall-clock seconds of one whole sample, for budgeting."""
        return statistics.median(self.wall_by_round.values())


def statement_case(
    key: str,
    stmt: str,
    namespace: Mapping[str, Any],
    target_s: float = 0.004,
) -> Case:
    """Time a one-line statement with timeit, unrolled, its names bound as locals.

    Args:
        key: Identifier of the case.
        stmt: One statement, e.g. ``"reg.get(key)"``.
        namespace: Objects the statement uses; each becomes a local of the timing loop.
        target_s: Roughly how long one sample lasts; the loop count is calibrated to it.

    Returns:
        A case whose samples are seconds per execution of ``stmt``.
    """
    setup = "\n".join(f"{name} = __ns[{name!r}]" for name in namespace)
    body = "\n".join([stmt] * UNROLL)
    timer = timeit.Timer(body, setup=setup, timer=CLOCK, globals={"__ns": dict(namespace)})
    calibrated: list[int] = []

    def calibrate() -> int:
        # On the first sample, so that a statement that raises fails inside run_interleaved.
        number = 1
        while True:
            elapsed = timer.timeit(number)
            if elapsed >= target_s / 4 or number >= 1 << 24:
                break
            number *= 4
        return max(1, round(number * target_s / max(elapsed, 1e-9)))

    def sample() -> float:
        if not calibrated:
            calibrated.append(calibrate())
        return timer.timeit(calibrated[0]) / (calibrated[0] * UNROLL)

    return Case(key, sample)


def region_case(
    key: str,
    prepare: Callable[[], Callable[[], object]],
    ops: int = 1,
    max_samples: int = 1_000_000,
    warmup: bool = True,
    clock: Callable[[], float] = CLOCK,
) -> Case:
    """Time one call of a region whose set-up is not timed.

    Args:
        key: Identifier of the case.
        prepare: Called untimed before each sample; returns the zero-argument callable to time
            (a fresh registry to fill, a copied config, ...).
        ops: How many operations the timed call performs; samples are per operation.
        max_samples: Cap on the number of samples of this case.
        warmup: Whether an untimed sample runs first.
        clock: The clock; wall time (``time.perf_counter``) where work happens off the CPU.

    Returns:
        A case whose samples are seconds per operation, with the garbage collector paused
        during the timed call as timeit does.
    """

    def sample() -> float:
        timed = prepare()
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            start = clock()
            timed()
            elapsed = clock() - start
        finally:
            if gc_was_enabled:
                gc.enable()
        return elapsed / ops

    return Case(key, sample, max_samples, warmup)


def run_interleaved(
    cases: list[Case],
    rounds: int,
    budget_s: float,
    seed: int = 0,
) -> dict[str, Samples]:
    """Sample every case once per round, in a shuffled order, until rounds or budget run out.

    Args:
        cases: The cases of one benchmark, floors included.
        rounds: Most rounds to run.
        budget_s: Wall-clock budget; at least three rounds run whatever it says.
        seed: Seed of the order shuffle, for reproducible runs.

    Returns:
        Samples of each case by key.
    """
    rng = random.Random(seed)
    results = {case.key: Samples(case.key) for case in cases}

    def attempt(case: Case, round_index: int | None) -> None:
        began = time.perf_counter()
        try:
            value = case.sample()
        except Exception as error:  # a library that breaks is reported, never fatal
            results[case.key].error = f"{type(error).__name__}: {error}"
            return
        if round_index is not None:
            results[case.key].by_round[round_index] = value
            results[case.key].wall_by_round[round_index] = time.perf_counter() - began

    for case in cases:  # warm-up: caches, lazy imports, specialised bytecode
        if case.warmup:
            attempt(case, None)
    start = time.perf_counter()
    for round_index in range(rounds):
        order = [
            case
            for case in cases
            if results[case.key].error is None
            and len(results[case.key].by_round) < case.max_samples
        ]
        if not order:
            break
        rng.shuffle(order)
        for case in order:
            attempt(case, round_index)
        if round_index >= 2 and time.perf_counter() - start > budget_s:
            break
    return results


def paired_ratio(numerator: Samples, denominator: Samples) -> float:
    """Median over rounds of numerator/denominator, pairing samples taken in the same round.

    Falls back to the ratio of medians when the two cases share no round.
    """
    common = sorted(set(numerator.by_round) & set(denominator.by_round))
    if not common:
        return numerator.median / denominator.median
    return statistics.median(numerator.by_round[r] / denominator.by_round[r] for r in common)
