"""RoutedOptimizer (SPEC 3.6): several optimizers behind one, routed by the paramwise rules."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
import torch
from torch import nn

from regtree_optim import (
    OPTIMIZERS,
    DefaultOptimizerConstructor,
    RoutedOptimizer,
    build_optimizer,
    load_state_dict_by_name,
)

MUON_LR = 0.02
MUON_WD = 0.01
ADAMW_LR = 3e-4
ADAMW_WD = 0.1


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.RMSNorm(8)
        self.attn = nn.Linear(8, 8)
        self.mlp = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.mlp(torch.relu(self.attn(self.norm(x))))


class TinyTransformer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 8)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.norm = nn.RMSNorm(8)
        self.head = nn.Linear(8, 10)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        out: torch.Tensor = self.head(self.norm(x))
        return out


def _model() -> TinyTransformer:
    torch.manual_seed(0)
    return TinyTransformer()


def _cfg(rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "type": "RoutedOptimizer",
        "optimizers": {
            "muon": {"type": "Muon", "lr": MUON_LR, "weight_decay": MUON_WD},
            "adamw": {"type": "AdamW", "lr": ADAMW_LR, "weight_decay": ADAMW_WD},
        },
        "default": "adamw",
        "paramwise_cfg": {"norm_decay_mult": 0, "bias_decay_mult": 0, "rules": rules},
    }


# The blocks' 2-D weights to Muon; embeddings, head, norms and biases stay with AdamW.
ROUTE_BLOCK_WEIGHTS = [
    {"match": "blocks.*.weight", "ndim": 2, "optimizer": "muon"},
    {"match": "*.attn.weight", "lr_mult": 2},
]


def _train(model: nn.Module, optimizer: torch.optim.Optimizer, steps: int) -> None:
    tokens = torch.arange(10).reshape(2, 5)
    for _ in range(steps):
        optimizer.zero_grad()
        model(tokens).square().mean().backward()
        optimizer.step()


def test_each_parameter_is_in_exactly_one_sub_optimizer() -> None:
    model = _model()
    optimizer = build_optimizer(model, _cfg(ROUTE_BLOCK_WEIGHTS))
    assert isinstance(optimizer, RoutedOptimizer)
    assert isinstance(optimizer, torch.optim.Optimizer)
    assert list(optimizer.optimizers) == ["muon", "adamw"]
    assert isinstance(optimizer.optimizers["muon"], torch.optim.Muon)
    assert isinstance(optimizer.optimizers["adamw"], torch.optim.AdamW)
    owned = [
        id(param)
        for sub in optimizer.optimizers.values()
        for group in sub.param_groups
        for param in group["params"]
    ]
    assert sorted(owned) == sorted(id(param) for param in model.parameters())
    muon_names = {n for g in optimizer.optimizers["muon"].param_groups for n in g["param_names"]}
    assert muon_names == {f"blocks.{i}.{layer}.weight" for i in (0, 1) for layer in ("attn", "mlp")}


def test_groups_follow_the_optimizers_order_with_optimizer_and_param_names() -> None:
    optimizer = build_optimizer(_model(), _cfg(ROUTE_BLOCK_WEIGHTS))
    subs = optimizer.optimizers  # type: ignore[attr-defined]
    expected = [group for sub in subs.values() for group in sub.param_groups]
    # The same dicts: what a scheduler sets on the routed optimizer reaches the sub-optimizers.
    assert all(a is b for a, b in zip(optimizer.param_groups, expected, strict=True))
    assert [g["optimizer"] for g in optimizer.param_groups] == ["muon", "muon", "adamw", "adamw"]
    assert all(len(g["param_names"]) == len(g["params"]) for g in optimizer.param_groups)


def test_rules_use_each_sub_optimizer_s_bases() -> None:
    optimizer = build_optimizer(_model(), _cfg(ROUTE_BLOCK_WEIGHTS))
    settings = {
        name: (group["lr"], group["weight_decay"])
        for group in optimizer.param_groups
        for name in group["param_names"]
    }
    assert settings["blocks.0.attn.weight"] == (MUON_LR * 2, MUON_WD)
    assert settings["blocks.1.mlp.weight"] == (MUON_LR, MUON_WD)
    assert settings["embed.weight"] == (ADAMW_LR, ADAMW_WD)
    assert settings["blocks.0.norm.weight"] == (ADAMW_LR, ADAMW_WD * 0)
    assert settings["head.bias"] == (ADAMW_LR, ADAMW_WD * 0)


def test_explain_rows_match_the_built_groups() -> None:
    from regtree_optim import DefaultOptimizerConstructor

    model = _model()
    cfg = _cfg(ROUTE_BLOCK_WEIGHTS)
    paramwise = cfg.pop("paramwise_cfg")
    constructor = DefaultOptimizerConstructor(cfg, paramwise)
    optimizer = constructor(model)
    rows = constructor.explain(model)
    for row in rows:
        group = optimizer.param_groups[row.group]
        assert row.name in group["param_names"]
        assert (row.lr, row.weight_decay) == (group["lr"], group["weight_decay"])
    assert {row.name: row.optimizer for row in rows}["blocks.0.mlp.weight"] == "muon"
    assert {row.name: row.optimizer for row in rows}["blocks.0.mlp.bias"] == "adamw"
    assert "optimizer" in str(rows).splitlines()[0]
    rules = {row.name: row.rule for row in rows}
    assert rules["blocks.0.mlp.weight"] == "rules[0]"
    assert rules["blocks.0.attn.weight"] == "rules[0], rules[1]"
    assert rules["head.weight"] == "default"


def test_explain_rows_carry_the_multipliers_applied() -> None:
    from regtree_optim import DefaultOptimizerConstructor

    cfg = _cfg(ROUTE_BLOCK_WEIGHTS)
    paramwise = cfg.pop("paramwise_cfg")
    rows = {row.name: row for row in DefaultOptimizerConstructor(cfg, paramwise).explain(_model())}
    # SPEC 3.3: each row's products, from the plan of the sub-optimizer it is routed to.
    assert (rows["blocks.0.attn.weight"].lr_mult, rows["blocks.0.attn.weight"].decay_mult) == (2, 1)
    assert (rows["blocks.0.attn.weight"].lr, rows["blocks.0.attn.weight"].optimizer) == (
        MUON_LR * 2,
        "muon",
    )
    assert (rows["blocks.0.norm.weight"].lr_mult, rows["blocks.0.norm.weight"].decay_mult) == (1, 0)
    assert (rows["head.bias"].lr_mult, rows["head.bias"].decay_mult) == (1, 0)
    assert (rows["head.weight"].lr_mult, rows["head.weight"].decay_mult) == (1, 1)


# rules[2] freezes block 0; freeze_below freezes the embedding (layer 0, scale 0.125).
FREEZING_LAYER_DECAY = {
    "rate": 0.5,
    "freeze_below": 0.2,
    "depth": [[r"embed\.", 0], [r"blocks\.(\d+)\.", 1]],
    "num_layers": 4,
}
FROZEN = {"embed.weight"} | {
    f"blocks.0.{name}"
    for name in ("norm.weight", "attn.weight", "attn.bias", "mlp.weight", "mlp.bias")
}


def test_freeze_rules_and_freeze_below_freeze_at_construction() -> None:
    from regtree_optim import DefaultOptimizerConstructor

    cfg = _cfg([*ROUTE_BLOCK_WEIGHTS, {"match": "blocks.0.*", "freeze": True}])
    paramwise = {**cfg.pop("paramwise_cfg"), "layer_decay": FREEZING_LAYER_DECAY}
    constructor = DefaultOptimizerConstructor(cfg, paramwise)
    model = _model()
    rows = {row.name: row for row in constructor.explain(model)}
    assert rows["blocks.0.attn.weight"].rule == "frozen by rules[2] (freeze: true)"
    assert rows["embed.weight"].rule.startswith("frozen by layer_decay[0/4]")
    assert all(param.requires_grad for param in model.parameters())  # explain freezes nothing
    optimizer = constructor(model)
    assert {name for name, param in model.named_parameters() if not param.requires_grad} == FROZEN
    # Frozen parameters stay in the optimizer, with the default sub-optimizer's defaults.
    adamw_names = {n for g in optimizer.optimizers["adamw"].param_groups for n in g["param_names"]}
    assert adamw_names >= FROZEN


def test_a_failed_routed_build_freezes_nothing() -> None:
    cfg = _cfg([{"match": "blocks.0.*", "freeze": True}])
    cfg["paramwise_cfg"]["layer_decay"] = FREEZING_LAYER_DECAY
    cfg["optimizers"]["adamw"]["betas"] = (2.0, 0.9)  # torch refuses it as it builds
    model = _model()
    with pytest.raises(ValueError, match=r"Invalid beta parameter"):
        build_optimizer(model, cfg)
    assert all(param.requires_grad for param in model.parameters())


def test_a_model_without_fsdp1_parameters_is_not_walked_for_fsdp1_records(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("torch.distributed.fsdp")  # imports FSDP1's module, as FSDP2 users do
    from regtree_optim import DefaultOptimizerConstructor, _sharding

    walked: list[nn.Module] = []
    real = _sharding.flat_parameters
    monkeypatch.setattr(
        _sharding, "flat_parameters", lambda model: walked.append(model) or real(model)
    )
    cfg = _cfg(ROUTE_BLOCK_WEIGHTS)
    constructor = DefaultOptimizerConstructor(cfg, cfg.pop("paramwise_cfg"))
    model = _model()
    constructor(model)
    constructor.explain(model)
    assert walked == []


def test_state_dict_round_trip() -> None:
    model = _model()
    optimizer = build_optimizer(model, _cfg(ROUTE_BLOCK_WEIGHTS))
    _train(model, optimizer, steps=2)
    saved = copy.deepcopy(optimizer.state_dict())
    # torch's format: indices run on over every group; every parameter has state.
    indices = [i for g in saved["param_groups"] for i in g["params"]]
    assert indices == list(range(len(list(model.parameters()))))
    assert sorted(saved["state"]) == indices
    assert [g["optimizer"] for g in saved["param_groups"]] == ["muon", "muon", "adamw", "adamw"]
    assert all("param_names" in g for g in saved["param_groups"])

    fresh_model = copy.deepcopy(model)
    fresh = build_optimizer(fresh_model, _cfg(ROUTE_BLOCK_WEIGHTS))
    fresh.load_state_dict(copy.deepcopy(saved))
    reloaded = fresh.state_dict()
    for index, state in saved["state"].items():
        assert state.keys() == reloaded["state"][index].keys()
        for key, value in state.items():
            torch.testing.assert_close(reloaded["state"][index][key], value, rtol=0, atol=0)
    # Training on from the loaded state equals training on from the original one.
    _train(model, optimizer, steps=1)
    _train(fresh_model, fresh, steps=1)
    for (name, param), other in zip(
        model.named_parameters(), fresh_model.parameters(), strict=True
    ):
        torch.testing.assert_close(other, param, rtol=0, atol=0, msg=name)


def test_load_state_dict_of_another_layout_is_refused_before_anything_changes() -> None:
    model = _model()
    optimizer = build_optimizer(model, _cfg(ROUTE_BLOCK_WEIGHTS))
    _train(model, optimizer, steps=1)
    other = build_optimizer(_model(), _cfg([{"match": "*.mlp.weight", "optimizer": "muon"}]))
    before = copy.deepcopy(optimizer.state_dict())
    with pytest.raises(ValueError, match=r"use load_state_dict_by_name"):
        optimizer.load_state_dict(other.state_dict())
    after = optimizer.state_dict()
    assert after["param_groups"] == before["param_groups"]


def test_a_parameter_routed_elsewhere_starts_fresh_by_name() -> None:
    # Both blocks' weights were Muon's; now block 1's go to AdamW, whose state Muon's momentum
    # cannot seed: they start fresh, the rest load.
    model = _model()
    saved = build_optimizer(model, _cfg(ROUTE_BLOCK_WEIGHTS))
    _train(model, saved, steps=2)
    rerouted = [{**ROUTE_BLOCK_WEIGHTS[0], "match": "blocks.0.*.weight"}, ROUTE_BLOCK_WEIGHTS[1]]
    fresh_model = _model()
    optimizer = build_optimizer(fresh_model, _cfg(rerouted))
    report = load_state_dict_by_name(optimizer, copy.deepcopy(saved.state_dict()))
    assert report.new == ["blocks.1.attn.weight", "blocks.1.mlp.weight"]
    assert "blocks.0.attn.weight" in report.loaded
    assert report.dropped == []
    params = dict(fresh_model.named_parameters())
    assert not optimizer.state.get(params["blocks.1.mlp.weight"])
    assert "momentum_buffer" in optimizer.state[params["blocks.0.mlp.weight"]]
    _train(fresh_model, optimizer, steps=1)


def test_load_state_dict_of_another_sub_optimizer_type_changes_nothing() -> None:
    # Same layout, but the saved 'adamw' was an SGD: AdamW fails as it loads (no step in the
    # state), after Muon loaded its part. Both keep what they had, and training goes on.
    model = _model()
    optimizer = build_optimizer(model, _cfg(ROUTE_BLOCK_WEIGHTS))
    _train(model, optimizer, steps=1)
    other_cfg = _cfg(ROUTE_BLOCK_WEIGHTS)
    other_cfg["optimizers"]["adamw"] = {
        "type": "SGD",
        "lr": ADAMW_LR,
        "momentum": 0.9,
        "weight_decay": ADAMW_WD,
    }
    other_model = _model()
    other = build_optimizer(other_model, other_cfg)
    _train(other_model, other, steps=1)
    before = copy.deepcopy(optimizer.state_dict())
    with pytest.raises(
        ValueError,
        match=r"sub-optimizer 'adamw' \(AdamW\) failed to load the saved state of its groups "
        r"\(KeyError: 'step'\).* the RoutedOptimizer is unchanged",
    ):
        optimizer.load_state_dict(other.state_dict())
    after = optimizer.state_dict()
    assert after["param_groups"] == before["param_groups"]
    for index, state in before["state"].items():
        assert after["state"][index].keys() == state.keys()
        for key, value in state.items():
            torch.testing.assert_close(after["state"][index][key], value, rtol=0, atol=0)
    assert optimizer.param_groups == [
        group for sub in optimizer.optimizers.values() for group in sub.param_groups
    ]
    _train(model, optimizer, steps=1)


def test_one_scheduler_drives_every_group() -> None:
    model = _model()
    optimizer = build_optimizer(model, _cfg(ROUTE_BLOCK_WEIGHTS))
    initial = [group["lr"] for group in optimizer.param_groups]
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    for _ in range(2):
        _train(model, optimizer, steps=1)
        scheduler.step()
    assert [group["lr"] for group in optimizer.param_groups] == [lr * 0.25 for lr in initial]
    subs = optimizer.optimizers  # type: ignore[attr-defined]
    inner = [group["lr"] for sub in subs.values() for group in sub.param_groups]
    assert inner == [lr * 0.25 for lr in initial]


def test_step_equals_the_sub_optimizers_stepped_by_hand() -> None:
    routed_model = _model()
    routed = build_optimizer(routed_model, _cfg(ROUTE_BLOCK_WEIGHTS))
    by_hand_model = _model()
    by_hand = build_optimizer(by_hand_model, _cfg(ROUTE_BLOCK_WEIGHTS))
    subs = list(by_hand.optimizers.values())  # type: ignore[attr-defined]
    tokens = torch.arange(10).reshape(2, 5)
    _train(routed_model, routed, steps=2)
    for _ in range(2):
        for sub in subs:
            sub.zero_grad()
        by_hand_model(tokens).square().mean().backward()
        for sub in subs:
            sub.step()
    for a, b in zip(routed_model.parameters(), by_hand_model.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_a_one_dimensional_parameter_routed_to_muon_is_rejected_naming_it() -> None:
    rules = [{"match": "head.*", "lr_mult": 2}, {"match": "blocks.*", "optimizer": "muon"}]
    with pytest.raises(
        ValueError,
        match=r"Parameter 'blocks\.0\.norm\.weight' \(shape \(8,\), 1-D\) is routed to optimizer "
        r"'muon' \(torch\.optim:Muon\) by rules\[1\], but it takes 2-D parameters only",
    ):
        build_optimizer(_model(), _cfg(rules))


def test_direct_construction_routes_groups_by_their_optimizer_key() -> None:
    model = _model()
    optimizer = RoutedOptimizer(
        [
            {"params": [model.head.weight], "optimizer": "muon"},
            {"params": [model.head.bias, model.embed.weight]},
        ],
        optimizers={"muon": {"type": "Muon", "lr": MUON_LR}, "sgd": {"type": "SGD", "lr": 0.1}},
        default="sgd",
    )
    assert [(g["optimizer"], g["lr"]) for g in optimizer.param_groups] == [
        ("muon", MUON_LR),
        ("sgd", 0.1),
    ]
    assert optimizer.state[model.head.weight] == {}
    with pytest.raises(ValueError, match=r"group 0's optimizer='muon', but it takes 2-D"):
        RoutedOptimizer(
            [{"params": [model.head.bias], "optimizer": "muon"}],
            optimizers={"muon": {"type": "Muon"}, "sgd": {"type": "SGD", "lr": 0.1}},
            default="sgd",
        )


def test_bad_routes_and_configs_name_the_problem() -> None:
    with pytest.raises(ValueError, match=r"default='adam' is not one of its optimizers.*'adamw'"):
        OPTIMIZERS.build(
            {
                "type": "RoutedOptimizer",
                "optimizers": {"adamw": {"type": "AdamW"}},
                "default": "adam",
                "params": [nn.Parameter(torch.ones(2))],
            }
        )
    with pytest.raises(ValueError, match=r"to optimizer 'mu0n', which is not one of"):
        build_optimizer(_model(), _cfg([{"match": "head.*", "optimizer": "mu0n"}]))
    with pytest.raises(TypeError, match=r"needs optimizers, a non-empty mapping"):
        build_optimizer(_model(), {"type": "RoutedOptimizer", "optimizers": {}, "default": "x"})
    with pytest.raises(ValueError, match=r"'lr' belongs in each sub-optimizer's config"):
        build_optimizer(
            _model(),
            {
                "type": "RoutedOptimizer",
                "lr": 0.1,
                "optimizers": {"adamw": {"type": "AdamW"}},
                "default": "adamw",
            },
        )
    param = nn.Parameter(torch.ones(2, 2))
    with pytest.raises(ValueError, match=r"each parameter belongs to exactly one sub-optimizer"):
        RoutedOptimizer(
            [{"params": [param], "optimizer": "a"}, {"params": [param]}],
            optimizers={"a": {"type": "SGD", "lr": 0.1}, "b": {"type": "SGD", "lr": 0.1}},
            default="b",
        )


def test_a_route_under_another_optimizer_says_it_has_none_to_route_to() -> None:
    from regtree_optim import DefaultOptimizerConstructor

    # An optimizers key does not make an SGD config a RoutedOptimizer one.
    with pytest.raises(
        ValueError, match=r"\['rules'\]\[0\] routes .*:SGD has no optimizers to route"
    ):
        DefaultOptimizerConstructor(
            {"type": "SGD", "lr": 0.1, "optimizers": {"a": {}}},
            {"rules": [{"match": "*", "optimizer": "a"}]},
        )


def test_a_bad_option_of_a_sub_optimizer_names_that_sub_optimizer() -> None:
    cfg = _cfg(ROUTE_BLOCK_WEIGHTS)
    cfg["optimizers"]["muon"]["lr"] = "0.02"
    with pytest.raises(
        TypeError, match=r"optimizer_cfg\['optimizers'\]\['muon'\]\['lr'\] must be a real number"
    ):
        build_optimizer(_model(), cfg)


def test_a_sub_optimizer_torch_refuses_is_named_in_a_note() -> None:
    cfg = _cfg(ROUTE_BLOCK_WEIGHTS)
    cfg["optimizers"]["adamw"]["betas"] = (2.0, 0.9)
    with pytest.raises(ValueError, match=r"Invalid beta parameter at index 0: 2\.0") as caught:
        build_optimizer(_model(), cfg)
    assert (
        "regtree_optim: while building sub-optimizer 'adamw' of a RoutedOptimizer (its config: "
        "optimizers['adamw'])"
    ) in caught.value.__notes__


_MUON_TAKES = (
    "but torch.optim:Muon does not take it, so it would be ignored; it takes adjust_lr_fn, eps, "
    "lr, momentum, nesterov, ns_coefficients, ns_steps, weight_decay."
)


def test_a_rule_routing_to_muon_may_not_set_an_option_muon_does_not_take() -> None:
    # Muon steps without betas: the option was put into its group and ignored. Which
    # sub-optimizer the rule routes to is known without a model, so the config is refused as
    # the constructor is created, and by validate.
    rules = [{"match": "blocks.*", "ndim": 2, "optimizer": "muon", "betas": (0.5, 0.5)}]
    message = (
        "paramwise_cfg['rules'][0] sets 'betas' for the parameters it routes to optimizer 'muon', "
        f"{_MUON_TAKES} Set "
        "'betas' only for parameters routed to an optimizer that takes it ('adamw'), or drop it "
        "there."
    )
    cfg = _cfg(rules)
    paramwise = cfg.pop("paramwise_cfg")
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        DefaultOptimizerConstructor(cfg, paramwise)
    problems = OPTIMIZERS.validate(_cfg(rules))
    assert [(p.kind, p.message) for p in problems] == [("invalid-value", message)]


def test_a_custom_key_or_rule_may_not_set_an_option_the_route_of_a_parameter_ignores() -> None:
    # A custom key or a rule without optimizer= sets options for parameters that only the
    # model routes: each is checked as it is routed, before anything is built or frozen.
    model = _model()
    freeze_head = {"match": "head.*", "freeze": True}
    for paramwise, where in [
        (
            {"custom_keys": {"blocks": {"betas": (0.5, 0.5)}}},
            "paramwise_cfg['custom_keys']['blocks']",
        ),
        ({"rules": [{"match": "blocks.*", "betas": (0.5, 0.5)}]}, "paramwise_cfg['rules'][3]"),
    ]:
        cfg = _cfg([*ROUTE_BLOCK_WEIGHTS, freeze_head, *paramwise.get("rules", [])])
        cfg["paramwise_cfg"]["custom_keys"] = paramwise.get("custom_keys", {})
        message = (
            f"{where} sets 'betas' for parameter 'blocks.0.attn.weight', which rules[0] routes "
            f"to optimizer 'muon', {_MUON_TAKES}"
        )
        assert OPTIMIZERS.validate(cfg) == []  # which parameters go where, only a model says
        with pytest.raises(ValueError, match=f"^{re.escape(message)}"):
            build_optimizer(model, cfg)
        assert model.head.weight.requires_grad  # nothing frozen
        paramwise_cfg = cfg.pop("paramwise_cfg")
        with pytest.raises(ValueError, match=f"^{re.escape(message)}"):
            DefaultOptimizerConstructor(cfg, paramwise_cfg).explain(model)


def test_options_reach_the_sub_optimizers_that_take_them() -> None:
    rules = [
        {"match": "blocks.*.weight", "ndim": 2, "optimizer": "muon", "momentum": 0.9},
        {"match": "blocks.*", "ndim": 1, "betas": (0.5, 0.6)},  # the blocks' norms and biases
    ]
    cfg = _cfg(rules)
    cfg["paramwise_cfg"]["custom_keys"] = {"head": {"amsgrad": True}}
    optimizer = build_optimizer(_model(), cfg)
    options = {
        name: (group["optimizer"], group.get("momentum"), group.get("betas"), group.get("amsgrad"))
        for group in optimizer.param_groups
        for name in group["param_names"]
    }
    assert options["blocks.0.attn.weight"] == ("muon", 0.9, None, None)
    assert options["blocks.0.norm.weight"] == ("adamw", None, (0.5, 0.6), False)
    assert options["head.weight"] == ("adamw", None, (0.9, 0.999), True)


def test_an_option_no_sub_optimizer_it_can_reach_takes_is_refused_without_a_model() -> None:
    # Nothing routes away from Muon, the default: every parameter a custom key sets betas
    # for goes to Muon, so the config is refused as it is validated.
    cfg = _cfg([])
    cfg["default"] = "muon"
    cfg["paramwise_cfg"] = {"custom_keys": {"blocks": {"betas": (0.5, 0.5)}}}
    message = (
        "paramwise_cfg['custom_keys']['blocks'] sets 'betas' for parameters that go to optimizer "
        f"'muon', {_MUON_TAKES}"
    )
    problems = OPTIMIZERS.validate(cfg)
    assert len(problems) == 1
    assert problems[0].message.startswith(message)
