"""``OPTIMIZERS.validate`` (and ``regtree validate``): configs read as ``build_optimizer`` does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from regtree.cli import main
from regtree_optim import OPTIMIZERS

SOUND: dict[str, Any] = {
    "type": "SGD",
    "lr": 0.05,
    "momentum": 0.9,
    "weight_decay": 1e-4,
    "paramwise_cfg": {
        "norm_decay_mult": 0.0,
        "bias_lr_mult": 2.0,
        "custom_keys": {"backbone": {"lr_mult": 0.1}},
    },
}


def test_a_sound_config_with_paramwise_cfg_has_no_problem() -> None:
    # params comes from the model, paramwise_cfg and constructor are build_optimizer's own keys.
    assert OPTIMIZERS.validate(SOUND) == []
    assert OPTIMIZERS.validate({"type": "AdamW", "lr": 1e-3}) == []
    assert OPTIMIZERS.validate({**SOUND, "constructor": "DefaultOptimizerConstructor"}) == []


def test_a_routed_optimizer_s_sub_optimizers_need_no_params() -> None:
    cfg = {
        "type": "RoutedOptimizer",
        "default": "adamw",
        "optimizers": {
            "adamw": {"type": "AdamW", "lr": 1e-3},
            "sgd": {"type": "SGD", "lr": 0.1, "momentun": 0.9},
        },
    }
    [problem] = OPTIMIZERS.validate(cfg)
    assert (problem.path, problem.kind) == ("optimizers.sgd.momentun", "unknown-keyword")
    cfg["optimizers"]["sgd"] = {"type": "SGD", "lr": 0.1}
    assert OPTIMIZERS.validate(cfg) == []


def test_the_optimizer_keywords_are_still_checked() -> None:
    [problem] = OPTIMIZERS.validate({**SOUND, "momentun": 0.9})
    assert (problem.path, problem.kind) == ("momentun", "unknown-keyword")
    assert "did you mean 'momentum'?" in problem.message
    [problem] = OPTIMIZERS.validate({**SOUND, "lr": "0.05"})
    assert (problem.path, problem.kind) == ("lr", "wrong-type")


def test_a_misspelt_paramwise_key_is_a_problem_naming_the_closest() -> None:
    cfg = {**SOUND, "paramwise_cfg": {"norm_decay_mul": 0.0}}
    [problem] = OPTIMIZERS.validate(cfg)
    assert (problem.path, problem.kind) == ("paramwise_cfg", "invalid-value")
    assert "norm_decay_mul" in problem.message
    assert "norm_decay_mult" in problem.message
    assert cfg["paramwise_cfg"] == {"norm_decay_mul": 0.0}  # the caller's config is untouched


def test_a_multiplier_of_a_wrong_type_is_a_problem() -> None:
    [problem] = OPTIMIZERS.validate({**SOUND, "paramwise_cfg": {"bias_lr_mult": "2"}})
    assert (problem.path, problem.kind) == ("paramwise_cfg", "wrong-type")
    assert "bias_lr_mult" in problem.message


def test_an_unknown_constructor_is_a_problem() -> None:
    [problem] = OPTIMIZERS.validate({**SOUND, "constructor": "DefaultOptimiserConstructor"})
    assert (problem.path, problem.kind) == ("constructor", "unknown-type")
    assert "DefaultOptimizerConstructor" in problem.message


def test_regtree_validate_reads_an_optimizer_section(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "train.toml"
    config.write_text(
        '[optimizer]\ntype = "SGD"\nlr = 0.05\nweight_decay = 1e-4\n\n'
        "[optimizer.paramwise_cfg]\nnorm_decay_mult = 0.0\n"
    )
    argv = ["validate", str(config), "--registry", "optimizer", "--section", "optimizer"]
    assert main(argv) == 0
    assert "[optimizer]: no problems" in capsys.readouterr().out
    assert main([*argv, "--set", "+optimizer.paramwise_cfg.norm_decay_mul=0.0"]) == 1
    assert "norm_decay_mult" in capsys.readouterr().out
