"""``load_state_dict_by_name``: a checkpoint resumes into another group layout, by name."""

from __future__ import annotations

import copy
import io
from typing import Any

import pytest
import torch
from torch import nn
from torch.optim.optimizer import register_optimizer_step_pre_hook

from regtree_optim import build_optimizer, full_state_dict, load_state_dict_by_name

RULES: dict[str, Any] = {
    "bias_lr_mult": 2.0,
    "norm_decay_mult": 0.0,
    "custom_keys": {"0.": {"lr_mult": 0.1}},
}
OTHER_RULES: dict[str, Any] = {"bias_decay_mult": 0.5, "custom_keys": {"2.": {"lr_mult": 3.0}}}


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Conv2d(4, 2, 1))


def _cfg(kind: str = "AdamW", **paramwise: Any) -> dict[str, Any]:
    options: dict[str, Any] = {"lr": 0.01, "weight_decay": 1e-2}
    if kind == "SGD":
        options["momentum"] = 0.9
    return {"type": kind, **options, "paramwise_cfg": {**RULES, **paramwise}}


def _train(model: nn.Module, optimizer: torch.optim.Optimizer, first: int, steps: int) -> None:
    for step in range(first, first + steps):
        generator = torch.Generator().manual_seed(step)
        optimizer.zero_grad()
        loss = model(torch.randn(2, 3, 6, 6, generator=generator)).square().mean()
        loss.backward()
        optimizer.step()


def _saved(state_dict: dict[str, Any]) -> dict[str, Any]:
    # Through bytes, as a checkpoint file is.
    buffer = io.BytesIO()
    torch.save(state_dict, buffer)
    buffer.seek(0)
    loaded: dict[str, Any] = torch.load(buffer, weights_only=True)
    return loaded


def _state_by_name(optimizer: torch.optim.Optimizer) -> dict[str, dict[str, Any]]:
    return {
        name: optimizer.state[param]
        for group in optimizer.param_groups
        for name, param in zip(group["param_names"], group["params"], strict=True)
        if optimizer.state.get(param)
    }


def _same(value: Any, other: Any) -> bool:
    if isinstance(value, torch.Tensor):
        # Bit for bit: same dtype, same values.
        return (
            isinstance(other, torch.Tensor)
            and value.dtype == other.dtype
            and torch.equal(value, other)
        )
    if isinstance(value, list | tuple):
        return (
            type(value) is type(other)
            and len(value) == len(other)
            and all(_same(a, b) for a, b in zip(value, other, strict=True))
        )
    return bool(value == other)


def _assert_same_state(ours: dict[str, dict[str, Any]], theirs: dict[str, dict[str, Any]]) -> None:
    assert ours.keys() == theirs.keys()
    for name, state in ours.items():
        assert state.keys() == theirs[name].keys(), name
        for key, value in state.items():
            assert _same(value, theirs[name][key]), (name, key)


def _assert_unchanged(optimizer: torch.optim.Optimizer, before: dict[str, Any]) -> None:
    # The groups, and every saved tensor, as they were before a load that failed.
    after = optimizer.state_dict()
    assert after["param_groups"] == before["param_groups"]
    assert after["state"].keys() == before["state"].keys()
    for index, state in before["state"].items():
        assert after["state"][index].keys() == state.keys()
        for key, value in state.items():
            assert torch.equal(after["state"][index][key], value)


def _trained(cfg: dict[str, Any]) -> tuple[nn.Module, torch.optim.Optimizer]:
    model = _model()
    optimizer = build_optimizer(model, cfg)
    _train(model, optimizer, first=0, steps=3)
    return model, optimizer


@pytest.mark.parametrize(
    ("saved_paramwise", "loaded_paramwise"),
    [
        ({"merge_groups": False}, {}),  # mmcv's layout -> merged
        ({}, {"merge_groups": False}),  # merged -> mmcv's layout
        ({}, OTHER_RULES),  # into a changed paramwise_cfg
    ],
    ids=["mmcv-to-merged", "merged-to-mmcv", "changed-paramwise-cfg"],
)
@pytest.mark.parametrize("kind", ["SGD", "AdamW"])
def test_every_parameter_s_state_is_the_saved_one_bit_for_bit(
    kind: str, saved_paramwise: dict[str, Any], loaded_paramwise: dict[str, Any]
) -> None:
    model, saved = _trained(_cfg(kind, **saved_paramwise))
    resumed_model = copy.deepcopy(model)
    resumed = build_optimizer(resumed_model, _cfg(kind, **loaded_paramwise))
    options = [{k: v for k, v in g.items() if k != "params"} for g in resumed.param_groups]

    report = load_state_dict_by_name(resumed, _saved(saved.state_dict()))

    names = sorted(name for name, _ in model.named_parameters())
    assert (report.loaded, report.new, report.dropped) == (names, [], [])
    _assert_same_state(_state_by_name(resumed), _state_by_name(saved))
    # The group options stay the resumed optimizer's own.
    assert [{k: v for k, v in g.items() if k != "params"} for g in resumed.param_groups] == options


@pytest.mark.parametrize("kind", ["SGD", "AdamW"])
def test_into_the_same_layout_it_equals_torch_s_load_state_dict(kind: str) -> None:
    _, saved = _trained(_cfg(kind, merge_groups=False))
    state_dict = _saved(saved.state_dict())
    by_name = build_optimizer(_model(), _cfg(kind, merge_groups=False))
    by_torch = build_optimizer(_model(), _cfg(kind, merge_groups=False))
    load_state_dict_by_name(by_name, state_dict)
    by_torch.load_state_dict(state_dict)
    _assert_same_state(_state_by_name(by_name), _state_by_name(by_torch))
    assert by_name.state_dict()["param_groups"] == by_torch.state_dict()["param_groups"]


@pytest.mark.parametrize(
    ("saved_paramwise", "loaded_paramwise"),
    [({"merge_groups": False}, {}), ({}, {"merge_groups": False}), ({}, {})],
    ids=["mmcv-to-merged", "merged-to-mmcv", "same-config"],
)
def test_continuing_equals_an_uninterrupted_run_exactly(
    saved_paramwise: dict[str, Any], loaded_paramwise: dict[str, Any]
) -> None:
    model, optimizer = _trained(_cfg("AdamW", **saved_paramwise))
    checkpoint = _saved({"model": model.state_dict(), "optimizer": optimizer.state_dict()})
    resumed_model = _model()
    resumed_model.load_state_dict(checkpoint["model"])
    resumed = build_optimizer(resumed_model, _cfg("AdamW", **loaded_paramwise))
    load_state_dict_by_name(resumed, checkpoint["optimizer"])

    _train(model, optimizer, first=3, steps=4)
    _train(resumed_model, resumed, first=3, steps=4)
    for (name, ours), (_, theirs) in zip(
        resumed_model.named_parameters(), model.named_parameters(), strict=True
    ):
        assert torch.equal(ours, theirs), name


class Grown(nn.Module):
    """The model of the checkpoint with its last conv replaced by a renamed one."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.body = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4))
        self.out = nn.Conv2d(4, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.body(x))


def test_new_and_dropped_parameters_appear_in_the_report() -> None:
    _, saved = _trained(_cfg("SGD"))
    state_dict = _saved(saved.state_dict())
    # Rename the first four parameters as Grown names them; 2.weight, 2.bias become new/dropped.
    for group in state_dict["param_groups"]:
        group["param_names"] = [
            name.replace("0.", "body.0.", 1).replace("1.", "body.1.", 1)
            if name[0] in "01"
            else name
            for name in group["param_names"]
        ]
    model = Grown()
    optimizer = build_optimizer(model, _cfg("SGD"))
    report = load_state_dict_by_name(optimizer, state_dict)
    assert report.loaded == ["body.0.bias", "body.0.weight", "body.1.bias", "body.1.weight"]
    assert report.new == ["out.bias", "out.weight"]
    assert report.dropped == ["2.bias", "2.weight"]
    assert report.with_state == 4
    assert str(report) == (
        "optimizer state loaded by name: 4 parameters; "
        "2 new, starting fresh (out.bias, out.weight); 2 dropped (2.bias, 2.weight)"
    )
    params = dict(model.named_parameters())
    assert not optimizer.state.get(params["out.weight"])
    assert torch.equal(
        optimizer.state[params["body.0.weight"]]["momentum_buffer"],
        _state_by_name(saved)["0.weight"]["momentum_buffer"],
    )


def test_a_shape_change_is_a_value_error_before_anything_changes() -> None:
    _, saved = _trained(_cfg("AdamW"))
    state_dict = _saved(saved.state_dict())
    torch.manual_seed(0)
    changed = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Conv2d(4, 5, 1))
    optimizer = build_optimizer(changed, _cfg("AdamW"))
    _train(changed, optimizer, first=10, steps=1)
    before = copy.deepcopy(optimizer.state_dict())
    with pytest.raises(
        ValueError,
        match=r"saved state 'exp_avg' of parameter '2\.weight' has shape \(2, 4, 1, 1\), but "
        r"the parameter now has shape \(5, 4, 1, 1\)",
    ):
        load_state_dict_by_name(optimizer, state_dict)
    _assert_unchanged(optimizer, before)


@pytest.mark.parametrize("resumed_trained", [True, False], ids=["trained", "fresh"])
def test_a_0d_tensor_for_state_in_the_parameter_s_shape_is_a_value_error(
    resumed_trained: bool,
) -> None:
    # Into a trained optimizer its own state tells that exp_avg has the parameter's shape; into a
    # fresh one, the state AdamW gives a fresh parameter does.
    _, saved = _trained(_cfg("AdamW"))
    state_dict = _saved(saved.state_dict())
    state_dict["state"][0]["exp_avg"] = torch.tensor(0.0)  # 0.weight, shape (4, 3, 3, 3)
    model = _model()
    optimizer = build_optimizer(model, _cfg("AdamW"))
    if resumed_trained:
        _train(model, optimizer, first=10, steps=1)
    before = copy.deepcopy(optimizer.state_dict())
    with pytest.raises(
        ValueError,
        match=r"saved state 'exp_avg' of parameter '0\.weight' has shape \(\), but the "
        r"parameter now has shape \(4, 3, 3, 3\); AdamW keeps 'exp_avg' in its parameter's shape",
    ):
        load_state_dict_by_name(optimizer, state_dict)
    _assert_unchanged(optimizer, before)


@pytest.mark.parametrize(
    ("kind", "key", "resumed_trained"),
    [
        ("AdamW", "step", False),
        ("AdamW", "step", True),
        ("ASGD", "eta", True),  # scalar by the parameter's own state
        ("ASGD", "mu", False),  # scalar by the state ASGD gives a fresh parameter
    ],
)
def test_scalar_state_with_dimensions_is_a_value_error_saying_it_is_not_a_scalar(
    kind: str, key: str, resumed_trained: bool
) -> None:
    # Not "the model changed this parameter": scalar state has no shape of the parameter's.
    _, saved = _trained(_cfg(kind))
    state_dict = _saved(saved.state_dict())
    state_dict["state"][0][key] = torch.tensor([3.0, 3.0])  # 0.weight, shape (4, 3, 3, 3)
    model = _model()
    optimizer = build_optimizer(model, _cfg(kind))
    if resumed_trained:
        _train(model, optimizer, first=10, steps=1)
    before = copy.deepcopy(optimizer.state_dict())
    with pytest.raises(ValueError, match=r"saved state '\w+' of parameter '0\.weight'") as caught:
        load_state_dict_by_name(optimizer, state_dict)
    assert str(caught.value) == (
        f"the saved state {key!r} of parameter '0.weight' has shape (2,), but {kind} keeps "
        f"{key!r} as a scalar (a 0-d tensor), whatever the parameter's shape (now (4, 3, 3, 3)): "
        f"this state dict was not saved by such an optimizer, or was changed since; give {key!r} "
        "as a 0-d tensor (torch.tensor(...)), or drop the parameter's entry from the state dict "
        "to start it fresh"
    )
    _assert_unchanged(optimizer, before)


class _Temperature(nn.Module):
    def __init__(self, shape: tuple[int, ...]) -> None:
        super().__init__()
        self.temp = nn.Parameter(torch.ones(shape))


@pytest.mark.parametrize(
    ("kind", "key", "resumed_trained"),
    [("Adam", "exp_avg", False), ("Adam", "exp_avg", True), ("ASGD", "ax", True)],
)
def test_a_0d_parameter_that_had_dimensions_is_a_change_of_the_model(
    kind: str, key: str, resumed_trained: bool
) -> None:
    # All of a 0-d parameter's state is 0-d: it used to be told that Adam keeps exp_avg as a
    # scalar, as the throwaway optimizer over a 0-d stand-in does.
    old = _Temperature((3,))
    saved = build_optimizer(old, {"type": kind, "lr": 0.1})
    old.temp.grad = torch.ones(3)
    saved.step()
    model = _Temperature(())
    optimizer = build_optimizer(model, {"type": kind, "lr": 0.1})
    if resumed_trained:
        model.temp.grad = torch.ones(())
        optimizer.step()
    before = copy.deepcopy(optimizer.state_dict())
    with pytest.raises(ValueError, match=r"^the saved state ") as caught:
        load_state_dict_by_name(optimizer, _saved(saved.state_dict()))
    assert str(caught.value) == (
        f"the saved state {key!r} of parameter 'temp' has shape (3,), but the parameter now has "
        "shape (); the model changed this parameter, so its saved state does not apply (rename "
        "the parameter, or drop its entry from the state dict, to start it fresh)"
    )
    _assert_unchanged(optimizer, before)


def test_scalar_state_with_dimensions_of_a_0d_parameter_is_told_it_is_a_scalar() -> None:
    # ASGD keeps eta as a scalar for a 0-d parameter too.
    old = _Temperature(())
    saved = build_optimizer(old, {"type": "ASGD", "lr": 0.1})
    old.temp.grad = torch.ones(())
    saved.step()
    state_dict = _saved(saved.state_dict())
    state_dict["state"][0]["eta"] = torch.tensor([3.0, 3.0])
    optimizer = build_optimizer(_Temperature(()), {"type": "ASGD", "lr": 0.1})
    with pytest.raises(
        ValueError,
        match=r"^the saved state 'eta' of parameter 'temp' has shape \(2,\), but ASGD keeps 'eta' "
        r"as a scalar \(a 0-d tensor\), whatever the parameter's shape \(now \(\)\): ",
    ):
        load_state_dict_by_name(optimizer, state_dict)


@pytest.mark.parametrize("kind", ["ASGD", "NAdam"])
def test_scalar_state_besides_step_loads_into_a_fresh_optimizer(kind: str) -> None:
    # ASGD keeps eta and mu, NAdam mu_product, as 0-d tensors beside step.
    _, saved = _trained(_cfg(kind))
    resumed = build_optimizer(_model(), _cfg(kind))
    # Telling eta from exp_avg steps a throwaway optimizer, which no user's step hook sees.
    stepped: list[object] = []
    hook = register_optimizer_step_pre_hook(lambda optimizer, *_: stepped.append(optimizer))
    try:
        report = load_state_dict_by_name(resumed, _saved(saved.state_dict()))
    finally:
        hook.remove()
    assert stepped == []
    assert report.new == []
    _assert_same_state(_state_by_name(resumed), _state_by_name(saved))


def test_saved_state_that_is_not_a_mapping_is_a_type_error_before_anything_changes() -> None:
    _, saved = _trained(_cfg("AdamW"))
    state_dict = _saved(saved.state_dict())
    state_dict["state"][1] = torch.zeros(4)  # 0.bias
    model = _model()
    optimizer = build_optimizer(model, _cfg("AdamW"))
    _train(model, optimizer, first=10, steps=1)
    before = copy.deepcopy(optimizer.state_dict())
    with pytest.raises(
        TypeError,
        match=r"the saved state of parameter '0\.bias' must be a mapping from state names to "
        r"values .*, got Tensor$",
    ):
        load_state_dict_by_name(optimizer, state_dict)
    _assert_unchanged(optimizer, before)


@pytest.mark.parametrize(
    ("given", "shown"),
    [("adam", r"'adam' \(str\)"), (_model(), "a Sequential")],
    ids=["str", "model"],
)
def test_something_other_than_an_optimizer_is_a_type_error(given: object, shown: str) -> None:
    _, saved = _trained(_cfg("SGD"))
    with pytest.raises(TypeError, match=rf"loads into a torch\.optim\.Optimizer .*, got {shown}$"):
        load_state_dict_by_name(given, saved.state_dict())  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["AdamW", "routed"])
def test_the_groups_stay_the_same_objects_whether_the_load_fails_or_not(kind: str) -> None:
    cfg = _routed_with("Adam") if kind == "routed" else _cfg("AdamW")
    other_cfg = _cfg("SGD")
    if kind == "routed":  # its sub-optimizer "odd" an SGD with momentum, whose state Adam refuses
        other_cfg = _routed_with("SGD")
        other_cfg["optimizers"]["odd"]["momentum"] = 0.9
    _, saved = _trained(cfg)
    _, other_type = _trained(other_cfg)
    model = _model()
    optimizer = build_optimizer(model, cfg)
    _train(model, optimizer, first=10, steps=1)
    holders = [optimizer, *getattr(optimizer, "optimizers", {}).values()]
    lists = [holder.param_groups for holder in holders]
    groups = [list(holder.param_groups) for holder in holders]

    def same_objects() -> bool:
        return all(
            holder.param_groups is group_list
            and all(a is b for a, b in zip(holder.param_groups, kept, strict=True))
            for holder, group_list, kept in zip(holders, lists, groups, strict=True)
        )

    with pytest.raises(ValueError, match=r"failed to load it"):
        load_state_dict_by_name(optimizer, _saved(other_type.state_dict()))
    assert same_objects()
    load_state_dict_by_name(optimizer, _saved(saved.state_dict()))
    assert same_objects()
    _assert_same_state(_state_by_name(optimizer), _state_by_name(saved))


def test_a_parameter_saved_without_state_is_new_not_loaded() -> None:
    # Frozen while it was saved: named in the state dict, but it never took a step.
    model = _model()
    model[0].bias.requires_grad_(False)
    saved = build_optimizer(model, _cfg("AdamW"))
    _train(model, saved, first=0, steps=2)
    optimizer = build_optimizer(_model(), _cfg("AdamW"))
    report = load_state_dict_by_name(optimizer, _saved(saved.state_dict()))
    assert report.new == ["0.bias"]
    assert "0.bias" not in report.loaded
    assert report.with_state == len(report.loaded) == 5
    assert report.dropped == []


def test_state_of_another_optimizer_type_is_a_value_error_and_changes_nothing() -> None:
    _, saved = _trained(_cfg("SGD"))
    model = _model()
    optimizer = build_optimizer(model, _cfg("AdamW"))
    _train(model, optimizer, first=10, steps=1)
    before = copy.deepcopy(optimizer.state_dict())
    with pytest.raises(
        ValueError,
        match=r"saved per-parameter state \(entries momentum_buffer\) does not fit AdamW, which "
        r"failed to load it \(KeyError: 'step'\); the optimizer is unchanged",
    ):
        load_state_dict_by_name(optimizer, _saved(saved.state_dict()))
    _assert_unchanged(optimizer, before)
    _train(model, optimizer, first=11, steps=1)  # and it still steps


def test_a_state_dict_without_param_names_is_a_value_error_saying_so() -> None:
    model = _model()
    plain = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    optimizer = build_optimizer(_model(), _cfg("SGD"))
    with pytest.raises(
        ValueError, match=r"the state dict's parameter group 0 has no 'param_names'"
    ):
        load_state_dict_by_name(optimizer, plain.state_dict())


def test_an_optimizer_without_param_names_is_a_value_error_saying_so() -> None:
    _, saved = _trained(_cfg("SGD"))
    plain = torch.optim.SGD(_model().parameters(), lr=0.1, momentum=0.9)
    with pytest.raises(ValueError, match=r"the optimizer's parameter group 0 has no 'param_names'"):
        load_state_dict_by_name(plain, saved.state_dict())


def test_something_other_than_a_state_dict_is_a_type_error() -> None:
    optimizer = build_optimizer(_model(), _cfg("SGD"))
    with pytest.raises(TypeError, match=r"takes an optimizer\.state_dict\(\)"):
        load_state_dict_by_name(optimizer, {"model": {}})


def test_adafactor_s_factored_state_loads_as_saved() -> None:
    cfg = {"type": "Adafactor", "lr": 0.01, "paramwise_cfg": {"merge_groups": False}}
    model = _model()
    saved = build_optimizer(model, cfg)
    _train(model, saved, first=0, steps=2)
    assert any(
        value.shape != param.shape
        for group in saved.param_groups
        for param in group["params"]
        for value in saved.state[param].values()
        if value.dim() > 0
    ), "Adafactor kept every state in its parameter's shape; the test needs a factored one"
    resumed = build_optimizer(_model(), {**cfg, "paramwise_cfg": {}})
    load_state_dict_by_name(resumed, _saved(saved.state_dict()))
    _assert_same_state(_state_by_name(resumed), _state_by_name(saved))


def test_lbfgs_state_loads_as_saved() -> None:
    model = _model()
    saved = build_optimizer(model, {"type": "LBFGS", "lr": 0.1})

    def closure() -> torch.Tensor:
        saved.zero_grad()
        loss = model(torch.ones(1, 3, 6, 6)).square().mean()
        loss.backward()
        return loss

    saved.step(closure)
    resumed = build_optimizer(_model(), {"type": "LBFGS", "lr": 0.1})
    report = load_state_dict_by_name(resumed, _saved(saved.state_dict()))
    assert report.with_state == 1
    _assert_same_state(_state_by_name(resumed), _state_by_name(saved))
    # LBFGS keeps one state on its first parameter: the others have none of their own (new, as
    # SPEC 3.5 counts them), yet nothing starts fresh, and the summary says so.
    others = ["0.bias", "1.bias", "1.weight", "2.bias", "2.weight"]
    assert (report.loaded, report.new, report.shared) == (["0.weight"], others, others)
    assert str(report) == (
        "optimizer state loaded by name: 1 parameters; 0 new, starting fresh; 0 dropped; "
        "5 sharing the state LBFGS keeps on its first parameter (0.bias, 1.bias, 1.weight, "
        "... (2 more))"
    )


def test_lbfgs_without_saved_state_starts_fresh() -> None:
    saved = build_optimizer(_model(), {"type": "LBFGS", "lr": 0.1})  # never stepped
    resumed = build_optimizer(_model(), {"type": "LBFGS", "lr": 0.1})
    report = load_state_dict_by_name(resumed, _saved(saved.state_dict()))
    assert (report.loaded, report.shared, len(report.new)) == ([], [], 6)
    assert "sharing" not in str(report)


def _routed_with(kind: str) -> dict[str, Any]:
    return {
        "type": "RoutedOptimizer",
        "optimizers": {"odd": {"type": kind, "lr": 0.01}, "adamw": {"type": "AdamW", "lr": 3e-4}},
        "default": "adamw",
        "paramwise_cfg": {"rules": [{"match": "0.*", "optimizer": "odd"}]},
    }


def test_a_routed_adafactor_s_factored_state_loads_as_saved() -> None:
    # The shape check looks at the sub-optimizer that keeps each parameter's state.
    cfg = _routed_with("Adafactor")
    model = _model()
    saved = build_optimizer(model, cfg)
    _train(model, saved, first=0, steps=2)
    by_torch = build_optimizer(model, cfg)
    by_torch.load_state_dict(_saved(saved.state_dict()))
    resumed = build_optimizer(model, cfg)
    report = load_state_dict_by_name(resumed, _saved(saved.state_dict()))
    assert report.new == []
    _assert_same_state(_state_by_name(resumed), _state_by_name(by_torch))


def test_a_routed_adamw_still_refuses_a_changed_shape_beside_adafactor() -> None:
    cfg = _routed_with("Adafactor")
    model = _model()
    saved = build_optimizer(model, cfg)
    _train(model, saved, first=0, steps=2)
    changed = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Conv2d(4, 5, 1))
    resumed = build_optimizer(changed, cfg)
    with pytest.raises(ValueError, match=r"parameter '2\.weight' has shape \(2, 4, 1, 1\)"):
        load_state_dict_by_name(resumed, _saved(saved.state_dict()))


def test_full_state_dict_of_a_plain_optimizer_is_its_state_dict() -> None:
    _, optimizer = _trained(_cfg("SGD"))
    full = full_state_dict(optimizer)
    assert full is not None
    assert full["param_groups"] == optimizer.state_dict()["param_groups"]
    assert full["state"].keys() == optimizer.state_dict()["state"].keys()
