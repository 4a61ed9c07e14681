"""SPEC 3.1: every config error is raised when the constructor is created, with a useful message."""

from __future__ import annotations

import functools
import inspect
import re
from typing import Any

import pytest
import torch
from torch import nn

from regtree_optim import OPTIMIZERS, DefaultOptimizerConstructor

SGD = {"type": "SGD", "lr": 0.1, "weight_decay": 0.01}


def test_optimizer_cfg_must_be_a_mapping() -> None:
    with pytest.raises(TypeError, match=r"optimizer_cfg must be a mapping.*\['SGD'\]"):
        DefaultOptimizerConstructor(["SGD"])  # type: ignore[arg-type]


def test_paramwise_cfg_must_be_a_mapping() -> None:
    with pytest.raises(TypeError, match=r"paramwise_cfg must be a mapping.*'bias_lr_mult'"):
        DefaultOptimizerConstructor(SGD, "bias_lr_mult")  # type: ignore[arg-type]


def test_custom_keys_must_be_a_mapping() -> None:
    with pytest.raises(TypeError, match=r"custom_keys'\] must be a mapping.*\['backbone'\]"):
        DefaultOptimizerConstructor(SGD, {"custom_keys": ["backbone"]})


def test_custom_keys_none_is_not_a_mapping() -> None:
    with pytest.raises(TypeError, match=r"custom_keys'\] must be a mapping.*None"):
        DefaultOptimizerConstructor(SGD, {"custom_keys": None})


def test_custom_keys_entry_must_be_a_mapping() -> None:
    with pytest.raises(TypeError, match=r"\['custom_keys'\]\['backbone'\] must be a mapping"):
        DefaultOptimizerConstructor(SGD, {"custom_keys": {"backbone": 0.1}})


@pytest.mark.parametrize(
    ("typo", "closest"),
    [
        ("bias_lr_mul", "bias_lr_mult"),
        ("norm_decay", "norm_decay_mult"),
        ("custom_key", "custom_keys"),
        ("bypass_duplicates", "bypass_duplicate"),
        ("merge_group", "merge_groups"),
    ],
)
def test_unknown_paramwise_key_names_the_closest(typo: str, closest: str) -> None:
    with pytest.raises(ValueError, match=rf"Unknown paramwise_cfg key '{typo}'.*'{closest}'"):
        DefaultOptimizerConstructor(SGD, {typo: 1})


@pytest.mark.parametrize(
    "key", ["bias_decay_mult", "norm_decay_mult", "dwconv_decay_mult", "flat_decay_mult"]
)
def test_decay_mult_without_weight_decay(key: str) -> None:
    with pytest.raises(ValueError, match=rf"{key}=0.5 but optimizer_cfg has no weight_decay"):
        DefaultOptimizerConstructor({"type": "SGD", "lr": 0.1}, {key: 0.5})


@pytest.mark.parametrize("key", ["bias_lr_mult", "dcn_offset_lr_mult"])
def test_lr_mult_without_lr(key: str) -> None:
    with pytest.raises(ValueError, match=rf"{key}=2 but optimizer_cfg has no lr"):
        DefaultOptimizerConstructor({"type": "SGD", "weight_decay": 0.1}, {key: 2})


def test_custom_decay_mult_without_weight_decay() -> None:
    with pytest.raises(ValueError, match=r"\['head'\] sets decay_mult=0 .*no weight_decay"):
        DefaultOptimizerConstructor(
            {"type": "SGD", "lr": 0.1}, {"custom_keys": {"head": {"decay_mult": 0}}}
        )


def test_custom_lr_mult_without_lr() -> None:
    with pytest.raises(ValueError, match=r"\['head'\] sets lr_mult=2 .*no lr"):
        DefaultOptimizerConstructor(
            {"type": "Adafactor", "weight_decay": 0.1}, {"custom_keys": {"head": {"lr_mult": 2}}}
        )


def test_custom_entry_unknown_key_names_the_closest() -> None:
    with pytest.raises(ValueError, match=r"unknown key 'lr_mul'; did you mean 'lr_mult'"):
        DefaultOptimizerConstructor(SGD, {"custom_keys": {"head": {"lr_mul": 2}}})


def test_custom_entry_option_the_optimizer_lacks() -> None:
    with pytest.raises(ValueError, match=r"unknown key 'betas'.*options .*:SGD accepts:.*momentum"):
        DefaultOptimizerConstructor(SGD, {"custom_keys": {"head": {"betas": (0.9, 0.99)}}})


def test_a_partial_optimizer_is_named_as_regtree_names_it() -> None:
    sgd_with_momentum = functools.partial(torch.optim.SGD, momentum=0.9)
    with pytest.raises(ValueError, match=r"options functools\.partial\(torch\.optim\.sgd:SGD\) "):
        DefaultOptimizerConstructor(
            {"type": sgd_with_momentum, "lr": 0.1}, {"custom_keys": {"head": {"betas": 1}}}
        )


def test_custom_entry_option_the_optimizer_accepts() -> None:
    constructor = DefaultOptimizerConstructor(
        {"type": "AdamW", "lr": 0.1}, {"custom_keys": {"head": {"betas": (0.8, 0.9)}}}
    )
    assert constructor.paramwise_cfg["custom_keys"]["head"] == {"betas": (0.8, 0.9)}


@pytest.mark.parametrize("option", ["params", "param_names"])
def test_custom_entry_may_not_set_the_parameters(option: str) -> None:
    with pytest.raises(ValueError, match=rf"sets '{option}', which an entry may not set"):
        DefaultOptimizerConstructor(SGD, {"custom_keys": {"head": {option: []}}})


def test_custom_entry_weight_decay_needs_an_optimizer_that_has_it() -> None:
    with pytest.raises(ValueError, match=r"unknown key 'weight_decay'.*options .*:Rprop accepts"):
        DefaultOptimizerConstructor(
            {"type": "Rprop", "lr": 0.1}, {"custom_keys": {"head": {"weight_decay": 0.5}}}
        )


@pytest.mark.parametrize("value", ["2", True, [2]])
def test_multiplier_must_be_a_number(value: Any) -> None:
    with pytest.raises(
        TypeError, match=r"paramwise_cfg\['bias_lr_mult'\] must be a real number, got"
    ):
        DefaultOptimizerConstructor(SGD, {"bias_lr_mult": value})


def test_flags_must_be_bools() -> None:
    with pytest.raises(TypeError, match=r"paramwise_cfg\['merge_groups'\] must be True or False"):
        DefaultOptimizerConstructor(SGD, {"merge_groups": "no"})


def test_validation_happens_at_construction_not_at_call() -> None:
    # No model is needed to find the error.
    with pytest.raises(ValueError, match="Unknown paramwise_cfg key"):
        DefaultOptimizerConstructor(SGD, {"bias_lr_multt": 2})


def test_mmcv_attributes() -> None:
    paramwise = {"bias_lr_mult": 2}
    constructor = DefaultOptimizerConstructor(SGD, paramwise)
    assert constructor.optimizer_cfg is SGD
    assert constructor.paramwise_cfg is paramwise
    assert (constructor.base_lr, constructor.base_wd) == (0.1, 0.01)
    bare = DefaultOptimizerConstructor({"type": "Rprop"})
    assert (bare.paramwise_cfg, bare.base_lr, bare.base_wd) == ({}, None, None)


class _SgdTakingAnyOption(torch.optim.SGD):
    def __init__(self, params: Any, lr: float = 0.1, **kwargs: Any) -> None:
        super().__init__(params, lr=lr)


def test_an_optimizer_taking_kwargs_accepts_any_custom_option() -> None:
    cfg = {"type": _SgdTakingAnyOption, "lr": 0.1}
    constructor = DefaultOptimizerConstructor(cfg, {"custom_keys": {"0.": {"anything": 3}}})
    optimizer = constructor(nn.Sequential(nn.Linear(2, 2)))
    assert optimizer.param_groups[0]["anything"] == 3


@pytest.mark.parametrize(
    ("key", "value", "shown"),
    [
        ("lr", "1e-4", r"'1e-4' \(str\)"),
        ("lr", True, r"True \(bool\)"),
        ("weight_decay", "5e-2", r"'5e-2' \(str\)"),
        ("weight_decay", None, r"None \(NoneType\)"),
        ("lr", torch.ones(2), r"\(Tensor\)"),
    ],
)
def test_lr_and_weight_decay_must_be_real_numbers(key: str, value: Any, shown: str) -> None:
    cfg = {"type": "SGD", "lr": 0.1, key: value}
    with pytest.raises(
        TypeError, match=rf"optimizer_cfg\['{key}'\] must be a real number.*{shown}"
    ):
        DefaultOptimizerConstructor(cfg, {"bias_lr_mult": 2})


def test_a_str_that_reads_as_a_number_says_how_to_write_it() -> None:
    with pytest.raises(
        TypeError,
        match=r"got '1e-4' \(str\); write it as a number, 1e-4 without quotes \(a YAML file read "
        r"by PyYAML alone needs 1\.0e-4, not 1e-4; regtree\.load_config reads either as a float\)",
    ):
        DefaultOptimizerConstructor({"type": "SGD", "lr": "1e-4"})


def test_zero_dim_tensor_lr_and_weight_decay_are_accepted() -> None:
    cfg = {"type": "SGD", "lr": torch.tensor(0.1), "weight_decay": torch.tensor(0.01)}
    optimizer = DefaultOptimizerConstructor(cfg, {"bias_lr_mult": 2})(nn.Linear(2, 2))
    lrs = [float(g["lr"]) for g in optimizer.param_groups]
    assert lrs == pytest.approx([0.1, 0.2])


@pytest.mark.parametrize("value", ["0.5", True, [1]])
def test_custom_multipliers_must_be_real_numbers(value: Any) -> None:
    with pytest.raises(TypeError, match=r"\['head'\]\['lr_mult'\] must be a real number, got"):
        DefaultOptimizerConstructor(SGD, {"custom_keys": {"head": {"lr_mult": value}}})


def test_an_option_is_checked_against_the_optimizers_annotation() -> None:
    with pytest.raises(
        TypeError, match=r"optimizer_cfg: betas: expected tuple\[float, float\], got \[0.9\]"
    ):
        DefaultOptimizerConstructor({"type": "NAdam", "lr": 0.1, "betas": [0.9]})
    with pytest.raises(TypeError, match=r"nesterov: expected bool, got 'yes'"):
        DefaultOptimizerConstructor(
            {"type": "SGD", "lr": 0.1}, {"custom_keys": {"0.": {"nesterov": "yes"}}}
        )
    with pytest.raises(TypeError, match=r"optimizer_cfg: momentum: expected float, got '0.9'"):
        DefaultOptimizerConstructor({"type": "SGD", "lr": 0.1, "momentum": "0.9"})


# Each kind of value is checked in one place: a bad one reads the same wherever it is written.
_HINT = (
    "without quotes (a YAML file read by PyYAML alone needs 1.0e-4, not 1e-4; "
    "regtree.load_config reads either as a float)."
)


@pytest.mark.parametrize(
    ("optimizer_cfg", "paramwise_cfg", "message"),
    [
        (
            {"type": "SGD", "lr": "1e-4"},
            {},
            f"optimizer_cfg['lr'] must be a real number or a 0-dim tensor, got '1e-4' (str); "
            f"write it as a number, 1e-4 {_HINT}",
        ),
        (
            SGD,
            {"bias_lr_mult": "1e-4"},
            f"paramwise_cfg['bias_lr_mult'] must be a real number, got '1e-4' (str); write it as "
            f"a number, 1e-4 {_HINT}",
        ),
        (
            SGD,
            {"custom_keys": {"head": {"decay_mult": "1e-4"}}},
            f"paramwise_cfg['custom_keys']['head']['decay_mult'] must be a real number, got "
            f"'1e-4' (str); write it as a number, 1e-4 {_HINT}",
        ),
        (
            SGD,
            {"rules": [{"name": "bias", "lr_mult": "1e-4"}]},
            f"paramwise_cfg['rules'][0]['lr_mult'] must be a real number, got '1e-4' (str); "
            f"write it as a number, 1e-4 {_HINT}",
        ),
        (
            SGD,
            {"layer_decay": {"rate": "0.9"}},
            "paramwise_cfg['layer_decay']['rate'] must be a real number, got '0.9' (str); write "
            "it as a number, 0.9 without quotes.",
        ),
    ],
)
def test_a_number_in_quotes_gets_the_yaml_hint_wherever_it_is_written(
    optimizer_cfg: dict[str, Any], paramwise_cfg: dict[str, Any], message: str
) -> None:
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        DefaultOptimizerConstructor(optimizer_cfg, paramwise_cfg)


@pytest.mark.parametrize(
    ("paramwise_cfg", "where"),
    [
        ({"merge_groups": "yes"}, "paramwise_cfg['merge_groups']"),
        ({"bypass_duplicate": "yes"}, "paramwise_cfg['bypass_duplicate']"),
        ({"compose": "yes"}, "paramwise_cfg['compose']"),
        ({"model_hooks": "yes"}, "paramwise_cfg['model_hooks']"),
        ({"rules": [{"name": "bias", "freeze": "yes"}]}, "paramwise_cfg['rules'][0]['freeze']"),
    ],
)
def test_a_flag_that_is_not_a_bool_reads_the_same_wherever_it_is_written(
    paramwise_cfg: dict[str, Any], where: str
) -> None:
    message = f"{where} must be True or False, got 'yes' (str)."
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        DefaultOptimizerConstructor(SGD, paramwise_cfg)


@pytest.mark.parametrize(
    ("paramwise_cfg", "where", "key", "shown", "base"),
    [
        ({"bias_lr_mult": 2}, "paramwise_cfg", "bias_lr_mult", "2", "lr"),
        ({"norm_decay_mult": 0}, "paramwise_cfg", "norm_decay_mult", "0", "weight_decay"),
        (
            {"custom_keys": {"head": {"lr_mult": 2}}},
            "paramwise_cfg['custom_keys']['head']",
            "lr_mult",
            "2",
            "lr",
        ),
        (
            {"custom_keys": {"head": {"decay_mult": 0}}},
            "paramwise_cfg['custom_keys']['head']",
            "decay_mult",
            "0",
            "weight_decay",
        ),
        (
            {"rules": [{"name": "bias", "lr_mult": 2}]},
            "paramwise_cfg['rules'][0]",
            "lr_mult",
            "2",
            "lr",
        ),
        (
            {"rules": [{"name": "bias", "decay_mult": 0}]},
            "paramwise_cfg['rules'][0]",
            "decay_mult",
            "0",
            "weight_decay",
        ),
        ({"layer_decay": {"rate": 0.9}}, "paramwise_cfg", "layer_decay", "{'rate': 0.9}", "lr"),
    ],
)
def test_a_multiplier_without_its_base_reads_the_same_wherever_it_is_written(
    paramwise_cfg: dict[str, Any], where: str, key: str, shown: str, base: str
) -> None:
    optimizer_cfg = {"type": "SGD"} if base == "lr" else {"type": "SGD", "lr": 0.1}
    message = (
        f"{where} sets {key}={shown} but optimizer_cfg has no {base}, so there is nothing to "
        f"multiply; add {base} to the optimizer config or drop {key}."
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        DefaultOptimizerConstructor(optimizer_cfg, paramwise_cfg)


@pytest.mark.parametrize(
    ("optimizer_cfg", "paramwise_cfg", "where"),
    [
        ({**SGD, "momentum": "0.9"}, {}, "optimizer_cfg"),
        (
            SGD,
            {"custom_keys": {"head": {"momentum": "0.9"}}},
            "paramwise_cfg['custom_keys']['head']",
        ),
        (SGD, {"rules": [{"name": "bias", "momentum": "0.9"}]}, "paramwise_cfg['rules'][0]"),
    ],
)
def test_an_option_that_does_not_fit_reads_the_same_wherever_it_is_written(
    optimizer_cfg: dict[str, Any], paramwise_cfg: dict[str, Any], where: str
) -> None:
    message = (
        f"{where}: momentum: expected float, got '0.9' (str), as the signature of "
        "torch.optim.sgd:SGD annotates 'momentum'"
    )
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        DefaultOptimizerConstructor(optimizer_cfg, paramwise_cfg)


def test_options_as_a_config_file_gives_them_pass() -> None:
    # Lists for tuples, ints for floats, None for optional flags: what TOML and YAML give.
    DefaultOptimizerConstructor(
        {"type": "AdamW", "lr": 1, "betas": [0.9, 0.999], "eps": 1, "foreach": None},
        {"custom_keys": {"0.": {"betas": [0.8, 0.9], "amsgrad": True}}},
    )
    DefaultOptimizerConstructor({"type": "Adafactor", "lr": 0.01, "eps": [None, 0.001]})


@pytest.mark.parametrize(
    "name", sorted(set(OPTIMIZERS) - {"ZeroRedundancyOptimizer", "RoutedOptimizer"})
)
def test_every_torch_optimizer_accepts_its_own_defaults(name: str) -> None:
    signature = inspect.signature(OPTIMIZERS.get(name))  # type: ignore[arg-type]
    defaults = {
        key: p.default
        for key, p in signature.parameters.items()
        if key != "params" and p.default is not inspect.Parameter.empty
    }
    # Not weight_decay=0 for optimizers that have none, and a real lr for those without one.
    DefaultOptimizerConstructor({"type": name, **defaults}, {"merge_groups": True})


class _HeadLrConstructor(DefaultOptimizerConstructor):
    """A subclass declaring a multiplier of its own, as SPEC 3.1 lets it."""

    paramwise_keys = (*DefaultOptimizerConstructor.paramwise_keys, "head_lr_mult")


# Each place a multiplier is written, as (paramwise_cfg with the multiplier VALUE, where, key).
_MULTIPLIER_PLACES = [
    ({"norm_decay_mult": "VALUE"}, "paramwise_cfg", "norm_decay_mult"),
    ({"bias_lr_mult": "VALUE"}, "paramwise_cfg", "bias_lr_mult"),
    ({"dcn_offset_lr_mult": "VALUE"}, "paramwise_cfg", "dcn_offset_lr_mult"),
    (
        {"custom_keys": {"2.": {"lr_mult": "VALUE"}}},
        "paramwise_cfg['custom_keys']['2.']",
        "lr_mult",
    ),
    (
        {"custom_keys": {"2.": {"decay_mult": "VALUE"}}},
        "paramwise_cfg['custom_keys']['2.']",
        "decay_mult",
    ),
    ({"rules": [{"match": "*", "lr_mult": "VALUE"}]}, "paramwise_cfg['rules'][0]", "lr_mult"),
    (
        {"rules": [{"match": "*", "decay_mult": "VALUE"}]},
        "paramwise_cfg['rules'][0]",
        "decay_mult",
    ),
    ({"head_lr_mult": "VALUE"}, "paramwise_cfg", "head_lr_mult"),
]


def _with_value(cfg: Any, value: Any) -> Any:
    if cfg == "VALUE":
        return value
    if isinstance(cfg, dict):
        return {key: _with_value(item, value) for key, item in cfg.items()}
    if isinstance(cfg, list):
        return [_with_value(item, value) for item in cfg]
    return cfg


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (float("nan"), "would be nan, and one step would make its parameters nan"),
        (float("inf"), "would be inf (nan where the base is 0)"),
        (-1.0, "would be negative, which torch refuses of an optimizer's own"),
        (-1e-9, "would be negative"),
    ],
)
@pytest.mark.parametrize(("paramwise_cfg", "where", "key"), _MULTIPLIER_PLACES)
def test_a_multiplier_is_a_finite_number_at_least_0_wherever_it_is_written(
    paramwise_cfg: dict[str, Any], where: str, key: str, value: float, why: str
) -> None:
    # SPEC 3.1: norm_decay_mult=nan gave weight decay nan, and one AdamW step turned the
    # LayerNorm's weights into nan; lr_mult=-1 gave lr -0.001, which torch refuses as an lr.
    noun = "lr" if key.endswith("lr_mult") else "weight decay"
    message = (
        f"{where}[{key!r}] must be a finite number >= 0, got {value!r}: every {noun} it "
        f"multiplies {why}"
    )
    cfg = {"type": "AdamW", "lr": 1e-3, "weight_decay": 0.05}
    with pytest.raises(ValueError, match=f"^{re.escape(message)}.*Give a multiplier such as 0"):
        _HeadLrConstructor(cfg, _with_value(paramwise_cfg, value))


@pytest.mark.parametrize(("paramwise_cfg", "where", "key"), _MULTIPLIER_PLACES)
@pytest.mark.parametrize("value", [0, 0.0, 1, 2.5, 1e6])
def test_a_finite_multiplier_at_least_0_is_accepted_wherever_it_is_written(
    paramwise_cfg: dict[str, Any], where: str, key: str, value: float
) -> None:
    cfg = {"type": "AdamW", "lr": 1e-3, "weight_decay": 0.05}
    _HeadLrConstructor(cfg, _with_value(paramwise_cfg, value))


def test_a_subclass_multiplier_is_a_real_number_as_the_base_classes_are() -> None:
    # SPEC 3.1: every multiplier a real number. The key is known as a multiplier (it needs an
    # lr), so '2' reads as bias_lr_mult='2' does rather than passing on silently.
    message = (
        "paramwise_cfg['head_lr_mult'] must be a real number, got '2' (str); write it as a "
        "number, 2 without quotes."
    )
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        _HeadLrConstructor({"type": "SGD", "lr": 0.1}, {"head_lr_mult": "2"})
    with pytest.raises(TypeError, match=r"\['head_lr_mult'\] must be a real number.*\(bool\)"):
        _HeadLrConstructor({"type": "SGD", "lr": 0.1}, {"head_lr_mult": True})
    # None is not given, as for the base class's multipliers.
    _HeadLrConstructor({"type": "SGD"}, {"head_lr_mult": None})


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("lr", -0.1, "Invalid learning rate: -0.1"),
        ("lr", float("nan"), "Invalid learning rate: nan"),
        ("lr", float("inf"), "Invalid learning rate: inf"),
        ("lr", torch.tensor(-0.1), r"Invalid learning rate: tensor(-0.1000)"),
        ("weight_decay", -1e-4, "Invalid weight_decay value: -0.0001"),
        ("weight_decay", float("nan"), "Invalid weight_decay value: nan"),
    ],
)
def test_a_custom_keys_own_lr_and_weight_decay_are_finite_and_at_least_0(
    option: str, value: Any, words: str
) -> None:
    # torch refuses a negative lr or weight decay (Adam a nan one too) of the optimizer, never
    # of a group: a custom key's own lr=-0.1 gave a group lr -0.1.
    mult = "lr_mult" if option == "lr" else "decay_mult"
    message = (
        f"paramwise_cfg['custom_keys']['head'][{option!r}]: {words}. A group's {option} must be "
        f"a finite number >= 0, as torch wants of the optimizer's own; give one, or {mult} to "
        f"scale optimizer_cfg's {option}."
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        DefaultOptimizerConstructor(SGD, {"custom_keys": {"head": {option: value}}})


@pytest.mark.parametrize(
    ("option", "words"),
    [("lr", "Invalid learning rate"), ("weight_decay", "Invalid weight_decay value")],
)
def test_a_negative_group_value_is_refused_in_the_words_torch_refuses_a_default_in(
    option: str, words: str
) -> None:
    for optimizer in (torch.optim.SGD, torch.optim.AdamW):
        with pytest.raises(ValueError, match=f"^{words}: -0.5$"):
            optimizer(nn.Linear(1, 1).parameters(), **{"lr": 0.1, option: -0.5})
    with pytest.raises(ValueError, match=rf"\['{option}'\]: {words}: -0.5\. "):
        DefaultOptimizerConstructor(SGD, {"custom_keys": {"head": {option: -0.5}}})


def test_a_group_value_torch_would_take_is_accepted_as_before() -> None:
    # 0, a large value, and 0-dim tensors (torch takes one as an lr) stay accepted.
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    custom = {
        "0.": {"lr": 0.0, "weight_decay": 0.0},
        "1.": {"lr": torch.tensor(0.5), "weight_decay": torch.tensor(1e3)},
    }
    optimizer = DefaultOptimizerConstructor(SGD, {"custom_keys": custom})(model)
    values = [(float(g["lr"]), float(g["weight_decay"])) for g in optimizer.param_groups]
    assert values == [(0.0, 0.0), (0.5, 1e3)]
    meta = torch.tensor(-1.0, device="meta")  # no value to read: left to torch, as before
    DefaultOptimizerConstructor(SGD, {"custom_keys": {"0.": {"lr": meta}}})
