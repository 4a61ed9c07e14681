"""SPEC 3.3: ``compose``, the ``rules`` list (selectors, effects, order) and ``freeze``."""

from __future__ import annotations

import fnmatch
import math
import re
import warnings
from typing import Any

import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from torch import nn

from regtree_optim import DefaultOptimizerConstructor, ParamRow, build_optimizer, register_dcn_type
from regtree_optim._rules import GlobTest

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


def test_flat_decay_mult_still_tells_1d_parameters_apart_beneath_the_rules() -> None:
    # 3.2's flat_decay_mult reads each parameter's ndim; a rule on top must not hide it.
    rows = _rows({"flat_decay_mult": 0.5, "rules": [{"match": "*", "lr_mult": 2.0}]})
    scale = rows["scale"]  # 1-D, in no norm layer and not a bias
    assert (scale.lr, scale.weight_decay) == (LR * 2.0, WD * 0.5)
    assert scale.rule == "flat_decay_mult, rules[0]"
    weight = rows["head.fc.weight"]
    assert (weight.lr, weight.weight_decay, weight.rule) == (LR * 2.0, WD, "rules[0]")


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
        ({"match": "*.bias"}, {n for n in ALL if n.endswith(".bias")}),
        ({"match": ["*.fc.bias", "*.bn.bias"]}, {"head.fc.bias", "backbone.bn.bias"}),
        # A prefix and a suffix glob together, and a prefix with a wildcard inside.
        (
            {"match": ["head.f*", "*.dw.weight"]},
            {"head.fc.weight", "head.fc.bias", "backbone.dw.weight"},
        ),
        ({"match": "backbone.?n.*"}, {"backbone.bn.weight", "backbone.bn.bias"}),
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
        # The three name tests of one rule, each able to rule a name out.
        (
            {"match": "backbone.*", "regex": r"\.bias$", "exclude": "*.bn.*"},
            {"backbone.conv.bias", "backbone.norm.bias"},
        ),
        (
            {"match": "*.bias", "regex": "^backbone"},
            {"backbone.conv.bias", "backbone.bn.bias", "backbone.norm.bias"},
        ),
        (
            {"regex": r"\.weight$", "exclude": ["backbone.*", "*.emb.*"]},
            {
                "head.fc.weight",
                "head.dcn.weight",
                "head.bag.weight",
            },
        ),
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


@settings(max_examples=300, deadline=None)
@example(globs=["a?*"], names=["ab", "a?", "a?b"])  # a wildcard before the final '*'
@example(globs=["*?a"], names=["ba", "?a"])
@example(globs=["a[b]*", "b*"], names=["ab", "a[b]", "bb"])
@example(globs=["ab*", "*b"], names=["abc", "cb", "ca"])  # a prefix and a suffix together
@given(
    globs=st.lists(st.text(alphabet="ab.*?[]!\\\n", max_size=6), min_size=1, max_size=3),
    names=st.lists(st.text(alphabet="ab.*?[]!\\\n", max_size=8), max_size=12),
)
def test_globs_select_what_fnmatchcase_selects(globs: list[str], names: list[str]) -> None:
    # Prefix and suffix globs are tested with str.startswith/endswith, the rest by regex: both
    # must agree with fnmatch's own case-sensitive matching, whatever the glob holds.
    expected = [any(fnmatch.fnmatchcase(name, glob) for glob in globs) for name in names]
    assert GlobTest(globs).column(names) == expected


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
        TypeError,
        match=r"rules'\]\[0\]\['lr_mult'\] must be a real number, got '2' \(str\); write it as a "
        r"number, 2 without quotes",
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


_RULE = "paramwise_cfg['rules'][0]"
_ROUTED: dict[str, Any] = {
    "type": "RoutedOptimizer",
    "default": "adamw",
    "optimizers": {"muon": {"type": "SGD", "lr": LR}, "adamw": {"type": "AdamW", "lr": LR}},
}
_SELECTORS_AND_EFFECTS = (
    "A rule holds selectors (match, regex, exclude, module, ndim, name), effects (lr_mult, "
    "decay_mult, freeze, optimizer) and options torch.optim.sgd:SGD accepts: dampening, "
    "differentiable, foreach, fused, maximize, momentum, nesterov."
)


@pytest.mark.parametrize(
    ("optimizer_cfg", "paramwise_cfg", "error", "message"),
    [
        (
            SGD,
            {"rules": [{"lr_mult": 2.0}]},
            ValueError,
            f"{_RULE} has no selector, so it would apply to every parameter by accident; give at "
            "least one of match, regex, exclude, module, ndim, name (match='*' selects "
            "everything).",
        ),
        (
            SGD,
            {"rules": [{"name": "bias", "zzzzzzzz": 1}]},
            ValueError,
            f"{_RULE} has unknown key 'zzzzzzzz'. {_SELECTORS_AND_EFFECTS}",
        ),
        (
            SGD,
            {"rules": [{"name": "bias", "momentun": 0.5}]},
            ValueError,
            f"{_RULE} has unknown key 'momentun'; did you mean 'momentum'? "
            + _SELECTORS_AND_EFFECTS,
        ),
        (
            # lr and weight_decay are no rule's to set: a near miss is told what to use instead.
            SGD,
            {"rules": [{"name": "bias", "weight_decy": 0.5}]},
            ValueError,
            f"{_RULE} has unknown key 'weight_decy', and the closest, 'weight_decay', is one a "
            "rule may not set: a rule multiplies the weight decay: use decay_mult. "
            + _SELECTORS_AND_EFFECTS,
        ),
        (
            SGD,
            {"rules": [{"name": "bias", "lrr": 0.5}]},
            ValueError,
            f"{_RULE} has unknown key 'lrr', and the closest, 'lr', is one a rule may not set: "
            f"a rule multiplies the lr: use lr_mult. {_SELECTORS_AND_EFFECTS}",
        ),
        (
            SGD,
            {"rules": [{"name": "bias", "param_name": ["x"]}]},
            ValueError,
            f"{_RULE} has unknown key 'param_name', and the closest, 'param_names', is one a "
            "rule may not set: parameter names are filled in by the constructor. "
            + _SELECTORS_AND_EFFECTS,
        ),
        (
            SGD,
            {"rules": [{"name": "bias", "momentum": "0.5"}]},
            TypeError,
            f"{_RULE}: momentum: expected float, got '0.5' (str), as the signature of "
            "torch.optim.sgd:SGD annotates 'momentum'",
        ),
        (
            SGD,
            {"rules": [{3: 1, "name": "bias"}]},
            TypeError,
            f"{_RULE} keys must be str, got 3 (int).",
        ),
        (
            SGD,
            {"rules": [{"name": 3}]},
            ValueError,
            f"{_RULE}['name'] must be a parameter name such as 'bias' or a non-empty list of "
            "them, got 3 (int).",
        ),
        (
            SGD,
            {"rules": [{"name": "bias", "freeze": "yes"}]},
            TypeError,
            f"{_RULE}['freeze'] must be True or False, got 'yes' (str).",
        ),
        (
            SGD,
            {"rules": [{"name": "bias", "decay_mult": "0.5"}]},
            TypeError,
            f"{_RULE}['decay_mult'] must be a real number, got '0.5' (str); write it as a "
            "number, 0.5 without quotes.",
        ),
        (
            {"type": "SGD"},
            {"rules": [{"name": "bias", "lr_mult": 2.0}]},
            ValueError,
            f"{_RULE} sets lr_mult=2.0 but optimizer_cfg has no lr, so there is nothing to "
            "multiply; add lr to the optimizer config or drop lr_mult.",
        ),
        (
            {"type": "SGD", "lr": LR},
            {"rules": [{"name": "bias", "decay_mult": 0.5}]},
            ValueError,
            f"{_RULE} sets decay_mult=0.5 but optimizer_cfg has no weight_decay, so there is "
            "nothing to multiply; add weight_decay to the optimizer config or drop decay_mult.",
        ),
        (
            SGD,
            {"rules": "bias"},
            TypeError,
            "paramwise_cfg['rules'] must be a list of rule mappings, got 'bias' (str).",
        ),
        (
            SGD,
            {"rules": {"bias"}},
            TypeError,
            "paramwise_cfg['rules'] must be a list of rule mappings, got {'bias'} (set).",
        ),
        (
            SGD,
            {"rules": ["bias"]},
            TypeError,
            f"{_RULE} must be a mapping (a dict) of selectors and effects, got 'bias' (str).",
        ),
        (
            SGD,
            {"rules": [{"regex": 5}]},
            ValueError,
            f"{_RULE}['regex'] must be a regular expression (a str), got 5 (int).",
        ),
        (
            SGD,
            {"rules": [{"module": 4}]},
            ValueError,
            f"{_RULE}['module'] must be a module kind ('norm', 'dwconv', 'dcn', 'conv', 'linear', "
            "'embedding') or a class name or a non-empty list of them, got 4 (int).",
        ),
        (
            SGD,
            {"rules": [{"name": "bias", "optimizer": "muon"}]},
            ValueError,
            f"{_RULE} routes its parameters to optimizer 'muon', but torch.optim.sgd:SGD has no "
            "optimizers to route to; use type='RoutedOptimizer' with optimizers={name: config, "
            "...}, or drop 'optimizer' from the rule.",
        ),
        (
            _ROUTED,
            {"rules": [{"name": "bias", "optimizer": "mun"}]},
            ValueError,
            f"{_RULE} routes its parameters to optimizer 'mun', which is not one of the "
            "optimizers: 'muon', 'adamw'. Did you mean 'muon'?",
        ),
        (
            _ROUTED,
            {"rules": [{"name": "bias", "optimizer": "zzzz"}]},
            ValueError,
            f"{_RULE} routes its parameters to optimizer 'zzzz', which is not one of the "
            "optimizers: 'muon', 'adamw'.",
        ),
        (
            _ROUTED,
            {"rules": [{"name": "bias", "optimizer": ""}]},
            TypeError,
            f"{_RULE}['optimizer'] must name one of RoutedOptimizer's optimizers (a non-empty "
            "str), got '' (str).",
        ),
        (
            SGD,
            {"model_hooks": "yes"},
            TypeError,
            "paramwise_cfg['model_hooks'] must be True or False, got 'yes' (str).",
        ),
    ],
)
def test_a_bad_rule_message_names_the_rule_the_key_and_what_would_work(
    optimizer_cfg: dict[str, Any],
    paramwise_cfg: dict[str, Any],
    error: type[Exception],
    message: str,
) -> None:
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        DefaultOptimizerConstructor(optimizer_cfg, paramwise_cfg)


def test_a_rule_without_lr_mult_needs_no_lr() -> None:
    rows = _rows({"rules": [{"name": "bias", "momentum": 0.5}]})
    assert rows["head.fc.bias"].rule == "rules[0]"
    optimizer = DefaultOptimizerConstructor(
        {"type": "SGD", "momentum": 0.9}, {"rules": [{"name": "bias", "momentum": 0.5}]}
    )(KindsModel())
    by_name = {n: g for g in optimizer.param_groups for n in g["param_names"]}
    assert (by_name["head.fc.bias"]["momentum"], by_name["head.fc.weight"]["momentum"]) == (
        0.5,
        0.9,
    )


def test_a_none_multiplier_in_a_rule_is_not_given_as_in_the_rest_of_paramwise_cfg() -> None:
    rule = {"name": "bias", "lr_mult": 2.0}
    given = _rows({"bias_lr_mult": None, "rules": [rule]})
    with_none = _rows({"rules": [{**rule, "decay_mult": None}]})
    assert [(r.lr, r.weight_decay, r.lr_mult, r.decay_mult, r.rule) for r in given.values()] == [
        (r.lr, r.weight_decay, r.lr_mult, r.decay_mult, r.rule) for r in with_none.values()
    ]
    # Not given, so it needs no base: a rule's None lr_mult without lr is no error.
    DefaultOptimizerConstructor({"type": "SGD"}, {"rules": [{"name": "bias", "lr_mult": None}]})


def test_rules_none_and_layer_decay_none_are_not_given() -> None:
    cfg = {"bias_lr_mult": 2.0, "custom_keys": {"head": {"lr_mult": 0.5}}}
    plain = _rows(cfg)
    nones = _rows({**cfg, "rules": None, "layer_decay": None})
    assert [(r.lr, r.rule, r.group) for r in plain.values()] == [
        (r.lr, r.rule, r.group) for r in nones.values()
    ]


def test_custom_keys_none_says_to_leave_it_out() -> None:
    # SPEC 3.1: custom_keys must be a mapping, None included; the message says what works.
    with pytest.raises(TypeError) as raised:
        DefaultOptimizerConstructor(SGD, {"custom_keys": None})
    assert str(raised.value) == (
        "paramwise_cfg['custom_keys'] must be a mapping (a dict), got None (NoneType); leave "
        "custom_keys out, or give {}, for no custom keys"
    )


def test_a_custom_keys_own_lr_is_multiplied_by_what_follows_3_2_and_explain_says_so() -> None:
    # The entry's lr replaces base * lr_mult (3.2, as mmengine copies it); compose's built-in
    # multiplier, the rules and the layer decay then multiply that value (SPEC 3.3: after 3.2
    # has decided), and explain counts it as lr / base_lr, so lr_mult stays lr / base_lr.
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    paramwise = {
        "custom_keys": {"0.": {"lr_mult": 4.0, "lr": 0.5, "weight_decay": 0.2}},
        "compose": True,
        "bias_lr_mult": 3.0,
        "rules": [{"match": "*", "lr_mult": 2.0, "decay_mult": 3.0}],
        "layer_decay": {"rate": 0.25, "depth": [["0", 0]], "num_layers": 2},
    }
    rows = {r.name: r for r in DefaultOptimizerConstructor(SGD, paramwise).explain(model)}
    assert (rows["0.weight"].lr, rows["0.weight"].weight_decay) == (0.5 * 2.0 * 0.25, 0.2 * 3.0)
    assert rows["0.bias"].lr == 0.5 * 3.0 * 2.0 * 0.25
    assert rows["0.bias"].rule == "custom_keys['0.'], bias_lr_mult, rules[0], layer_decay[0/2]"
    for row in rows.values():
        assert row.lr_mult == pytest.approx(row.lr / LR), row.name
        assert row.decay_mult == pytest.approx(row.weight_decay / WD), row.name
    # 3.2 alone: the entry decides, and explain's multiplier is its lr over the base.
    plain = DefaultOptimizerConstructor(SGD, {"custom_keys": paramwise["custom_keys"]})
    first = plain.explain(model)[0]
    assert (first.lr, first.lr_mult, first.decay_mult) == (0.5, 0.5 / LR, 0.2 / WD)
    # A value set over a base of 0 has no finite factor.
    no_decay = DefaultOptimizerConstructor(
        {**SGD, "weight_decay": 0.0}, {"custom_keys": {"0.": {"weight_decay": 0.05}}}
    )
    assert no_decay.explain(model)[0].decay_mult == math.inf


def test_the_dwconv_kind_needs_groups_equal_to_more_than_one_input_channel() -> None:
    model = nn.Sequential(nn.Conv2d(1, 1, 1), nn.Conv2d(2, 2, 1, groups=2, bias=False))
    with pytest.warns(UserWarning, match=r"rules'\]\[1\] selects no parameter"):
        rows = _rows(
            {"rules": [{"module": "dwconv", "lr_mult": 2.0}, {"module": "dwconv", "ndim": 1}]},
            model,
        )
    assert {name for name, row in rows.items() if "rules[0]" in row.rule} == {"1.weight"}


def test_with_rules_but_without_compose_a_custom_key_still_decides_alone() -> None:
    cfg = {
        "custom_keys": {"backbone": {"lr_mult": 0.1}},
        "norm_decay_mult": 0.0,
        "rules": [{"name": "bias", "lr_mult": 3.0}],
    }
    norm = _rows(cfg)["backbone.bn.weight"]
    assert (norm.lr, norm.weight_decay, norm.rule) == (
        LR * 0.1,
        WD * 1.0,
        "custom_keys['backbone']",
    )
    bias = _rows(cfg)["backbone.bn.bias"]
    assert (bias.lr, bias.rule) == (LR * 0.1 * 3.0, "custom_keys['backbone'], rules[0]")


def test_custom_keys_and_name_selecting_rules_each_read_their_own_names() -> None:
    # Two custom keys and two rules that select by name, each on names of its own: every
    # parameter gets the key that matches it, then the rules whose globs or regex match it.
    cfg = {
        "custom_keys": {"head.fc": {"lr_mult": 0.1}, "scale": {"lr_mult": 0.2}},
        "rules": [
            {"match": "backbone.*", "lr_mult": 0.5},
            {"regex": r"\.bias$", "exclude": "head.*", "lr_mult": 3.0},
        ],
    }
    rows = _rows(cfg)
    assert {name: (row.lr, row.rule) for name, row in rows.items() if "bn" not in name} == {
        "scale": (LR * 0.2, "custom_keys['scale']"),
        "backbone.conv.weight": (LR * 0.5, "rules[0]"),
        "backbone.conv.bias": (LR * 0.5 * 3.0, "rules[0], rules[1]"),
        "backbone.dw.weight": (LR * 0.5, "rules[0]"),
        "backbone.norm.weight": (LR * 0.5, "rules[0]"),
        "backbone.norm.bias": (LR * 0.5 * 3.0, "rules[0], rules[1]"),
        "head.fc.weight": (LR * 0.1, "custom_keys['head.fc']"),
        "head.fc.bias": (LR * 0.1, "custom_keys['head.fc']"),
        "head.emb.weight": (LR, "default"),
        "head.bag.weight": (LR, "default"),
        "head.dcn.weight": (LR, "default"),
    }


def test_compose_rules_model_hooks_and_layer_decay_all_apply_together() -> None:
    class Model(KindsModel):
        def get_layer_depth(self, name: str) -> tuple[int, int]:
            return (0, 2) if name.startswith("backbone.") else (1, 2)

        def no_weight_decay(self) -> set[str]:
            return {"scale"}

    rows = _rows(
        {
            "compose": True,
            "custom_keys": {"backbone": {"lr_mult": 0.1}},
            "norm_decay_mult": 0.0,
            "rules": [{"name": "bias", "lr_mult": 3.0}],
            "model_hooks": True,
            "layer_decay": {"rate": 0.5},
        },
        Model(),
    )
    bias = rows["backbone.bn.bias"]
    assert bias.lr == LR * 0.1 * 1.0 * 3.0 * 0.5
    assert bias.weight_decay == WD * 1.0 * 0.0
    assert bias.rule == "custom_keys['backbone'], norm_decay_mult, rules[0], layer_decay[0/2]"
    scale = rows["scale"]
    assert (scale.lr, scale.weight_decay, scale.rule) == (
        LR,
        0.0,
        "layer_decay[1/2], no_weight_decay()",
    )


_SELECTS_NOTHING = (
    "paramwise_cfg['rules'][0] selects no parameter of KindsModel; it has no effect. Check its "
    "selectors against the names explain() shows."
)


def test_a_rule_selecting_nothing_says_what_to_check() -> None:
    constructor = DefaultOptimizerConstructor(SGD, {"rules": [{"match": "neck.*", "lr_mult": 2.0}]})
    with pytest.warns(UserWarning, match=f"^{re.escape(_SELECTS_NOTHING)}$"):
        constructor.explain(KindsModel())


def test_the_warning_of_a_rule_selecting_nothing_points_at_the_caller() -> None:
    constructor = DefaultOptimizerConstructor(SGD, {"rules": [{"match": "neck.*", "lr_mult": 2.0}]})
    with pytest.warns(UserWarning, match="selects no parameter") as built:
        constructor(KindsModel())
    with pytest.warns(UserWarning, match="selects no parameter") as explained:
        constructor.explain(KindsModel())
    cfg = {**SGD, "paramwise_cfg": {"rules": [{"match": "neck.*", "lr_mult": 2.0}]}}
    with pytest.warns(UserWarning, match="selects no parameter") as through_builder:
        build_optimizer(KindsModel(), cfg)
    assert [w.filename for w in [*built, *explained, *through_builder]] == [__file__] * 3


def test_every_rule_that_selects_a_parameter_applies_whatever_its_selectors() -> None:
    rows = _rows(
        {
            "rules": [
                {"regex": "^head", "lr_mult": 2.0},  # by name, selecting only the head
                {"regex": "^backbone", "lr_mult": 3.0},
                {"match": "head.*", "lr_mult": 5.0},
                {"match": "backbone.*", "lr_mult": 7.0},
                {"name": "bias", "decay_mult": 0.5},  # by facts only, twice
                {"module": "conv", "decay_mult": 0.3},
            ]
        }
    )
    bias = rows["backbone.conv.bias"]
    assert bias.rule == "rules[1], rules[3], rules[4], rules[5]"
    assert (bias.lr, bias.weight_decay) == (LR * 3.0 * 7.0, WD * 0.5 * 0.3)
    assert rows["head.fc.weight"].rule == "rules[0], rules[2]"


@pytest.mark.parametrize("ndim", [0, [0, 1]])
def test_an_ndim_of_zero_selects_the_scalar_parameters(ndim: object) -> None:
    model = KindsModel()
    model.register_parameter("temperature", nn.Parameter(torch.tensor(1.0)))
    rows = _rows({"rules": [{"ndim": ndim, "lr_mult": 2.0}]}, model)
    selected = {name for name, row in rows.items() if row.rule == "rules[0]"}
    assert "temperature" in selected
    assert ("scale" in selected) == (ndim != 0)


@pytest.mark.parametrize("ndim", [-1, [1, 2, 3], [1, "2"], {1, 2}, True, "1"])
def test_an_ndim_that_is_no_int_or_pair_of_them_is_a_value_error(ndim: object) -> None:
    message = (
        f"{_RULE}['ndim'] must be an int >= 0 or an inclusive [min, max] pair of them, got "
        f"{ndim!r}."
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        DefaultOptimizerConstructor(SGD, {"rules": [{"ndim": ndim}]})
