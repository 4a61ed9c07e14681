"""SPEC 3.3 ``model_hooks``: ``no_weight_decay()`` and its keywords, on the model and submodules."""

from __future__ import annotations

import re
from typing import Any

import pytest
import torch
from torch import nn

from regtree_optim import DefaultOptimizerConstructor, ParamRow

ADAMW: dict[str, Any] = {"type": "AdamW", "lr": 0.1, "weight_decay": 0.05}


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.relative_position_bias_table = nn.Parameter(torch.zeros(3, 2))
        self.qkv = nn.Linear(4, 12)


class Backbone(nn.Module):
    """Declares its own no-decay names, as a timm model used as a backbone does."""

    def __init__(self) -> None:
        super().__init__()
        self.cls_token = nn.Parameter(torch.zeros(1, 1, 4))
        self.blocks = nn.ModuleList(Attention() for _ in range(2))
        for block in self.blocks:
            block.register_parameter("gamma", nn.Parameter(torch.ones(4)))

    def no_weight_decay(self) -> set[str]:
        return {"cls_token", "blocks.*.gamma"}  # a name and a glob

    def no_weight_decay_keywords(self) -> set[str]:
        return {"relative_position_bias_table"}


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pos_embed = nn.Parameter(torch.zeros(1, 4))
        self.backbone = Backbone()
        self.head = nn.Linear(4, 2)

    def no_weight_decay(self) -> list[str]:
        return ["pos_embed"]


NO_DECAY = {
    "pos_embed": "no_weight_decay()",
    "backbone.cls_token": "backbone.no_weight_decay()",
    "backbone.blocks.0.gamma": "backbone.no_weight_decay()",
    "backbone.blocks.1.gamma": "backbone.no_weight_decay()",
    "backbone.blocks.0.relative_position_bias_table": "backbone.no_weight_decay_keywords()",
    "backbone.blocks.1.relative_position_bias_table": "backbone.no_weight_decay_keywords()",
}


def _rows(model: nn.Module, **paramwise: Any) -> dict[str, ParamRow]:
    explanation = DefaultOptimizerConstructor(ADAMW, {"model_hooks": True, **paramwise}).explain(
        model
    )
    return {row.name: row for row in explanation}


def test_hooks_of_the_model_and_of_a_submodule_remove_weight_decay_with_names_prefixed() -> None:
    rows = _rows(Model())
    for name, row in rows.items():
        if name in NO_DECAY:
            assert (row.weight_decay, row.decay_mult, row.rule) == (0.0, 0, NO_DECAY[name]), name
        else:
            assert (row.weight_decay, row.rule) == (0.05, "default"), name
        assert row.lr == 0.1


def test_a_submodule_keyword_applies_only_under_that_submodule() -> None:
    model = Model()
    model.head.register_parameter("relative_position_bias_table", nn.Parameter(torch.zeros(2)))
    assert _rows(model)["head.relative_position_bias_table"].weight_decay == 0.05


def test_hooks_apply_after_every_other_rule() -> None:
    rows = _rows(
        Model(),
        rules=[{"match": "*pos_embed", "decay_mult": 2.0, "lr_mult": 0.5}],
        norm_decay_mult=0.5,
    )
    row = rows["pos_embed"]
    assert (row.lr, row.weight_decay) == (0.1 * 0.5, 0.0)
    assert row.rule == "rules[0], no_weight_decay()"


def test_without_model_hooks_the_declarations_are_ignored() -> None:
    explanation = DefaultOptimizerConstructor(ADAMW, {"bias_lr_mult": 1.0}).explain(Model())
    assert {row.weight_decay for row in explanation} == {0.05}


def test_a_frozen_parameter_named_by_a_hook_keeps_the_defaults() -> None:
    model = Model()
    model.pos_embed.requires_grad_(False)
    row = _rows(model)["pos_embed"]
    assert (row.weight_decay, row.rule) == (0.05, "frozen (optimizer defaults)")


def test_the_built_optimizer_holds_the_zero_decay() -> None:
    model = Model()
    optimizer = DefaultOptimizerConstructor(ADAMW, {"model_hooks": True})(model)
    by_name = {n: g for g in optimizer.param_groups for n in g["param_names"]}
    assert all(by_name[name]["weight_decay"] == 0.0 for name in NO_DECAY)
    assert by_name["head.weight"]["weight_decay"] == 0.05
    assert len(optimizer.param_groups) == 2


def test_a_hook_returning_a_str_is_a_type_error_naming_it() -> None:
    class Bad(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.zeros(1))

        def no_weight_decay(self) -> str:
            return "w"

    with pytest.raises(
        TypeError,
        match=r"Bad\.no_weight_decay\(\) \(.*Bad\) must return a set of str, got 'w' \(str\)$",
    ):
        _rows(Bad())


@pytest.mark.usefixtures("process_group")
def test_hooks_are_read_through_distributed_data_parallel() -> None:
    wrapped = nn.parallel.DistributedDataParallel(Model())
    rows = _rows(wrapped)
    assert {name for name, row in rows.items() if row.weight_decay == 0.0} == set(NO_DECAY)
    assert rows["backbone.cls_token"].rule == "backbone.no_weight_decay()"


@pytest.mark.parametrize("word", [3, ""])
def test_a_hook_returning_an_empty_or_non_str_entry_is_a_type_error(word: object) -> None:
    class Bad(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.zeros(1))

        def no_weight_decay(self) -> list[object]:
            return ["w", word]

    with pytest.raises(
        TypeError,
        match=rf"^Bad\.no_weight_decay\(\) \(.*Bad\) must return non-empty str, got "
        rf"{re.escape(repr(word))} in \['w', {re.escape(repr(word))}\]$",
    ):
        _rows(Bad())


@pytest.mark.parametrize("hook", ["no_weight_decay", "no_weight_decay_keywords"])
def test_a_submodule_s_bad_hook_is_named_by_its_path(hook: str) -> None:
    class BadBlock(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.zeros(1))

    setattr(BadBlock, hook, lambda self: 5)
    model = Model()
    model.backbone.add_module("bad", BadBlock())
    with pytest.raises(
        TypeError, match=rf"^backbone\.bad\.{hook}\(\) \(.*BadBlock\) must return a set of str"
    ):
        _rows(model)


class Plain(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pos_embed = nn.Parameter(torch.zeros(1, 4))
        self.head = nn.Linear(4, 2)


class NamesOnly(Plain):
    def no_weight_decay(self) -> set[str]:
        return {"pos_embed"}


class GlobsOnly(Plain):
    def no_weight_decay(self) -> set[str]:
        return {"pos_*"}


class KeywordsOnly(Plain):
    def no_weight_decay_keywords(self) -> set[str]:
        return {"embed"}


@pytest.mark.parametrize(
    ("model", "rule"),
    [
        (NamesOnly(), "no_weight_decay()"),
        (GlobsOnly(), "no_weight_decay()"),
        (KeywordsOnly(), "no_weight_decay_keywords()"),
    ],
)
def test_each_kind_of_declaration_works_alone(model: nn.Module, rule: str) -> None:
    rows = _rows(model)
    assert (rows["pos_embed"].weight_decay, rows["pos_embed"].rule) == (0.0, rule)
    assert (rows["head.weight"].weight_decay, rows["head.weight"].rule) == (0.05, "default")


@pytest.mark.parametrize(
    "paramwise", [{"rules": [{"match": "*", "lr_mult": 1.0}]}, {"model_hooks": False, "rules": []}]
)
def test_other_section_3_3_keys_without_model_hooks_ignore_the_declarations(
    paramwise: dict[str, Any],
) -> None:
    explanation = DefaultOptimizerConstructor(ADAMW, paramwise).explain(Model())
    assert {row.weight_decay for row in explanation} == {0.05}


def test_a_hook_zeroes_the_weight_decay_where_the_config_sets_none() -> None:
    constructor = DefaultOptimizerConstructor(
        {"type": "AdamW", "lr": 0.1}, {"model_hooks": True, "bias_lr_mult": 2.0}
    )
    optimizer = constructor(NamesOnly())
    by_name = {n: g for g in optimizer.param_groups for n in g["param_names"]}
    assert by_name["pos_embed"]["weight_decay"] == 0.0
    assert by_name["head.weight"]["weight_decay"] == 0.01  # AdamW's own default
    assert by_name["pos_embed"] is not by_name["head.weight"]


def test_a_tensor_weight_decay_zeroed_by_a_hook_stays_a_tensor() -> None:
    base_wd = torch.tensor(0.05)
    rows = {
        row.name: row
        for row in DefaultOptimizerConstructor(
            {"type": "AdamW", "lr": 0.1, "weight_decay": base_wd}, {"model_hooks": True}
        ).explain(NamesOnly())
    }
    zeroed = rows["pos_embed"].weight_decay
    assert isinstance(zeroed, torch.Tensor)
    assert zeroed.item() == 0.0
    assert rows["head.weight"].weight_decay is base_wd
