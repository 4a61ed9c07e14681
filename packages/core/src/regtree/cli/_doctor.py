"""``regtree doctor``: whether each installed plugin imports, how long it takes, and name clashes.

Unlike the other commands it imports the plugins itself, one scope at a time, so that one that
fails is reported beside the others instead of stopping the command.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .._registry import Registry
from ..naming import registry_label
from ._roots import find_root_registries, import_locations, iter_tree

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["add_doctor_command", "run_doctor"]

PROG = "regtree"


@dataclass
class PluginReport:
    """How importing one advertised scope went."""

    scope: str
    distributions: list[str]
    seconds: float
    error: BaseException | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "scope": self.scope,
            "distributions": self.distributions,
            "ok": self.error is None,
            "seconds": self.seconds,
            "error": None if self.error is None else _one_line(self.error),
        }


@dataclass
class Clash:
    """A name defined in several registries of one tree, and what each default scope picks."""

    tree: Registry[Any]
    name: str
    scopes: list[str]
    # default scope -> the scope whose entry an unscoped build picks there (None: no entry)
    picks: dict[str, str | None] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return {
            "registry": self.tree.name,
            "name": self.name,
            "scopes": self.scopes,
            "picks": {
                scope: None if pick is None else f"{pick}.{self.name}"
                for scope, pick in self.picks.items()
            },
        }


def add_doctor_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``regtree doctor`` to the subcommands of the ``regtree`` parser."""
    doctor = commands.add_parser(
        "doctor",
        help="whether each installed plugin imports (and how long it takes), and name clashes",
        description=(
            "Import each scope that an installed distribution advertises (entry point group "
            "'regtree.scopes') and say whether it imports and how long it takes; then list the "
            "names defined in several scopes of one registry tree, with the one that an unscoped "
            "build picks under each default scope. Exit status 1 when a plugin fails to import."
        ),
    )
    doctor.add_argument("--json", action="store_true", help="print JSON")
    # main() leaves the plugins to this command, which imports them one at a time.
    doctor.set_defaults(handler=run_doctor, imports_plugins=True)


def run_doctor(options: argparse.Namespace, roots: Sequence[Registry[Any]] | None) -> int:
    """Import every plugin, report each, then report the names defined in several scopes.

    Args:
        options: The parsed ``doctor`` options.
        roots: The root registries to check for clashes; None finds them in ``regtree`` and the
            plugins that imported.

    Returns:
        The exit status: 1 when a plugin failed to import, else 0.
    """
    from .. import _plugins

    catalog = _plugins.catalog
    reports = []
    for scope in catalog.scopes():
        start = time.perf_counter()
        error: BaseException | None = None
        try:
            catalog.load(scope)
        except Exception as exc:  # the report names it; the others still run
            error = exc
        seconds = time.perf_counter() - start
        reports.append(PluginReport(scope, catalog.providers(scope), seconds, error))
    if roots is None:
        roots = find_root_registries(r.scope for r in reports if r.error is None)
    for root in roots:
        import_locations(root)
    clashes = [clash for root in roots for clash in find_clashes(root)]
    if options.json:
        print(
            json.dumps(
                {
                    "group": catalog.group,
                    "plugins": [report.as_dict() for report in reports],
                    "clashes": [clash.as_dict() for clash in clashes],
                },
                indent=2,
            )
        )
    else:
        _print_reports(catalog.group, reports)
        _print_clashes(clashes)
    failed = [(report, report.error) for report in reports if report.error is not None]
    for report, error in failed:
        print(
            f"{PROG}: error: the plugin for scope {report.scope!r} "
            f"(distribution {', '.join(map(repr, report.distributions))}) failed to import: "
            f"{_one_line(error)}",
            file=sys.stderr,
        )
    return 1 if failed else 0


def find_clashes(root: Registry[Any]) -> list[Clash]:
    """Return the names that several registries of ``root``'s tree define, in tree order.

    Each clash says, for every scope of the tree used as the default scope, whose entry an
    unscoped build picks: that scope's registry's own, else its nearest ancestor's (as ``get``
    looks up an unscoped name), or none.
    """
    members = list(iter_tree(root))
    holders: dict[str, list[Registry[Any]]] = {}
    for member in members:
        for name in member:
            holders.setdefault(name, []).append(member)
    clashes = []
    for name, owners in holders.items():
        if len(owners) < 2:
            continue
        clash = Clash(root, name, [owner.scope for owner in owners])
        for member in members:
            holder: Registry[Any] | None = member
            while holder is not None and name not in holder.module_dict:
                holder = holder.parent
            clash.picks[member.scope] = None if holder is None else holder.scope
        clashes.append(clash)
    return clashes


def _print_reports(group: str, reports: list[PluginReport]) -> None:
    if not reports:
        print(
            f"plugins: no installed distribution advertises a scope (entry point group {group!r})"
        )
        return
    failed = sum(report.error is not None for report in reports)
    verdict = "all import" if not failed else f"{failed} failed"
    print(f"plugins (entry point group {group!r}): {len(reports)} scopes, {verdict}")
    rows = [
        (
            report.scope,
            ", ".join(report.distributions),
            "ok" if report.error is None else "FAILED",
            f"{report.seconds * 1000:.1f} ms",
            "" if report.error is None else _one_line(report.error),
        )
        for report in reports
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(4)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row[:3], widths, strict=False)]
        line = f"  {'  '.join(cells)}  {row[3].rjust(widths[3])}"
        print(f"{line}  {row[4]}".rstrip())
    print("  (each time includes what the plugin imports first, torch for instance)")


def _print_clashes(clashes: list[Clash]) -> None:
    if not clashes:
        print("names: no name is defined in more than one scope of a registry tree")
        return
    print(f"names defined in several scopes ({len(clashes)}):")
    for clash in clashes:
        print(
            f"  {clash.name!r} in {registry_label(clash.tree)}'s tree: "
            f"scopes {', '.join(clash.scopes)}"
        )
        by_pick: dict[str | None, list[str]] = {}
        for scope, pick in clash.picks.items():
            by_pick.setdefault(pick, []).append(scope)
        for pick, scopes in by_pick.items():
            under = f"under default scope {', '.join(scopes)}"
            if pick is None:
                print(f"    not found {under} (write the scope: '<scope>.{clash.name}')")
            else:
                print(f"    {pick}.{clash.name} {under}")


def _one_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"
