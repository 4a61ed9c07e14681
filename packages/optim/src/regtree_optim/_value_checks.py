"""Checks of one value of an optimizer or paramwise config, each with its one message.

``paramwise_cfg`` itself (``_paramwise``), its ``rules`` (``_rules``), its 3.3 keys
(``_composition``) and its ``layer_decay`` (``_layer_decay``) all hold numbers, flags,
multipliers that need a base and optimizer options; each kind is checked here, so a value is
refused in the same words wherever it is written.
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Final

import torch

from ._optimizer_types import OptimizerInfo

__all__ = [
    "check_base",
    "check_finite",
    "check_flag",
    "check_multiplier",
    "check_option",
    "check_real",
    "is_multiplier_key",
]

# Optimizer options that are numbers a multiplier may scale: checked as SPEC 3.1 words it.
_BASE_NUMBERS: Final[tuple[str, ...]] = ("lr", "weight_decay")
# How torch words a negative lr or weight decay given to an optimizer (SGD, Adam, AdamW in 2.13),
# so that a group's value is refused in the words a default's is.
_TORCH_WORDS: Final[dict[str, str]] = {
    "lr": "Invalid learning rate",
    "weight_decay": "Invalid weight_decay value",
}


def _number_hint(value: object) -> str:
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            return ""
        hint = f"; write it as a number, {value} without quotes"
        if re.fullmatch(r"\s*[-+]?[0-9]+[eE][-+]?[0-9]+\s*", value):
            # PyYAML reads `lr: 1e-4` as the str '1e-4' (YAML 1.1 wants a dot: 1.0e-4);
            # regtree's load_config reads YAML 1.2, where it is a float.
            hint += (
                " (a YAML file read by PyYAML alone needs 1.0e-4, not 1e-4; "
                "regtree.load_config reads either as a float)"
            )
        return hint
    return ""


def check_real(value: object, what: str, *, tensor: bool = False) -> None:
    """Refuse a value that is not a real number (SPEC 3.1): a bool, a str, None, ...

    Args:
        value: The value.
        what: Where it is, for the message: ``"paramwise_cfg['bias_lr_mult']"``.
        tensor: Accept a 0-dim tensor too, as torch does for an lr or a weight decay.

    Raises:
        TypeError: naming ``what``, the value and its type; a str that reads as a number is
            told how to write it as one.
    """
    if tensor and isinstance(value, torch.Tensor) and value.ndim == 0:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        kind = "a real number or a 0-dim tensor" if tensor else "a real number"
        raise TypeError(
            f"{what} must be {kind}, got {value!r} ({type(value).__name__}){_number_hint(value)}."
        )


def check_finite(value: object, what: str) -> None:
    """Refuse a value that is not a finite real number: nan, inf, or not a number at all.

    Raises:
        TypeError: as :func:`check_real`.
        ValueError: naming ``what`` and the value.
    """
    check_real(value, what)
    # nan compares false with everything: lrs would be nan and layers would stop merging.
    if not math.isfinite(value):  # type: ignore[arg-type]  # a real number, checked above
        raise ValueError(f"{what} must be a finite number, got {value!r}.")


def is_multiplier_key(key: str) -> bool:
    """Whether a ``paramwise_cfg`` key names a multiplier (SPEC 3.1: any ``*_lr_mult``, ...)."""
    return key.endswith(("_lr_mult", "_decay_mult"))


def check_multiplier(where: str, key: str, value: object) -> None:
    """Refuse a multiplier that is not a finite real number >= 0 (SPEC 3.1).

    A multiplier scales the lr (a key ending in ``lr_mult``) or the weight decay (any other):
    nan or inf would give nan or inf values (one step then turns the parameters nan), and a
    negative one a negative lr or decay, which torch refuses of an optimizer's own.

    Args:
        where: The mapping that holds it: ``'paramwise_cfg'``, a custom key, a rule.
        key: Its key there: ``'bias_lr_mult'``, ``'decay_mult'``, a subclass's declared key.
        value: Its value (not None: None is not given).

    Raises:
        TypeError: not a real number (:func:`check_real`).
        ValueError: naming the key, the value and what would work.
    """
    what = f"{where}[{key!r}]"
    check_real(value, what)
    number = float(value)  # type: ignore[arg-type]  # a real number, checked above
    if math.isfinite(number) and number >= 0:
        return
    option = "lr" if key.endswith("lr_mult") else "weight_decay"
    noun = "lr" if option == "lr" else "weight decay"
    if math.isnan(number):
        why = f"every {noun} it multiplies would be nan, and one step would make its parameters nan"
    elif math.isinf(number):
        why = f"every {noun} it multiplies would be {number:g} (nan where the base is 0)"
    else:
        why = (
            f"every {noun} it multiplies would be negative, which torch refuses of an "
            f"optimizer's own {option} ({_TORCH_WORDS[option]})"
        )
    raise ValueError(
        f"{what} must be a finite number >= 0, got {value!r}: {why}. Give a multiplier such as "
        f"0 (no {noun}), 0.1 or 1 (the optimizer's own {noun})."
    )


def check_flag(value: object, what: str) -> None:
    """Refuse a flag that is not ``True`` or ``False`` (``None``, ``'yes'``, 1 included).

    Raises:
        TypeError: naming ``what``, the value and its type.
    """
    if not isinstance(value, bool):
        raise TypeError(f"{what} must be True or False, got {value!r} ({type(value).__name__}).")


def check_base(where: str, key: str, value: object, base_key: str, base: object) -> None:
    """Refuse a multiplier given where the optimizer config has no base for it (SPEC 3.1).

    Args:
        where: The mapping that holds the multiplier: ``'paramwise_cfg'``, a rule, ....
        key: Its key there: ``'bias_lr_mult'``, ``'decay_mult'``, ``'layer_decay'``.
        value: Its value; None is not given, and needs no base.
        base_key: The optimizer option it multiplies: ``'lr'`` or ``'weight_decay'``.
        base: The optimizer config's value of it (None: not given).

    Raises:
        ValueError: saying to add the base or drop the multiplier.
    """
    if value is not None and base is None:
        raise ValueError(
            f"{where} sets {key}={value!r} but optimizer_cfg has no {base_key}, so there is "
            f"nothing to multiply; add {base_key} to the optimizer config or drop {key}."
        )


def check_option(
    info: OptimizerInfo, option: str, value: object, where: str, *, group: bool = False
) -> None:
    """Refuse an optimizer option's value that does not fit the optimizer (SPEC 3.1, 5.4).

    ``lr`` and ``weight_decay`` must be real numbers or 0-dim tensors; any other option must
    fit the annotation of the optimizer's signature, where it has one.

    Args:
        info: What the optimizer accepts.
        option: The option's name.
        value: Its value.
        where: The mapping that sets it, for the message: ``'optimizer_cfg'``, a rule, ....
        group: The value is a parameter group's own (a custom key's ``lr``), which torch does
            not check: ``lr`` and ``weight_decay`` must also be finite and >= 0, as torch wants
            of the optimizer's own.

    Raises:
        TypeError: naming ``where``, the option, the value and its type, and what would fit.
        ValueError: a group's ``lr`` or ``weight_decay`` that is negative, nan or inf.
    """
    if option in _BASE_NUMBERS:
        check_real(value, f"{where}[{option!r}]", tensor=True)
        if group:
            _check_group_number(option, value, where)
        return
    expected = info.expected_type(option, value)
    if expected is not None:
        raise TypeError(
            f"{where}: {option}: expected {expected}, got {value!r} ({type(value).__name__}), "
            f"as the signature of {info.name} annotates {option!r}"
        )


def _check_group_number(option: str, value: object, where: str) -> None:
    # torch checks the lr and weight decay it is built with (SGD: `lr < 0`, Adam: `not 0 <= lr`,
    # so nan too), never a group's own; a negative, nan or inf one is refused here instead.
    if isinstance(value, torch.Tensor):
        if value.is_meta or value.is_complex():
            return  # no value to read; a complex one torch refuses as it steps
        number = float(value.item())
    else:
        number = float(value)  # type: ignore[arg-type]  # a real number, checked before
    if math.isfinite(number) and number >= 0:
        return
    mult = "lr_mult" if option == "lr" else "decay_mult"
    raise ValueError(
        f"{where}[{option!r}]: {_TORCH_WORDS[option]}: {value!r}. A group's {option} must be a "
        f"finite number >= 0, as torch wants of the optimizer's own; give one, or {mult} to "
        f"scale optimizer_cfg's {option}."
    )
