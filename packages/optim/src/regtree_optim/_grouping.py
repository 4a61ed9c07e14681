"""Walk a model once and place every parameter into a parameter group by the paramwise rules.

In columns: :class:`GroupPlanner` walks the model (:func:`walk_modules`) and lists each new
parameter with its name and its module's *owner* (what the module's kind decides); everything
that depends on a full name is then computed for all the names at once, each test mapped over
the whole list (custom keys in :meth:`ParamDecider.custom_columns`, the ``rules``' name tests in
``RuleSelector.name_columns``, layer decay in ``LayerDepths.scales``, the model hooks in
``NoDecayHooks.reasons``, each reached through ``_compose.RuleStage``); a parameter's *key* is
the tuple of all its decision depends on, and :class:`ParamDecider` (SPEC 3.2) with
``RuleStage`` (3.3) decide each distinct key once. :class:`GroupCollector` files the
parameters into groups; :func:`plan_groups` is the whole walk.
"""

from __future__ import annotations

import itertools
import operator
import warnings
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch
from torch import nn

from regtree.naming import closest

from ._compose import (
    Decided,
    PlacedElsewhere,
    Prepared,
    RuleStage,
    compose_decisions,
    placed_elsewhere_note,
    product,
)
from ._layer_decay import LayerScale
from ._module_kinds import is_depthwise, module_kind
from ._paramwise import CustomRule, Decision, ParamFacts, ParamwiseRules
from ._rules import ModuleFacts
from ._sharding import FSDP_FLATTENED, OriginalShapes, flat_originals, is_flat_parameter
from ._walk import walk_modules, walk_parameters
from ._warnings import caller_level, warn_caller

__all__ = [
    "GroupCollector",
    "GroupPlan",
    "GroupPlanner",
    "ParamDecider",
    "Placement",
    "plan_groups",
    "single_group",
]

_FROZEN_RULE = "frozen (optimizer defaults)"


@dataclass(frozen=True, slots=True)
class Placement:
    """Where one parameter went and why.

    Recorded where something reads it: explain, a ``merge_groups=False`` build (its merged
    groups are split by the placements) and every RoutedOptimizer plan (routed by them).

    Attributes:
        name: The parameter's name in the unwrapped model.
        param: The parameter itself.
        rule: What decided its settings.
        group: Index of its group.
        lr_mult: The product of the lr multipliers applied (layer decay included).
        decay_mult: The product of the weight-decay multipliers applied.
        settings: The settings the planner gave its group; None where it did not place it.
    """

    name: str
    param: torch.Tensor
    rule: str
    group: int
    lr_mult: Any = 1.0
    decay_mult: Any = 1.0
    settings: Mapping[str, Any] | None = None


@dataclass(slots=True)
class GroupPlan:
    """Parameter groups ready for the optimizer, and optionally each parameter's placement.

    Attributes:
        groups: Dicts with ``params``, ``param_names`` and the group's settings.
        placements: One entry per parameter in model order, or None where the plan was made
            without them (a build of merged groups; see :class:`Placement`).
        to_freeze: Parameters that ``freeze`` or ``freeze_below`` froze (SPEC 3.3); the
            constructor sets their ``requires_grad=False`` when it builds the optimizer.
    """

    groups: list[dict[str, Any]] = field(default_factory=list)
    placements: list[Placement] | None = None
    to_freeze: list[torch.Tensor] = field(default_factory=list)


def custom_key_name(name: str, top_level: bool) -> str:
    """The name a custom key is matched against: mmcv's ``f'{prefix}.{name}'``.

    A parameter of the top module (prefix ``''``) keeps a leading dot there (``'.w'``), so a
    key ``'.w'`` matches it where the rules' names (``'w'``, ``_walk.join_name``) would not.
    """
    return f".{name}" if top_level else name


def single_group(model: nn.Module, explain: bool) -> GroupPlan:
    """Put every parameter of ``model`` in one group, as ``model.parameters()`` orders them."""
    names: list[str] = []
    params: list[torch.Tensor] = []
    for name, _, _, param in walk_parameters(model):
        names.append(name)
        params.append(param)
    plan = GroupPlan(groups=[{"params": params, "param_names": names}])
    if explain:
        rule = "default (no paramwise_cfg)"
        plan.placements = [Placement(n, p, rule, 0) for n, p in zip(names, params, strict=True)]
    return plan


class ParamDecider:
    """SPEC 3.2's decision for one kind of parameter: frozen, then custom_keys, then the rules.

    What depends on the full name (which custom keys match) is computed for all the names of
    a walk at once (:meth:`custom_columns`); :meth:`decide` takes a parameter's hits with its
    module's :meth:`module_decisions`.
    """

    def __init__(self, rules: ParamwiseRules) -> None:
        self.rules = rules
        self.frozen = rules.decision(rules.base_settings(), _FROZEN_RULE)
        # Keys of custom_keys that decided at least one parameter.
        self.decided_keys: set[str] = set()
        self._by_facts: dict[tuple[bool, bool, bool, bool], tuple[Decision, ...]] = {}
        self._compose = rules.composition is not None and rules.composition.compose
        self._composed: dict[tuple[Decision, Decision], Decision] = {}
        # Only flat_decay_mult tells 1-D parameters apart; without it a parameter's ndim is not
        # read (a read of the tensor's C++ side, ~0.4 ms of 10,000 tensors).
        self.reads_ndim = rules.flat_decay_mult is not None

    def module_decisions(self, module_facts: tuple[bool, bool, bool, bool]) -> tuple[Decision, ...]:
        """The built-in decisions for one kind of module's parameters, by ``is_bias * 2 + is_flat``.

        Args:
            module_facts: ``(is_norm, is_depthwise, in_dcn, is_dcn_offset)``, as
                :class:`ParamFacts` begins.
        """
        decisions = self._by_facts.get(module_facts)
        if decisions is None:
            decisions = self._by_facts[module_facts] = tuple(
                self.rules.builtin_decision(ParamFacts(*module_facts, is_bias, is_flat))
                for is_bias in (False, True)
                for is_flat in (False, True)
            )
        return decisions

    def custom_columns(self, names: list[str], top_level: list[int]) -> list[list[bool]]:
        """One column per custom key (longest first): which of the full names contain it.

        Keys are matched against :func:`custom_key_name` (a top-level ``'w'``, its position in
        ``top_level``, is ``'.w'``). Each key is tested against all the names at once, with no
        Python call per name (only per top-level name).
        """
        if not self.rules.custom:
            return []
        match_names = names
        if top_level:
            match_names = list(names)
            for position in top_level:
                match_names[position] = custom_key_name(names[position], top_level=True)
        return [
            list(map(operator.contains, match_names, itertools.repeat(rule.key)))
            for rule in self.rules.custom
        ]

    def decide(
        self,
        module_decisions: tuple[Decision, ...],
        name: str,
        requires_grad: bool,
        ndim: int,
        custom_hits: tuple[bool, ...],
    ) -> Decision:
        """Decide the settings of one kind of parameter.

        Args:
            module_decisions: Its module's :meth:`module_decisions`.
            name: Its name in its module (``'bias'``).
            requires_grad: Whether it is trained.
            ndim: Its number of dimensions (the original one where sharding changed it); any
                value where :attr:`reads_ndim` is false.
            custom_hits: Its entry in each of :meth:`custom_columns`.
        """
        if not requires_grad:
            return self.frozen
        builtin = module_decisions[(name == "bias") * 2 + (ndim == 1)]
        for custom_rule, hit in zip(self.rules.custom, custom_hits, strict=True):
            if hit:
                self.decided_keys.add(custom_rule.key)
                if not self._compose:
                    return custom_rule.decision
                # SPEC 3.3 compose: base * custom * rule.
                pair = (custom_rule.decision, builtin)
                composed = self._composed.get(pair)
                if composed is None:
                    composed = self._composed[pair] = compose_decisions(*pair, self.rules)
                return composed
        return builtin


# A group's index, parameters and their names.
GroupMembers = tuple[int, list[torch.Tensor], list[str]]


class GroupCollector:
    """Parameter groups in order of first appearance; equal decisions share one when merging.

    A planner files a parameter under a decision it has met with ``by_decision[decision]``'s
    lists, and the first parameter of any other decision with :meth:`add_first`.

    Args:
        merge: Whether parameters of equal decisions share a group.
        groups: The list to append new groups to (mmcv's ``params`` of ``add_params``).
    """

    def __init__(self, merge: bool, groups: list[dict[str, Any]] | None = None) -> None:
        self.merge = merge
        self.groups: list[dict[str, Any]] = [] if groups is None else groups
        # Merge lookups go by decision object first (identity hash), then by the settings' key.
        # A decision maps straight to its group's members, so a planner files a parameter of a
        # decision met before with one lookup and two appends, in its own loop (a call per
        # parameter was 0.6 ms of 10,000 tensors).
        self.by_decision: dict[Decision, GroupMembers] = {}
        self._by_key: dict[Hashable, GroupMembers] = {}

    def add_first(self, name: str, param: torch.Tensor, decision: Decision) -> int:
        """File the first parameter of a decision not in :attr:`by_decision`; return its group.

        It joins a group of equal settings when merging, else starts a group; later
        parameters of the decision go straight to :attr:`by_decision`'s members.
        """
        if self.merge:
            member = self._by_key.get(decision.key)
            if member is not None:
                self.by_decision[decision] = member
                index, params, names = member
                params.append(param)
                names.append(name)
                return index
        index = len(self.groups)
        group_params = [param]
        group_names = [name]
        group = {"params": group_params, "param_names": group_names, **decision.settings}
        if decision.route is not None:  # the group's sub-optimizer in a RoutedOptimizer
            group["optimizer"] = decision.route
        self.groups.append(group)
        if self.merge:
            self.by_decision[decision] = self._by_key[decision.key] = (
                index,
                group_params,
                group_names,
            )
        return index


class _Owner(NamedTuple):
    """What a parameter's module decides for it: SPEC 3.2's decisions and the rules' facts."""

    decisions: tuple[Decision, ...]
    facts: ModuleFacts | None


# A parameter's grouping key: every input of its decision, so equal keys decide alike. One flat
# tuple (a nested one was 0.2 ms more of 10,000 tensors): (owner, attribute name, ndim, layer,
# hook, requires_grad, a hit per custom key..., a hit per name test of the rules...).
_Key = tuple[Any, ...]
_FLAGS = 5  # where the key's bools begin


@dataclass(slots=True)
class _Batch:
    """Parameters of a walk, in model order, with what their decisions need from the walk.

    Attributes:
        names: Full names, as the rules see them.
        params: The parameters.
        attrs: Their attribute names in their modules.
        owners: Their modules, as indices of :attr:`GroupPlanner._owners`.
        ndims: position -> original ``ndim``, where FSDP1 flattened the parameter.
        top_level: Positions of the parameters of a module at the top (prefix ``''``).
        decided: Decisions made already (an FSDP1 flat parameter's), or None.
    """

    names: list[str] = field(default_factory=list)
    params: list[torch.Tensor] = field(default_factory=list)
    attrs: list[str] = field(default_factory=list)
    owners: list[int] = field(default_factory=list)
    ndims: dict[int, int] = field(default_factory=dict)
    top_level: list[int] = field(default_factory=list)
    decided: list[Decided] | None = None


class GroupPlanner:
    """Places parameters: the walk, then every decision from columns over all its names.

    The walk lists the parameters (finding duplicates and each one's module); everything that
    depends on a full name (custom keys, the rules' name selectors, layer decay, the hooks) is
    then computed for all the names at once; and each parameter's decision is looked up by its
    key, the tuple of all it depends on, and computed once per distinct key.

    Args:
        rules: The validated paramwise rules.
        merge: Whether equal decisions share a group.
        explain: Also record each parameter's placement and rule.
        groups: The list to append new groups to; groups already in it (or appended by others
            between two :meth:`place_module` calls) hold earlier occurrences.
        root: The model walked; SPEC 3.3's rules, layer decay and hooks need it.
        shapes: The original shapes where sharding flattened a parameter (FSDP1); by
            default ``root``'s.
        appended_by: The ``add_params`` override that appends groups of its own, for the
            warnings about rules and custom keys that select only their parameters; None for
            groups that were in ``groups`` already.
    """

    def __init__(
        self,
        rules: ParamwiseRules,
        *,
        merge: bool,
        explain: bool = False,
        groups: list[dict[str, Any]] | None = None,
        root: nn.Module | None = None,
        shapes: OriginalShapes | None = None,
        appended_by: str | None = None,
    ) -> None:
        self.rules = rules
        self.root = root
        self._shapes = shapes if shapes is not None or root is None else OriginalShapes(root)
        self._appended_by = appended_by
        self.decider = ParamDecider(rules)
        composition = rules.composition
        self.stage = (
            RuleStage(composition, root, rules, self.decider.frozen)
            if composition is not None and composition.after_builtin and root is not None
            else None
        )
        self._reads_ndim = self.decider.reads_ndim or (
            self.stage is not None and self.stage.reads_ndim
        )
        self.collector = GroupCollector(merge, groups)
        self.placements: list[Placement] | None = [] if explain else None
        self.to_freeze: list[torch.Tensor] = []
        # Modules by what they decide: one owner per distinct kind of module, and the owner of
        # each type whose every instance decides alike (no conv, outside a deformable conv).
        self._owners: list[_Owner] = []
        self._owner_of: dict[tuple[type, bool, bool, bool], int] = {}
        self._owner_of_type: dict[type, int] = {}
        self._decided: dict[_Key, Decided] = {}
        # A key less its layer and hook -> what the rules make of its 3.2 decision: the 3.2
        # decision and the rules' selection once per such key (20 of the 1,010 keys of the
        # five-rules row), not once per key.
        self._prepared: dict[tuple[int, str, int, tuple[bool, ...]], Prepared] = {}
        # id(param) -> first name, in the order first met; the parameters stay alive in the
        # model, so ids are stable. A str, not a (name, visit) pair: 1 ms less per 10,000
        # tensors; a tensor twice in one module's _parameters is told apart by position.
        self._seen: dict[int, str] = {}
        self._synced = 0  # groups up to here have their parameters in _seen
        # Names skipped as duplicates, each after how many entries of _seen; with _seen's
        # names (less those _sync added) the names met, for unmatched custom keys. Not a list
        # of every name: an append per parameter was 0.2 ms of 10,000 tensors.
        self._skipped: list[tuple[int, str]] = []
        self._synced_ids: set[int] = set()
        # (start, the ids of _seen's entries from start on, how many entries they cover): what
        # _met_since has read of the current module's entries.
        self._since: tuple[int, set[int], int] = (-1, set(), 0)
        # Names met at the top (prefix ''), which custom keys see with a leading dot.
        self._top_level: set[str] = set()
        # The stacklevel of the duplicate warning in the current place_modules call.
        self._duplicate_level: int | None = None

    def place_module(self, module: nn.Module, prefix: str, in_dcn: bool) -> None:
        """Place the module's own parameters (not its children's), in order."""
        self.place_modules(((prefix, module, in_dcn),))

    def place_modules(self, modules: Iterable[tuple[str, nn.Module, bool]]) -> None:
        """Place the own parameters of each ``(prefix, module, in_dcn)`` of a walk, in order."""
        groups = self.collector.groups
        if self._synced < len(groups):
            self._sync(groups)
        self._duplicate_level = None  # counted again for this walk, at its first duplicate
        for batch in self._batches(modules):
            decided = self._decisions(batch) if batch.decided is None else batch.decided
            self._file(batch, decided)
        self._synced = len(groups)

    def _batches(self, modules: Iterable[tuple[str, nn.Module, bool]]) -> Iterator[_Batch]:
        # The walk: each new parameter with its module's owner; duplicates are skipped here.
        # An FSDP1 flat parameter ends the batch and comes in one of its own, decided by the
        # parameters it holds. The whole walk runs in this one frame: a call per module (and
        # its set-up of locals) cost 0.4-0.8 ms more of the 25 ms plan of the benchmark's
        # five-rules row at 10,000 tensors (blocks_model, median of paired runs).
        seen = self._seen
        owner_of_type = self._owner_of_type
        batch = _Batch()
        names, params, attrs, owners = batch.names, batch.params, batch.attrs, batch.owners
        for prefix, module, in_dcn in modules:
            # _parameters is what named_parameters(recurse=False) reads.
            own = module._parameters
            if not own:
                continue
            start = len(seen)  # entries from here on were met in this module
            # Read at the module's first new parameter: a shared module met again has none.
            owner: int | None = None
            for name, param in own.items():
                if param is None:
                    continue
                # _walk.join_name, inline: a call here was a call per parameter.
                full_name = f"{prefix}.{name}" if prefix else name
                param_id = id(param)
                first = seen.get(param_id)
                if first is not None:
                    # named_parameters(recurse=False) yields a tensor once per module. Where
                    # this module has placed nothing yet (a shared module met again) there is
                    # nothing to look through: 16,000 duplicates, 4 ms less of 67.
                    if len(seen) == start or not self._met_since(start, param_id):
                        self._duplicate(full_name, first)
                        if not prefix:
                            self._top_level.add(full_name)
                    continue
                seen[param_id] = full_name
                if owner is None:
                    # By type where every instance decides alike, without a call.
                    owner = owner_of_type.get(type(module)) if not in_dcn else None
                    if owner is None:
                        owner = self._owner(module, prefix, in_dcn)
                # is_fsdp_flattened(param) without the call: 0.4 ms of 10,000 tensors.
                if getattr(param, FSDP_FLATTENED, False) is True:
                    ndim = self._sharded_ndim(param)
                    if ndim is None:
                        if names:
                            yield batch
                            batch = _Batch()
                            names, params = batch.names, batch.params
                            attrs, owners = batch.attrs, batch.owners
                        decided = [self._flat_decision(module, prefix, full_name, param)]
                        yield _Batch([full_name], [param], [name], [owner], decided=decided)
                        continue
                    batch.ndims[len(names)] = ndim
                if not prefix:
                    batch.top_level.append(len(names))
                    self._top_level.add(full_name)
                names.append(full_name)
                params.append(param)
                attrs.append(name)
                owners.append(owner)
        if names:
            yield batch

    def _met_since(self, start: int, param_id: int) -> bool:
        # Whether param_id is among the entries added to _seen after its first ``start`` (dicts
        # keep insertion order): read only for a tensor met again, so it costs the walk nothing.
        # The ids since ``start`` are kept and grown, not looked through again at each tensor
        # met again: a module repeating many tensors among many of its own stays linear. One
        # start is one module's: a module that adds entries moves the next module's start on.
        seen = self._seen
        since_start, ids, end = self._since
        if since_start != start:
            ids, end = set(), start
        ids.update(itertools.islice(reversed(seen), len(seen) - end))
        self._since = (start, ids, len(seen))
        return param_id in ids

    def _owner(self, module: nn.Module, prefix: str, in_dcn: bool) -> int:
        # The owner of a module, by the facts that decide; types whose every instance decides
        # alike (no conv, outside a deformable conv) are kept by type too, for the walk.
        module_type = type(module)
        kind = module_kind(module_type)
        depthwise = is_depthwise(module, kind.is_conv)
        offset = in_dcn and kind.is_conv2d and "conv_offset" in prefix
        found = self._owner_of.get((module_type, depthwise, in_dcn, offset))
        if found is None:
            found = self._owner_of[(module_type, depthwise, in_dcn, offset)] = len(self._owners)
            self._owners.append(
                _Owner(
                    self.decider.module_decisions((kind.is_norm, depthwise, in_dcn, offset)),
                    None if self.stage is None else self.stage.module_facts(module_type, depthwise),
                )
            )
        if not (in_dcn or kind.is_conv):
            self._owner_of_type[module_type] = found
        return found

    def _decisions(self, batch: _Batch) -> list[Decided]:
        """Each parameter's decision, from columns computed over all the batch's names.

        Raises:
            ValueError: layer decay puts a parameter outside ``0..num_layers - 1``.
        """
        names, count, stage = batch.names, len(batch.names), self.stage
        # A column nothing reads is one value repeated.
        ndims: list[int] = [-1] * count
        if self._reads_ndim:
            ndims = [param.ndim for param in batch.params]
            for position, ndim in batch.ndims.items():
                ndims[position] = ndim
        trained = [param.requires_grad for param in batch.params]
        hits: list[list[bool]] = []
        layers: Sequence[LayerScale | None] = [None] * count
        hooks: Sequence[str | None] = [None] * count
        if stage is not None:
            hits = stage.rule_columns(names)
            if stage.depths is not None:
                layers = stage.layer_column(names, self._decayed(batch, trained, ndims, hits))
            if stage.hooks is not None:
                hooks = stage.hooks.reasons(names)
        keys = zip(
            batch.owners,
            batch.attrs,
            ndims,
            layers,
            hooks,
            trained,
            *self.decider.custom_columns(names, batch.top_level),
            *hits,
            strict=True,
        )
        known = self._decided.get
        return [known(key) or self._decide(key) for key in keys]

    def _decayed(
        self, batch: _Batch, trained: list[bool], ndims: list[int], hits: list[list[bool]]
    ) -> list[bool]:
        # Which parameters layer decay reads: the trained ones, less any a freeze rule freezes
        # (SPEC 3.3: no layer decay applies to a frozen parameter, its name never reaches the
        # depth). Read per parameter only where a rule freezes.
        stage = self.stage
        assert stage is not None
        if not stage.freezes:
            return trained
        rows = zip(*hits, strict=True) if hits else itertools.repeat((), len(trained))
        owners = self._owners
        return [
            kept and not stage.frozen_by_rules(owners[owner].facts, name, ndim, row)
            for kept, owner, name, ndim, row in zip(
                trained, batch.owners, batch.attrs, ndims, rows, strict=True
            )
        ]

    def _decide(self, key: _Key) -> Decided:
        # The decision of a key met for the first time: 1,010 keys of 10,000 tensors in the
        # benchmark's five-rules row, from 20 of what all but the layer and the hook decide.
        # The key's layout is _decisions' zip (see _Key).
        owner_index, name, ndim, layer, hook = key[:_FLAGS]
        flags = key[_FLAGS:]
        custom_end = 1 + len(self.rules.custom)
        trained, custom_hits, rule_hits = flags[0], flags[1:custom_end], flags[custom_end:]
        stage = self.stage
        if stage is None:
            decided: Decided = (
                self._decision(owner_index, name, ndim, trained, custom_hits),
                False,
            )
        else:
            prepared_key = (owner_index, name, ndim, flags)
            prepared = self._prepared.get(prepared_key)
            if prepared is None:
                prepared = self._prepared[prepared_key] = stage.prepare(
                    self._decision(owner_index, name, ndim, trained, custom_hits),
                    self._owners[owner_index].facts,
                    name,
                    ndim,
                    rule_hits,
                )
            decided = stage.refine(prepared, layer, hook)
        self._decided[key] = decided
        return decided

    def _decision(
        self, owner_index: int, name: str, ndim: int, trained: bool, custom_hits: tuple[bool, ...]
    ) -> Decision:
        # SPEC 3.2's decision, from a key's parts.
        return self.decider.decide(
            self._owners[owner_index].decisions, name, trained, ndim, custom_hits
        )

    def _file(self, batch: _Batch, decided: list[Decided]) -> None:
        # Each parameter into its group, as GroupCollector says: a decision met before is one
        # lookup and two appends.
        add_first = self.collector.add_first
        by_decision = self.collector.by_decision
        placements = self.placements
        to_freeze = self.to_freeze
        for full_name, param, (decision, freezes) in zip(
            batch.names, batch.params, decided, strict=True
        ):
            member = by_decision.get(decision)
            if member is None:
                index = add_first(full_name, param, decision)
            else:
                index, members, member_names = member
                members.append(param)
                member_names.append(full_name)
            if freezes:
                to_freeze.append(param)
            if placements is not None:
                placements.append(_placement(full_name, param, decision, index))

    def _sharded_ndim(self, param: torch.Tensor) -> int | None:
        """The original ``ndim`` of a parameter FSDP1 marked; None for a flat parameter."""
        shape = None if self._shapes is None else self._shapes.recorded(param)
        if shape is not None:
            return len(shape)
        return None if is_flat_parameter(param) else param.ndim

    def _flat_decision(
        self, module: nn.Module, prefix: str, flat_name: str, flat: torch.Tensor
    ) -> Decided:
        # FSDP1 without use_orig_params: one tensor holds many parameters, so it can take
        # their settings only where they all agree (SPEC 3.6). They are decided as a batch of
        # their own, by their names and modules.
        originals = _Batch()
        for original in flat_originals(flat):
            parent_path = original.module_path.rpartition(".")[0]
            parent = module.get_submodule(parent_path) if original.module_path else None
            in_dcn = parent is not None and module_kind(type(parent)).is_dcn
            path = original.path_in(prefix)
            originals.ndims[len(originals.names)] = len(original.shape)
            if not path:
                originals.top_level.append(len(originals.names))
            originals.names.append(original.name_in(prefix))
            originals.params.append(flat)
            originals.attrs.append(original.name)
            originals.owners.append(self._owner(original.module, path, in_dcn))
        decided = self._decisions(originals)
        first_name, (first, _) = originals.names[0], decided[0]
        for name, (decision, _) in zip(originals.names, decided, strict=True):
            if decision.key != first.key:
                raise ValueError(
                    f"paramwise_cfg gives {first_name!r} ({first.rule}: "
                    f"{_settings_text(first)}) and {name!r} ({decision.rule}: "
                    f"{_settings_text(decision)}) different settings, but FSDP flattened both "
                    f"into one parameter, {flat_name!r}, which can have one setting only; wrap "
                    "the model with FullyShardedDataParallel(..., use_orig_params=True) so that "
                    "each parameter keeps its own settings"
                )
        return first, any(freezes for _, freezes in decided)

    def finish(self, root: nn.Module) -> GroupPlan:
        """Warn about custom keys and rules that matched nothing and return the plan."""
        groups = self.collector.groups
        if self._synced < len(groups):  # groups an override appended after the last module
            self._sync(groups)
        found: list[list[PlacedElsewhere]] = []

        def placed_elsewhere() -> list[PlacedElsewhere]:
            if not found:
                found.append(self._placed_elsewhere(root))
            return found[0]

        if self.rules.custom:
            _warn_unmatched(
                root,
                self.rules.custom,
                self.decider.decided_keys,
                self._names_met(),
                self._top_level,
                placed_elsewhere,
                self._appended_by,
            )
        if self.stage is not None:
            self.stage.finish(root, placed_elsewhere, self._appended_by)
        return GroupPlan(
            groups=self.collector.groups, placements=self.placements, to_freeze=self.to_freeze
        )

    def _placed_elsewhere(self, root: nn.Module) -> list[PlacedElsewhere]:
        # The parameters of groups others appended (an add_params override's), named as the walk
        # names them: a second walk, made only to word a warning.
        ids = self._synced_ids
        if not ids:
            return []
        return [
            PlacedElsewhere(name, attr, module, param)
            for name, attr, module, param in walk_parameters(root)
            if id(param) in ids
        ]

    def _sync(self, groups: list[dict[str, Any]]) -> None:
        # Groups someone else appended (an add_params override): their parameters came first.
        for group in groups[self._synced :]:
            params = group.get("params", ())
            params = [params] if isinstance(params, torch.Tensor) else list(params)
            names = group.get("param_names")
            for position, param in enumerate(params):
                name = "<a parameter placed earlier>"
                if isinstance(names, list) and position < len(names):
                    name = str(names[position])
                if id(param) not in self._seen:
                    self._seen[id(param)] = name
                    self._synced_ids.add(id(param))
        self._synced = len(groups)

    def _duplicate(self, name: str, first: str) -> None:
        if not self.rules.bypass_duplicate:
            raise ValueError(
                f"Parameter {name!r} is the same tensor as {first!r}: a parameter may belong to "
                "one group only. Set paramwise_cfg bypass_duplicate=True to keep the first "
                "occurrence and skip the later ones."
            )
        # One warning per skipped tensor: the frames up to the user's line are counted once per
        # place_modules call, whose depth is the same for all its duplicates (counted per
        # warning, 16,000 duplicates took 20 ms longer, 2.8x the floor against 3.6x).
        if self._duplicate_level is None:
            self._duplicate_level = caller_level()
        warnings.warn(
            f"Parameter {name!r} is the same tensor as {first!r}; it is skipped because "
            "bypass_duplicate=True.",
            UserWarning,
            stacklevel=self._duplicate_level,
        )
        self._skipped.append((len(self._seen), name))

    def _names_met(self) -> Iterator[str]:
        # Placed and skipped names in walk order, as _duplicate and the loop met them.
        skipped = iter(self._skipped)
        upcoming = next(skipped, None)
        for position, (param_id, name) in enumerate(self._seen.items()):
            while upcoming is not None and upcoming[0] <= position:
                yield upcoming[1]
                upcoming = next(skipped, None)
            if param_id not in self._synced_ids:
                yield name
        while upcoming is not None:
            yield upcoming[1]
            upcoming = next(skipped, None)


def _placement(name: str, param: torch.Tensor, decision: Decision, index: int) -> Placement:
    return Placement(
        name,
        param,
        decision.rule,
        index,
        product(decision.lr_factors),
        product(decision.decay_factors),
        decision.settings,
    )


def _settings_text(decision: Decision) -> str:
    settings = dict(decision.settings)
    if decision.route is not None:
        settings["optimizer"] = decision.route
    return ", ".join(f"{key}={value!r}" for key, value in settings.items()) or "defaults"


def _warn_unmatched(
    root: nn.Module,
    custom: tuple[CustomRule, ...],
    decided_keys: set[str],
    names: Iterable[str],
    top_level: set[str],
    placed_elsewhere: Callable[[], Sequence[PlacedElsewhere]],
    appended_by: str | None,
) -> None:
    # Only keys that decided nothing need a scan (typos, keys shadowed by longer ones, keys that
    # match frozen parameters or skipped duplicates only), so the walk pays nothing for this.
    remaining = [rule.key for rule in custom if rule.key not in decided_keys]
    if not remaining:
        return
    match_names = [custom_key_name(name, name in top_level) for name in names]
    for key in remaining:
        if any(key in match_name for match_name in match_names):
            continue
        elsewhere = [
            param.name
            for param in placed_elsewhere()
            # A top-level parameter's name is its attribute name.
            if key in custom_key_name(param.name, param.name == param.attr)
        ]
        if elsewhere:
            others = "the paramwise_cfg multipliers, rules or layer_decay"
            note = placed_elsewhere_note(elsewhere, appended_by, others)
            warn_caller(f"custom_keys key {key!r} matches {note}")
            continue
        hints = closest(key, match_names, count=1)
        hint = f" (the closest name is {hints[0].lstrip('.')!r})" if hints else ""
        warn_caller(
            f"custom_keys key {key!r} matches no parameter of {type(root).__name__}: it is a "
            f"substring of no name f'{{prefix}}.{{name}}'{hint}; it has no effect.",
        )


def plan_groups(
    root: nn.Module,
    rules: ParamwiseRules,
    *,
    explain: bool = False,
    merge_groups: bool | None = None,
    shapes: OriginalShapes | None = None,
) -> GroupPlan:
    """Walk ``root`` in model order and group its parameters by the paramwise rules.

    Model order is :func:`walk_modules`'s: a module's own parameters, then its children's, as
    ``named_parameters()`` yields them, except that a module reached through two parents is
    visited at each (that is how shared parameters are found). Runs in time linear in the
    number of parameters: modules are classified once per type, rules are evaluated once per
    combination of facts, duplicates are found by ``id`` and groups are found by decision.

    Args:
        root: The (unwrapped) model.
        rules: The validated paramwise rules.
        explain: Also record each parameter's placement and rule.
        merge_groups: Overrides ``rules.merge_groups`` when given.
        shapes: The original shapes of FSDP1's parameters, read from the wrapped model where
            FSDP1 wraps it at the top (that root holds records its unwrapped ``root`` lacks);
            by default ``root``'s.

    Raises:
        ValueError: a shared parameter without ``bypass_duplicate``.
    """
    merge = rules.merge_groups if merge_groups is None else merge_groups
    planner = GroupPlanner(rules, merge=merge, explain=explain, root=root, shapes=shapes)
    planner.place_modules(walk_modules(root))
    return planner.finish(root)
