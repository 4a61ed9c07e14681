"""Shared parameters: an error naming both names, or bypass_duplicate with one warning each."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch
from torch import nn

from regtree_optim import build_optimizer


def _tied_model() -> nn.Module:
    model = nn.Module()
    model.encoder = nn.Linear(3, 3)
    model.decoder = nn.Linear(3, 3)
    model.decoder.weight = model.encoder.weight
    return model


def test_shared_parameter_without_bypass_names_both() -> None:
    cfg = {"type": "SGD", "lr": 0.1, "paramwise_cfg": {"bias_lr_mult": 2}}
    with pytest.raises(
        ValueError, match=r"'decoder\.weight' is the same tensor as 'encoder\.weight'"
    ):
        build_optimizer(_tied_model(), cfg)


def test_shared_frozen_parameter_is_a_duplicate_too() -> None:
    model = _tied_model()
    model.encoder.weight.requires_grad_(False)
    cfg = {"type": "SGD", "lr": 0.1, "paramwise_cfg": {"bias_lr_mult": 2}}
    with pytest.raises(ValueError, match="bypass_duplicate=True"):
        build_optimizer(model, cfg)


def test_bypass_duplicate_keeps_first_and_warns_once_per_skipped() -> None:
    model = _tied_model()
    model.third = nn.Linear(3, 3)
    model.third.weight = model.encoder.weight
    model.wrapper = nn.Module()
    model.wrapper.shared = model.decoder  # reached through a second parent: both are duplicates
    cfg = {"type": "SGD", "lr": 0.1, "paramwise_cfg": {"bypass_duplicate": True}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        optimizer = build_optimizer(model, cfg)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 4
    assert [w.filename for w in caught] == [__file__] * 4  # the user's line, each time
    assert "'decoder.weight' is the same tensor as 'encoder.weight'" in messages[0]
    assert "'third.weight' is the same tensor as 'encoder.weight'" in messages[1]
    assert "'wrapper.shared.weight' is the same tensor as 'encoder.weight'" in messages[2]
    assert "'wrapper.shared.bias' is the same tensor as 'decoder.bias'" in messages[3]
    names = [n for g in optimizer.param_groups for n in g["param_names"]]
    assert names == ["encoder.weight", "encoder.bias", "decoder.bias", "third.bias"]
    params = [p for g in optimizer.param_groups for p in g["params"]]
    assert len({id(p) for p in params}) == len(params)


def test_bypass_duplicate_with_shared_module_warns_for_each_parameter() -> None:
    model = nn.Module()
    model.a = nn.Linear(2, 2)
    model.b = nn.Sequential(model.a)
    cfg = {"type": "SGD", "lr": 0.1, "paramwise_cfg": {"bypass_duplicate": True}}
    with pytest.warns(UserWarning, match=r"'b\.0\.(weight|bias)' is the same tensor") as record:
        optimizer = build_optimizer(model, cfg)
    assert len(record) == 2
    assert optimizer.param_groups[0]["param_names"] == ["a.weight", "a.bias"]


def test_many_shared_parameters_are_all_reported() -> None:
    # Linear-time detection: every one of many duplicates is found in a single pass.
    count = 2000
    shared = nn.Parameter(torch.ones(1))
    model = nn.Module()
    for index in range(count):
        holder = nn.Module()
        holder.register_parameter("w", shared)
        model.add_module(f"m{index}", holder)
    cfg = {"type": "SGD", "lr": 0.1, "paramwise_cfg": {"bypass_duplicate": True}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        optimizer = build_optimizer(model, cfg)
    assert len(caught) == count - 1
    assert optimizer.param_groups[0]["param_names"] == ["m0.w"]


def test_custom_key_matching_only_a_skipped_duplicate_does_not_warn() -> None:
    model = nn.Module()
    model.a = nn.Linear(2, 2)
    model.b = nn.Linear(2, 2)
    model.b.weight = model.a.weight
    cfg = {
        "type": "SGD",
        "lr": 0.1,
        "paramwise_cfg": {"bypass_duplicate": True, "custom_keys": {"b.weight": {"lr_mult": 2}}},
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        optimizer = build_optimizer(model, cfg)
    assert [str(w.message) for w in caught] == [
        "Parameter 'b.weight' is the same tensor as 'a.weight'; it is skipped because "
        "bypass_duplicate=True."
    ]
    # The key decides nothing: the tensor is placed under its first name, 'a.weight'.
    lrs = {n: g["lr"] for g in optimizer.param_groups for n in g["param_names"]}
    assert lrs == {"a.weight": 0.1, "a.bias": 0.1, "b.bias": 0.1}


def test_custom_key_matching_no_name_still_warns_with_duplicates() -> None:
    model = nn.Module()
    model.a = nn.Linear(2, 2)
    model.b = model.a
    cfg = {
        "type": "SGD",
        "lr": 0.1,
        "paramwise_cfg": {"bypass_duplicate": True, "custom_keys": {"c.weight": {"lr_mult": 2}}},
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build_optimizer(model, cfg)
    unmatched = [str(w.message) for w in caught if "matches no parameter" in str(w.message)]
    assert len(unmatched) == 1
    assert "custom_keys key 'c.weight'" in unmatched[0]


def test_merge_groups_false_with_duplicates_and_frozen_parameters() -> None:
    model = nn.Module()
    model.a = nn.Linear(2, 2)
    model.frozen = nn.Linear(2, 2)
    model.frozen.requires_grad_(False)
    model.b = nn.Linear(2, 2)
    model.b.weight = model.a.weight
    model.box = nn.Module()
    model.box.again = model.frozen  # a shared frozen module: both parameters are skipped
    cfg = {
        "type": "SGD",
        "lr": 0.1,
        "weight_decay": 0.01,
        "paramwise_cfg": {"bypass_duplicate": True, "merge_groups": False, "bias_lr_mult": 2},
    }
    with pytest.warns(UserWarning, match="is the same tensor as") as record:
        optimizer = build_optimizer(model, cfg)
    assert len(record) == 3
    expected = [
        ("a.weight", model.a.weight, 0.1),
        ("a.bias", model.a.bias, 0.1 * 2),
        ("frozen.weight", model.frozen.weight, 0.1),
        ("frozen.bias", model.frozen.bias, 0.1),
        ("b.bias", model.b.bias, 0.1 * 2),
    ]
    assert len(optimizer.param_groups) == len(expected)
    for group, (name, param, lr) in zip(optimizer.param_groups, expected, strict=True):
        assert group["param_names"] == [name]
        assert len(group["params"]) == 1
        assert group["params"][0] is param
        assert (group["lr"], group["weight_decay"]) == (lr, 0.01)


def test_the_duplicate_warning_points_at_the_caller_of_an_add_params_walk() -> None:
    # An mmcv-era subclass walks through its own add_params at every depth; each warning still
    # names the first frame outside regtree_optim (here, the override's super() call).
    from regtree_optim import DefaultOptimizerConstructor

    class Overridden(DefaultOptimizerConstructor):
        def add_params(
            self,
            params: list[dict[str, Any]],
            module: nn.Module,
            prefix: str = "",
            is_dcn_module: bool | float | None = None,
        ) -> None:
            super().add_params(params, module, prefix, is_dcn_module)

    model = nn.Module()
    model.a = nn.Linear(2, 2)
    model.b = nn.Sequential(nn.Sequential(model.a))
    constructor = Overridden({"type": "SGD", "lr": 0.1}, {"bypass_duplicate": True})
    with pytest.warns(UserWarning, match="is the same tensor") as record:
        constructor(model)
    assert len(record) == 2
    assert [w.filename for w in record] == [__file__] * 2


def test_a_shared_tensor_after_a_module_s_own_parameters_is_still_a_duplicate() -> None:
    # The module has placed a parameter of its own before it meets the tensor shared with an
    # earlier module: that tensor is a duplicate all the same, and an empty slot is skipped.
    model = nn.Module()
    model.a = nn.Linear(2, 2)
    model.b = nn.Module()
    model.b.register_parameter("empty", None)
    model.b.own = nn.Parameter(torch.ones(2))
    model.b.shared = model.a.weight
    cfg: dict[str, Any] = {"type": "SGD", "lr": 0.1, "paramwise_cfg": {"bias_lr_mult": 2}}
    with pytest.raises(ValueError, match=r"'b\.shared' is the same tensor as 'a\.weight'"):
        build_optimizer(model, cfg)
    cfg["paramwise_cfg"]["bypass_duplicate"] = True
    with pytest.warns(UserWarning, match=r"'b\.shared' is the same tensor as 'a\.weight'"):
        optimizer = build_optimizer(model, cfg)
    groups = [group["param_names"] for group in optimizer.param_groups]
    assert groups == [["a.weight", "b.own"], ["a.bias"]]


def test_tensors_repeated_within_a_module_and_shared_ones_interleaved() -> None:
    # A module's own tensor under a second name is met once (as named_parameters gives it); a
    # tensor of an earlier module is a duplicate, however the two kinds interleave.
    model = nn.Module()
    model.a = nn.Linear(2, 2)
    model.b = nn.Module()
    first, second = nn.Parameter(torch.ones(2)), nn.Parameter(torch.ones(3))
    for name, tensor in [
        ("first", first),
        ("shared_weight", model.a.weight),
        ("first_again", first),
        ("second", second),
        ("shared_bias", model.a.bias),
        ("second_again", second),
        ("first_once_more", first),
    ]:
        model.b.register_parameter(name, tensor)
    cfg = {"type": "SGD", "lr": 0.1, "paramwise_cfg": {"bypass_duplicate": True}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        optimizer = build_optimizer(model, cfg)
    skipped = sorted(str(w.message).split("'")[1] for w in caught)
    assert skipped == ["b.shared_bias", "b.shared_weight"]
    names = [name for group in optimizer.param_groups for name in group["param_names"]]
    assert names == ["a.weight", "a.bias", "b.first", "b.second"]


def test_what_one_module_looked_through_is_not_taken_for_the_next_module_s_own() -> None:
    # a repeats its own tensor (so its entries are looked through); b then meets a's tensor,
    # which is a duplicate in b, not one of b's own.
    model = nn.Module()
    model.a, model.b = nn.Module(), nn.Module()
    shared, own = nn.Parameter(torch.ones(2)), nn.Parameter(torch.ones(3))
    model.a.register_parameter("w", shared)
    model.a.register_parameter("w_again", shared)
    model.b.register_parameter("v", own)
    model.b.register_parameter("shared", shared)
    cfg = {"type": "SGD", "lr": 0.1, "paramwise_cfg": {"bypass_duplicate": True}}
    with pytest.warns(UserWarning, match=r"'b\.shared' is the same tensor as 'a\.w'"):
        optimizer = build_optimizer(model, cfg)
    assert [n for g in optimizer.param_groups for n in g["param_names"]] == ["a.w", "b.v"]


def test_groups_an_add_params_override_appends_hold_earlier_occurrences() -> None:
    # mmcv-era code may append a group of its own to params; a tensor in it met again by the
    # walk is a duplicate, named by the group's param_names where it has them.
    from regtree_optim import DefaultOptimizerConstructor

    class OwnHead(DefaultOptimizerConstructor):
        def add_params(
            self,
            params: list[dict[str, Any]],
            module: nn.Module,
            prefix: str = "",
            is_dcn_module: bool | float | None = None,
        ) -> None:
            if prefix == "head":
                params.append({"params": module.weight, "param_names": ["my.head"], "lr": 0.0})
                params.append({"params": [module.bias], "lr": 0.0})
                return
            super().add_params(params, module, prefix, is_dcn_module)

    model = nn.Module()
    model.head = nn.Linear(2, 2)
    model.tail = nn.Module()
    model.tail.w = model.head.weight
    model.tail.b = model.head.bias
    with pytest.raises(ValueError, match=r"'tail\.w' is the same tensor as 'my\.head'"):
        OwnHead({"type": "SGD", "lr": 0.1}, {"bias_lr_mult": 2})(model)
    constructor = OwnHead({"type": "SGD", "lr": 0.1}, {"bypass_duplicate": True})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        optimizer = constructor(model)
    assert [str(w.message).split(";")[0] for w in caught] == [
        "Parameter 'tail.w' is the same tensor as 'my.head'",
        "Parameter 'tail.b' is the same tensor as '<a parameter placed earlier>'",
    ]
    assert [len(list(group["params"])) for group in optimizer.param_groups] == [1, 1]


def test_every_skipped_duplicate_counts_as_met_for_custom_keys() -> None:
    # Two tensors skipped as duplicates, after and between placed ones: a key matching only the
    # second skipped name still matches a name met, so only the key matching nothing warns,
    # with the whole message and the closest name.
    model = nn.Module()
    model.a = nn.Linear(2, 2)
    model.b = nn.Module()
    model.b.first = model.a.weight
    model.b.own = nn.Parameter(torch.ones(2))
    model.b.second = model.a.bias
    custom = {"b.second": {"lr_mult": 2}, "b.ownn": {"lr_mult": 3}}
    cfg = {
        "type": "SGD",
        "lr": 0.1,
        "paramwise_cfg": {"bypass_duplicate": True, "custom_keys": custom},
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build_optimizer(model, cfg)
    assert [w.category for w in caught] == [UserWarning] * 3
    assert str(caught[-1].message) == (
        "custom_keys key 'b.ownn' matches no parameter of Module: it is a substring of no "
        "name f'{prefix}.{name}' (the closest name is 'b.own'); it has no effect."
    )


def test_the_shared_parameter_error_says_what_would_work() -> None:
    with pytest.raises(ValueError, match="same tensor") as raised:
        build_optimizer(
            _tied_model(), {"type": "SGD", "lr": 0.1, "paramwise_cfg": {"bias_lr_mult": 2}}
        )
    assert str(raised.value) == (
        "Parameter 'decoder.weight' is the same tensor as 'encoder.weight': a parameter may "
        "belong to one group only. Set paramwise_cfg bypass_duplicate=True to keep the first "
        "occurrence and skip the later ones."
    )
