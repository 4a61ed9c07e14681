"""Compare regtree_optim's parameter groups with mmcv 1.7.2's and mmengine 0.10.7's, per tensor.

Usage: ``python benchmarks/compat.py [--cases 220] [--seed 0]``; ``python3 -m nox -s compat``
installs the peers (as the benchmarks do) and runs this.

Every seeded random config runs on its model three ways: ours with
``decay_precedence='mmcv'`` against mmcv's ``DefaultOptimizerConstructor``, and with
``'mmengine'`` against mmengine's ``DefaultOptimWrapperConstructor``. For each parameter the
``(lr, weight_decay)`` its group gets must be equal to the float, parameters must come in the same
order, and two parameters must share a group here exactly when their groups hold the same
settings there (the peers make one group per parameter). A difference is counted under a
documented kind (README, "Coming from mmcv/mmengine") only when the parameter has that kind's
feature; any other is undocumented, printed, and fails the run.

The peers' code is imported, never copied. Without their compiled ops they know no deformable
conv, so their check for one is pointed at the same stand-in classes registered here with
``register_dcn_type`` (``mmcv.ops`` is a stand-in module holding them).
"""

from __future__ import annotations

import argparse
import copy
import importlib
import sys
import types
import warnings
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
from _compat_cases import (
    MODELS,
    Case,
    DeformConvStandIn,
    ModulatedDeformConvStandIn,
    ScaleNorm,
    random_cases,
)
from _libs import Construct, load_libraries, versions
from torch import nn

# Keys mmengine copies from a custom_keys entry into the group besides the options.
MMENGINE_COPIED_MULTS = ("lr_mult", "decay_mult")

DEPTHWISE_1D_3D = "depthwise: Conv1d/Conv3d with groups == in_channels > 1 count here only"
DEPTHWISE_SINGLE = "depthwise: Conv2d with in_channels == groups == 1 counts in the peers only"
NORM_TYPES = "norm layers: RMSNorm and register_norm_type types are norms here only"
FLAT_MMCV = "flat_decay_mult: mmcv 1.x has no such key"
FROZEN_KEPT = "frozen parameters: kept here with the defaults, dropped by mmengine"
OPTIONS_COPIED = "custom_keys options: copied into groups here, not by mmcv"


def teach_peers_deformable_convs() -> None:
    """Point the peers' deformable-conv test at the stand-ins we register with register_dcn_type."""
    ops = types.ModuleType("mmcv.ops")
    ops.DeformConv2d = DeformConvStandIn  # type: ignore[attr-defined]
    ops.ModulatedDeformConv2d = ModulatedDeformConvStandIn  # type: ignore[attr-defined]
    sys.modules["mmcv.ops"] = ops
    mmcv_constructor = importlib.import_module("mmcv.runner.optimizer.default_constructor")
    setattr(mmcv_constructor, "check_ops_exist", lambda: True)  # noqa: B010  # no stubs
    mmengine_constructor = importlib.import_module("mmengine.optim.optimizer.default_constructor")
    setattr(mmengine_constructor, "mmcv_full_available", lambda: True)  # noqa: B010


@dataclass
class Tally:
    """What one peer's comparison found."""

    cases: int = 0
    both_built: int = 0
    both_raised: int = 0
    parameters: int = 0
    equal: int = 0
    documented: Counter[str] = field(default_factory=Counter)
    stripped_mults: int = 0
    undocumented: list[str] = field(default_factory=list)


def _owners(model: nn.Module) -> dict[int, nn.Module]:
    owners: dict[int, nn.Module] = {}
    for module in model.modules():
        for param in module._parameters.values():
            if param is not None:
                owners.setdefault(id(param), module)
    return owners


def _features(
    peer: str, case: Case, param: torch.Tensor, owner: nn.Module, match_name: str
) -> list[str]:
    """The documented kinds of difference this parameter can show against ``peer``."""
    found = []
    if isinstance(owner, nn.Conv1d | nn.Conv3d) and owner.groups == owner.in_channels > 1:
        found.append(DEPTHWISE_1D_3D)
    if type(owner) is nn.Conv2d and owner.in_channels == owner.groups == 1:
        found.append(DEPTHWISE_SINGLE)
    if isinstance(owner, nn.RMSNorm | ScaleNorm):
        found.append(NORM_TYPES)
    if peer == "mmcv" and "flat_decay_mult" in case.paramwise_cfg and param.ndim == 1:
        found.append(FLAT_MMCV)
    if peer == "mmengine" and not param.requires_grad:
        found.append(FROZEN_KEPT)
    custom = case.paramwise_cfg.get("custom_keys", {})
    for key in sorted(sorted(custom), key=len, reverse=True):
        if key in match_name:
            options = set(custom[key]) - set(MMENGINE_COPIED_MULTS)
            if peer == "mmcv" and options and param.requires_grad:
                found.append(OPTIONS_COPIED)
            break
    return found


def _build(construct: Construct, model: nn.Module, case: Case, paramwise: dict[str, Any]) -> Any:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return construct(model, copy.deepcopy(case.optimizer_cfg), copy.deepcopy(paramwise))
    except Exception as error:  # compared: both sides must raise, or neither
        return error


def _settings(group: dict[str, Any], strip: Iterable[str] = ()) -> dict[str, Any]:
    skip = {"params", "param_names", *strip}
    return {key: value for key, value in group.items() if key not in skip}


def _key(settings: dict[str, Any]) -> Hashable:
    return tuple(sorted((key, repr(value)) for key, value in settings.items()))


def compare(peer: str, construct_peer: Construct, construct_ours: Construct, case: Case) -> Tally:
    """Run one case on a fresh model through ours and ``peer``; tally what differs."""
    tally = Tally(cases=1)
    torch.manual_seed(0)
    model = MODELS[case.model]()
    paramwise = {**case.paramwise_cfg, "decay_precedence": peer}
    ours = _build(construct_ours, model, case, paramwise)
    ours_split = _build(construct_ours, model, case, {**paramwise, "merge_groups": False})
    theirs = _build(construct_peer, model, case, case.paramwise_cfg)
    where = f"{peer} {case.model} {case.optimizer_cfg} {case.paramwise_cfg}"
    raised = [isinstance(result, Exception) for result in (ours, ours_split, theirs)]
    if all(raised):
        tally.both_raised = 1
        if type(ours) is not type(theirs):
            tally.undocumented.append(f"{where}: raised {ours!r} here, {theirs!r} there")
        return tally
    if any(raised):
        tally.undocumented.append(f"{where}: ours={ours!r}, theirs={theirs!r}")
        return tally
    tally.both_built = 1
    names = {id(p): name for name, p in model.named_parameters()}
    owners = _owners(model)
    params = {id(p): p for p in model.parameters()}

    def match_name(param_id: int) -> str:
        prefix, _, name = names[param_id].rpartition(".")
        return f"{prefix}.{name}"

    strip = MMENGINE_COPIED_MULTS if peer == "mmengine" else ()
    theirs_by_param: dict[int, dict[str, Any]] = {}
    theirs_order: list[int] = []
    for group in theirs.param_groups:
        if peer == "mmengine" and any(key in group for key in strip):
            tally.stripped_mults += len(group["params"])
        for param in group["params"]:
            theirs_by_param[id(param)] = _settings(group, strip)
            theirs_order.append(id(param))
    ours_by_param: dict[int, dict[str, Any]] = {}
    ours_group: dict[int, int] = {}
    for index, group in enumerate(ours.param_groups):
        for param in group["params"]:
            ours_by_param[id(param)] = _settings(group)
            ours_group[id(param)] = index
    ours_order = [id(p) for group in ours_split.param_groups for p in group["params"]]

    def attribute(param_id: int, what: str) -> None:
        kinds = _features(peer, case, params[param_id], owners[param_id], match_name(param_id))
        if kinds:
            tally.documented[kinds[0]] += 1
        else:
            tally.undocumented.append(f"{where}: {names[param_id]}: {what}")

    missing = [pid for pid in ours_order if pid not in theirs_by_param]
    for pid in missing:
        attribute(pid, "not in the peer's groups")
    if [pid for pid in ours_order if pid in theirs_by_param] != theirs_order:
        tally.undocumented.append(f"{where}: parameters in another order")
    values_differ: set[int] = set()
    for pid in theirs_order:
        tally.parameters += 1
        mine, peer_settings = ours_by_param[pid], theirs_by_param[pid]
        values = (mine.get("lr"), mine.get("weight_decay"))
        peer_values = (peer_settings.get("lr"), peer_settings.get("weight_decay"))
        if values != peer_values:
            values_differ.add(pid)
            attribute(pid, f"(lr, weight_decay) {values} here, {peer_values} there")

    # Among the others: parameters that share a group here must hold equal settings there, and
    # the other way round. Parameters that differ above, or whose options only we copy into
    # groups, would spill onto their mates: they are compared against each other apart.
    def options_copied(pid: int) -> bool:
        features = _features(peer, case, params[pid], owners[pid], match_name(pid))
        return OPTIONS_COPIED in features

    def same_mates(subset: list[int]) -> dict[int, bool]:
        theirs_groups: dict[Hashable, set[int]] = {}
        ours_groups: dict[int, set[int]] = {}
        for pid in subset:
            theirs_groups.setdefault(_key(theirs_by_param[pid]), set()).add(pid)
            ours_groups.setdefault(ours_group[pid], set()).add(pid)
        return {
            pid: ours_groups[ours_group[pid]] == theirs_groups[_key(theirs_by_param[pid])]
            for pid in subset
        }

    valued = [pid for pid in theirs_order if pid not in values_differ]
    apart = {pid for pid in valued if options_copied(pid)}
    verdicts = same_mates([pid for pid in valued if pid not in apart])
    with_apart = same_mates(valued)
    verdicts.update({pid: with_apart[pid] for pid in apart})
    for pid in valued:
        if verdicts[pid]:
            tally.equal += 1
        else:
            attribute(pid, "shares its group with other parameters than there")
    return tally


def run(count: int, seed: int) -> dict[str, Tally]:
    """Compare ``count`` random cases against each peer; return the tallies by peer."""
    libraries, notes = load_libraries()
    for note in notes:
        print(f"note: {note}")
    missing = [
        f"{name}: {'; '.join(lib.notes)}"
        for name, lib in libraries.items()
        if lib.construct is None
    ]
    if missing:
        raise SystemExit("compat needs regtree, mmcv and mmengine: " + " | ".join(missing))
    teach_peers_deformable_convs()
    ours = libraries["regtree"].construct
    assert ours is not None
    cases = random_cases(count, seed)
    tallies = {}
    for peer in ("mmcv", "mmengine"):
        construct_peer = libraries[peer].construct
        assert construct_peer is not None
        total = Tally(cases=0)
        for case in cases:
            _merge(total, compare(peer, construct_peer, ours, case))
        tallies[peer] = total
    return tallies


def _merge(total: Tally, one: Tally) -> None:
    total.cases += one.cases
    total.both_built += one.both_built
    total.both_raised += one.both_raised
    total.parameters += one.parameters
    total.equal += one.equal
    total.documented.update(one.documented)
    total.stripped_mults += one.stripped_mults
    total.undocumented.extend(one.undocumented)


def report(tallies: dict[str, Tally], print_line: Callable[[str], None] = print) -> int:
    """Print the counts; return the exit status (1 when anything undocumented differs)."""
    found = versions()
    shown = ("regtree", "mmcv", "mmengine", "torch")
    print_line("versions: " + ", ".join(f"{name} {found.get(name)}" for name in shown))
    status = 0
    for peer, tally in tallies.items():
        print_line(
            f"{peer} (decay_precedence={peer!r}): {tally.cases} cases ({tally.both_built} built by "
            f"both, {tally.both_raised} refused by both); {tally.parameters} parameters compared, "
            f"{tally.equal} equal"
        )
        for kind, number in sorted(tally.documented.items()):
            print_line(f"  documented: {kind}: {number}")
        if tally.stripped_mults:
            print_line(
                f"  (mmengine copied lr_mult/decay_mult into the groups of {tally.stripped_mults}"
                " parameters; left out of the comparison, a documented difference)"
            )
        print_line(f"  undocumented: {len(tally.undocumented)}")
        for line in tally.undocumented[:20]:
            print_line(f"    {line}")
        if tally.undocumented:
            status = 1
    return status


def main() -> int:
    """Parse the command line, compare, report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=220, help="random configs (default 220)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random configs")
    options = parser.parse_args()
    return report(run(options.cases, options.seed))


if __name__ == "__main__":
    sys.exit(main())
