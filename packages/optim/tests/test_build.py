"""build_optimizer, build_optimizer_constructor and custom constructors chosen by config."""

from __future__ import annotations

import copy
import inspect
import re
import warnings
from threading import Lock
from types import MappingProxyType
from typing import Any, ClassVar

import pytest
import torch
from torch import nn

from regtree import NotRegisteredError, build_from_cfg
from regtree_optim import (
    OPTIMIZER_BUILDERS,
    OPTIMIZERS,
    DefaultOptimizerConstructor,
    build_optimizer,
    build_optimizer_constructor,
)


def test_caller_cfg_is_untouched(
    model: nn.Module, sgd_cfg: dict[str, Any], custom_cfg: dict[str, Any]
) -> None:
    cfg = {**sgd_cfg, "paramwise_cfg": custom_cfg, "constructor": "DefaultOptimizerConstructor"}
    before = copy.deepcopy(cfg)
    build_optimizer(model, cfg)
    assert cfg == before
    assert cfg["paramwise_cfg"] is custom_cfg


class _MutatingConstructor(DefaultOptimizerConstructor):
    """Mutates the nested configs it receives, as some constructors written for mmcv do."""

    def __init__(
        self, optimizer_cfg: dict[str, Any], paramwise_cfg: dict[str, Any] | None = None
    ) -> None:
        assert paramwise_cfg is not None
        paramwise_cfg["custom_keys"]["param1"]["lr_mult"] = 1000
        paramwise_cfg["custom_keys"]["sub"].pop("decay_mult")
        paramwise_cfg.pop("norm_decay_mult")
        optimizer_cfg["lr"] = 123.0
        super().__init__(optimizer_cfg, paramwise_cfg)


def test_build_optimizer_deep_copies_for_a_mutating_constructor(
    model: nn.Module, sgd_cfg: dict[str, Any], custom_cfg: dict[str, Any]
) -> None:
    OPTIMIZER_BUILDERS.register_module(module=_MutatingConstructor, force=True)
    cfg = {**sgd_cfg, "paramwise_cfg": custom_cfg, "constructor": "_MutatingConstructor"}
    before = copy.deepcopy(cfg)
    optimizer = build_optimizer(model, cfg)
    # The constructor's mutations took effect on its own copy ...
    lrs = {n: g["lr"] for g in optimizer.param_groups for n in g["param_names"]}
    assert lrs["param1"] == 123.0 * 1000
    # ... and never reached the caller's config, at any depth.
    assert cfg == before
    assert custom_cfg["custom_keys"]["param1"] == {"lr_mult": 10}
    assert custom_cfg["custom_keys"]["sub"] == {"lr_mult": 0.1, "decay_mult": 0}
    assert custom_cfg["norm_decay_mult"] == 0.5


def test_read_only_mappings_build_as_dicts_do(
    model: nn.Module, sgd_cfg: dict[str, Any], custom_cfg: dict[str, Any]
) -> None:
    # SPEC: any mapping. deepcopy cannot copy a MappingProxyType (it does not pickle), so the
    # copy build_optimizer takes makes every mapping a dict, at any depth.
    expected = [
        (g["param_names"], g["lr"], g["weight_decay"])
        for g in build_optimizer(model, {**sgd_cfg, "paramwise_cfg": custom_cfg}).param_groups
    ]
    custom_keys = {key: MappingProxyType(entry) for key, entry in custom_cfg["custom_keys"].items()}
    read_only = MappingProxyType(
        {
            **sgd_cfg,
            "paramwise_cfg": MappingProxyType({**custom_cfg, "custom_keys": custom_keys}),
        }
    )
    optimizer = build_optimizer(model, read_only)
    assert [(g["param_names"], g["lr"], g["weight_decay"]) for g in optimizer.param_groups] == (
        expected
    )
    rules = [MappingProxyType({"match": "*.bias", "lr_mult": 2.0})]
    ruled = build_optimizer(
        model, MappingProxyType({**sgd_cfg, "paramwise_cfg": MappingProxyType({"rules": rules})})
    )
    lr = sgd_cfg["lr"]
    assert {g["lr"] for g in ruled.param_groups} == {lr, 2 * lr}
    assert OPTIMIZERS.validate(read_only) == []
    # A read-only mapping copies, so an error of the constructor's gets no note about copying.
    bad = MappingProxyType({**sgd_cfg, "paramwise_cfg": MappingProxyType({"bias_lr_mult": "2"})})
    with pytest.raises(TypeError, match=r"'bias_lr_mult'\] must be a real number") as caught:
        build_optimizer(model, bad)
    assert not any("deep-copies" in note for note in getattr(caught.value, "__notes__", []))


@pytest.mark.parametrize(
    ("cfg", "shown", "instead"),
    [
        (
            {
                "type": "OptimWrapper",
                "optimizer": {"type": "SGD", "lr": 0.1},
                "paramwise_cfg": {"norm_decay_mult": 0.0},
            },
            "type='OptimWrapper'",
            "build_optimizer(model, {**cfg['optimizer'], 'paramwise_cfg': cfg['paramwise_cfg']}).",
        ),
        (
            {
                "type": "AmpOptimWrapper",
                "optimizer": {"type": "AdamW", "lr": 1e-3},
                "clip_grad": {"max_norm": 1.0},
                "loss_scale": "dynamic",
            },
            "type='AmpOptimWrapper'",
            "build_optimizer(model, cfg['optimizer']). 'clip_grad' and 'loss_scale' are the "
            "wrapper's, for the training loop to do.",
        ),
        (
            {"type": "mmengine.OptimWrapper", "optimizer": {"type": "SGD", "lr": 0.1}},
            "type='mmengine.OptimWrapper'",
            "build_optimizer(model, cfg['optimizer']).",
        ),
        (
            {"optimizer": {"type": "SGD", "lr": 0.1}, "constructor": "X"},
            "no type, so mmengine's OptimWrapper",
            "build_optimizer(model, {**cfg['optimizer'], 'constructor': cfg['constructor']}).",
        ),
    ],
)
def test_an_mmengine_optim_wrapper_config_is_told_what_to_pass_instead(
    model: nn.Module, cfg: dict[str, Any], shown: str, instead: str
) -> None:
    # It used to be told first that optimizer_cfg has no weight_decay (or that OptimWrapper is
    # not registered), before any word of what it is.
    message = (
        f"cfg is an mmengine optim_wrapper config ({shown}), not an optimizer config: regtree "
        "builds the optimizer itself, with no wrapper around it. Pass the optimizer config, "
        "cfg['optimizer'], with paramwise_cfg (and constructor, if any) beside its type and lr: "
        f"{instead}"
    )
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        build_optimizer(model, cfg)
    assert [(p.parts, p.kind, p.message) for p in OPTIMIZERS.validate(cfg)] == [
        ((), "wrong-type", message)
    ]


def test_an_optimizer_that_takes_an_optimizer_mapping_is_no_optim_wrapper(
    model: nn.Module,
) -> None:
    class Inner(torch.optim.SGD):
        def __init__(self, params: Any, lr: float, optimizer: dict[str, Any]) -> None:
            super().__init__(params, lr=lr * optimizer["scale"])

    optimizer = build_optimizer(model, {"type": Inner, "lr": 0.1, "optimizer": {"scale": 2.0}})
    assert optimizer.param_groups[0]["lr"] == 0.2


@pytest.mark.parametrize(
    ("cfg", "hint"),
    [
        (
            {"type": "Lookahead", "k": 5, "alpha": 0.5, "optimizer": {"type": "AdamW", "lr": 1e-3}},
            "Registered there: 'ASGD'",
        ),
        (
            {"type": "SGDD", "lr": 0.1, "optimizer": {"type": "SGD", "lr": 0.1}},
            "Did you mean 'SGD'",
        ),
    ],
)
def test_an_unregistered_type_beside_an_optimizer_mapping_is_not_registered(
    model: nn.Module, cfg: dict[str, Any], hint: str
) -> None:
    # It was told it is an mmengine optim_wrapper config: only OptimWrapper, AmpOptimWrapper or
    # no type at all is one.
    name = cfg["type"]
    with pytest.raises(NotRegisteredError, match=rf"^'{name}' is not registered.*{hint}"):
        build_optimizer(model, cfg)
    problems = OPTIMIZERS.validate(cfg)
    assert [(p.parts, p.kind) for p in problems] == [(("type",), "unknown-type")]
    assert re.search(rf"^'{name}' is not registered.*{hint}", problems[0].message)


def test_build_optimizer_constructor_uses_the_builders_registry(sgd_cfg: dict[str, Any]) -> None:
    constructor = build_optimizer_constructor(
        {"type": "DefaultOptimizerConstructor", "optimizer_cfg": sgd_cfg}
    )
    assert isinstance(constructor, DefaultOptimizerConstructor)
    assert OPTIMIZER_BUILDERS.get("DefaultOptimizerConstructor") is DefaultOptimizerConstructor


def test_unknown_optimizer_type_is_not_registered(model: nn.Module) -> None:
    with pytest.raises(NotRegisteredError, match=r"'SDG'.*Did you mean 'SGD'"):
        build_optimizer(model, {"type": "SDG", "lr": 0.1})


def test_custom_constructor_chosen_with_constructor_key(model: nn.Module) -> None:
    class FrozenBackboneConstructor(DefaultOptimizerConstructor):
        def __call__(self, model: nn.Module) -> torch.optim.Optimizer:
            model.conv1.requires_grad_(False)
            return super().__call__(model)

    OPTIMIZER_BUILDERS.register_module(module=FrozenBackboneConstructor, force=True)
    for constructor in ("FrozenBackboneConstructor", FrozenBackboneConstructor):
        model.conv1.requires_grad_(True)
        cfg = {"type": "SGD", "lr": 0.1, "constructor": constructor}
        optimizer = build_optimizer(model, cfg)
        assert not model.conv1.weight.requires_grad
        assert len(optimizer.param_groups) == 1


def test_subclass_declares_its_own_paramwise_key(model: nn.Module) -> None:
    class BackboneLrConstructor(DefaultOptimizerConstructor):
        paramwise_keys: ClassVar[tuple[str, ...]] = (
            *DefaultOptimizerConstructor.paramwise_keys,
            "backbone_lr_mult",
        )

        def __call__(self, model: nn.Module) -> torch.optim.Optimizer:
            mult = self.paramwise_cfg.get("backbone_lr_mult", 1)
            self.paramwise_cfg = {"custom_keys": {"conv": {"lr_mult": mult}}}
            return super().__call__(model)

    constructor = BackboneLrConstructor({"type": "SGD", "lr": 0.5}, {"backbone_lr_mult": 0.5})
    optimizer = constructor(model)
    lrs = {n: g["lr"] for g in optimizer.param_groups for n in g["param_names"]}
    assert lrs["conv1.weight"] == 0.5 * 0.5
    assert lrs["bn.weight"] == 0.5
    # SPEC 3.1: a key the subclass has not declared may be one it reads in its own code, so it
    # is passed on with a warning that names the closest declared key, never silently.
    with pytest.warns(UserWarning, match=r"'backbone_lr_mul' is not declared.*'backbone_lr_mult'"):
        constructor = BackboneLrConstructor({"type": "SGD", "lr": 0.5}, {"backbone_lr_mul": 0.5})
    assert constructor.paramwise_cfg == {"backbone_lr_mul": 0.5}
    # The base class knows every key it reads: the same typo there is an error.
    with pytest.raises(ValueError, match=r"'bias_lr_mul'.*did you mean 'bias_lr_mult'"):
        DefaultOptimizerConstructor({"type": "SGD", "lr": 0.5}, {"bias_lr_mul": 0.5})


def test_mmcv_subclass_reading_undeclared_key_works_with_one_warning_per_key(
    model: nn.Module,
) -> None:
    class MmcvStyleConstructor(DefaultOptimizerConstructor):
        def add_params(
            self,
            params: list[dict[str, Any]],
            module: nn.Module,
            prefix: str = "",
            is_dcn_module: bool | float | None = None,
        ) -> None:
            head_lr = self.base_lr * self.paramwise_cfg["head_lr_mult"]
            for name, param in module.named_parameters():
                group: dict[str, Any] = {"params": [param]}
                if name.startswith(self.paramwise_cfg["head"]):
                    group["lr"] = head_lr
                params.append(group)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        constructor = MmcvStyleConstructor(
            {"type": "SGD", "lr": 0.1}, {"head_lr_mult": 3, "head": "dcn."}
        )
        optimizer = constructor(model)
    messages = sorted(str(w.message) for w in caught)
    assert len(messages) == 2
    assert "'head'" in messages[0]
    assert "'head_lr_mult' is not declared by " in messages[1]
    assert ".MmcvStyleConstructor;" in messages[1]
    assert "paramwise_keys = (*DefaultOptimizerConstructor.paramwise_keys" in messages[1]
    names = [n for g in optimizer.param_groups for n in g["param_names"]]
    assert names == [n for n, _ in model.named_parameters()]
    lrs = {n: g["lr"] for g in optimizer.param_groups for n in g["param_names"]}
    assert lrs["dcn.weight"] == 0.1 * 3
    assert lrs["conv1.weight"] == 0.1


def test_mmcv_subclass_calling_add_params_on_parts(model: nn.Module) -> None:
    class PartsConstructor(DefaultOptimizerConstructor):
        def add_params(
            self,
            params: list[dict[str, Any]],
            module: nn.Module,
            prefix: str = "",
            is_dcn_module: bool | float | None = None,
        ) -> None:
            # mmcv's recursion calls this override for every module; only the root is special.
            if prefix:
                super().add_params(params, module, prefix, is_dcn_module)
                return
            super().add_params(params, module.sub, prefix="sub")
            super().add_params(params, module, prefix="")

    constructor = PartsConstructor(
        {"type": "SGD", "lr": 0.1}, {"bias_lr_mult": 2, "bypass_duplicate": True}
    )
    with pytest.warns(UserWarning, match="bypass_duplicate=True") as record:
        optimizer = constructor(model)
    assert len(record) == 5  # sub's five parameters, met again when the whole model is added
    names = [g["param_names"] for g in optimizer.param_groups]
    assert names[:5] == [
        ["sub.param1"],
        ["sub.conv1.weight"],
        ["sub.conv1.bias"],
        ["sub.gn.weight"],
        ["sub.gn.bias"],
    ]
    lrs = {n: g["lr"] for g in optimizer.param_groups for n in g["param_names"]}
    assert lrs["sub.conv1.bias"] == 0.1 * 2
    assert lrs["conv2.bias"] == 0.1 * 2
    assert len(lrs) == len(list(model.parameters()))


@pytest.mark.parametrize("precedence", ["mmcv", "mmengine"])
def test_an_add_params_override_is_called_for_every_module(
    model: nn.Module, precedence: str
) -> None:
    # An mmcv-era subclass: BatchNorm parameters get lr 0, everything else the base rules.
    class FrozenBatchNormLr(DefaultOptimizerConstructor):
        def add_params(
            self,
            params: list[dict[str, Any]],
            module: nn.Module,
            prefix: str = "",
            is_dcn_module: bool | float | None = None,
        ) -> None:
            seen.append(prefix)
            if isinstance(module, nn.BatchNorm2d):
                for param in module.parameters(recurse=False):
                    params.append({"params": [param], "lr": 0.0})
                return
            super().add_params(params, module, prefix, is_dcn_module)

    seen: list[str] = []
    paramwise = {"bias_lr_mult": 2, "decay_precedence": precedence}
    optimizer = FrozenBatchNormLr({"type": "SGD", "lr": 0.1}, paramwise)(model)
    assert seen == ["", *[name for name, _ in model.named_modules()][1:]]
    lrs = {n: g["lr"] for g in optimizer.param_groups for n in g["param_names"]}
    assert (lrs["bn.weight"], lrs["bn.bias"]) == (0.0, 0.0)
    assert (lrs["conv2.bias"], lrs["sub.conv1.bias"], lrs["sub.gn.bias"]) == (0.2, 0.2, 0.1)
    # A deformable conv's children are told so, as mmcv's recursion tells them.
    assert lrs["dcn.conv_offset.bias"] == 0.1
    assert [n for g in optimizer.param_groups for n in g["param_names"]] == [
        name for name, _ in model.named_parameters()
    ]


class _OwnHeadGroup(DefaultOptimizerConstructor):
    """An mmcv-era override that gives ``head`` one group of its own at a hundredth of the lr."""

    def add_params(
        self,
        params: list[dict[str, Any]],
        module: nn.Module,
        prefix: str = "",
        is_dcn_module: bool | float | None = None,
    ) -> None:
        if prefix == "head":
            params.append({"params": list(module.parameters()), "lr": self.base_lr * 0.01})
            return
        super().add_params(params, module, prefix, is_dcn_module)


def _body_and_head() -> nn.Module:
    model = nn.Module()
    model.body = nn.Linear(2, 2)
    model.head = nn.Sequential(nn.Linear(2, 2))
    return model


def test_rules_and_custom_keys_skip_what_an_override_places_itself_and_say_so() -> None:
    # The override decides the settings of the groups it appends: no paramwise rule applies to
    # them (custom_keys, multipliers, rules, layer decay alike); one that selects only those
    # parameters says why it has no effect, rather than that it selects none.
    paramwise = {
        "custom_keys": {"head.0": {"lr_mult": 2.0}},
        "rules": [{"match": "head.*", "lr_mult": 3.0}, {"match": "nothing.*", "lr_mult": 5.0}],
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        optimizer = _OwnHeadGroup({"type": "SGD", "lr": 0.1}, paramwise)(_body_and_head())
    own = f"{__name__}:_OwnHeadGroup.add_params"
    note = (
        f"only parameters that {own} placed in groups of its own ('head.0.weight', "
        "'head.0.bias'); their settings are their group's, so it does not apply to them (nor "
        "do {others}). To apply it, have "
        f"{own} pass their module to super().add_params."
    )
    assert [str(w.message) for w in caught] == [
        "custom_keys key 'head.0' matches "
        + note.format(others="the paramwise_cfg multipliers, rules or layer_decay"),
        "paramwise_cfg['rules'][0] selects "
        + note.format(others="custom_keys, the paramwise_cfg multipliers or layer_decay"),
        "paramwise_cfg['rules'][1] selects no parameter of Module; it has no effect. Check its "
        "selectors against the names explain() shows.",
    ]
    assert [(g["param_names"], g["lr"]) for g in optimizer.param_groups] == [
        (["body.weight"], 0.1),
        (["body.bias"], 0.1),
        (["head.0.weight", "head.0.bias"], 0.1 * 0.01),
    ]


def test_a_rule_of_any_selector_that_selects_only_an_override_s_groups_says_so() -> None:
    # The override's own parameters are told apart by their module's kind (a depthwise conv, a
    # Linear), their name and their ndim as the walk's are: each rule names what it selects.
    model = nn.Module()
    model.body = nn.Conv2d(2, 2, 1, bias=False)
    model.head = nn.Sequential(nn.Conv2d(4, 4, 3, groups=4), nn.Linear(2, 2))
    rules = [
        {"module": "dwconv", "lr_mult": 2.0},
        {"module": "linear", "lr_mult": 2.0},
        {"name": "bias", "lr_mult": 2.0},
        {"ndim": 2, "lr_mult": 2.0},
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _OwnHeadGroup({"type": "SGD", "lr": 0.1}, {"rules": rules})(model)
    selected = [str(w.message).split("(", 1)[1].split(")", 1)[0] for w in caught]
    assert selected == [
        "'head.0.weight', 'head.0.bias'",
        "'head.1.weight', 'head.1.bias'",
        "'head.0.bias', 'head.1.bias'",
        "'head.1.weight'",
    ]
    assert all("placed in groups of its own" in str(w.message) for w in caught)


class _OwnTopLevelGroup(DefaultOptimizerConstructor):
    """An override that gives the model's own (top-level) parameters a group of their own."""

    def add_params(
        self,
        params: list[dict[str, Any]],
        module: nn.Module,
        prefix: str = "",
        is_dcn_module: bool | float | None = None,
    ) -> None:
        if not prefix:
            params.append({"params": list(module.parameters(recurse=False))})
            for name, child in module.named_children():
                self.add_params(params, child, name, is_dcn_module)
            return
        super().add_params(params, module, prefix, is_dcn_module)


def test_custom_keys_over_an_override_s_groups_are_matched_as_the_walk_matches_them() -> None:
    # A top-level parameter is '.scale' to a custom key, as in the walk; a key that matches only
    # with a dot the walk's names lack ('.head') matches nothing; each key is told on its own.
    model = _body_and_head()
    model.scale = nn.Parameter(torch.ones(1))
    model.head.append(nn.Linear(2, 2))
    custom = {".scale": {"lr_mult": 2.0}, ".head": {"lr_mult": 2.0}, "head": {"lr_mult": 2.0}}
    own_top = f"{__name__}:_OwnTopLevelGroup.add_params"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _OwnTopLevelGroup({"type": "SGD", "lr": 0.1}, {"custom_keys": custom})(model)
    assert [str(w.message).split(";")[0] for w in caught] == [
        f"custom_keys key '.scale' matches only parameters that {own_top} placed in groups of "
        "its own ('scale')",
        "custom_keys key '.head' matches no parameter of Module: it is a substring of no name "
        "f'{prefix}.{name}'",
    ]
    # Past three names, the note counts them; below the top, no name is matched with a dot.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _OwnHeadGroup({"type": "SGD", "lr": 0.1}, {"custom_keys": {"head": {}, ".head": {}}})(model)
    dotted, plain = sorted(map(str, (w.message for w in caught)))  # '.head' sorts first
    assert dotted.startswith("custom_keys key '.head' matches no parameter")
    assert "('head.0.weight', 'head.0.bias', 'head.1.weight', ... (4 in all)); their" in plain


def test_a_rule_that_also_selects_what_the_walk_places_applies_there_without_a_warning() -> None:
    paramwise = {"rules": [{"name": "bias", "lr_mult": 3.0}]}
    optimizer = _OwnHeadGroup({"type": "SGD", "lr": 0.1}, paramwise)(_body_and_head())
    lrs = {n: g["lr"] for g in optimizer.param_groups for n in g["param_names"]}
    assert (lrs["body.bias"], lrs["head.0.bias"]) == (0.1 * 3.0, 0.1 * 0.01)


def test_add_params_called_directly_walks_the_module_and_its_children(model: nn.Module) -> None:
    constructor = DefaultOptimizerConstructor({"type": "SGD", "lr": 0.1}, {"bias_lr_mult": 2})
    params: list[dict[str, Any]] = []
    constructor.add_params(params, model.sub, prefix="sub")
    assert [(g["param_names"], g["lr"]) for g in params] == [
        (["sub.param1"], 0.1),
        (["sub.conv1.weight"], 0.1),
        (["sub.conv1.bias"], 0.2),
        (["sub.gn.weight"], 0.1),
        (["sub.gn.bias"], 0.1),
    ]


class _MmcvCall(DefaultOptimizerConstructor):
    """mmcv 1.x's own ``__call__`` body: the walk through ``add_params``, then the build."""

    def __call__(self, model: nn.Module) -> torch.optim.Optimizer:
        params: list[dict[str, Any]] = []
        self.add_params(params, model)
        return build_from_cfg(dict(self.optimizer_cfg, params=params), OPTIMIZERS)


_FREEZE_FIRST = {"rules": [{"match": "0.*", "freeze": True}]}


def test_an_own_call_that_fails_to_build_leaves_the_model_unfrozen() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
    constructor = _MmcvCall({"type": "SGD", "lr": 0.1, "momentum": -1.0}, _FREEZE_FIRST)
    with pytest.raises(ValueError, match=r"Invalid momentum value: -1\.0"):
        constructor(model)
    assert all(param.requires_grad for param in model.parameters())
    # Built, the rule's parameters are frozen once the outermost __call__ returns.
    constructor.optimizer_cfg = {"type": "SGD", "lr": 0.1, "momentum": 0.9}
    constructor(model)
    assert [p.requires_grad for p in model.parameters()] == [False, False, True, True]


def test_an_own_call_that_raises_after_the_base_build_leaves_the_model_unfrozen() -> None:
    class ChecksAfterwards(DefaultOptimizerConstructor):
        def __call__(self, model: nn.Module) -> torch.optim.Optimizer:
            super().__call__(model)
            raise RuntimeError("refused after the build")

    class Outer(ChecksAfterwards):  # an own __call__ around another: the outermost one decides
        def __call__(self, model: nn.Module) -> torch.optim.Optimizer:
            return super().__call__(model)

    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
    for constructor_type in (ChecksAfterwards, Outer):
        with pytest.raises(RuntimeError, match="refused after the build"):
            constructor_type({"type": "SGD", "lr": 0.1}, _FREEZE_FIRST)(model)
        assert all(param.requires_grad for param in model.parameters())
    assert Outer.__call__.__name__ == "__call__"  # wrapped with the subclass's own name
    assert Outer.__call__.__qualname__.endswith("Outer.__call__")


def test_add_params_called_on_its_own_freezes_at_once() -> None:
    # mmcv-era tooling calls add_params outside any __call__: nothing builds after it.
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
    constructor = _MmcvCall({"type": "SGD", "lr": 0.1}, _FREEZE_FIRST)
    constructor.add_params([], model)
    assert [p.requires_grad for p in model.parameters()] == [False, False, True, True]


@pytest.mark.parametrize(
    "whole",
    [{"paramwise_cfg": {"bias_lr_mult": 2.0}}, {"constructor": "DefaultOptimizerConstructor"}],
)
def test_calling_the_constructor_on_a_whole_config_says_to_pass_it_to_build_optimizer(
    model: nn.Module, whole: dict[str, Any]
) -> None:
    # As explain says: the closest keyword SGD takes ('params') would mislead.
    constructor = DefaultOptimizerConstructor({"type": "SGD", "lr": 0.1, **whole})
    (key,) = whole
    with pytest.raises(
        TypeError,
        match=rf"^optimizer_cfg holds '{key}', which build_optimizer takes out of an optimizer "
        r"config before it builds; pass the whole config to build_optimizer, or the paramwise_cfg "
        r"to DefaultOptimizerConstructor as its second argument$",
    ):
        constructor(model)


def _non_leaf_lr() -> torch.Tensor:
    return torch.tensor(0.1, requires_grad=True) * 1.0


@pytest.mark.parametrize(
    ("cfg", "error", "where"),
    [
        (
            {"type": "SGD", "lr": _non_leaf_lr()},
            RuntimeError,
            r"cfg\['lr'\] \(a Tensor\)",
        ),
        (
            {"type": "SGD", "lr": 0.1, "paramwise_cfg": {"rules": (r for r in ())}},
            TypeError,
            r"cfg\['paramwise_cfg'\]\['rules'\] \(a generator\)",
        ),
        (
            {"type": "SGD", "lr": 0.1, "paramwise_cfg": {"custom_keys": {"0": {"lock": Lock()}}}},
            TypeError,
            r"cfg\['paramwise_cfg'\]\['custom_keys'\]\['0'\]\['lock'\] \(a lock\)",
        ),
    ],
    ids=["non-leaf tensor", "generator", "lock"],
)
def test_a_value_the_deep_copy_cannot_copy_is_named(
    model: nn.Module, cfg: dict[str, Any], error: type[Exception], where: str
) -> None:
    with pytest.raises(error) as caught:
        build_optimizer(model, cfg)
    assert type(caught.value) is error  # torch's or copy's own error, with a note
    assert re.fullmatch(
        rf"regtree_optim: build_optimizer deep-copies its config \(the caller's stays as it "
        rf"was\), and {where} could not be copied; give a value that copies there \(a number, a "
        r"leaf tensor, a list\), or build with DefaultOptimizerConstructor\(optimizer_cfg, "
        r"paramwise_cfg\)\(model\), which copies nothing",
        caught.value.__notes__[-1],
    )


def test_an_error_after_the_copy_gets_no_copy_note(model: nn.Module) -> None:
    with pytest.raises(ValueError, match="Invalid momentum value") as caught:
        build_optimizer(model, {"type": "SGD", "lr": 0.1, "momentum": -1.0})
    assert not any("deep-copies" in note for note in getattr(caught.value, "__notes__", []))


def _raises_section(function: Any) -> str:
    doc = inspect.getdoc(function) or ""
    return doc.split("Raises:", 1)[1] if "Raises:" in doc else ""


def _changed_to(cfg: dict[str, Any], paramwise: Any = None) -> DefaultOptimizerConstructor:
    # Checked when created, then changed: __call__ checks the configs again (SPEC 3.1).
    constructor = DefaultOptimizerConstructor({"type": "SGD", "lr": 0.1})
    constructor.optimizer_cfg, constructor.paramwise_cfg = cfg, paramwise or {}
    return constructor


_LAYER_DECAY = {"layer_decay": {"rate": 0.5}}  # a Linear has no layer-depth hook
_ROUTED = {
    "type": "RoutedOptimizer",
    "optimizers": {"muon": {"type": "Muon", "lr": 0.02}, "adamw": {"type": "AdamW", "lr": 1e-3}},
    "default": "adamw",
}
_ROUTE_ALL = {"rules": [{"match": "*", "optimizer": "muon"}]}  # Muon takes no 1-D bias


@pytest.mark.parametrize(
    ("function", "call", "error"),
    [
        (build_optimizer, lambda m: build_optimizer(m, [1]), TypeError),
        (build_optimizer, lambda m: build_optimizer(m, {"type": "Nope"}), NotRegisteredError),
        (build_optimizer, lambda m: build_optimizer(m, {"type": "SGD", "lr": "1"}), TypeError),
        (
            build_optimizer,
            lambda m: build_optimizer(m, {"type": "SGD", "lr": 0.1, "paramwise_cfg": {"x": 1}}),
            ValueError,
        ),
        (
            DefaultOptimizerConstructor.explain,
            lambda m: _changed_to({"type": "SGD", "lr": 0.1, "momentm": 0.9}).explain(m),
            TypeError,
        ),
        (
            DefaultOptimizerConstructor.explain,
            lambda m: _changed_to({"type": "Nope"}).explain(m),
            NotRegisteredError,
        ),
        (
            DefaultOptimizerConstructor.__call__,
            lambda m: _changed_to({"type": "Nope"})(m),
            NotRegisteredError,
        ),
        (
            DefaultOptimizerConstructor.__call__,
            lambda m: _changed_to({"type": "SGD", "lr": "1"})(m),
            TypeError,
        ),
        (
            DefaultOptimizerConstructor.__call__,
            lambda m: _changed_to({"type": "SGD", "lr": 0.1}, _LAYER_DECAY)(m),
            ValueError,
        ),
        (
            DefaultOptimizerConstructor.__call__,
            lambda m: _changed_to(_ROUTED, _ROUTE_ALL)(m),
            ValueError,
        ),
    ],
    ids=[
        "build_optimizer: not a mapping",
        "build_optimizer: unknown type",
        "build_optimizer: constructor's TypeError",
        "build_optimizer: constructor's ValueError",
        "explain: unknown keyword",
        "explain: unknown type",
        "__call__: unknown type",
        "__call__: changed config",
        "__call__: layer decay",
        "__call__: routed shape",
    ],
)
def test_the_errors_they_raise_are_in_their_docstrings(
    function: Any, call: Any, error: type[Exception]
) -> None:
    with pytest.raises(error):
        call(nn.Linear(2, 2))
    documented = re.findall(r"^ {4}(\w+):", _raises_section(function), flags=re.MULTILINE)
    assert error.__name__ in documented
