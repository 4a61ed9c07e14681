"""Optimizer benchmarks: constructor, duplicate bypass, group counts and step(), beside one group.

The floor of every benchmark is the same optimizer built by torch directly with one group holding
every parameter (``torch.optim.SGD(model.parameters(), ...)`` on CPU): what a constructor costs at
the least and what steps at the fastest.
"""

from __future__ import annotations

import copy
import math
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch
from _libs import OURS, REFERENCE, Library
from _models import RESNET50_TENSORS, blocks_model, resnet50_like, shared_model
from _report import Row, Target
from _rules_reference import check_reference, reference_optimizer
from _timing import Case, Samples, paired_ratio, region_case, run_interleaved

OPTIMIZER: dict[str, Any] = {"type": "SGD", "lr": 0.01, "momentum": 0.9, "weight_decay": 1e-4}
PARAMWISE: dict[str, Any] = {
    "bias_lr_mult": 2.0,
    "bias_decay_mult": 0.0,
    "norm_decay_mult": 0.0,
    "dwconv_decay_mult": 0.0,
    "custom_keys": {"head": {"lr_mult": 0.1}},
}
# SPEC 3.3 on top of PARAMWISE: five rules using every kind of selector, and layer decay by a
# [regex, n] list giving each of the 100 backbone stages its own layer (654 groups at 10,000).
RULES_PARAMWISE: dict[str, Any] = {
    **PARAMWISE,
    "rules": [
        {"match": "backbone.*", "lr_mult": 0.5},
        {"module": "norm", "decay_mult": 0.5},
        {"name": "bias", "ndim": 1, "lr_mult": 0.9},
        {"regex": r"\.4\.weight$", "lr_mult": 2.0},
        {"module": "conv", "exclude": "head.*", "momentum": 0.8},
    ],
    "layer_decay": {"rate": 0.9, "depth": [[r"backbone\.(\d+)\.", 0]], "num_layers": 101},
}
RULES_SIZE = 10_000
CUDA_OPTIMIZER: dict[str, Any] = {"type": "AdamW", "lr": 1e-3, "weight_decay": 0.05, "fused": True}
CUDA_PARAMWISE: dict[str, Any] = {"norm_decay_mult": 0.0, "bias_decay_mult": 0.0}
CONSTRUCTOR_SIZES = (1_000, 10_000)
BYPASS_SIZES = (500, 1_000, 2_000, 4_000, 8_000, 16_000)
# A peer size projected to take longer than this is skipped, as the issue asks.
PEER_SIZE_LIMIT_S = 60.0
LINEAR_EXPONENT = 1.2


def _floor(model: torch.nn.Module, optimizer_cfg: dict[str, Any]) -> torch.optim.Optimizer:
    """One group holding everything, with the same optimizer and options."""
    options = {key: value for key, value in optimizer_cfg.items() if key != "type"}
    optimizer_cls = getattr(torch.optim, optimizer_cfg["type"])
    optimizer: torch.optim.Optimizer = optimizer_cls(model.parameters(), **options)
    return optimizer


Build = Callable[[torch.nn.Module], Callable[[], torch.optim.Optimizer]]


def _builder(
    lib: Library | None, optimizer_cfg: dict[str, Any], paramwise_cfg: dict[str, Any]
) -> Build:
    """Bind a model to a zero-argument call constructing its optimizer (no ``lib``: the floor).

    The configs are copied before the call, untimed, so that no library sees another's.
    """
    if lib is None:
        return lambda model: lambda: _floor(model, optimizer_cfg)
    construct = lib.construct
    assert construct is not None

    def bind(model: torch.nn.Module) -> Callable[[], torch.optim.Optimizer]:
        optimizer_copy, paramwise_copy = copy.deepcopy(optimizer_cfg), copy.deepcopy(paramwise_cfg)

        def build() -> torch.optim.Optimizer:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # duplicate-skipped warnings, alike for all
                return construct(model, optimizer_copy, paramwise_copy)

        return build

    return bind


def _construct_case(
    key: str,
    bind: Build,
    model: torch.nn.Module,
    built: dict[str, torch.optim.Optimizer],
    max_samples: int = 1_000_000,
    warmup: bool = True,
) -> Case:
    """Time one construction; the optimizer is kept in ``built`` so it is freed untimed."""

    def prepare() -> Callable[[], object]:
        built.pop(key, None)
        build = bind(model)

        def timed() -> None:
            built[key] = build()

        return timed

    return region_case(key, prepare, max_samples=max_samples, warmup=warmup)


def _growth_exponent(points: list[tuple[int, float]]) -> float:
    """Least-squares slope of log(time) against log(size): 1 is linear, 2 quadratic."""
    if len(points) < 2:
        return math.nan
    xs = [math.log(size) for size, _ in points]
    ys = [math.log(seconds) for _, seconds in points]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    num = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True))
    den = sum((x - mean_x) ** 2 for x in xs)
    return num / den


class OptimBench:
    """Runs the optimizer benchmarks within a time budget and collects rows and samples."""

    def __init__(self, libraries: dict[str, Library], budget_s: float) -> None:
        self.libraries = {name: lib for name, lib in libraries.items() if lib.construct}
        self.deadline = time.perf_counter() + budget_s
        self.rows: list[Row] = []
        self.samples: dict[str, Samples] = {}
        self.notes: list[str] = []
        self.built: dict[str, torch.optim.Optimizer] = {}

    def remaining(self) -> float:
        """Seconds left of the budget."""
        return self.deadline - time.perf_counter()

    def _row(self, table: str, benchmark: str, key: str, floor_key: str, **extra: Any) -> None:
        value, floor = self.samples.get(key), self.samples.get(floor_key)
        if value is None or floor is None or not value.ok or not floor.ok:
            failed = value if value is not None and value.error else floor
            reason = failed.error if failed is not None and failed.error else "see the notes"
            extra.pop("note", None)
            self.rows.append(
                Row(
                    table,
                    benchmark,
                    key.split(".")[0],
                    None,
                    extra.pop("floor_label", "SGD, one group"),
                    note=f"not measured: {reason}",
                    **extra,
                )
            )
            return
        self.rows.append(
            Row(
                table,
                benchmark,
                key.split(".")[0],
                value.median,
                extra.pop("floor_label", "SGD, one group"),
                floor.median,
                paired_ratio(value, floor),
                samples=value.values,
                **extra,
            )
        )

    def constructor(self) -> None:
        """Constructor with a paramwise_cfg at 1,000 and 10,000 tensors, and group counts."""
        per_size_s: dict[str, float] = {}
        for size in CONSTRUCTOR_SIZES:
            model = blocks_model(size)
            cases = [
                _construct_case(
                    f"floor.ctor.{size}", _builder(None, OPTIMIZER, {}), model, self.built
                )
            ]
            for name, lib in self.libraries.items():
                key = f"{name}.ctor.{size}"
                build = _builder(lib, OPTIMIZER, PARAMWISE)
                if name == OURS:
                    cases.append(_construct_case(key, build, model, self.built))
                    continue
                small = per_size_s.get(name)
                if size == CONSTRUCTOR_SIZES[0]:
                    projected = 0.0
                elif small is None:
                    projected = math.inf
                else:
                    projected = small * (size / CONSTRUCTOR_SIZES[0]) ** 2
                if projected > min(3 * PEER_SIZE_LIMIT_S, self.remaining() / 3):
                    self.notes.append(
                        f"{name}: constructor at {size:,} tensors skipped, projected"
                        f" {projected:.0f} s (quadratic from the smaller size's time)"
                    )
                    continue
                slow = small is not None and projected > 2.0
                cases.append(
                    _construct_case(
                        key, build, model, self.built, max_samples=1 if slow else 9, warmup=not slow
                    )
                )
            self.samples |= run_interleaved(cases, rounds=15, budget_s=min(20.0, self.remaining()))
            for name in self.libraries:
                key = f"{name}.ctor.{size}"
                found = self.samples.get(key)
                if found is None:
                    continue
                if found.ok:
                    per_size_s[name] = found.wall
                # Issue 11's goal: at most 1.5x the one-group floor at 10,000 tensors.
                target = Target(1.5) if name == OURS and size == CONSTRUCTOR_SIZES[-1] else None
                built = self.built.get(key)
                self._row(
                    "constructor",
                    f"constructor, {size:,} tensors",
                    key,
                    f"floor.ctor.{size}",
                    target=target,
                    note="" if built is None else f"{len(built.param_groups):,} groups",
                )
            for name in self.libraries:
                key = f"{name}.ctor.{size}"
                if key in self.built:
                    self.rows.append(
                        Row(
                            "groups",
                            f"param groups, {size:,} tensors",
                            name,
                            float(len(self.built.pop(key).param_groups)),
                            "one group",
                            1.0,
                            None,
                            unit="count",
                        )
                    )
            self.built.clear()

    def rules_constructor(self) -> None:
        """The constructor with five rules and layer decay at 10,000 tensors (SPEC 3.3)."""
        lib = self.libraries.get(OURS)
        if lib is None:
            return
        model = blocks_model(RULES_SIZE)
        floor_key, key = f"floor.rules.{RULES_SIZE}", f"{OURS}.rules.{RULES_SIZE}"
        reference_key = f"{REFERENCE}.rules.{RULES_SIZE}"
        cases = [
            _construct_case(floor_key, _builder(None, OPTIMIZER, {}), model, self.built),
            _construct_case(key, _builder(lib, OPTIMIZER, RULES_PARAMWISE), model, self.built),
            _construct_case(
                reference_key,
                lambda model: lambda: reference_optimizer(model, OPTIMIZER),
                model,
                self.built,
            ),
        ]
        self.samples |= run_interleaved(cases, rounds=15, budget_s=min(30.0, self.remaining()))
        built, reference = self.built.get(key), self.built.get(reference_key)
        benchmark = f"constructor, {RULES_SIZE:,} tensors, five rules and layer decay"
        groups = "" if built is None else f"{len(built.param_groups):,} groups"
        self._row("constructor", benchmark, key, floor_key, target=Target(2), note=groups)
        note = "the rules written out by hand as one per-parameter loop, for comparison"
        if built is not None and reference is not None:
            try:
                check_reference(reference, built)
            except ValueError as error:
                note = f"not comparable: {error}"
        self._row("constructor", benchmark, reference_key, floor_key, note=note)
        self.built.clear()

    def bypass(self) -> None:
        """``bypass_duplicate`` on models whose layers are all reached twice, at growing sizes."""
        paramwise = {**PARAMWISE, "bypass_duplicate": True}
        budget_s = max(30.0, self.remaining() * 0.45)
        deadline = time.perf_counter() + budget_s
        points: dict[str, list[tuple[int, float]]] = {"floor": []}
        points |= {name: [] for name in self.libraries}
        # Wall time per sample, for projecting what the next size would cost this run.
        walls: dict[str, list[tuple[int, float]]] = {name: [] for name in points}
        skipped: dict[str, list[int]] = {name: [] for name in self.libraries}
        for size in BYPASS_SIZES:
            model = shared_model(size)
            cases = [
                _construct_case(
                    f"floor.bypass.{size}", _builder(None, OPTIMIZER, {}), model, self.built
                )
            ]
            for name, lib in self.libraries.items():
                known = walls[name]
                if known:
                    exponent = _growth_exponent(known) if len(known) > 1 else 2.0
                    last_size, last_s = known[-1]
                    projected = last_s * (size / last_size) ** max(exponent, 1.0)
                else:
                    projected = 0.0
                left = deadline - time.perf_counter()
                if name != OURS and (projected > PEER_SIZE_LIMIT_S or projected > left / 2):
                    skipped[name].append(size)
                    continue
                slow = projected > 2.0
                cases.append(
                    _construct_case(
                        f"{name}.bypass.{size}",
                        _builder(lib, OPTIMIZER, paramwise),
                        model,
                        self.built,
                        max_samples=1 if slow else 7,
                        warmup=not slow,
                    )
                )
            self.samples |= run_interleaved(
                cases, rounds=7, budget_s=min(10.0, max(0.0, deadline - time.perf_counter()))
            )
            floor_samples = self.samples[f"floor.bypass.{size}"]
            points["floor"].append((size, floor_samples.median))
            walls["floor"].append((size, floor_samples.wall))
            for name in self.libraries:
                key = f"{name}.bypass.{size}"
                found = self.samples.get(key)
                if found is None:
                    continue
                if found.ok:
                    points[name].append((size, found.median))
                    walls[name].append((size, found.wall))
                target = Target(3) if name == OURS and size == BYPASS_SIZES[-1] else None
                self._row(
                    "bypass",
                    f"bypass_duplicate, {size:,} tensors + duplicates",
                    key,
                    f"floor.bypass.{size}",
                    target=target,
                )
            self.built.clear()
        for name, known in points.items():
            note = f"sizes {', '.join(f'{s:,}' for s, _ in known)}" if known else "no size ran"
            if skipped.get(name):
                note += (
                    f"; skipped {', '.join(f'{s:,}' for s in skipped[name])}"
                    f" (projected over {PEER_SIZE_LIMIT_S:.0f} s or the budget)"
                )
            self.rows.append(
                Row(
                    "bypass",
                    "bypass_duplicate growth exponent",
                    name,
                    _growth_exponent(known),
                    "linear",
                    1.0,
                    None,
                    Target(LINEAR_EXPONENT, "value") if name == OURS else None,
                    unit="",
                    note=note,
                )
            )

    def step_cpu(self) -> None:
        """``step()`` with SGD's foreach and fused kernels beside one group holding everything.

        At 1,000 tensors for every library; at 10,000 for regtree only (the peers' optimizers of
        10,000 one-tensor groups take tens of seconds each to construct).
        """
        for kind in ("foreach", "fused"):
            for size in (1_000, 10_000):
                self._step(
                    f"step, {kind}, {size:,} tensors",
                    f"cpu.{kind}.{size}",
                    blocks_model(size),
                    {**OPTIMIZER, kind: True},
                    PARAMWISE,
                    "cpu",
                    "step",
                    peers=size <= 1_000,
                )

    def step_cuda(self, device: str = "cuda") -> None:
        """Fused AdamW ``step()`` on a ResNet-50-sized model, every library beside one group."""
        self._step(
            f"step, fused AdamW, ResNet-50 size ({RESNET50_TENSORS} tensors)",
            f"{device}.fused_adamw.resnet50",
            resnet50_like(),
            CUDA_OPTIMIZER,
            CUDA_PARAMWISE,
            device,
            "cuda",
            peers=True,
        )

    def _step(
        self,
        label: str,
        tag: str,
        model: torch.nn.Module,
        optimizer_cfg: dict[str, Any],
        paramwise_cfg: dict[str, Any],
        device: str,
        table: str,
        peers: bool,
    ) -> None:
        model = model.to(device)
        for param in model.parameters():
            param.grad = torch.randn_like(param) * 1e-3
        candidates: dict[str, Library | None] = {"floor": None}
        candidates |= {name: lib for name, lib in self.libraries.items() if name == OURS or peers}
        cases = []
        groups: dict[str, int] = {}
        for name, lib in candidates.items():
            key = f"{name}.step.{tag}"
            try:
                optimizer = _builder(lib, optimizer_cfg, paramwise_cfg)(model)()
                cases.append(_step_case(key, optimizer, device))
            except Exception as error:  # a library that breaks is reported, never fatal
                self.samples[key] = Samples(key, error=f"{type(error).__name__}: {error}")
                continue
            groups[name] = len(optimizer.param_groups)
        self.samples |= run_interleaved(cases, rounds=25, budget_s=min(12.0, self.remaining()))
        for name in candidates:
            if name != "floor":
                self._row(
                    table,
                    label,
                    f"{name}.step.{tag}",
                    f"floor.step.{tag}",
                    floor_label="one group",
                    target=Target(1.1) if name == OURS else None,
                    note=f"{groups[name]:,} groups" if name in groups else "",
                )


def _step_case(key: str, optimizer: torch.optim.Optimizer, device: str) -> Case:
    """Time ``optimizer.step()`` repeated to about 40 ms per sample."""

    def sync() -> None:
        if device != "cpu":
            torch.cuda.synchronize()

    optimizer.step()  # momentum/moment buffers exist from here on
    sync()
    start = time.perf_counter()
    optimizer.step()
    sync()
    repeats = max(1, min(200, round(0.04 / max(time.perf_counter() - start, 1e-6))))

    def prepare() -> Callable[[], object]:
        def timed() -> None:
            for _ in range(repeats):
                optimizer.step()
            sync()

        return timed

    # CUDA work runs off this process's CPU: wall time, with a synchronize closing each sample.
    clock = time.process_time if device == "cpu" else time.perf_counter
    return region_case(key, prepare, ops=repeats, clock=clock)
