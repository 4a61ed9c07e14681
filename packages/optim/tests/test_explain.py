"""explain(model): one row per parameter that agrees with the groups, printable as a table."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from regtree import NotRegisteredError
from regtree_optim import DefaultOptimizerConstructor, Explanation, ParamRow


@pytest.mark.parametrize("merge_groups", [True, False])
@pytest.mark.parametrize("paramwise_fixture", ["rules_cfg", "custom_cfg"])
def test_explain_agrees_with_the_groups(
    request: pytest.FixtureRequest,
    model: nn.Module,
    sgd_cfg: dict[str, Any],
    paramwise_fixture: str,
    merge_groups: bool,
) -> None:
    paramwise = {**request.getfixturevalue(paramwise_fixture), "merge_groups": merge_groups}
    constructor = DefaultOptimizerConstructor(sgd_cfg, paramwise)
    rows = constructor.explain(model)
    optimizer = constructor(model)
    assert isinstance(rows, Explanation)
    assert [row.name for row in rows] == [name for name, _ in model.named_parameters()]
    params = dict(model.named_parameters())
    for row in rows:
        group = optimizer.param_groups[row.group]
        assert row.name in group["param_names"]
        assert (row.lr, row.weight_decay) == (group["lr"], group["weight_decay"])
        assert row.shape == tuple(params[row.name].shape)


def test_explain_names_the_deciding_rule(
    model: nn.Module, sgd_cfg: dict[str, Any], rules_cfg: dict[str, Any], custom_cfg: dict[str, Any]
) -> None:
    model.conv1.requires_grad_(False)
    rules = {
        row.name: row.rule for row in DefaultOptimizerConstructor(sgd_cfg, rules_cfg).explain(model)
    }
    assert rules["conv1.weight"] == "frozen (optimizer defaults)"
    assert rules["conv2.weight"] == "default"
    assert rules["conv2.bias"] == "bias_lr_mult, bias_decay_mult"
    assert rules["bn.weight"] == "norm_decay_mult"
    assert rules["sub.conv1.bias"] == "bias_lr_mult, dwconv_decay_mult"
    assert rules["dcn.conv_offset.bias"] == "dcn_offset_lr_mult"
    custom = {
        row.name: row.rule
        for row in DefaultOptimizerConstructor(sgd_cfg, custom_cfg).explain(model)
    }
    assert custom["sub.gn.bias"] == "custom_keys['sub.gn']"
    assert custom["sub.conv1.weight"] == "custom_keys['sub']"
    assert custom["param1"] == "custom_keys['param1']"


def test_explain_without_paramwise_cfg(model: nn.Module) -> None:
    rows = DefaultOptimizerConstructor({"type": "SGD", "lr": 0.1}).explain(model)
    assert {row.group for row in rows} == {0}
    # SGD's own default weight decay, since the config sets none.
    assert {(row.lr, row.weight_decay) for row in rows} == {(0.1, 0)}
    assert {row.rule for row in rows} == {"default (no paramwise_cfg)"}


def test_explain_reports_none_for_options_the_optimizer_lacks(model: nn.Module) -> None:
    rows = DefaultOptimizerConstructor({"type": "Rprop", "lr": 0.1}, {"bias_lr_mult": 2}).explain(
        model
    )
    assert {row.weight_decay for row in rows} == {None}
    assert {row.lr for row in rows if row.name.endswith("conv2.bias")} == {0.1 * 2}


@pytest.mark.parametrize(
    ("optimizer_cfg", "error", "match"),
    [
        (
            {"type": "SGDD", "lr": 0.1},
            NotRegisteredError,
            r"optimizer_cfg\['type'\]: 'SGDD' is not registered .* Did you mean 'SGD'",
        ),
        (
            {"type": "SGD", "lr": 0.1, "paramwise_cfg": {"bias_lr_mult": 2}},
            TypeError,
            r"optimizer_cfg holds 'paramwise_cfg', which build_optimizer takes out of an "
            r"optimizer config before it builds; pass the whole config to build_optimizer",
        ),
        (
            {"type": "SGD", "lr": 0.1, "momentm": 0.9},
            TypeError,
            r"optimizer_cfg\['momentm'\]: .*SGD\) takes no keyword 'momentm'; did you mean "
            r"'momentum'\?",
        ),
    ],
)
def test_explain_refuses_what_building_would_refuse(
    model: nn.Module, optimizer_cfg: dict[str, Any], error: type[Exception], match: str
) -> None:
    # Without a schedule nothing is built: the rows must not hide a config build_optimizer fails.
    constructor = DefaultOptimizerConstructor(optimizer_cfg, {"bias_lr_mult": 2})
    with pytest.raises(error, match=match):
        constructor.explain(model)


def test_an_optimizer_that_takes_a_constructor_keyword_is_explained(model: nn.Module) -> None:
    # Only where the optimizer does not take them are 'constructor' and 'paramwise_cfg' refused.
    class Takes(torch.optim.SGD):
        def __init__(self, params: Any, lr: float, constructor: object = None) -> None:
            super().__init__(params, lr=lr)

    cfg = {"type": Takes, "lr": 0.1, "constructor": "mine"}
    constructor = DefaultOptimizerConstructor(cfg, {"bias_lr_mult": 2})
    rows = constructor.explain(model)
    assert {row.lr for row in rows} == {0.1, 0.2}
    assert isinstance(constructor(model), Takes)


def test_explanation_prints_as_a_table(
    model: nn.Module, sgd_cfg: dict[str, Any], rules_cfg: dict[str, Any]
) -> None:
    rows = DefaultOptimizerConstructor(sgd_cfg, rules_cfg).explain(model)
    lines = str(rows).splitlines()
    assert lines[0].split() == ["group", "name", "shape", "lr", "weight_decay", "rule"]
    assert set(lines[1]) <= {"-", " "}
    assert len(lines) == len(rows) + 2
    bias_line = next(line for line in lines if " conv2.bias " in line)
    assert bias_line.split()[:5] == ["1", "conv2.bias", "(2,)", str(0.01 * 2), str(0.0001 * 0.5)]
    assert "Explanation(14 parameters)" in repr(rows)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_tensor_lr_prints_as_the_float_it_holds(model: nn.Module, dtype: torch.dtype) -> None:
    lr = torch.tensor(1e-4, dtype=dtype)
    rows = DefaultOptimizerConstructor({"type": "SGD", "lr": lr}, {"bias_lr_mult": 3.0})
    explanation = rows.explain(model)
    table = str(explanation)
    assert "tensor(" not in table
    lines = {line.split()[1]: line for line in table.splitlines()[2:]}
    for row in explanation:
        assert f"  {float(row.lr)!r}  " in lines[row.name], row.name
    assert any(float(row.lr) == float(lr * 3.0) for row in explanation)  # a bias, unrounded


def test_rows_are_immutable_records() -> None:
    row = ParamRow(name="w", shape=(2,), lr=0.1, weight_decay=None, rule="default", group=0)
    with pytest.raises(AttributeError, match="'lr'"):
        row.lr = 0.2  # type: ignore[misc]
    assert Explanation([row])[0] is row


@pytest.mark.filterwarnings("ignore:`torch\\.jit\\.\\w+` is deprecated:DeprecationWarning")
@pytest.mark.usefixtures("process_group")
@pytest.mark.parametrize("merge_groups", [True, False])
def test_explain_agrees_with_the_groups_under_zero(
    model: nn.Module, rules_cfg: dict[str, Any], merge_groups: bool
) -> None:
    cfg = {"type": "ZeroRedundancyOptimizer", "optimizer_type": "AdamW", "lr": 0.01}
    constructor = DefaultOptimizerConstructor(
        {**cfg, "weight_decay": 0.1}, {**rules_cfg, "merge_groups": merge_groups}
    )
    rows = constructor.explain(model)
    optimizer = constructor(model)
    assert [row.name for row in rows] == [name for name, _ in model.named_parameters()]
    params = dict(model.named_parameters())
    for row in rows:
        group = optimizer.param_groups[row.group]
        assert row.name in group["param_names"]
        assert any(p is params[row.name] for p in group["params"])
        assert (row.lr, row.weight_decay) == (group["lr"], group["weight_decay"])
    assert len({row.group for row in rows}) == len(optimizer.param_groups)


class _SuperOnly(DefaultOptimizerConstructor):
    """An mmcv-era override that only passes each module on to the base class."""

    def add_params(
        self,
        params: list[dict[str, Any]],
        module: nn.Module,
        prefix: str = "",
        is_dcn_module: bool | float | None = None,
    ) -> None:
        super().add_params(params, module, prefix, is_dcn_module)


class _OwnGroups(DefaultOptimizerConstructor):
    """Places ``b`` itself, and halves the lr of the groups the walk files for ``c``."""

    def add_params(
        self,
        params: list[dict[str, Any]],
        module: nn.Module,
        prefix: str = "",
        is_dcn_module: bool | float | None = None,
    ) -> None:
        if prefix == "b":
            params.append({"params": list(module.parameters()), "lr": self.base_lr * 0.01})
            return
        placed = len(params)
        super().add_params(params, module, prefix, is_dcn_module)
        if prefix == "c":
            for group in params[placed:]:
                group["lr"] *= 0.5


def _three_linears() -> nn.Module:
    model = nn.Module()
    model.a = nn.Linear(2, 2)
    model.b = nn.Linear(2, 2)
    model.c = nn.Linear(2, 2)
    return model


def test_explain_through_an_add_params_override_reports_what_the_build_did() -> None:
    # SPEC 3.3: rows carry the products applied and name every rule that applied; frozen
    # parameters say why. An override that calls super() gets exactly that.
    paramwise = {
        "bias_lr_mult": 2.0,
        "rules": [{"name": "bias", "lr_mult": 3.0}, {"match": "b.*", "freeze": True}],
        "layer_decay": {"rate": 0.5, "depth": [["a", 0]], "num_layers": 2},
    }
    constructor = _SuperOnly({"type": "SGD", "lr": 0.1, "weight_decay": 0.01}, paramwise)
    model = _three_linears()
    rows = {row.name: row for row in constructor.explain(model)}
    assert [(n, r.lr_mult, r.rule) for n, r in rows.items() if n.startswith("a")] == [
        ("a.weight", 0.5, "layer_decay[0/2]"),
        ("a.bias", 2.0 * 3.0 * 0.5, "bias_lr_mult, rules[0], layer_decay[0/2]"),
    ]
    assert rows["b.bias"].rule == "frozen by rules[1] (freeze: true)"
    assert rows["c.bias"].rule == "bias_lr_mult, rules[0], layer_decay[1/2]"
    optimizer = constructor(model)
    for row in rows.values():
        group = optimizer.param_groups[row.group]
        assert group["param_names"] == [row.name]
        assert (row.lr, row.weight_decay) == (group["lr"], group["weight_decay"])
        assert row.lr_mult == pytest.approx(row.lr / 0.1)
    assert [p.requires_grad for p in model.b.parameters()] == [False, False]


def test_explain_names_the_override_for_groups_it_appends_or_changes() -> None:
    constructor = _OwnGroups(
        {"type": "SGD", "lr": 0.1}, {"rules": [{"name": "bias", "lr_mult": 3.0}]}
    )
    rows = {row.name: row for row in constructor.explain(_three_linears())}
    own = f"{__name__}:_OwnGroups.add_params"
    assert [(n, r.lr, r.lr_mult, r.rule) for n, r in rows.items()] == [
        ("a.weight", 0.1, 1.0, "default"),
        ("a.bias", 0.1 * 3.0, 3.0, "rules[0]"),
        ("b.weight", 0.1 * 0.01, pytest.approx(0.01), own),
        ("b.bias", 0.1 * 0.01, pytest.approx(0.01), own),
        ("c.weight", 0.1 * 0.5, 0.5, own),
        ("c.bias", 0.1 * 3.0 * 0.5, pytest.approx(1.5), f"rules[0], {own}"),
    ]
