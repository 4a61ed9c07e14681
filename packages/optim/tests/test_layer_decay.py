"""SPEC 3.3 ``layer_decay``: mmpretrain's and timm's published goldens, exactly; its errors."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
import torch
from torch import nn

from regtree_optim import DefaultOptimizerConstructor, build_optimizer
from regtree_optim._layer_decay import timm_layer_ids


class ToyViTBackbone(nn.Module):
    """mmpretrain's test backbone: 1-element tokens and two ``Conv2d(3, 3, 1)`` layers."""

    def __init__(self, num_layers: int = 2) -> None:
        super().__init__()
        self.cls_token = nn.Parameter(torch.ones(1))
        self.pos_embed = nn.Parameter(torch.ones(1))
        self.num_layers = num_layers
        self.layers = nn.ModuleList(nn.Conv2d(3, 3, 1) for _ in range(num_layers))

    def get_layer_depth(self, name: str, prefix: str = "") -> tuple[int, int]:
        # mmpretrain's ViT: tokens and patch embedding 0, layers.i i + 1, the rest the top.
        num_layers = self.num_layers + 2
        if not name.startswith(prefix):
            return num_layers - 1, num_layers
        name = name[len(prefix) :]
        if name in ("cls_token", "pos_embed") or name.startswith("patch_embed"):
            return 0, num_layers
        if name.startswith("layers"):
            return int(name.split(".")[1]) + 1, num_layers
        return num_layers - 1, num_layers


class ToyViT(nn.Module):
    """mmpretrain's test classifier: the backbone and a ``Linear(1, 1)`` head."""

    def __init__(self) -> None:
        super().__init__()
        self.backbone = ToyViTBackbone()
        self.head = nn.Linear(1, 1)

    def get_layer_depth(self, name: str) -> tuple[int, int]:
        # As mmpretrain's ImageClassifier: the backbone's depth, with its prefix.
        return self.backbone.get_layer_depth(name, "backbone.")


def test_mmpretrain_layer_decay_golden_holds_exactly() -> None:
    base_lr, base_wd = 1.0, 0.05
    cfg = {
        "type": "AdamW",
        "lr": base_lr,
        "betas": (0.9, 0.999),
        "weight_decay": base_wd,
        "paramwise_cfg": {
            "layer_decay": {"rate": 2.0},
            "bias_decay_mult": 0.0,
            "custom_keys": {".cls_token": {"decay_mult": 0.0}, ".pos_embed": {"decay_mult": 0.0}},
            "merge_groups": False,  # mmpretrain's layout: one group per parameter
        },
    }
    optimizer = build_optimizer(ToyViT(), cfg)
    expected = [
        ("backbone.cls_token", 8 * base_lr, 0.0),
        ("backbone.pos_embed", 8 * base_lr, 0.0),
        ("backbone.layers.0.weight", 4 * base_lr, base_wd),
        ("backbone.layers.0.bias", 4 * base_lr, 0.0),
        ("backbone.layers.1.weight", 2 * base_lr, base_wd),
        ("backbone.layers.1.bias", 2 * base_lr, 0.0),
        ("head.weight", 1 * base_lr, base_wd),
        ("head.bias", 1 * base_lr, 0.0),
    ]
    assert isinstance(optimizer, torch.optim.AdamW)
    assert (optimizer.defaults["lr"], optimizer.defaults["weight_decay"]) == (base_lr, base_wd)
    got = [(g["param_names"][0], g["lr"], g["weight_decay"]) for g in optimizer.param_groups]
    assert got == expected


def test_mmpretrain_golden_explain_names_the_layer_and_the_products() -> None:
    constructor = DefaultOptimizerConstructor(
        {"type": "AdamW", "lr": 1.0, "weight_decay": 0.05},
        {"layer_decay": {"rate": 2.0}, "bias_decay_mult": 0.0},
    )
    rows = {row.name: row for row in constructor.explain(ToyViT())}
    bias = rows["backbone.layers.0.bias"]
    assert bias.rule == "bias_decay_mult, layer_decay[1/4]"
    assert (bias.lr_mult, bias.decay_mult) == (4.0, 0.0)
    assert rows["head.weight"].rule == "layer_decay[3/4]"


class TimmViT(nn.Module):
    """timm's ViT layout and its ``group_matcher`` (stem, blocks, the final norm merged)."""

    def __init__(self, depth: int = 2) -> None:
        super().__init__()
        self.cls_token = nn.Parameter(torch.zeros(1, 1, 4))
        self.reg_token = nn.Parameter(torch.zeros(1, 1, 4))
        self.pos_embed = nn.Parameter(torch.zeros(1, 5, 4))
        self.patch_embed = nn.Module()
        self.patch_embed.proj = nn.Conv2d(3, 4, 2, stride=2)
        self.blocks = nn.Sequential(
            *[nn.Sequential(nn.LayerNorm(4), nn.Linear(4, 4)) for _ in range(depth)]
        )
        self.norm = nn.LayerNorm(4)
        self.head = nn.Linear(4, 3)

    def group_matcher(self, coarse: bool = False) -> dict[str, Any]:
        return {
            "stem": r"^cls_token|reg_token|pos_embed|patch_embed",
            "blocks": [(r"^blocks\.(\d+)", None), (r"^norm", (99999,))],
        }


def _timm_layer(name: str) -> str:
    if name.startswith("blocks."):
        return f"blocks.{name.split('.')[1]}"
    return name.split(".")[0]


@pytest.mark.parametrize(
    ("min_scale", "scales"),
    [
        (0.0, {"stem": 0.125, "blocks.0": 0.25, "blocks.1": 0.5, "norm": 0.5, "head": 1.0}),
        (0.3, {"stem": 0.3, "blocks.0": 0.3, "blocks.1": 0.5, "norm": 0.5, "head": 1.0}),
    ],
)
def test_timm_param_groups_layer_decay_golden_holds_exactly(
    min_scale: float, scales: dict[str, float]
) -> None:
    base_lr = 0.1
    constructor = DefaultOptimizerConstructor(
        {"type": "AdamW", "lr": base_lr, "weight_decay": 0.05},
        {"layer_decay": {"rate": 0.5, "min_scale": min_scale}},  # group_matcher: the model's hook
    )
    stem = ("cls_token", "reg_token", "pos_embed", "patch_embed")
    for row in constructor.explain(TimmViT(depth=2)):
        layer = _timm_layer(row.name)
        scale = scales["stem" if layer in stem else layer]
        # timm's lr: base_lr * lr_scale, its lr_scale max(min_scale, rate ** (max_id - id)).
        assert row.lr == base_lr * scale, row.name
        assert row.lr_mult == scale, row.name
    rows = {row.name: row for row in constructor.explain(TimmViT(depth=2))}
    assert rows["norm.weight"].rule == "layer_decay[2/4]"  # merged into the last block's id
    assert rows["head.bias"].rule == "layer_decay[3/4]"  # unmatched: above every group


def test_min_scale_none_is_not_given() -> None:
    cfg = {"rate": 0.5, "depth": [[r"(\d+)\.", 0]], "num_layers": 3}
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2))
    lrs = [
        [
            row.lr
            for row in DefaultOptimizerConstructor(
                {"type": "SGD", "lr": 1.0}, {"layer_decay": ld}
            ).explain(model)
        ]
        for ld in (cfg, {**cfg, "min_scale": None})
    ]
    assert lrs[0] == lrs[1] == [0.25, 0.25, 0.5, 0.5, 1.0, 1.0]


def test_regex_pairs_give_n_plus_the_captured_number_and_the_rest_the_top() -> None:
    constructor = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0},
        {
            "layer_decay": {
                "rate": 0.5,
                "depth": [[r"backbone\.layers\.(\d+)\.", 1], [r"backbone\.", 0]],
                "num_layers": 4,
            }
        },
    )
    rows = {row.name: row for row in constructor.explain(ToyViT())}
    assert rows["backbone.cls_token"].rule == "layer_decay[0/4]"
    assert rows["backbone.layers.1.bias"].rule == "layer_decay[2/4]"
    assert rows["head.weight"].rule == "layer_decay[3/4]"
    assert [
        rows[n].lr for n in ("backbone.cls_token", "backbone.layers.0.weight", "head.bias")
    ] == [
        0.5**3,
        0.5**2,
        1.0,
    ]


def test_the_product_runs_left_to_right_through_custom_key_rules_and_scale() -> None:
    base_lr = 0.3
    constructor = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": base_lr},
        {
            "custom_keys": {"layers.0": {"lr_mult": 0.7}},
            "rules": [{"name": "bias", "lr_mult": 1.3}, {"match": "backbone.*", "lr_mult": 0.9}],
            "layer_decay": {"rate": 0.6},
        },
    )
    rows = {row.name: row for row in constructor.explain(ToyViT())}
    bias = rows["backbone.layers.0.bias"]
    assert bias.lr == base_lr * 0.7 * 1.3 * 0.9 * 0.6**2
    assert bias.lr_mult == 0.7 * 1.3 * 0.9 * 0.6**2
    assert bias.rule == "custom_keys['layers.0'], rules[0], rules[1], layer_decay[1/4]"


def test_freeze_below_freezes_low_layers_and_explain_says_why() -> None:
    model = ToyViT()
    constructor = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0, "weight_decay": 0.1},
        {"layer_decay": {"rate": 0.5, "freeze_below": 0.3}},
    )
    rows = {row.name: row for row in constructor.explain(model)}
    token = rows["backbone.cls_token"]
    assert token.rule == "frozen by layer_decay[0/4] (scale 0.125 < freeze_below 0.3)"
    assert (token.lr, token.weight_decay) == (1.0, 0.1)  # the optimizer defaults
    assert rows["backbone.layers.1.weight"].lr == 0.5
    constructor(model)
    frozen = {name for name, param in model.named_parameters() if not param.requires_grad}
    assert frozen == {
        "backbone.cls_token",
        "backbone.pos_embed",
        "backbone.layers.0.weight",
        "backbone.layers.0.bias",
    }


def test_parameters_frozen_in_the_model_get_no_layer_decay() -> None:
    model = ToyViT()
    model.backbone.layers[0].requires_grad_(False)
    rows = {
        row.name: row
        for row in DefaultOptimizerConstructor(
            {"type": "SGD", "lr": 1.0}, {"layer_decay": {"rate": 2.0}}
        ).explain(model)
    }
    assert (rows["backbone.layers.0.weight"].lr, rows["backbone.layers.0.weight"].rule) == (
        1.0,
        "frozen (optimizer defaults)",
    )


class FrozenStemNet(nn.Module):
    """A stem (frozen by default) and a head whose get_layer_depth knows the head's names only."""

    def __init__(self, frozen: bool = True, stem: nn.Module | None = None) -> None:
        super().__init__()
        self.stem = nn.Linear(2, 2) if stem is None else stem
        self.head = nn.Linear(2, 2)
        self.stem.requires_grad_(not frozen)
        self.asked: list[str] = []

    def get_layer_depth(self, name: str) -> tuple[int, int]:
        self.asked.append(name)
        return {"head.weight": (0, 2), "head.bias": (0, 2)}[name]


def test_a_frozen_parameter_is_never_given_to_the_depth() -> None:
    # No layer decay applies to a frozen parameter, so its name never reaches the hook, and a
    # regex layer id out of range, or no integer, on frozen names is no error.
    model = FrozenStemNet()
    optimizer = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0}, {"layer_decay": {"rate": 0.5}}
    )(model)
    assert model.asked == ["head.weight", "head.bias"]
    # The head is in layer 0 of 2: scale 0.5; the frozen stem keeps the base lr.
    assert [(group["param_names"], group["lr"]) for group in optimizer.param_groups] == [
        (["stem.weight", "stem.bias"], 1.0),
        (["head.weight", "head.bias"], 0.5),
    ]
    for depth in ([[r"stem\.", 5]], [[r"(stem)\.", 0]]):
        model = FrozenStemNet()
        cfg = {"layer_decay": {"rate": 0.5, "depth": depth, "num_layers": 3}}
        rows = DefaultOptimizerConstructor({"type": "SGD", "lr": 1.0}, cfg).explain(model)
        assert [(row.name, row.lr, row.rule) for row in rows][:2] == [
            ("stem.weight", 1.0, "frozen (optimizer defaults)"),
            ("stem.bias", 1.0, "frozen (optimizer defaults)"),
        ]


def test_a_parameter_a_freeze_rule_freezes_is_never_given_to_the_depth_either() -> None:
    model = FrozenStemNet(frozen=False)
    cfg = {"rules": [{"match": "stem.*", "freeze": True}], "layer_decay": {"rate": 0.5}}
    optimizer = DefaultOptimizerConstructor({"type": "SGD", "lr": 1.0}, cfg)(model)
    assert model.asked == ["head.weight", "head.bias"]
    assert [(group["param_names"], group["lr"]) for group in optimizer.param_groups] == [
        (["stem.weight", "stem.bias"], 1.0),
        (["head.weight", "head.bias"], 0.5),
    ]
    assert not model.stem.weight.requires_grad
    # A regex layer id out of range on the names the rule freezes is no error either.
    cfg["layer_decay"] = {"rate": 0.5, "depth": [[r"stem\.", 5]], "num_layers": 2}
    rows = DefaultOptimizerConstructor({"type": "SGD", "lr": 1.0}, cfg).explain(
        FrozenStemNet(frozen=False)
    )
    assert [(row.name, row.lr, row.rule) for row in rows] == [
        ("stem.weight", 1.0, "frozen by rules[0] (freeze: true)"),
        ("stem.bias", 1.0, "frozen by rules[0] (freeze: true)"),
        ("head.weight", 1.0, "layer_decay[1/2]"),
        ("head.bias", 1.0, "layer_decay[1/2]"),
    ]


def test_a_freeze_rule_by_module_name_and_ndim_keeps_its_parameters_from_the_depth() -> None:
    # No rule selects by name here: which parameters the rule freezes is told by their module,
    # attribute name and ndim alone.
    model = FrozenStemNet(frozen=False, stem=nn.Conv1d(1, 1, 1))
    rule = {"module": "conv", "name": ["weight", "bias"], "ndim": [1, 3], "freeze": True}
    cfg = {"rules": [rule], "layer_decay": {"rate": 0.5}}
    optimizer = DefaultOptimizerConstructor({"type": "SGD", "lr": 1.0}, cfg)(model)
    assert model.asked == ["head.weight", "head.bias"]
    assert [group["lr"] for group in optimizer.param_groups] == [1.0, 0.5]
    assert not model.stem.weight.requires_grad


def test_each_regex_pair_keeps_its_own_layers_by_capture() -> None:
    # The same captured text under two pairs is two layers: blocks.0 is layer 0, stages.0 is 2.
    model = nn.Module()
    model.blocks = nn.ModuleList([nn.Linear(1, 1, bias=False)])
    model.stages = nn.ModuleList([nn.Linear(1, 1, bias=False)])
    depth = [[r"blocks\.(\d+)\.", 0], [r"stages\.(\d+)\.", 2]]
    cfg = {"layer_decay": {"rate": 0.5, "depth": depth, "num_layers": 4}}
    for _ in range(2):  # and again, from the layers kept by the first walk
        rows = DefaultOptimizerConstructor({"type": "SGD", "lr": 1.0}, cfg).explain(model)
        assert [(row.name, row.lr) for row in rows] == [
            ("blocks.0.weight", 0.125),
            ("stages.0.weight", 0.5),
        ]


def test_get_layer_depth_is_the_default_where_a_model_has_both_hooks() -> None:
    class Both(ToyViT):
        def group_matcher(self, coarse: bool = False) -> dict[str, Any]:
            return {"everything": r".*"}

    rows = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0}, {"layer_decay": {"rate": 2.0}}
    ).explain(Both())
    assert rows[0].rule == "layer_decay[0/4]"
    by_matcher = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0}, {"layer_decay": {"rate": 2.0, "depth": "group_matcher"}}
    ).explain(Both())
    assert {row.rule for row in by_matcher} == {"layer_decay[0/1]"}


def test_a_model_without_the_hook_is_a_value_error_naming_hook_and_type() -> None:
    plain = nn.Sequential(nn.Linear(2, 2))
    constructor = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0}, {"layer_decay": {"rate": 0.5}}
    )
    with pytest.raises(ValueError, match=r"Sequential .* defines neither get_layer_depth\(name\)"):
        constructor.explain(plain)
    named = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0}, {"layer_decay": {"rate": 0.5, "depth": "group_matcher"}}
    )
    with pytest.raises(
        ValueError, match=r"needs ToyViT\.group_matcher\(\), which .*ToyViT does not define"
    ):
        named(ToyViT())


def test_a_layer_id_outside_the_range_names_the_parameter() -> None:
    class Off(ToyViT):
        def get_layer_depth(self, name: str) -> tuple[int, int]:
            return (7, 4) if name == "head.bias" else (0, 4)

    model = Off()
    constructor = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0}, {"layer_decay": {"rate": 0.5, "freeze_below": 0.2}}
    )
    with pytest.raises(
        ValueError, match=r"parameter 'head\.bias' is in layer 7 of 4, outside 0\.\.3"
    ):
        constructor(model)
    assert all(param.requires_grad for param in model.parameters())  # nothing half-changed


@pytest.mark.parametrize(
    ("layer_decay", "error", "message"),
    [
        ({"rate": 0}, ValueError, r"\['rate'\] must be > 0, got 0"),
        (
            {"rate": "0.5"},
            TypeError,
            r"\['rate'\] must be a real number, got '0\.5' \(str\); write it as a number, 0\.5 "
            r"without quotes",
        ),
        ({"rat": 0.5}, ValueError, r"unknown key 'rat'; did you mean 'rate'\?"),
        ({"min_scale": 0.1}, ValueError, r"needs 'rate'"),
        ({"rate": 0.5, "depth": "get_layer_dept"}, ValueError, r"Did you mean 'get_layer_depth'\?"),
        (
            {"rate": 0.5, "depth": [[r"blocks\.(\d+)", 1]]},
            ValueError,
            r"needs num_layers beside it",
        ),
        (
            {"rate": 0.5, "depth": [["blocks(", 1]], "num_layers": 3},
            ValueError,
            r"\['depth'\]\[0\] regex 'blocks\(' is not a valid",
        ),
        (
            {"rate": 0.5, "num_layers": 3},
            ValueError,
            r"num_layers'\] goes with a list of \[regex, n\] pairs only",
        ),
        ([0.5], TypeError, r"must be a mapping with 'rate'"),
    ],
)
def test_bad_layer_decay_configs_fail_at_construction(
    layer_decay: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        DefaultOptimizerConstructor({"type": "SGD", "lr": 1.0}, {"layer_decay": layer_decay})


def test_layer_decay_without_lr_is_a_value_error() -> None:
    with pytest.raises(
        ValueError,
        match=r"^paramwise_cfg sets layer_decay=\{'rate': 0\.5\} but optimizer_cfg has no lr, so "
        r"there is nothing to multiply; add lr to the optimizer config or drop layer_decay\.$",
    ):
        DefaultOptimizerConstructor({"type": "SGD"}, {"layer_decay": {"rate": 0.5}})


def test_timm_layer_ids_from_a_callable_matcher_and_a_dict_with_unused_groups() -> None:
    names = ["stem.w", "stages.0.0.w", "stages.0.1.w", "stages.1.0.w", "final.w", "head.w"]

    def matcher(name: str) -> tuple[int, ...] | int:
        if name.startswith("stages."):
            return tuple(int(part) + 1 for part in name.split(".")[1:3])
        return {"stem.w": 0, "final.w": 99}.get(name, 100)

    assert timm_layer_ids(names, matcher) == {
        "stem.w": 0,
        "stages.0.0.w": 1,
        "stages.0.1.w": 2,
        "stages.1.0.w": 3,
        "final.w": 4,
        "head.w": 5,
    }
    # A None group still counts as a position, as timm's enumerate does; unmatched names sort last.
    spec = {"unused": None, "stem": r"^stem", "stages": [(r"^stages\.(\d+)\.(\d+)", None)]}
    ids = timm_layer_ids(names, spec)
    assert [ids[name] for name in names] == [0, 1, 2, 3, 4, 4]


_LD = "paramwise_cfg['layer_decay']"


@pytest.mark.parametrize(
    ("layer_decay", "error", "message"),
    [
        (
            {"rate": 0.5, "zzzzzz": 1},
            ValueError,
            f"{_LD} has unknown key 'zzzzzz'. Valid keys: rate, min_scale, freeze_below, depth, "
            "num_layers.",
        ),
        (
            {"rate": 0.5, "depth": "zzzz"},
            ValueError,
            f"{_LD}['depth'] must be 'get_layer_depth', 'group_matcher' or a list of [regex, n] "
            "pairs, got 'zzzz'.",
        ),
        (
            {"rate": 0.5, "num_layers": 3},
            ValueError,
            f"{_LD}['num_layers'] goes with a list of [regex, n] pairs only; the model's hook "
            "gives the number of layers itself. Drop num_layers.",
        ),
        (
            {"rate": 0.5, "depth": "get_layer_depth", "num_layers": 3},
            ValueError,
            f"{_LD}['num_layers'] goes with a list of [regex, n] pairs only; the model's "
            "get_layer_depth gives the number of layers itself. Drop num_layers.",
        ),
        (
            {"rate": 0.5, "depth": []},
            ValueError,
            f"{_LD}['depth'] is an empty list; give at least one [regex, n] pair.",
        ),
        (
            {"rate": 0.5, "min_scale": "0.1"},
            TypeError,
            f"{_LD}['min_scale'] must be a real number, got '0.1' (str); write it as a number, "
            "0.1 without quotes.",
        ),
        (
            {"rate": 0.5, "freeze_below": "1"},
            TypeError,
            f"{_LD}['freeze_below'] must be a real number, got '1' (str); write it as a number, "
            "1 without quotes.",
        ),
        # Not finite: nan compares false with everything (lrs of nan, groups that never merge).
        ({"rate": math.inf}, ValueError, f"{_LD}['rate'] must be a finite number, got inf."),
        ({"rate": math.nan}, ValueError, f"{_LD}['rate'] must be a finite number, got nan."),
        (
            {"rate": 0.5, "min_scale": math.nan},
            ValueError,
            f"{_LD}['min_scale'] must be a finite number, got nan.",
        ),
        (
            {"rate": 0.5, "freeze_below": math.nan},
            ValueError,
            f"{_LD}['freeze_below'] must be a finite number, got nan.",
        ),
        (
            {"rate": 0.5, "freeze_below": -math.inf},
            ValueError,
            f"{_LD}['freeze_below'] must be a finite number, got -inf.",
        ),
        *(
            (
                {"rate": 0.5, "min_scale": min_scale},
                ValueError,
                f"{_LD}['min_scale'] must be in [0, 1], got {min_scale!r}: it is the smallest "
                "scale a layer gets (the top layer's is 1), and 0, the default, sets no floor.",
            )
            for min_scale in (-0.1, 1.5)
        ),
        (
            [0.5],
            TypeError,
            f"{_LD} must be a mapping with 'rate' (and optionally min_scale, freeze_below, depth, "
            "num_layers), got [0.5] (list).",
        ),
    ],
)
def test_a_bad_layer_decay_message_names_the_key_and_what_would_work(
    layer_decay: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        DefaultOptimizerConstructor({"type": "SGD", "lr": 1.0}, {"layer_decay": layer_decay})


@pytest.mark.parametrize("pair", [["x", -1], ["x", 1.5], ["x", True], [3, 1], ["x", 1, 2], "x1"])
def test_a_depth_entry_that_is_no_regex_and_layer_pair_is_a_value_error(pair: Any) -> None:
    message = f"{_LD}['depth'][1] must be a [regex, n] pair (a str and an int >= 0), got {pair!r}."
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        DefaultOptimizerConstructor(
            {"type": "SGD", "lr": 1.0},
            {"layer_decay": {"rate": 0.5, "depth": [["ok", 0], pair], "num_layers": 3}},
        )


@pytest.mark.parametrize("num_layers", [0, -1, 2.0, True, None])
def test_regex_pairs_need_a_positive_int_num_layers(num_layers: Any) -> None:
    with pytest.raises(
        ValueError,
        match=rf"needs num_layers beside it \(an int > 0; names that match no regex are in the "
        rf"top layer, num_layers - 1\), got {re.escape(repr(num_layers))}\.$",
    ):
        DefaultOptimizerConstructor(
            {"type": "SGD", "lr": 1.0},
            {"layer_decay": {"rate": 0.5, "depth": [["x", 0]], "num_layers": num_layers}},
        )


def test_one_layer_of_regex_pairs_scales_nothing() -> None:
    rows = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0},
        {"layer_decay": {"rate": 0.5, "depth": [["head", 0]], "num_layers": 1}},
    ).explain(ToyViT())
    assert {(row.lr, row.rule) for row in rows} == {(1.0, "layer_decay[0/1]")}


def test_regex_pairs_decide_alone_on_a_model_with_no_hook_and_freeze_below_holds() -> None:
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2))
    constructor = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0},
        {
            "layer_decay": {
                "rate": 0.5,
                "depth": [[r"(\d+)\.", 0]],
                "num_layers": 3,
                "freeze_below": 0.3,
            }
        },
    )
    rows = {row.name: row for row in constructor.explain(model)}
    assert rows["0.weight"].rule == "frozen by layer_decay[0/3] (scale 0.25 < freeze_below 0.3)"
    assert (rows["1.weight"].lr, rows["1.weight"].rule) == (0.5, "layer_decay[1/3]")
    assert (rows["2.bias"].lr, rows["2.bias"].rule) == (1.0, "layer_decay[2/3]")
    constructor(model)
    assert [param.requires_grad for param in model.parameters()] == [False] * 2 + [True] * 4


def test_a_scale_equal_to_freeze_below_is_not_frozen() -> None:
    model = ToyViT()
    constructor = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0}, {"layer_decay": {"rate": 0.5, "freeze_below": 0.25}}
    )
    rows = {row.name: row for row in constructor.explain(model)}
    assert (rows["backbone.layers.0.weight"].lr, rows["backbone.layers.0.weight"].rule) == (
        0.25,
        "layer_decay[1/4]",
    )
    assert rows["backbone.cls_token"].rule.startswith("frozen by layer_decay[0/4]")


def test_a_regex_layer_id_equal_to_num_layers_is_out_of_range() -> None:
    constructor = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0},
        {"layer_decay": {"rate": 0.5, "depth": [["head", 4]], "num_layers": 4}},
    )
    message = (
        f"{_LD}: parameter 'head.weight' is in layer 4 of 4, outside 0..3; the depth (the "
        "[regex, n] list) must give each parameter a layer id below the number of layers."
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        constructor.explain(ToyViT())


def test_a_get_layer_depth_id_out_of_range_names_the_hook() -> None:
    class Off(ToyViT):
        def get_layer_depth(self, name: str) -> tuple[int, int]:
            return (4, 4) if name == "head.weight" else (0, 4)

    constructor = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0}, {"layer_decay": {"rate": 0.5}}
    )
    with pytest.raises(
        ValueError,
        match=r"'head\.weight' is in layer 4 of 4, outside 0\.\.3; the depth "
        r"\(Off\.get_layer_depth\) must give",
    ):
        constructor.explain(Off())


def test_a_regex_capture_from_an_optional_group_keeps_each_layer_apart() -> None:
    model = nn.Module()
    model.blocks = nn.Module()
    model.blocks.scale = nn.Parameter(torch.ones(1))  # matches with the group left out
    model.blocks.add_module("2", nn.Linear(1, 1))
    rows = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0},
        {"layer_decay": {"rate": 0.5, "depth": [[r"blocks(?:\.(\d+))?", 0]], "num_layers": 4}},
    ).explain(model)
    assert [(row.name, row.rule) for row in rows] == [
        ("blocks.scale", "layer_decay[0/4]"),
        ("blocks.2.weight", "layer_decay[2/4]"),
        ("blocks.2.bias", "layer_decay[2/4]"),
    ]


def test_a_regex_capturing_no_integer_says_to_capture_digits() -> None:
    constructor = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0},
        {"layer_decay": {"rate": 0.5, "depth": [[r"backbone\.(\w+)\.", 0]], "num_layers": 4}},
    )
    message = (
        rf"{_LD}['depth'] regex 'backbone\\.(\\w+)\\.' captured 'layers' from "
        "'backbone.layers.0.weight', which is not an integer layer number; capture digits only, "
        r"e.g. r'blocks\.(\d+)'."
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        constructor.explain(ToyViT())


def test_get_layer_depth_may_return_a_list_as_mmpretrain_unpacks_it() -> None:
    class Listed(ToyViT):
        def get_layer_depth(self, name: str) -> Any:
            return list(super().get_layer_depth(name))

    constructor = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0}, {"layer_decay": {"rate": 0.5}}
    )
    rows = [(row.name, row.lr, row.rule) for row in constructor.explain(Listed())]
    assert rows == [(row.name, row.lr, row.rule) for row in constructor.explain(ToyViT())]


@pytest.mark.parametrize("found", [(1, 4.0), (1, 4, 0), [1], (1,), 1, None])
def test_get_layer_depth_must_return_two_ints(found: Any) -> None:
    class Bad(ToyViT):
        def get_layer_depth(self, name: str) -> Any:
            return found

    message = (
        f"Bad.get_layer_depth('backbone.cls_token') returned {found!r}; it must return "
        "(layer_id, num_layers), two ints."
    )
    constructor = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0}, {"layer_decay": {"rate": 0.5}}
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        constructor.explain(Bad())


def test_a_model_without_the_hook_is_told_every_way_out() -> None:
    constructor = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0}, {"layer_decay": {"rate": 0.5}}
    )
    message = (
        f"{_LD} needs the layer depth of each parameter, but Sequential "
        "(torch.nn.modules.container:Sequential) defines neither get_layer_depth(name) "
        "(mmpretrain's hook) nor group_matcher(coarse) (timm's); define one, or give depth as a "
        "list of [regex, n] pairs with num_layers."
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        constructor.explain(nn.Sequential(nn.Linear(2, 2)))


class TimmOnly(nn.Module):
    """timm's hook only: a block, a final norm merged into it, and a head."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)])
        self.norm = nn.LayerNorm(2)
        self.head = nn.Linear(2, 2)

    def group_matcher(self, coarse: bool = False) -> dict[str, Any]:
        # As timm's models: coarse gives the blocks as one group.
        blocks = r"^blocks" if coarse else [(r"^blocks\.(\d+)", None), (r"^norm", (99999,))]
        return {"blocks": blocks}


@pytest.mark.parametrize(
    ("depth", "other"), [("get_layer_depth", "group_matcher"), ("group_matcher", "get_layer_depth")]
)
def test_a_model_without_the_named_hook_is_told_to_use_the_other(depth: str, other: str) -> None:
    model = TimmOnly() if depth == "get_layer_depth" else ToyViT()
    kind = type(model).__name__
    constructor = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0}, {"layer_decay": {"rate": 0.5, "depth": depth}}
    )
    needs = f"{_LD} depth={depth!r} needs {kind}.{depth}(), which "
    way_out = f"{kind} does not define; define it, or use {other} or a list of [regex, n] pairs."
    with pytest.raises(ValueError, match=f"^{re.escape(needs)}.*:{re.escape(way_out)}$"):
        constructor.explain(model)


def test_group_matcher_is_read_fine_and_a_final_norm_joins_the_first_layer() -> None:
    rows = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0}, {"layer_decay": {"rate": 0.5}}
    ).explain(TimmOnly())
    assert [(row.name, row.rule) for row in rows] == [
        ("blocks.0.weight", "layer_decay[0/3]"),
        ("blocks.0.bias", "layer_decay[0/3]"),
        ("blocks.1.weight", "layer_decay[1/3]"),
        ("blocks.1.bias", "layer_decay[1/3]"),
        ("norm.weight", "layer_decay[1/3]"),
        ("norm.bias", "layer_decay[1/3]"),
        ("head.weight", "layer_decay[2/3]"),
        ("head.bias", "layer_decay[2/3]"),
    ]
    one_block = TimmOnly()
    del one_block.blocks[1]
    rows = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0}, {"layer_decay": {"rate": 0.5}}
    ).explain(one_block)
    assert {row.name: row.rule for row in rows}["norm.weight"] == "layer_decay[0/2]"


def test_a_model_without_parameters_explains_to_no_rows() -> None:
    class Empty(nn.Module):
        def group_matcher(self, coarse: bool = False) -> dict[str, Any]:
            return {"blocks": r"^blocks"}

    explanation = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0}, {"layer_decay": {"rate": 0.5}}
    ).explain(Empty())
    assert list(explanation) == []


def test_a_group_matcher_returning_no_dict_or_callable_is_a_type_error() -> None:
    class Listing(TimmOnly):
        def group_matcher(self, coarse: bool = False) -> Any:
            return [r"^blocks"]

    message = (
        "group_matcher(coarse=False) returned ['^blocks'] (list); layer_decay reads a dict of "
        "group name -> regex or [(regex, suffix), ...] as timm models return, or a callable."
    )
    constructor = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0}, {"layer_decay": {"rate": 0.5}}
    )
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        constructor.explain(Listing())


def test_a_group_matcher_pattern_capturing_nothing_is_a_value_error() -> None:
    class Optional(TimmOnly):
        def group_matcher(self, coarse: bool = False) -> Any:
            return {"blocks": [(r"^blocks(?:\.(\d+))?", None)]}

    model = Optional()
    model.blocks.register_parameter("scale", nn.Parameter(torch.ones(1)))
    message = (
        r"group_matcher pattern '^blocks(?:\\.(\\d+))?' matched 'blocks.scale' without capturing "
        "each of its groups; layer ids need a number for each group."
    )
    constructor = DefaultOptimizerConstructor(
        {"type": "SGD", "lr": 1.0}, {"layer_decay": {"rate": 0.5}}
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        constructor.explain(model)
