"""Loading a config: its file and the files it inherits, merged, then the overrides (SPEC 5, 5.2).

The work lives in small modules, imported on the first load so that ``import regtree`` stays
light (only `_formats`, which names the extensions, comes with it): `_files` reads one file
(`_yaml` for YAML 1.2), `_inherit` merges the ``_base_`` files, `_overrides` applies ``--set``
texts, and `_tree` carries every value's origin through all of it for `config_origins`
(`load_config`, which needs no origins, runs the same steps on plain data).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal, overload

from ._errors import ConfigError
from ._formats import SUPPORTED_SUFFIXES

if TYPE_CHECKING:
    from typing import Any

    from ._tree import Table

__all__ = ["SUPPORTED_SUFFIXES", "ConfigError", "config_origins", "load_config"]


def load_config(path: str | os.PathLike[str], overrides: Iterable[str] = ()) -> dict[str, Any]:
    """Read a config file with the files it inherits, then apply overrides.

    The format follows the extension: JSON (``.json``) and TOML (``.toml``) through the standard
    library, YAML (``.yaml``, ``.yml``) through PyYAML (``pip install 'regtree[yaml]'``) under
    YAML 1.2's core schema. ``_base_`` names files (of any format, relative to the file) merged
    under this one; ``_delete_: true`` replaces a base's mapping instead of merging into it;
    ``'{{_base_.a.b}}'`` is a value of the bases. Overrides follow Hydra's grammar:
    ``a.b=1`` replaces, ``+a.c=2`` adds, ``++a.d=3`` adds or replaces, ``~a.b`` deletes; an
    integer part indexes a list; values are YAML flow values (``1e-4``, ``[16, 32]``,
    ``{type: Net}``).

    Args:
        path: The config file.
        overrides: Override texts, applied in order after inheritance.

    Returns:
        The merged config, as a new dict of plain values (dicts, lists, str, int, float, bool,
        None).

    Raises:
        ConfigError: A file cannot be opened (missing, a directory, no permission), its
            extension is not supported, it is not UTF-8, its syntax is wrong, its top level is
            not a mapping, it holds no settings, its inheritance is wrong (a missing base, a
            key from two bases, a cycle), or an override does not fit.
        TypeError: ``path`` is not a str or path, or ``overrides`` is a str, not iterable, or
            holds something that is not a str.
    """
    return _resolve(path, overrides, plain=True)


def config_origins(path: str | os.PathLike[str], overrides: Iterable[str] = ()) -> dict[str, str]:
    """Say where each value of the merged config was set.

    Args:
        path: The config file.
        overrides: Override texts, as `load_config` takes them.

    Returns:
        For every leaf of the merged config (a value that is not a mapping or a list, or an
        empty one), its dotted path (list items by index: ``'model.widths.0'``) mapped to the
        origin of its value: ``'file:line'`` for YAML, ``'file'`` for JSON and TOML (whose
        parsers give no lines), ``"override 'TEXT'"`` for an override. Files are named by their
        path as given, and bases by their path joined to the directory of the file naming them.

    Raises:
        ConfigError: As `load_config`.
        TypeError: As `load_config`.
    """
    from ._bounds import too_deep
    from ._tree import origins_of

    tree = _resolve(path, overrides, plain=False)
    try:
        return origins_of(tree)
    except RecursionError:  # as in _resolve: references nesting values in values
        raise ConfigError(os.fspath(path), too_deep("the merged config")) from None


@overload
def _resolve(
    path: str | os.PathLike[str], overrides: Iterable[str], *, plain: Literal[True]
) -> dict[str, Any]: ...
@overload
def _resolve(
    path: str | os.PathLike[str], overrides: Iterable[str], *, plain: Literal[False]
) -> Table: ...
def _resolve(
    path: str | os.PathLike[str], overrides: Iterable[str], *, plain: bool
) -> dict[str, Any] | Table:
    """The merged config with the overrides applied: plain data, or a tree with origins."""
    texts = _texts(overrides)
    if not isinstance(path, str | os.PathLike):
        raise TypeError(
            f"path is the config file's path, a str or os.PathLike such as pathlib.Path, got "
            f"{path!r} ({type(path).__name__})"
        )
    filename = os.fspath(path)
    try:
        return _merged(filename, texts, plain=plain)
    except RecursionError:
        # Each file nests at most MAX_DEPTH levels, but {{_base_...}} references can put a
        # base's value inside another's, level upon level, past what Python can recurse into.
        from ._bounds import too_deep

        raise ConfigError(
            filename,
            too_deep("the merged config", "its {{_base_...}} references nest values in values"),
        ) from None


def _merged(filename: str, texts: list[str], *, plain: bool) -> dict[str, Any] | Table:
    from ._inherit import compose
    from ._tree import shallow_copy, to_plain

    if plain:
        # Composed as plain data: no origin is made or kept for any value (no `Leaf`, no
        # 'file:line' per line). Measured on the config benchmark (three bases, 20 overrides):
        # a load takes 435 us instead of 515 us; right after an mmengine load (caches cold),
        # 630 us, not 720 us. The overrides then change the copy handed out, which shares
        # nothing, so no container on their paths is copied (measured before plain data, on
        # the tree: 513 us a load instead of 533 us).
        config: dict[str, Any] = to_plain(compose(filename, plain=True))  # type: ignore[assignment]
        _override(filename, config, texts, plain=True)
        return config
    tree: Table = compose(filename)
    if texts:
        # Composed trees are shared: the overrides change a copy of each container they touch.
        tree = shallow_copy(tree)
        _override(filename, tree, texts, fresh={id(tree)})
    return tree


def _texts(overrides: Iterable[str]) -> list[str]:
    if isinstance(overrides, str) or not isinstance(overrides, Iterable):
        what = "one str" if isinstance(overrides, str) else type(overrides).__name__
        raise TypeError(
            f"overrides is a list of str such as ['optimizer.lr=0.1'], not {what}: {overrides!r}"
            + ("; pass () for none" if overrides is None else "")
        )
    return list(overrides)


def _override(
    filename: str,
    tree: Table | dict[str, Any],
    texts: list[str],
    fresh: set[int] | None = None,
    *,
    plain: bool = False,
) -> None:
    from ._overrides import OverrideProblem, apply_overrides

    try:
        apply_overrides(tree, texts, fresh, plain=plain)
    except OverrideProblem as exc:
        raise ConfigError(filename, str(exc)) from None
