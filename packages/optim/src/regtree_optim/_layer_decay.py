"""``paramwise_cfg['layer_decay']`` (SPEC 3.3): a parameter's layer id and its lr scale.

Three sources of depth: mmpretrain's ``get_layer_depth(name)`` hook, timm's ``group_matcher``
(the layer ids timm's ``param_groups_layer_decay`` derives from it) and a list of
``[regex, n]`` pairs. The scale is ``rate ** k`` for an integer ``k``, so the published numbers
hold exactly.
"""

from __future__ import annotations

import collections.abc
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from torch import nn

from regtree.naming import closest, origin

from ._sharding import flat_originals, is_flat_parameter
from ._value_checks import check_base, check_finite
from ._walk import walk_parameters

__all__ = ["LayerDecay", "LayerDepths", "LayerScale", "resolve_layer_decay", "timm_layer_ids"]

_KEYS: Final[tuple[str, ...]] = ("rate", "min_scale", "freeze_below", "depth", "num_layers")
_HOOKS: Final[tuple[str, ...]] = ("get_layer_depth", "group_matcher")
_WHERE: Final[str] = "paramwise_cfg['layer_decay']"
# timm's marker: a group whose ordinal ends with it joins the group sorted before it.
_MERGE_WITH_PREVIOUS: Final[float] = 99999.0


@dataclass(frozen=True, slots=True)
class LayerDecay:
    """``layer_decay`` after validation.

    Attributes:
        rate: The per-layer factor (> 0).
        min_scale: The smallest scale a layer gets.
        freeze_below: Parameters whose scale is below it are frozen (None: none are).
        depth: ``'get_layer_depth'``, ``'group_matcher'``, ``None`` (whichever hook the model
            has) or compiled ``(regex, n)`` pairs.
        num_layers: With ``(regex, n)`` pairs: the number of layers; else None.
    """

    rate: Any
    min_scale: Any = 0
    freeze_below: Any = None
    depth: str | tuple[tuple[re.Pattern[str], int], ...] | None = None
    num_layers: int | None = None


def _number(value: object, key: str) -> Any:
    check_finite(value, f"{_WHERE}[{key!r}]")
    return value


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _regex_pairs(depth: list[Any] | tuple[Any, ...]) -> tuple[tuple[re.Pattern[str], int], ...]:
    pairs = []
    for position, pair in enumerate(depth):
        if not (
            isinstance(pair, (list, tuple))
            and len(pair) == 2
            and isinstance(pair[0], str)
            and _is_count(pair[1])
            and pair[1] >= 0
        ):
            raise ValueError(
                f"{_WHERE}['depth'][{position}] must be a [regex, n] pair (a str and an int "
                f">= 0), got {pair!r}."
            )
        try:
            pairs.append((re.compile(pair[0]), int(pair[1])))
        except re.error as error:
            raise ValueError(
                f"{_WHERE}['depth'][{position}] regex {pair[0]!r} is not a valid regular "
                f"expression: {error}."
            ) from None
    if not pairs:
        raise ValueError(f"{_WHERE}['depth'] is an empty list; give at least one [regex, n] pair.")
    return tuple(pairs)


def resolve_layer_decay(cfg: object, *, base_lr: Any) -> LayerDecay:
    """Validate ``paramwise_cfg['layer_decay']``.

    Raises:
        TypeError: it is not a mapping, or a number is not a real number.
        ValueError: an unknown key (naming the closest), a number that is not finite, a rate
            <= 0, a min_scale outside [0, 1], a bad depth, or no lr in the optimizer config to
            scale.
    """
    if not isinstance(cfg, Mapping):
        raise TypeError(
            f"{_WHERE} must be a mapping with 'rate' (and optionally min_scale, freeze_below, "
            f"depth, num_layers), got {cfg!r} ({type(cfg).__name__})."
        )
    for key in cfg:
        if key not in _KEYS:
            hint = closest(str(key), _KEYS, count=1)
            suggestion = f"; did you mean {hint[0]!r}?" if hint else "."
            raise ValueError(
                f"{_WHERE} has unknown key {key!r}{suggestion} Valid keys: {', '.join(_KEYS)}."
            )
    if "rate" not in cfg:
        raise ValueError(f"{_WHERE} needs 'rate', the factor between adjacent layers (e.g. 0.75).")
    rate = _number(cfg["rate"], "rate")
    if not rate > 0:
        raise ValueError(f"{_WHERE}['rate'] must be > 0, got {rate!r}.")
    # None is not given, as for every optional number of paramwise_cfg.
    min_scale = cfg.get("min_scale")
    min_scale = 0 if min_scale is None else _number(min_scale, "min_scale")
    if not 0 <= min_scale <= 1:
        # Below 0 it would floor nothing (every scale is > 0); above 1 it would raise every
        # layer, the top one included, above the lr the optimizer config gives.
        raise ValueError(
            f"{_WHERE}['min_scale'] must be in [0, 1], got {min_scale!r}: it is the smallest "
            "scale a layer gets (the top layer's is 1), and 0, the default, sets no floor."
        )
    freeze_below = cfg.get("freeze_below")
    if freeze_below is not None:
        _number(freeze_below, "freeze_below")
    check_base("paramwise_cfg", "layer_decay", cfg, "lr", base_lr)
    depth = cfg.get("depth")
    num_layers = cfg.get("num_layers")
    if isinstance(depth, (list, tuple)):
        pairs = _regex_pairs(depth)
        if not (isinstance(num_layers, int) and _is_count(num_layers) and num_layers > 0):
            raise ValueError(
                f"{_WHERE} with a list of [regex, n] pairs needs num_layers beside it (an int > "
                f"0; names that match no regex are in the top layer, num_layers - 1), got "
                f"{num_layers!r}."
            )
        return LayerDecay(rate, min_scale, freeze_below, pairs, num_layers)
    if depth is not None and depth not in _HOOKS:
        hint = closest(str(depth), _HOOKS, count=1)
        suggestion = f" Did you mean {hint[0]!r}?" if hint else ""
        raise ValueError(
            f"{_WHERE}['depth'] must be 'get_layer_depth', 'group_matcher' or a list of "
            f"[regex, n] pairs, got {depth!r}.{suggestion}"
        )
    if num_layers is not None:
        raise ValueError(
            f"{_WHERE}['num_layers'] goes with a list of [regex, n] pairs only; the model's "
            f"{depth or 'hook'} gives the number of layers itself. Drop num_layers."
        )
    return LayerDecay(rate, min_scale, freeze_below, depth, None)


# -- timm's group_matcher ---------------------------------------------------------------------


def _timm_ordinal_fn(matcher: object) -> Callable[[str], tuple[Any, ...]]:
    """The function timm sorts parameter names by, for a dict or callable ``group_matcher``."""
    if callable(matcher):

        def from_callable(name: str) -> tuple[Any, ...]:
            ordinal = matcher(name)
            if isinstance(ordinal, collections.abc.Iterable):
                return tuple(ordinal)
            return (ordinal,)

        return from_callable
    if not isinstance(matcher, Mapping):
        raise TypeError(
            f"group_matcher(coarse=False) returned {matcher!r} ({type(matcher).__name__}); "
            "layer_decay reads a dict of group name -> regex or [(regex, suffix), ...] as timm "
            "models return, or a callable."
        )
    # (pattern, the group's position in the dict, the suffix after the captured numbers)
    specs: list[tuple[re.Pattern[str], float, tuple[float, ...]]] = []
    for position, spec in enumerate(matcher.values()):
        if spec is None:
            continue
        if isinstance(spec, str):
            specs.append((re.compile(spec), float(position), ()))
            continue
        for pattern, suffix in spec:
            specs.append((re.compile(pattern), float(position), tuple(map(float, suffix or ()))))

    def from_specs(name: str) -> tuple[Any, ...]:
        for pattern, position, suffix in specs:
            found = pattern.match(name)
            if found is not None:
                captured = found.groups()
                if None in captured:
                    raise ValueError(
                        f"group_matcher pattern {pattern.pattern!r} matched {name!r} without "
                        "capturing each of its groups; layer ids need a number for each group."
                    )
                return (position, *map(float, captured), *suffix)
        # Unmatched names (the neck, the head) sort after every group.
        return (math.inf,)

    return from_specs


def timm_layer_ids(names: Iterable[str], matcher: object) -> dict[str, int]:
    """Layer ids as timm's ``param_groups_layer_decay`` derives them from ``group_matcher``.

    Names are sorted by the ordinal the matcher gives them; each distinct ordinal starts a new
    layer, except one ending with timm's 99999, which joins the layer before it (a ViT's final
    ``norm`` joins its last block).
    """
    ordinal_of = _timm_ordinal_fn(matcher)
    by_ordinal: dict[tuple[Any, ...], list[str]] = {}
    for name in names:
        by_ordinal.setdefault(ordinal_of(name), []).append(name)
    ids: dict[str, int] = {}
    layer = -1
    for ordinal in sorted(by_ordinal):
        if layer < 0 or ordinal[-1] != _MERGE_WITH_PREVIOUS:
            layer += 1
        for name in by_ordinal[ordinal]:
            ids[name] = layer
    return ids


# eq=False: one object per layer, hashed by identity, so it is a cheap part of a grouping key.
@dataclass(frozen=True, slots=True, eq=False)
class LayerScale:
    """One layer of the model: what layer decay gives each parameter in it.

    Attributes:
        scale: ``max(min_scale, rate ** (num_layers - layer_id - 1))``.
        frozen: Whether the scale is below ``freeze_below``.
        label: How ``explain`` names the layer: ``'layer_decay[3/14]'`` (its id and count).
    """

    scale: Any
    frozen: bool
    label: str


# -- per model --------------------------------------------------------------------------------


class LayerDepths:
    """Layer ids and scales for one model; scales are computed once per layer.

    Args:
        config: The validated ``layer_decay``.
        model: The unwrapped model.

    Raises:
        ValueError: the model lacks the hook ``depth`` names (or, without ``depth``, both).
    """

    def __init__(self, config: LayerDecay, model: nn.Module) -> None:
        self.config = config
        self._model_type = type(model).__name__
        # (layer id, num layers) -> its LayerScale
        self._by_layer: dict[tuple[int, int], LayerScale] = {}
        self._timm_ids: dict[str, int] = {}
        self._timm_count = 0
        self._layer: Callable[[str], tuple[int, int]]
        self._pairs: tuple[tuple[re.Pattern[str], int], ...] = ()
        depth = config.depth
        if depth is None:
            depth = next((hook for hook in _HOOKS if callable(getattr(model, hook, None))), None)
            if depth is None:
                raise ValueError(
                    f"{_WHERE} needs the layer depth of each parameter, but "
                    f"{type(model).__name__} ({origin(type(model))}) defines neither "
                    "get_layer_depth(name) (mmpretrain's hook) nor group_matcher(coarse) (timm's);"
                    " define one, or give depth as a list of [regex, n] pairs with num_layers."
                )
        if isinstance(depth, str):
            hook = getattr(model, depth, None)
            self._depth_label = f"{type(model).__name__}.{depth}"
            if not callable(hook):
                raise ValueError(
                    f"{_WHERE} depth={depth!r} needs {type(model).__name__}.{depth}(), which "
                    f"{origin(type(model))} does not define; define it, or use "
                    f"{'group_matcher' if depth == 'get_layer_depth' else 'get_layer_depth'} or "
                    "a list of [regex, n] pairs."
                )
            if depth == "group_matcher":
                self._timm_ids = timm_layer_ids(_rule_names(model), hook(coarse=False))
                self._timm_count = max(self._timm_ids.values(), default=-1) + 1
                self._layer = self._timm_layer
            else:
                self._hook = hook
                self._layer = self._hook_layer
        else:
            self._depth_label = "the [regex, n] list"
            self._pairs = depth
            assert config.num_layers is not None
            self._num_layers = config.num_layers
            self._layer = self._regex_layer
        # Per [regex, n] pair, the layer of each text its regex captured (None: no group).
        self._by_capture: list[dict[str | None, LayerScale]] = [{} for _ in self._pairs]

    def scales(self, names: list[str]) -> list[LayerScale]:
        """The layer of each parameter, by its full name, in order.

        Raises:
            ValueError: a layer id is outside ``0..num_layers - 1``.
        """
        if self._pairs:
            return self._regex_scales(names)
        return [self._scale(name) for name in names]

    def _regex_scales(self, names: list[str]) -> list[LayerScale]:
        # Pair by pair over the names no earlier pair matched, each regex mapped over them at
        # C speed, and a layer found by what its regex captured: the benchmark's five-rules row
        # (one pair, 10,000 names) spends 1.5 ms here against 4 ms for a call per name.
        scales: list[LayerScale | None] = [None] * len(names)
        left: Sequence[int] = range(len(names))
        pending: Iterable[str] = names  # the names at the positions in left
        for (pattern, _), by_capture in zip(self._pairs, self._by_capture, strict=True):
            grouped = pattern.groups > 0
            unmatched: list[int] = []
            for position, found in zip(left, map(pattern.match, pending), strict=True):
                if found is None:
                    unmatched.append(position)
                    continue
                captured = found[1] if grouped else None
                scale = by_capture.get(captured)
                if scale is None:
                    scale = by_capture[captured] = self._scale(names[position])
                scales[position] = scale
            left = unmatched
            pending = map(names.__getitem__, left)
        for position in left:  # a name no pair matches is in the top layer
            scales[position] = self._layer_scale(
                self._num_layers - 1, self._num_layers, names[position]
            )
        return scales  # type: ignore[return-value]  # every position is filled

    def _hook_layer(self, name: str) -> tuple[int, int]:
        found = self._hook(name)
        # A list too: mmpretrain unpacks the result (`layer_id, num_layers = ...`), which takes
        # any pair.
        if not (
            isinstance(found, tuple | list)
            and len(found) == 2
            and all(_is_count(value) for value in found)
        ):
            raise ValueError(
                f"{self._model_type}.get_layer_depth({name!r}) returned {found!r}; it must return "
                "(layer_id, num_layers), two ints."
            )
        return found[0], found[1]

    def _timm_layer(self, name: str) -> tuple[int, int]:
        # A name the ids lack is in the top layer: only a parameter an mmcv-era add_params
        # override places under a prefix of its own.
        return self._timm_ids.get(name, self._timm_count - 1), self._timm_count

    def _regex_layer(self, name: str) -> tuple[int, int]:
        for pattern, layer in self._pairs:
            found = pattern.match(name)
            if found is not None:
                if found.re.groups and found.group(1) is not None:
                    try:
                        layer += int(found.group(1))
                    except ValueError:
                        raise ValueError(
                            f"{_WHERE}['depth'] regex {pattern.pattern!r} captured "
                            f"{found.group(1)!r} from {name!r}, which is not an integer layer "
                            "number; capture digits only, e.g. r'blocks\\.(\\d+)'."
                        ) from None
                return layer, self._num_layers
        return self._num_layers - 1, self._num_layers

    def _scale(self, name: str) -> LayerScale:
        layer, count = self._layer(name)
        return self._layer_scale(layer, count, name)

    def _layer_scale(self, layer: int, count: int, name: str) -> LayerScale:
        """Layer ``layer`` of ``count``, where ``name`` is; one object per layer.

        Raises:
            ValueError: the layer id is outside ``0..count - 1``.
        """
        found = self._by_layer.get((layer, count))
        if found is None:
            if not 0 <= layer < count:
                raise ValueError(
                    f"{_WHERE}: parameter {name!r} is in layer {layer} of {count}, outside "
                    f"0..{count - 1}; the depth ({self._depth_label}) must give each parameter "
                    "a layer id below the number of layers."
                )
            config = self.config
            # rate ** k for the integer k: the goldens of mmpretrain and timm hold exactly.
            scale = max(config.min_scale, config.rate ** (count - layer - 1))
            frozen = config.freeze_below is not None and scale < config.freeze_below
            found = self._by_layer[(layer, count)] = LayerScale(
                scale, frozen, f"layer_decay[{layer}/{count}]"
            )
        return found


def _rule_names(model: nn.Module) -> Iterator[str]:
    """Every parameter's name as the rules see it, in ``named_parameters()`` order.

    Named as the walk names them, so no wrapper inside the model (FSDP1 around each block,
    checkpointing) hides a block from the matcher; an FSDP1 flat parameter
    (``use_orig_params=False``) stands for the originals it holds, by their names.
    """
    for name, _, _, param in walk_parameters(model):
        if is_flat_parameter(param):
            prefix = name.rpartition(".")[0]
            yield from (original.name_in(prefix) for original in flat_originals(param))
        else:
            yield name
