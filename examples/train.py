"""The main job: train a detector whose backbone comes from another package, all from one config.

Usage::

    python examples/train.py configs/demo.toml --work-dir DIR [--steps N] [--resume-steps N]

It reads the config (TOML, YAML or JSON, through ``regtree.load_config``), builds ``[model]``
through ``regtree.MODELS`` (a demo_det detector whose backbone is a demo_cls model, reached by
scoped name: neither package imports the other, nor does this script import demo_cls), builds the
optimizer from ``[optimizer]`` with its paramwise_cfg and the lr schedule from ``[[scheduler]]``
(a warmup phase, then a cosine with a floor per group), prints how the parameters were grouped,
which rule decided each and their lr along the schedule, and trains on synthetic data. The run
keeps its optimizer in mmcv's layout (one group per parameter, ``merge_groups=False``) and saves a
checkpoint in it; a freshly built model and optimizer, in merged groups as the config gives them,
resume from it with the state matched by parameter name (``load_state_dict_by_name``). The
resumed run must equal the uninterrupted one exactly.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import sys
import time
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import torch
from torch import nn

import regtree
from demo_det import synthetic_batch
from regtree_optim import (
    DefaultOptimizerConstructor,
    Explanation,
    build_optimizer,
    build_optimizer_constructor,
    build_scheduler,
    load_state_dict_by_name,
)

Schedule = Mapping[str, Any] | Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class TrainSettings:
    """The ``[train]`` table of the config.

    Attributes:
        seed: Seeds the model's initialisation and the synthetic data.
        steps: Steps before the checkpoint.
        resume_steps: Steps after resuming from the checkpoint.
        batch_size: Images per step.
        image_size: Side of each synthetic image, in pixels.
        log_every: Print the loss every this many steps.
        num_threads: torch's intra-op threads; the model is so small that one is fastest, and
            more only spin against each other on a busy machine.
    """

    seed: int = 0
    steps: int = 60
    resume_steps: int = 20
    batch_size: int = 16
    image_size: int = 32
    log_every: int = 10
    num_threads: int = 1

    @classmethod
    def from_table(cls, table: Mapping[str, Any]) -> TrainSettings:
        """Read the ``[train]`` table; an unknown key or a non-int value is an error."""
        known = {field.name for field in fields(cls)}
        for key, value in table.items():
            if key not in known:
                close = difflib.get_close_matches(key, sorted(known), n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise SystemExit(
                    f"config error: unknown key {key!r} in [train]; {hint}known keys: "
                    f"{', '.join(sorted(known))}"
                )
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise SystemExit(
                    f"config error: [train] {key} must be a non-negative integer, got {value!r}"
                )
        return cls(**table)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "config", type=Path, help="the config (TOML, YAML or JSON), e.g. configs/demo.toml"
    )
    parser.add_argument(
        "--work-dir", type=Path, required=True, help="where the checkpoints are written"
    )
    parser.add_argument("--steps", type=int, help="override [train] steps")
    parser.add_argument("--resume-steps", type=int, help="override [train] resume_steps")
    return parser.parse_args(argv)


def load_config(path: Path) -> dict[str, Any]:
    # regtree's loader: TOML, JSON, YAML or Python configs, with `_base_` (configs/demo_small.yaml).
    try:
        config = regtree.load_config(path)
    except (OSError, regtree.ConfigError) as exc:
        raise SystemExit(f"cannot read config {path}: {exc}") from exc
    missing = [table for table in ("model", "optimizer", "train") if table not in config]
    if missing:
        raise SystemExit(f"config {path} lacks the table(s) {', '.join(f'[{t}]' for t in missing)}")
    return config


def build_model(config: Mapping[str, Any], seed: int) -> nn.Module:
    torch.manual_seed(seed)
    model = regtree.MODELS.build(config["model"])
    if not isinstance(model, nn.Module):
        raise SystemExit(f"[model] built {type(model).__qualname__}, not a torch.nn.Module")
    return model


def build_optimizer_reporting_shared(
    model: nn.Module, optimizer_cfg: Mapping[str, Any]
) -> tuple[torch.optim.Optimizer, list[str]]:
    """Build the optimizer; return it with the shared parameters it skipped, as messages.

    ``bypass_duplicate`` warns once per skipped parameter; those are summarised by the caller,
    every other warning is shown as usual.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        optimizer = build_optimizer(model, optimizer_cfg)
    shared = []
    for warning in caught:
        if "bypass_duplicate" in str(warning.message):
            shared.append(str(warning.message))
        else:
            warnings.warn_explicit(
                warning.message, warning.category, warning.filename, warning.lineno
            )
    return optimizer, shared


def explain(
    model: nn.Module, optimizer_cfg: Mapping[str, Any], schedule: Schedule | None, at: list[int]
) -> Explanation:
    """Ask the same constructor that ``build_optimizer`` uses how it treats each parameter.

    With a schedule, each row also holds its lr after each step of ``at``.
    """
    cfg = copy.deepcopy(dict(optimizer_cfg))
    constructor = build_optimizer_constructor(
        {
            "type": cfg.pop("constructor", "DefaultOptimizerConstructor"),
            "paramwise_cfg": cfg.pop("paramwise_cfg", None),
            "optimizer_cfg": cfg,
        }
    )
    if not isinstance(constructor, DefaultOptimizerConstructor):
        raise SystemExit(f"{type(constructor).__qualname__} has no explain(); cannot summarise")
    with warnings.catch_warnings():
        # The same warnings build_optimizer gave, already reported.
        warnings.simplefilter("ignore")
        if schedule is None:
            return constructor.explain(model)
        return constructor.explain(model, scheduler=schedule, at=at)


def _number(value: object) -> str:
    return "-" if value is None else f"{value:.3g}" if isinstance(value, float) else str(value)


def print_optimizer_summary(
    optimizer: torch.optim.Optimizer, rows: Explanation, notes: Sequence[str]
) -> None:
    numel = {row.name: _numel(row.shape) for row in rows}
    steps = list(rows[0].lr_at) if rows else []
    print(
        f"optimizer: {type(optimizer).__name__}, {len(optimizer.param_groups)} param groups "
        f"for {len(rows)} parameter tensors ({sum(numel.values()):,} values)"
    )
    if steps:
        print("  lr: as built; lr@STEP: after STEP steps of the schedule")
    lr_heads = "".join(f"  {'lr@' + str(step):>8}" for step in steps)
    print(
        f"  {'group':>5}  {'lr':>8}{lr_heads}  {'decay':>8}  {'tensors':>7}  {'values':>7}  rules"
    )
    for index, group in enumerate(optimizer.param_groups):
        members = [row for row in rows if row.group == index]
        rules = ", ".join(sorted({row.rule for row in members}))
        lrs = "".join(f"  {_number(members[0].lr_at[step]):>8}" for step in steps)
        print(
            f"  {index:>5}  {_number(group.get('lr')):>8}{lrs}"
            f"  {_number(group.get('weight_decay')):>8}"
            f"  {len(members):>7}  {sum(numel[row.name] for row in members):>7,}  {rules}"
        )
    print("  tensors per rule:")
    for rule, count in Counter(row.rule for row in rows).most_common():
        print(f"    {count:>3}  {rule}")
    if notes:
        print(f"  {len(notes)} shared parameter(s) counted once (bypass_duplicate), e.g.:")
        print(f"    {notes[0]}")


def _numel(shape: Sequence[int]) -> int:
    total = 1
    for size in shape:
        total *= size
    return total


def check_explain_matches(optimizer: torch.optim.Optimizer, rows: Explanation) -> None:
    """Fail loudly if ``explain`` describes groups other than the optimizer's."""
    for row in rows:
        group = optimizer.param_groups[row.group]
        if row.name not in group["param_names"] or (group["lr"], group.get("weight_decay")) != (
            row.lr,
            row.weight_decay,
        ):
            raise SystemExit(
                f"explain says {row.name} is in group {row.group} with lr={row.lr}, "
                f"weight_decay={row.weight_decay}, but the optimizer's group holds "
                f"{group['param_names']} with lr={group['lr']}"
            )


def schedule_steps(schedule: Schedule | None, total: int) -> list[int]:
    """The steps whose lr the summary shows: the start, each phase's handover, middle, last."""
    if schedule is None:
        return []
    phases = [schedule] if isinstance(schedule, Mapping) else list(schedule)
    handovers = [phase["end"] for phase in phases[:-1] if isinstance(phase.get("end"), int)]
    return sorted({0, *handovers, total // 2, total - 1})


class Progress:
    """A one-line progress bar on a terminal; plain log lines elsewhere (CI, nox logs)."""

    def __init__(self, label: str, first: int, last: int, log_every: int) -> None:
        self.label, self.first, self.last, self.log_every = label, first, last, log_every
        self.tty = sys.stdout.isatty()
        self.start = time.perf_counter()

    def update(self, step: int, losses: Mapping[str, float]) -> None:
        """Show step ``step`` with its losses."""
        total = sum(losses.values())
        parts = ", ".join(
            f"{name.removeprefix('loss_')} {value:.3f}" for name, value in losses.items()
        )
        done = step - self.first + 1
        rate = done / max(time.perf_counter() - self.start, 1e-9)
        line = (
            f"  {self.label} step {step:>3}/{self.last}  loss {total:.3f} ({parts})"
            f"  {rate:.0f} steps/s"
        )
        logged = step == self.first or step == self.last or step % self.log_every == 0
        if self.tty:
            width = 20
            filled = width * done // (self.last - self.first + 1)
            bar = "#" * filled + "." * (width - filled)
            print(f"\r[{bar}]{line}", end="\n" if logged else "", flush=True)
        elif logged:
            print(line, flush=True)


def train(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
    settings: TrainSettings,
    num_classes: int,
    steps: range,
    label: str,
    verbose: bool = True,
) -> tuple[list[float], float]:
    """Train on synthetic batches; the batch of step ``s`` depends only on the seed and ``s``.

    Returns:
        The losses, and how far the groups' ``lr / initial_lr`` drifted apart at worst (relative):
        the paramwise rules set the ratios between groups, and the schedule must keep them.
    """
    compute_losses = getattr(model, "loss", None)
    if not callable(compute_losses):
        raise SystemExit(f"{type(model).__qualname__} has no loss(batch) method to train with")
    model.train()
    progress = Progress(label, steps.start, steps.stop - 1, settings.log_every) if verbose else None
    history: list[float] = []
    drift = 0.0
    for step in steps:
        generator = torch.Generator().manual_seed(settings.seed * 1_000_003 + step)
        batch = synthetic_batch(settings.batch_size, settings.image_size, num_classes, generator)
        losses: dict[str, torch.Tensor] = compute_losses(batch)
        total = torch.stack(list(losses.values())).sum()
        optimizer.zero_grad(set_to_none=True)
        total.backward()  # type: ignore[no-untyped-call]  # untyped in torch's stubs
        drift = max(drift, _ratio_drift(optimizer))
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        history.append(float(total.detach()))
        if progress is not None:
            progress.update(step, {name: float(value.detach()) for name, value in losses.items()})
    return history, drift


def _ratio_drift(optimizer: torch.optim.Optimizer) -> float:
    scales = [g["lr"] / g["initial_lr"] for g in optimizer.param_groups if "initial_lr" in g]
    if not scales or min(scales) <= 0:
        return 0.0
    return float(max(scales) / min(scales) - 1)


def fast_forward(scheduler: Any, steps: int) -> None:
    """Step a freshly built scheduler to where the checkpointed run left it.

    A scheduler's state_dict holds one entry per parameter group, so it cannot follow the
    optimizer into another layout; its lrs depend only on each group's initial lr and the step
    count, so stepping it again gives the same lrs, float for float.
    """
    with warnings.catch_warnings():
        # No optimizer.step() comes first here, on purpose.
        warnings.filterwarnings("ignore", message=r"Detected call of `lr_scheduler\.step\(\)`")
        for _ in range(steps):
            scheduler.step()


def save_checkpoint(
    path: Path, model: nn.Module, optimizer: torch.optim.Optimizer, step: int
) -> None:
    torch.save(
        {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}, path
    )


def mmcv_layout(optimizer_cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The optimizer config with one group per parameter, as mmcv's constructor builds them."""
    paramwise = dict(optimizer_cfg.get("paramwise_cfg") or {})
    return {**optimizer_cfg, "paramwise_cfg": {**paramwise, "merge_groups": False}}


def resume(
    checkpoint: Path, config: Mapping[str, Any], seed: int
) -> tuple[nn.Module, torch.optim.Optimizer, Any]:
    """Build a fresh model, optimizer and scheduler from the config, as a new process would.

    The checkpoint's optimizer state is in another group layout; it is loaded by parameter name.
    """
    model = build_model(config, seed)
    optimizer, _ = build_optimizer_reporting_shared(model, config["optimizer"])
    state = torch.load(checkpoint, weights_only=True)
    model.load_state_dict(state["model"])
    saved_groups = len(state["optimizer"]["param_groups"])
    report = load_state_dict_by_name(optimizer, state["optimizer"])
    schedule = config.get("scheduler")
    scheduler = None if schedule is None else build_scheduler(optimizer, schedule)
    if scheduler is not None:
        fast_forward(scheduler, state["step"])
    print(
        f"resumed from step {state['step']}: {len(state['model'])} model tensors; the optimizer "
        f"state of {saved_groups} groups (mmcv's layout) into {len(optimizer.param_groups)} "
        "merged groups, by parameter name:"
    )
    print(f"  {report}")
    if scheduler is not None:
        print(f"  the schedule fast-forwarded to step {state['step']}")
    return model, optimizer, scheduler


def max_difference(first: nn.Module, second: nn.Module) -> float:
    theirs = second.state_dict()
    return max(
        (
            float((mine.float() - theirs[name].float()).abs().max())
            for name, mine in first.state_dict().items()
            if mine.numel()
        ),
        default=0.0,
    )


def lrs_by_name(optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    return {name: g["lr"] for g in optimizer.param_groups for name in g["param_names"]}


def _qualified(obj: object) -> str:
    cls = type(obj)
    return f"{cls.__module__.split('.')[0]}.{cls.__qualname__}"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    config = load_config(args.config)
    settings = TrainSettings.from_table(config["train"])
    overrides = {"steps": args.steps, "resume_steps": args.resume_steps}
    settings = TrainSettings(
        **{
            **vars(settings),
            **{key: value for key, value in overrides.items() if value is not None},
        }
    )
    if min(settings.steps, settings.log_every, settings.num_threads) < 1:
        raise SystemExit(f"steps, log_every and num_threads must be at least 1, got {settings}")
    torch.set_num_threads(settings.num_threads)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    model_cfg, optimizer_cfg = config["model"], config["optimizer"]
    schedule: Schedule | None = config.get("scheduler")
    num_classes = int(model_cfg.get("num_classes", 3))
    total_steps = settings.steps + settings.resume_steps

    print(f"config: {args.config}")
    loaded_before = {scope for scope in ("demo_cls", "demo_det") if scope in sys.modules}
    model = build_model(config, settings.seed)
    backbone = getattr(model, "backbone", None)
    loaded_now = sorted({"demo_cls", "demo_det"} & sys.modules.keys() - loaded_before)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    print(
        f"model: {_qualified(model)} with backbone {_qualified(backbone)} "
        f"(from {model_cfg.get('backbone', {}).get('type')!r})"
    )
    print(
        f"  {sum(p.numel() for p in model.parameters()):,} parameters, {trainable:,} trainable; "
        f"scopes loaded through entry points while building: {', '.join(loaded_now) or 'none'}"
    )

    merged, notes = build_optimizer_reporting_shared(model, optimizer_cfg)
    rows = explain(model, optimizer_cfg, schedule, schedule_steps(schedule, total_steps))
    check_explain_matches(merged, rows)
    print_optimizer_summary(merged, rows, notes)

    # The run keeps mmcv's layout, so its checkpoint is one an mmcv-era job would have written.
    optimizer, _ = build_optimizer_reporting_shared(model, mmcv_layout(optimizer_cfg))
    scheduler = None if schedule is None else build_scheduler(optimizer, schedule)
    first_run = range(1, settings.steps + 1)
    print(
        f"training {settings.steps} steps on synthetic data (batch {settings.batch_size}), "
        f"optimizer in mmcv's layout ({len(optimizer.param_groups)} groups, one per parameter):"
    )
    history, drift = train(model, optimizer, scheduler, settings, num_classes, first_run, "train")
    checkpoint = args.work_dir / "checkpoint.pth"
    save_checkpoint(checkpoint, model, optimizer, settings.steps)
    print(
        f"saved {checkpoint} (model + optimizer state in mmcv's layout, "
        f"{checkpoint.stat().st_size:,} bytes)"
    )

    resumed, resumed_optimizer, resumed_scheduler = resume(checkpoint, config, settings.seed + 1)
    second_run = range(settings.steps + 1, total_steps + 1)
    resumed_history, resumed_drift = train(
        resumed, resumed_optimizer, resumed_scheduler, settings, num_classes, second_run, "resume"
    )
    # The uninterrupted run takes the same steps: a faithful resume ends with the same weights.
    _, reference_drift = train(
        model, optimizer, scheduler, settings, num_classes, second_run, "reference", verbose=False
    )
    difference = max_difference(model, resumed)
    same_lrs = lrs_by_name(optimizer) == lrs_by_name(resumed_optimizer)
    final = args.work_dir / "final.pth"
    save_checkpoint(final, resumed, resumed_optimizer, second_run.stop - 1)

    all_losses = history + resumed_history
    first_loss, last_loss = all_losses[0], sum(all_losses[-5:]) / len(all_losses[-5:])
    worst_drift = max(drift, resumed_drift, reference_drift)
    print(f"done in {time.perf_counter() - started:.1f} s:")
    print(
        f"  built {_qualified(model)} from {args.config.name}, with a {_qualified(backbone)} "
        "backbone reached by scoped name"
    )
    print(
        f"  grouped {len(rows)} parameter tensors into {len(merged.param_groups)} optimizer "
        "groups by the paramwise rules above"
    )
    if schedule is not None:
        print(
            f"  scheduled the lr over {total_steps} steps; every group's lr / initial lr agreed "
            f"within {worst_drift:.2g} (relative) at every step, so the paramwise ratios held"
        )
    print(
        f"  trained {settings.steps} steps in mmcv's layout, saved {checkpoint.name}, resumed in "
        f"merged groups for {settings.resume_steps} more: loss {first_loss:.3f} -> "
        f"{last_loss:.3f} (mean of the last 5 steps)"
    )
    verdict = "equal" if difference == 0 and same_lrs else "NOT equal"
    print(
        f"  the resumed run and the uninterrupted one are {verdict}: weights differ by at most "
        f"{difference:.2g}, lrs {'identical' if same_lrs else 'differ'}; final state in {final}"
    )
    if verdict != "equal":
        print("error: the resumed run diverged from the uninterrupted one", file=sys.stderr)
        return 1
    if worst_drift > 1e-12:
        print("error: the schedule broke the ratios between groups", file=sys.stderr)
        return 1
    if not last_loss < first_loss:
        print("error: the loss did not fall", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
