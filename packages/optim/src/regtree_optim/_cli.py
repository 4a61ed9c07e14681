"""The ``regtree-optim`` command: ``explain`` shows what an optimizer config does to a model."""

from __future__ import annotations

import argparse
import json
import re
import sys
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, Final

import torch

from regtree import MODELS, Registry
from regtree.cli import (
    UsageError,
    add_set_option,
    parse_command_line,
    print_exception,
    read_config,
    run_command,
)
from regtree.naming import origin

from ._registries import constructor_from_config
from ._schedulers import plan_schedule, resolve_steps

__all__ = ["main"]

PROG = "regtree-optim"
COMMANDS = ("explain",)


def main(argv: Sequence[str] | None = None, *, models: Registry[Any] | None = None) -> int:
    """Run the ``regtree-optim`` command.

    Args:
        argv: The arguments, without the program name; ``sys.argv[1:]`` when None.
        models: The registry that builds the config's ``model`` section; ``regtree.MODELS``
            (whose tree reaches every installed plugin) when None.

    Returns:
        The exit status: 0 on success, 1 when the model or the optimizer cannot be built, 2 for a
        bad command line or an unreadable config file.
    """
    arguments = _attach_negative_steps(list(sys.argv[1:] if argv is None else argv))
    options = parse_command_line(PROG, build_parser(), arguments, COMMANDS, hint_cutoff=0.5)
    if isinstance(options, int):
        return options
    return run_command(PROG, partial(_run_explain, options, MODELS if models is None else models))


# A comma-separated list of steps, the first one negative ("-1,0").
_NEGATIVE_STEPS: Final = re.compile(r"-\d+(,-?\d+)*")


def _attach_negative_steps(arguments: list[str]) -> list[str]:
    """Write ``--at -1,0`` as ``--at=-1,0``, which argparse reads as the option's value.

    argparse takes a word that starts with ``-`` for an option unless it is one negative number
    (``-1``); ``--at`` is the only option whose value may start with ``-``.
    """
    end = arguments.index("--") if "--" in arguments else len(arguments)
    attached: list[str] = []
    index = 0
    while index < len(arguments):
        word = arguments[index]
        if word == "--at" and index + 1 < end and _NEGATIVE_STEPS.fullmatch(arguments[index + 1]):
            attached.append(f"--at={arguments[index + 1]}")
            index += 2
        else:
            attached.append(word)
            index += 1
    return attached


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of ``regtree-optim``."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="Inspect what regtree_optim does with an optimizer config."
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    explain = commands.add_parser(
        "explain",
        help="the lr, weight decay, rule and group of every parameter",
        description=(
            "Build the model from CONFIG's 'model' section and print, for every parameter, the "
            "lr, weight decay, rule and group that the 'optimizer' section gives it (as "
            "build_optimizer would), then a summary. Nothing is trained."
        ),
    )
    explain.add_argument(
        "config", metavar="CONFIG", help="a .toml, .json, .yaml, .yml or .py config file"
    )
    explain.add_argument("--json", action="store_true", help="print JSON (to diff two configs)")
    add_set_option(explain)
    explain.add_argument(
        "--at",
        metavar="STEPS",
        type=_steps,
        help=(
            "comma-separated steps, e.g. 0,500,-1: add each parameter's lr after that many steps "
            "of the config's 'scheduler' section (negative: counted back from its end)"
        ),
    )
    explain.add_argument(
        "--device",
        type=_device,
        help=(
            "build the model's parameters on this device, e.g. meta: a multi-billion-parameter "
            "model's groups without allocating its weights"
        ),
    )
    return parser


def _device(text: str) -> Any:
    try:
        device = torch.device(text)
    except (RuntimeError, ValueError):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a torch device; try meta, cpu or cuda"
        ) from None
    try:
        torch.empty(0, device=device)  # a device this torch cannot use (cuda without CUDA)
    except (RuntimeError, AssertionError) as exc:  # torch asserts it was built with CUDA
        raise argparse.ArgumentTypeError(
            f"{text!r} is a torch device this machine's torch cannot use ({exc}); try meta, "
            "which shows the groups without allocating, or cpu"
        ) from None
    return device


def _run_explain(options: argparse.Namespace, models: Registry[Any]) -> int:
    path: str = options.config
    cfg = read_config(path, options.overrides)
    model_cfg, optimizer_cfg = _load_sections(path, cfg)
    at: list[int] | None = options.at
    scheduler_cfg = None if at is None else _scheduler_section(path, cfg)
    if scheduler_cfg is not None and at is not None:
        try:
            plan_schedule(scheduler_cfg)
        except (TypeError, ValueError):
            pass  # the config's own problem: the explain below fails on it, as a failed build
        else:
            try:  # steps the schedule has not are a bad command line, found before any build
                resolve_steps(scheduler_cfg, at)
            except (TypeError, ValueError) as exc:
                raise UsageError(f"{path}: --at {','.join(map(str, at))}: {exc}") from None
    try:
        # Warnings (a skipped shared parameter, an unused custom key) belong in the report.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if options.device is None:
                model = models.build(model_cfg)
            else:
                # Every parameter the model's constructor creates lands there (torch's default
                # device); on meta nothing is allocated.
                with options.device:
                    model = models.build(model_cfg)
            explanation = _explain(model, optimizer_cfg, scheduler_cfg, at)
    except Exception as exc:
        print_exception(f"{PROG}: explaining {path} failed:", exc)
        return 1
    notes = list(dict.fromkeys(str(warning.message) for warning in caught))
    for note in notes:
        print(f"{PROG}: warning: {note}", file=sys.stderr)
    _print_report(path, explanation, notes, as_json=options.json, at=at)
    return 0


def _print_report(
    path: str, explanation: Any, notes: list[str], *, as_json: bool, at: list[int] | None
) -> None:
    """Print the explanation as a table and a summary per rule, or as one JSON document."""
    rows = list(explanation)
    groups = sorted({row.group for row in rows})
    rules = Counter(row.rule for row in rows)
    if as_json:
        report = {
            "config": path,
            "parameters": [
                {
                    "name": row.name,
                    "shape": list(row.shape),
                    "lr": row.lr,
                    "weight_decay": row.weight_decay,
                    "lr_mult": row.lr_mult,
                    "decay_mult": row.decay_mult,
                    "rule": row.rule,
                    "group": row.group,
                    **({"optimizer": row.optimizer} if row.optimizer is not None else {}),
                    **({"lr_at": {str(step): lr for step, lr in row.lr_at.items()}} if at else {}),
                }
                for row in rows
            ],
            "summary": {
                "parameters": len(rows),
                "groups": len(groups),
                "rules": dict(rules.most_common()),
            },
            "warnings": notes,
        }
        print(json.dumps(report, indent=2))
        return
    print(explanation)
    print()
    print(f"{len(rows)} parameters in {len(groups)} groups; parameters per rule:")
    width = max((len(rule) for rule in rules), default=0)
    for rule, count in rules.most_common():
        print(f"  {rule:<{width}}  {count}")


def _load_sections(
    path: str, cfg: Mapping[str, Any]
) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    sections = []
    for name in ("model", "optimizer"):
        section = cfg.get(name)
        if not isinstance(section, Mapping):
            found = ", ".join(map(str, cfg))
            problem = "has no" if section is None else "needs a table as its"
            raise UsageError(
                f"{path}: the config {problem} {name!r} section (explain needs 'model' and "
                f"'optimizer'; the file has: {found})"
            )
        sections.append(section)
    return sections[0], sections[1]


def _steps(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a comma-separated list of step numbers, such as 0,500,-1"
        ) from None


def _scheduler_section(path: str, cfg: Mapping[str, Any]) -> Any:
    section = cfg.get("scheduler")
    if not isinstance(section, Mapping | list) or (
        isinstance(section, list) and not all(isinstance(item, Mapping) for item in section)
    ):
        problem = "has no" if section is None else "needs a table or a list of tables as its"
        raise UsageError(
            f"{path}: the config {problem} 'scheduler' section, which --at steps through "
            "(a table such as [scheduler] type = 'CosineAnnealingLR', or phases as "
            "[[scheduler]] tables)"
        )
    return section


def _explain(
    model: Any,
    optimizer_cfg: Mapping[str, Any],
    scheduler_cfg: Any = None,
    at: list[int] | None = None,
) -> Any:
    """Build the constructor exactly as ``build_optimizer`` does and ask it to explain."""
    constructor_type, constructor = constructor_from_config(optimizer_cfg)
    explain = getattr(constructor, "explain", None)
    if not callable(explain):
        raise TypeError(
            f"optimizer constructor {constructor_type!r} ({origin(type(constructor))}) has "
            "no explain(model) method; derive it from DefaultOptimizerConstructor to get one"
        )
    if at is None:
        return explain(model)
    return explain(model, scheduler=scheduler_cfg, at=at)
