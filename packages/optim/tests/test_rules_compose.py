"""SPEC 3.3: ``compose``, the ``rules`` list (selectors, effects, order) and ``freeze``."""

from __future__ import annotations

import re
import warnings
from typing import Any

import pytest
import torch
from torch import nn

from regtree_optim import DefaultOptimizerConstructor, ParamRow, build_optimizer, register_dcn_type

LR = 0.1
WD = 0.01
SGD: dict[str, Any] = {"type": "SGD", "lr": LR, "momentum": 0.9, "weight_decay": WD}


class DeformStandIn(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(2, 2, 3, 3))


register_dcn_type(DeformStandIn)


class KindsModel(nn.Module):
    """One module of every kind a ``module`` selector names, and a top-level parameter."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(1))
        self.backbone = nn.Sequential()
        self.backbone.add_module("conv", nn.Conv2d(2, 4, 1))
        self.backbone.add_module("dw", nn.Conv2d(4, 4, 3, groups=4, bias=False))
        self.backbone.add_module("bn", nn.BatchNorm2d(4))
        self.backbone.add_module("norm", nn.LayerNorm(4))
        self.head = nn.Module()
        self.head.fc = nn.Linear(4, 2)
        self.head.emb = nn.Embedding(3, 4)
        self.head.bag = nn.EmbeddingBag(3, 4)
        self.head.dcn = DeformStandIn()


def _rows(paramwise_cfg: dict[str, Any], model: nn.Module | None = None) -> dict[str, ParamRow]:
    explanation = DefaultOptimizerConstructor(SGD, paramwise_cfg).explain(model or KindsModel())
    return {row.name: row for row in explanation}


def _selected(rule: dict[str, Any]) -> set[str]:
    rows = _rows({"rules": [{**rule, "lr_mult": 2.0}]})
    return {name for name, row in rows.items() if "rules[0]" in row.rule}


def test_compose_multiplies_norm_and_bias_rules_on_top_of_a_custom_key() -> None:
    cfg = {
        "custom_keys": {"backbone": {"lr_mult": 0.1}},
        "norm_decay_mult": 0.0,
        "bias_lr_mult": 2.0,
        "bias_decay_mult": 0.5,
    }
    composed = _rows({**cfg, "compose": True})
    norm = composed["backbone.bn.weight"]
    assert (norm.lr, norm.weight_decay) == (LR * 0.1, WD * 1.0 * 0.0)
    assert norm.rule == "custom_keys['backbone'], norm_decay_mult"
    bias = composed["backbone.conv.bias"]
    assert (bias.lr, bias.weight_decay) == (LR * 0.1 * 2.0, WD * 1.0 * 0.5)
    assert bias.rule == "custom_keys['backbone'], bias_lr_mult, bias_decay_mult"
    assert (bias.lr_mult, bias.decay_mult) == (0.1 * 2.0, 0.5)
    # Without compose the custom key decides alone, as in mmcv.
    alone = _rows(cfg)
    assert (alone["backbone.bn.weight"].lr, alone["backbone.bn.weight"].weight_decay) == (
        LR * 0.1,
        WD * 1.0,
    )
    assert alone["backbone.conv.bias"].rule == "custom_keys['backbone']"


def test_compose_without_rules_of_its_own_leaves_other_parameters_as_section_3_2() -> None:
    cfg = {"custom_keys": {"head": {"lr_mult": 0.5}}, "bias_lr_mult": 2.0}
    composed, plain = _rows({**cfg, "compose": True}), _rows(cfg)
    for name in ("backbone.conv.bias", "backbone.conv.weight", "scale"):
        assert (composed[name].lr, composed[name].rule) == (plain[name].lr, plain[name].rule)


def test_rules_multiply_in_list_order_after_the_builtin_multiplier() -> None:
    rows = _rows(
        {
            "bias_lr_mult": 3.0,
            "rules": [
                {"match": "backbone.*", "lr_mult": 0.1, "decay_mult": 0.3},
                {"name": "bias", "lr_mult": 7.0},
            ],
        }
    )
    bias = rows["backbone.conv.bias"]
    assert bias.lr == LR * 3.0 * 0.1 * 7.0
    assert bias.weight_decay == WD * 0.3
    assert bias.rule == "bias_lr_mult, rules[0], rules[1]"
    assert (bias.lr_mult, bias.decay_mult) == (3.0 * 0.1 * 7.0, 0.3)
    head_bias = rows["head.fc.bias"]
    assert (head_bias.lr, head_bias.rule) == (LR * 3.0 * 7.0, "bias_lr_mult, rules[1]")
    untouched = rows["head.fc.weight"]
    assert (untouched.lr, untouched.weight_decay, untouched.rule) == (LR, WD, "default")
    assert (untouched.lr_mult, untouched.decay_mult) == (1.0, 1.0)


def test_an_option_set_by_a_later_rule_wins() -> None:
    model = KindsModel()
    optimizer = build_optimizer(
        model,
        {
            **SGD,
            "paramwise_cfg": {
                "rules": [
                    {"match": "*", "momentum": 0.5, "dampening": 0.1},
                    {"name": "bias", "momentum": 0.8},
                ]
            },
        },
    )
    by_name = {n: g for g in optimizer.param_groups for n in g["param_names"]}
    assert (by_name["head.fc.bias"]["momentum"], by_name["head.fc.bias"]["dampening"]) == (0.8, 0.1)
    assert by_name["head.fc.weight"]["momentum"] == 0.5
    # Equal settings still share a group: two groups, not one per parameter.
    assert len(optimizer.param_groups) == 2


ALL = {name for name, _ in KindsModel().named_parameters()}


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        (
            {"match": "backbone.*.weight"},
            {f"backbone.{m}.weight" for m in ("conv", "dw", "bn", "norm")},
        ),
        ({"match": ["scale", "head.fc.*"]}, {"scale", "head.fc.weight", "head.fc.bias"}),
        ({"match": "*"}, ALL),
        ({"match": "Backbone.*"}, set()),  # case-sensitive
        (
            {"regex": r"\.(bn|norm)\."},
            {
                "backbone.bn.weight",
                "backbone.bn.bias",
                "backbone.norm.weight",
                "backbone.norm.bias",
            },
        ),
        ({"exclude": ["backbone.*", "head.*"]}, {"scale"}),
        (
            {"module": "norm"},
            {
                "backbone.bn.weight",
                "backbone.bn.bias",
                "backbone.norm.weight",
                "backbone.norm.bias",
            },
        ),
        ({"module": "dwconv"}, {"backbone.dw.weight"}),
        ({"module": "conv"}, {"backbone.conv.weight", "backbone.conv.bias", "backbone.dw.weight"}),
        ({"module": "dcn"}, {"head.dcn.weight"}),
        ({"module": "linear"}, {"head.fc.weight", "head.fc.bias"}),
        ({"module": "embedding"}, {"head.emb.weight", "head.bag.weight"}),
        ({"module": "LayerNorm"}, {"backbone.norm.weight", "backbone.norm.bias"}),
        ({"module": "_BatchNorm"}, {"backbone.bn.weight", "backbone.bn.bias"}),  # a base class
        (
            {"module": ["linear", "BatchNorm2d"]},
            {"head.fc.weight", "head.fc.bias", "backbone.bn.weight", "backbone.bn.bias"},
        ),
        ({"ndim": 4}, {"backbone.conv.weight", "backbone.dw.weight", "head.dcn.weight"}),
        ({"ndim": [2, 3]}, {"head.fc.weight", "head.emb.weight", "head.bag.weight"}),
        ({"name": "bias"}, {n for n in ALL if n.endswith(".bias")}),
        ({"name": ["scale", "weight"]}, {n for n in ALL if not n.endswith(".bias")}),
        # Combined: every selector given must hold.
        (
            {"match": "backbone.*", "ndim": 1},
            {
                "backbone.conv.bias",
                "backbone.bn.weight",
                "backbone.bn.bias",
                "backbone.norm.weight",
                "backbone.norm.bias",
            },
        ),
        ({"module": "norm", "name": "weight", "exclude": "*.bn.*"}, {"backbone.norm.weight"}),
        (
            {
                "regex": "^head",
                "module": ["linear", "embedding"],
                "ndim": [2, 2],
                "exclude": "*bag*",
            },
            {"head.fc.weight", "head.emb.weight"},
        ),
    ],
)
def test_each_selector_alone_and_combined(rule: dict[str, Any], expected: set[str]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the case-sensitive glob selects nothing, on purpose
        assert _selected(rule) == expected


def test_a_rule_selecting_nothing_warns_naming_its_index() -> None:
    with pytest.warns(
        UserWarning, match=r"paramwise_cfg\['rules'\]\[1\] selects no parameter of KindsModel"
    ):
        _rows({"rules": [{"name": "bias", "lr_mult": 2.0}, {"match": "neck.*", "lr_mult": 2.0}]})


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ([{"match": 3, "lr_mult": 2.0}], r"rules'\]\[0\]\['match'\] must be a glob"),
        ([{"name": "bias"}, {"exclude": ["a", 1]}], r"rules'\]\[1\]\['exclude'\] must be a glob"),
        (
            [{"name": "bias"}, {"regex": "blocks.(", "lr_mult": 2.0}],
            r"rules'\]\[1\]\['regex'\] 'blocks\.\(' is not a valid regular expression",
        ),
        ([{"regex": 5}], r"rules'\]\[0\]\['regex'\] must be a regular expression"),
        ([{"lr_mult": 2.0}], r"rules'\]\[0\] has no selector"),
        (
            [{"name": "bias"}, {"name": "bias", "lr_mul": 2.0}],
            r"rules'\]\[1\] has unknown key 'lr_mul'; did you mean 'lr_mult'\?",
        ),
        (
            [{"name": "bias", "lr": 0.5}],
            r"rules'\]\[0\] sets 'lr', which a rule may not set: .* use lr_mult",
        ),
        (
            [{"ndim": [3, 1]}],
            r"rules'\]\[0\]\['ndim'\] must be an int >= 0 or an inclusive \[min, max\]",
        ),
        ([{"module": 4}], r"rules'\]\[0\]\['module'\] must be a module kind \('norm'"),
        (
            [{"name": "bias", "optimizer": "muon"}],
            r"rules'\]\[0\] routes its parameters to optimizer 'muon', but .*SGD has no "
            "optimizers",
        ),
    ],
)
def test_bad_rules_are_value_errors_naming_the_rule_by_index(
    rules: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        DefaultOptimizerConstructor(SGD, {"rules": rules})


def test_a_decay_mult_without_weight_decay_names_the_rule() -> None:
    with pytest.raises(
        ValueError, match=r"rules'\]\[0\] sets decay_mult=0.5 but optimizer_cfg has no weight_decay"
    ):
        DefaultOptimizerConstructor(
            {"type": "SGD", "lr": LR}, {"rules": [{"name": "bias", "decay_mult": 0.5}]}
        )


def test_wrong_types_are_type_errors_naming_the_key() -> None:
    with pytest.raises(
        TypeError, match=r"paramwise_cfg\['rules'\] must be a list of rule mappings"
    ):
        DefaultOptimizerConstructor(SGD, {"rules": {"name": "bias"}})
    with pytest.raises(TypeError, match=r"rules'\]\[0\] must be a mapping"):
        DefaultOptimizerConstructor(SGD, {"rules": ["bias"]})
    with pytest.raises(
        TypeError, match=r"rules'\]\[0\]\['lr_mult'\] must be a number, got '2' \(str\)"
    ):
        DefaultOptimizerConstructor(SGD, {"rules": [{"name": "bias", "lr_mult": "2"}]})
    with pytest.raises(TypeError, match=r"paramwise_cfg\['compose'\] must be True or False"):
        DefaultOptimizerConstructor(SGD, {"compose": "yes"})


@pytest.mark.parametrize(
    ("typo", "closest"),
    [
        ("rule", "rules"),
        ("compse", "compose"),
        ("model_hook", "model_hooks"),
        ("layer_decy", "layer_decay"),
    ],
)
def test_a_misspelt_key_of_section_3_3_names_the_closest(typo: str, closest: str) -> None:
    assert closest in DefaultOptimizerConstructor.paramwise_keys
    with pytest.raises(
        ValueError, match=rf"Unknown paramwise_cfg key '{typo}' .*did you mean '{closest}'\?"
    ):
        DefaultOptimizerConstructor(SGD, {typo: []})


def test_freeze_sets_requires_grad_false_at_construction_and_explain_says_why() -> None:
    model = KindsModel()
    cfg = {"rules": [{"match": "backbone.*", "lr_mult": 0.5}, {"module": "norm", "freeze": True}]}
    constructor = DefaultOptimizerConstructor(SGD, cfg)
    rows = {row.name: row for row in constructor.explain(model)}
    frozen = rows["backbone.bn.weight"]
    assert frozen.rule == "frozen by rules[1] (freeze: true)"
    assert (frozen.lr, frozen.weight_decay, frozen.lr_mult) == (LR, WD, 1.0)
    assert model.backbone.bn.weight.requires_grad  # explain builds nothing and changes nothing
    optimizer = constructor(model)
    assert not model.backbone.bn.weight.requires_grad
    assert not model.backbone.norm.bias.requires_grad
    assert model.backbone.conv.weight.requires_grad
    by_name = {n: g for g in optimizer.param_groups for n in g["param_names"]}
    assert by_name["backbone.bn.weight"]["lr"] == LR
    assert by_name["backbone.conv.weight"]["lr"] == LR * 0.5
    # Built again, the frozen parameters are frozen ones of the model: optimizer defaults.
    again = {row.name: row for row in constructor.explain(model)}
    assert again["backbone.bn.weight"].rule == "frozen (optimizer defaults)"


def test_parameters_frozen_in_the_model_get_no_rule() -> None:
    model = KindsModel()
    model.head.fc.requires_grad_(False)
    rows = _rows({"rules": [{"match": "head.*", "lr_mult": 0.5, "momentum": 0.1}]}, model)
    assert (rows["head.fc.weight"].lr, rows["head.fc.weight"].rule) == (
        LR,
        "frozen (optimizer defaults)",
    )
    assert rows["head.emb.weight"].lr == LR * 0.5


def test_a_failed_build_leaves_no_parameter_frozen() -> None:
    model = KindsModel()
    cfg = {"type": "SGD", "lr": LR, "momentum": 0.9, "nesterov": True, "dampening": 0.5}
    constructor = DefaultOptimizerConstructor(cfg, {"rules": [{"module": "norm", "freeze": True}]})
    with pytest.raises(
        ValueError, match=re.escape("Nesterov momentum requires a momentum and zero dampening")
    ):
        constructor(model)
    assert all(param.requires_grad for param in model.parameters())


def test_one_group_per_parameter_keeps_the_composed_settings() -> None:
    model = KindsModel()
    cfg = {
        **SGD,
        "paramwise_cfg": {"merge_groups": False, "rules": [{"name": "bias", "lr_mult": 2.0}]},
    }
    optimizer = build_optimizer(model, cfg)
    assert len(optimizer.param_groups) == len(ALL)
    by_name = {g["param_names"][0]: g for g in optimizer.param_groups}
    assert by_name["head.fc.bias"]["lr"] == LR * 2.0
    assert by_name["head.fc.weight"]["lr"] == LR


def test_no_section_3_3_key_gives_exactly_section_3_2() -> None:
    cfg = {"bias_lr_mult": 2.0, "norm_decay_mult": 0.0, "custom_keys": {"head": {"lr_mult": 0.5}}}
    plain = _rows(cfg)
    empty = _rows({**cfg, "rules": [], "compose": False, "model_hooks": False})
    assert [(r.name, r.lr, r.weight_decay, r.rule, r.group) for r in plain.values()] == [
        (r.name, r.lr, r.weight_decay, r.rule, r.group) for r in empty.values()
    ]
